"""Share groups (KIP-932), pure, on synthetic time: the share group coordinator (members,
assignment, fencing, admin offsets) and the share partitions (acquisition locks, delivery
counts, acknowledgements, redelivery, share sessions)."""

from __future__ import annotations

from typing import Any

import pytest

from kclient.emulator.log import TopicStore
from kclient.emulator.records import read_record_set
from kclient.emulator.share_groups import ShareGroupCoordinator
from kclient.emulator.share_partitions import (
    ACCEPT,
    ARCHIVED,
    AVAILABLE,
    REJECT,
    RELEASE,
    RENEW,
    Acquired,
    SharePartitionManager,
    ShareSettings,
)
from kclient.emulator.state import ClusterState
from kclient.protocol.constants import ErrorCode

from .test_emulator_apis import batch

Body = dict[str, Any]


class Share:
    """One share group over topic ``t`` (1 partition) holding ``records`` records."""

    def __init__(self, records: int = 10, **settings: Any) -> None:
        self.topics = TopicStore()
        self.topic = self.topics.create("t", 1)
        if records:
            self.topic.partitions[0].append(read_record_set(batch(records), 1 << 20))
        self.manager = SharePartitionManager(self.topics, ShareSettings(
            auto_offset_reset="earliest", **settings))
        self.groups = ShareGroupCoordinator(self.topics, self.manager)
        self.tid = self.topic.topic_id

    def acquire(self, member: str, most: int = 100, now: float = 0.0) -> list[Acquired]:
        return self.manager.acquire(now, "g", member, self.tid, 0, most)

    def ack(self, member: str, *batches: tuple[int, int, list[int]],
            now: float = 0.0, renew: bool = False) -> tuple[int, str | None]:
        return self.manager.acknowledge(now, "g", member, self.tid, 0, list(batches),
                                        renew_allowed=renew)

    def state(self, offset: int) -> tuple[str, int]:
        record = self.manager.partitions[("g", self.tid, 0)].records[offset]
        return record.state, record.delivery_count


def test_records_are_acquired_once_acknowledged_and_released_for_redelivery() -> None:
    share = Share(records=10)
    assert share.acquire("a", most=4) == [Acquired(0, 3, 1)]
    assert share.acquire("b") == [Acquired(4, 9, 1)]  # never the same record twice
    assert share.acquire("c") == []
    assert share.ack("a", (0, 1, [ACCEPT]), (2, 3, [RELEASE, REJECT])) == (ErrorCode.NONE, None)
    assert [share.state(o)[0] for o in (2, 3)] == [AVAILABLE, ARCHIVED]
    part = share.manager.partitions[("g", share.tid, 0)]
    assert part.start_offset == 2  # past the acknowledged records
    # The released record comes back, to whoever fetches next, with delivery count 2.
    assert share.acquire("c") == [Acquired(2, 2, 2)]


def test_only_the_holder_acknowledges_and_a_partition_acknowledges_all_or_nothing() -> None:
    share = Share(records=4)
    share.acquire("a", most=2)
    share.acquire("b", most=2)
    code, message = share.ack("a", (0, 0, [ACCEPT]), (2, 2, [ACCEPT]))
    assert (code, message) == (ErrorCode.INVALID_RECORD_STATE,
                               "Member is not the owner of batch record")
    assert share.state(0) == ("ACQUIRED", 1)  # the valid first batch was rolled back
    assert share.ack("a", (5, 5, [ACCEPT]))[0] == ErrorCode.INVALID_RECORD_STATE
    assert share.ack("a", (1, 0, [ACCEPT]))[0] == ErrorCode.INVALID_REQUEST
    assert share.ack("a", (0, 1, [ACCEPT, ACCEPT, ACCEPT]))[0] == ErrorCode.INVALID_REQUEST
    assert share.ack("a", (0, 0, [RENEW]))[0] == ErrorCode.INVALID_REQUEST  # RENEW is v2
    assert share.ack("a", (0, 0, [RENEW]), renew=True, now=20.0)[0] == ErrorCode.NONE
    assert share.manager.partitions[("g", share.tid, 0)].records[0].deadline == 50.0


def test_an_expired_lock_makes_the_record_available_until_the_delivery_limit() -> None:
    share = Share(records=1, record_lock_duration_ms=30_000, delivery_count_limit=2)
    share.acquire("a", now=0.0)
    assert share.manager.next_deadline() == 30.0
    share.manager.tick(29.9)
    assert share.state(0) == ("ACQUIRED", 1)
    share.manager.tick(30.0)
    assert share.state(0) == (AVAILABLE, 1)
    assert share.acquire("b", now=31.0) == [Acquired(0, 0, 2)]
    share.manager.tick(61.0)  # the second expiry reaches the limit: archived, never redelivered
    assert share.manager.partitions[("g", share.tid, 0)].start_offset == 1
    assert share.acquire("c", now=62.0) == []


def test_in_flight_records_are_bounded_by_the_record_lock_limit() -> None:
    share = Share(records=10, partition_max_record_locks=3)
    assert share.acquire("a") == [Acquired(0, 2, 1)]
    assert share.acquire("b") == []
    share.ack("a", (1, 2, [ACCEPT]))  # the SPSO stays at 0: the window stays full
    assert share.acquire("b") == []
    share.ack("a", (0, 0, [ACCEPT]))
    assert share.acquire("b") == [Acquired(3, 5, 1)]


def test_share_sessions_follow_their_epochs_and_release_locks_when_closed() -> None:
    share = Share(records=2)
    manager = share.manager
    assert manager.session("g", "a", 1, 3, fetch=True)[0] == ErrorCode.SHARE_SESSION_NOT_FOUND
    assert manager.session("g", "a", 1, 0, fetch=False)[0] == (
        ErrorCode.INVALID_SHARE_SESSION_EPOCH)
    code, session = manager.session("g", "a", 1, 0, fetch=True)
    assert code == ErrorCode.NONE and session is not None
    session.partitions.add((share.tid, 0))
    share.acquire("a")
    assert manager.session("g", "a", 1, 1, fetch=True)[0] == ErrorCode.NONE
    assert manager.session("g", "a", 1, 1, fetch=False)[0] == (
        ErrorCode.INVALID_SHARE_SESSION_EPOCH)
    assert manager.session("g", "a", 1, 2, fetch=False)[0] == ErrorCode.NONE
    manager.close_session("g", "a", 1)
    assert share.state(0) == (AVAILABLE, 1)
    limited = Share(records=0, max_share_sessions=1)
    limited.manager.session("g", "a", 1, 0, fetch=True)
    assert limited.manager.session("g", "b", 1, 0, fetch=True)[0] == (
        ErrorCode.SHARE_SESSION_LIMIT_REACHED)


def test_a_new_share_partition_starts_at_latest_unless_told_otherwise() -> None:
    share = Share(records=5)
    share.manager.settings = ShareSettings()  # Kafka's default: latest
    assert share.manager.initialize("late", share.tid, 0).start_offset == 5
    share.groups.set_auto_offset_reset("early", "earliest")
    assert share.manager.initialize("early", share.tid, 0).start_offset == 0
    with pytest.raises(ValueError, match="earliest or latest"):
        share.groups.set_auto_offset_reset("x", "by_duration:PT1H")


def beat(share: Share, member: str, epoch: int, now: float = 0.0, **fields: Any) -> Body:
    return share.groups.heartbeat(now, group_id="g", member_id=member, member_epoch=epoch,
                                  **fields)


def test_members_share_partitions_and_a_leaving_member_releases_its_records() -> None:
    share = Share(records=6)
    first = beat(share, "a", 0, subscribed_topic_names=["t"])
    assert (first["error_code"], first["member_epoch"]) == (0, 1)
    assert first["assignment"]["topic_partitions"][0]["partitions"] == [0]
    second = beat(share, "b", 0, subscribed_topic_names=["t"])
    # More members than partitions: both get partition 0, no revocation step.
    assert second["assignment"]["topic_partitions"][0]["partitions"] == [0]
    again = beat(share, "a", 1)
    assert again["member_epoch"] == 2 and again["assignment"] is None
    share.acquire("a", most=3)
    left = beat(share, "a", -1)
    assert (left["error_code"], left["member_epoch"]) == (0, -1)
    assert share.state(0) == (AVAILABLE, 1)
    assert beat(share, "a", 2)["error_code"] == ErrorCode.UNKNOWN_MEMBER_ID
    assert beat(share, "b", 5)["error_code"] == ErrorCode.FENCED_MEMBER_EPOCH


@pytest.mark.parametrize(("fields", "message"), [
    ({"member_id": ""}, "MemberId can't be empty."),
    ({"subscribed_topic_names": None}, "SubscribedTopicNames must be set in first request."),
    ({"member_epoch": -2}, "MemberEpoch is invalid."),
])
def test_invalid_share_heartbeats_are_refused(fields: dict[str, Any], message: str) -> None:
    share = Share()
    request = {"group_id": "g", "member_id": "a", "member_epoch": 0,
               "subscribed_topic_names": ["t"], **fields}
    body = share.groups.heartbeat(0.0, **request)
    assert (body["error_code"], body["error_message"]) == (ErrorCode.INVALID_REQUEST, message)


def test_a_silent_share_member_is_fenced_and_the_group_size_is_bounded() -> None:
    share = Share(max_size=1)
    beat(share, "a", 0, subscribed_topic_names=["t"])
    full = beat(share, "b", 0, subscribed_topic_names=["t"])
    assert full["error_code"] == ErrorCode.GROUP_MAX_SIZE_REACHED
    share.groups.tick(45.0)
    assert share.groups.groups["g"].members == {}
    [described] = share.groups.describe(["g"])
    assert (described["group_state"], described["assignor_name"]) == ("Empty", "simple")


def test_share_offsets_are_described_altered_and_deleted_only_when_empty() -> None:
    share = Share(records=6)
    altered = share.groups.alter_offsets("new", [("t", [(0, 4)]), ("nope", [(0, 1)])])
    assert altered["error_code"] == ErrorCode.NONE  # a new group is created (Kafka 4.2)
    assert [p["error_code"] for r in altered["responses"] for p in r["partitions"]] == [
        ErrorCode.NONE, ErrorCode.UNKNOWN_TOPIC_OR_PARTITION]
    described = share.groups.describe_offsets("new", None)
    assert [(t["topic_name"], p["start_offset"], p["lag"]) for t in described["topics"]
            for p in t["partitions"]] == [("t", 4, 2)]
    share.groups.heartbeat(0.0, group_id="new", member_id="m", member_epoch=0,
                           subscribed_topic_names=["t"])
    busy = share.groups.alter_offsets("new", [("t", [(0, 0)])])
    assert busy["error_code"] == ErrorCode.NON_EMPTY_GROUP
    assert share.groups.delete_offsets("new", ["t"])["error_code"] == ErrorCode.NON_EMPTY_GROUP
    share.groups.heartbeat(0.0, group_id="new", member_id="m", member_epoch=-1)
    assert share.groups.delete_offsets("new", ["t"])["error_code"] == ErrorCode.NONE
    assert share.groups.describe_offsets("new", [("t", [0])])["topics"][0]["partitions"][0][
        "start_offset"] == -1
    assert share.manager.partitions.get(("new", share.tid, 0)) is None


def test_a_share_group_id_is_not_a_consumer_group_id() -> None:
    state = ClusterState()
    state.create_topic("t", 1)
    state.share.heartbeat(0.0, group_id="q", member_id="m", member_epoch=0,
                          subscribed_topic_names=["t"])
    refused = state.consumer.heartbeat(0.0, version=1, group_id="q", member_id="c",
                                       member_epoch=0, rebalance_timeout_ms=1000,
                                       subscribed_topic_names=["t"], owned=[])
    assert refused["error_message"] == "Group q is not a consumer group."
    state.consumer.heartbeat(0.0, version=1, group_id="c", member_id="c", member_epoch=0,
                             rebalance_timeout_ms=1000, subscribed_topic_names=["t"], owned=[])
    other = state.share.heartbeat(0.0, group_id="c", member_id="m", member_epoch=0,
                                  subscribed_topic_names=["t"])
    assert other["error_message"] == "Group c is not a share group."
    assert state.commit_error(0.0, "q", "m", None, 1, 9) == ErrorCode.GROUP_ID_NOT_FOUND
    assert sorted((g, kind) for g, _, _, kind in state.listed_groups()) == [
        ("c", "consumer"), ("q", "share")]


def test_a_deleted_topic_takes_its_share_partitions_with_it() -> None:
    state = ClusterState()
    topic = state.create_topic("t", 1)
    state.share_partitions.initialize("g", topic.topic_id, 0)
    _code, session = state.share_partitions.session("g", "m", 1, 0, fetch=True)
    assert session is not None
    session.partitions.add((topic.topic_id, 0))
    assert state.delete_topic("t")
    assert state.share_partitions.partitions == {} and session.partitions == set()
