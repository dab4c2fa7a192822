"""The KIP-848 consumer group coordinator, pure, on synthetic time: epochs, target
assignment, revocation before reassignment, timeouts, static members, validation,
describe, offset commits of members, and group ids shared with classic groups."""

from __future__ import annotations

from typing import Any

import pytest

from kclient.emulator.consumer_groups import (
    ASSIGNING,
    EMPTY,
    RECONCILING,
    STABLE,
    ConsumerGroupCoordinator,
    ConsumerGroupSettings,
    MemberState,
)
from kclient.emulator.log import TopicStore
from kclient.emulator.state import ClusterState
from kclient.protocol.constants import ErrorCode

Body = dict[str, Any]


class Group:
    """One consumer group on a coordinator of its own, driven by hand."""

    def __init__(self, partitions: int = 4, **settings: Any) -> None:
        self.topics = TopicStore()
        self.topic = self.topics.create("t", partitions)
        self.coordinator = ConsumerGroupCoordinator(self.topics, ConsumerGroupSettings(**settings))
        self.now = 0.0

    def join(self, member_id: str, *, version: int = 1, instance_id: str | None = None,
             **fields: Any) -> Body:
        request: dict[str, Any] = {"subscribed_topic_names": ["t"], "rebalance_timeout_ms": 5000,
                                   "owned": []}
        request.update(fields)
        return self.coordinator.heartbeat(self.now, version=version, group_id="g",
                                          member_id=member_id, member_epoch=0,
                                          instance_id=instance_id, **request)

    def beat(self, member_id: str, epoch: int, owned: list[int] | None = None,
             **fields: Any) -> Body:
        listed = None if owned is None else [(self.topic.topic_id, owned)]
        return self.coordinator.heartbeat(self.now, version=1, group_id="g", member_id=member_id,
                                          member_epoch=epoch, owned=listed, **fields)

    def member(self, member_id: str) -> Any:
        return self.coordinator.groups["g"].members[member_id]

    def owned(self, member_id: str) -> list[int]:
        return sorted(self.member(member_id).assigned.get(self.topic.topic_id, ()))

    def settle(self) -> None:
        """Every member heartbeats with what it owns until the group is stable."""
        for _ in range(10):
            if self.coordinator.groups["g"].state == STABLE:
                return
            for member_id, member in list(self.coordinator.groups["g"].members.items()):
                self.beat(member_id, member.member_epoch, self.owned(member_id),
                          instance_id=member.instance_id)
        raise AssertionError("the group did not settle")


def assigned(body: Body) -> list[int]:
    assert body["error_code"] == ErrorCode.NONE, body
    parts = body["assignment"]["topic_partitions"]
    return sorted(p for tp in parts for p in tp["partitions"])


def test_a_partition_moves_only_after_its_old_owner_revoked_it() -> None:
    group = Group(partitions=4)
    first = group.join("a")
    assert first["member_epoch"] == 1 and assigned(first) == [0, 1, 2, 3]
    second = group.join("b")
    # b is in the group at epoch 2, but every partition it should get is still a's.
    assert second["member_epoch"] == 2 and assigned(second) == []
    assert group.member("b").state == MemberState.UNRELEASED_PARTITIONS
    assert group.coordinator.groups["g"].state == RECONCILING
    # a learns what to give up; it stays at epoch 1 until it has revoked.
    revoke = group.beat("a", 1, [0, 1, 2, 3])
    keep = assigned(revoke)
    assert revoke["member_epoch"] == 1 and len(keep) == 2
    assert group.member("a").state == MemberState.UNREVOKED_PARTITIONS
    assert group.beat("b", 2, [])["assignment"] is None  # still nothing free for b
    done = group.beat("a", 1, keep)
    assert done["member_epoch"] == 2 and done["assignment"] is None
    got = group.beat("b", 2, [])
    assert assigned(got) == sorted({0, 1, 2, 3} - set(keep))
    group.beat("b", 2, assigned(got))
    assert group.coordinator.groups["g"].state == STABLE


def test_a_member_that_does_not_revoke_in_time_is_fenced() -> None:
    group = Group(partitions=2)
    group.join("a", rebalance_timeout_ms=3000)
    group.join("b")
    group.beat("a", 1, [0, 1])  # must revoke one partition within 3 s
    deadline = group.coordinator.next_deadline()
    assert deadline == pytest.approx(3.0)
    group.coordinator.tick(2.9)
    assert "a" in group.coordinator.groups["g"].members
    group.coordinator.tick(3.0)
    assert "a" not in group.coordinator.groups["g"].members
    group.now = 3.0
    assert assigned(group.beat("b", 2, [])) == [0, 1]


def test_a_silent_member_is_fenced_after_the_session_timeout() -> None:
    group = Group(partitions=2, session_timeout_ms=45_000)
    group.join("a")
    group.join("b")
    assert group.coordinator.next_deadline() == pytest.approx(45.0)
    group.coordinator.tick(44.0)
    assert len(group.coordinator.groups["g"].members) == 2
    group.coordinator.tick(45.0)
    assert group.coordinator.groups["g"].members == {}
    assert group.coordinator.groups["g"].state == EMPTY
    group.now = 46.0
    gone = group.beat("a", 1, [0, 1])
    assert gone["error_code"] == ErrorCode.UNKNOWN_MEMBER_ID


def test_member_epochs_are_checked() -> None:
    group = Group(partitions=2)
    group.join("a")
    ahead = group.beat("a", 5, [0, 1])
    assert ahead["error_code"] == ErrorCode.FENCED_MEMBER_EPOCH
    group.join("b")
    group.settle()
    assert group.member("a").member_epoch == 2
    mine = group.owned("a")
    # The previous epoch is accepted when the owned partitions are a subset (lost response).
    late = group.beat("a", 1, mine)
    assert late["error_code"] == ErrorCode.NONE and late["member_epoch"] == 2
    assert group.beat("a", 1, [0, 1])["error_code"] == ErrorCode.FENCED_MEMBER_EPOCH


@pytest.mark.parametrize(("fields", "code", "message"), [
    ({"member_id": "", "version": 1}, ErrorCode.INVALID_REQUEST, "MemberId can't be empty."),
    ({"rebalance_timeout_ms": -1}, ErrorCode.INVALID_REQUEST,
     "RebalanceTimeoutMs must be provided in first request."),
    ({"owned": None}, ErrorCode.INVALID_REQUEST,
     "TopicPartitions must be empty when (re-)joining."),
    ({"subscribed_topic_names": None}, ErrorCode.INVALID_REQUEST,
     "Either SubscribedTopicNames or SubscribedTopicRegex must be non-null when (re-)joining."),
    ({"server_assignor": "sticky"}, ErrorCode.UNSUPPORTED_ASSIGNOR,
     "ServerAssignor sticky is not supported. Supported assignors: uniform, range."),
    ({"subscribed_topic_regex": "t("}, ErrorCode.INVALID_REGULAR_EXPRESSION,
     "SubscribedTopicRegex `t(` is not a valid regular expression"),
    ({"rack_id": ""}, ErrorCode.INVALID_REQUEST, "RackId can't be empty."),
])
def test_invalid_first_heartbeats_are_refused_as_kafka_refuses_them(
        fields: dict[str, Any], code: int, message: str) -> None:
    group = Group()
    member_id = fields.pop("member_id", "a")
    body = group.join(member_id, **fields)
    assert body["error_code"] == code and body["error_message"].startswith(message)
    assert "g" not in group.coordinator.groups


def test_v0_members_get_an_id_from_the_coordinator() -> None:
    group = Group()
    body = group.join("", version=0)
    assert body["error_code"] == ErrorCode.NONE and len(body["member_id"]) == 22


def test_a_regex_subscription_follows_new_topics() -> None:
    group = Group(partitions=1)
    group.topics.create("orders-eu", 2)
    body = group.join("a", subscribed_topic_names=None, subscribed_topic_regex="orders-.*")
    assert assigned(body) == [0, 1]
    group.topics.create("orders-us", 1)
    again = group.beat("a", 1, [0, 1])
    assert again["member_epoch"] == 2
    topics = {tp["topic_id"] for tp in again["assignment"]["topic_partitions"]}
    assert topics == {group.topics.by_name["orders-eu"].topic_id,
                      group.topics.by_name["orders-us"].topic_id}


def test_a_static_member_leaves_for_a_while_and_is_replaced_with_its_partitions() -> None:
    group = Group(partitions=2)
    group.join("a", instance_id="i1")
    group.join("b")
    group.settle()
    refused = group.join("c", instance_id="i1")
    assert refused["error_code"] == ErrorCode.UNRELEASED_INSTANCE_ID
    stale = group.beat("x", 2, [], instance_id="i1")
    assert stale["error_code"] == ErrorCode.FENCED_INSTANCE_ID
    kept = group.owned("a")
    left = group.coordinator.heartbeat(group.now, version=1, group_id="g", member_id="a",
                                       member_epoch=-2, instance_id="i1")
    assert left["error_code"] == ErrorCode.NONE and left["member_epoch"] == -2
    back = group.join("c", instance_id="i1")
    assert "a" not in group.coordinator.groups["g"].members
    assert assigned(back) == kept  # the new member id inherits the instance's partitions


def test_describe_lists_epochs_members_and_assignments() -> None:
    group = Group(partitions=2)
    group.join("a", server_assignor="range")
    [described] = group.coordinator.describe(["g"], 1)
    assert described["group_state"] == STABLE and described["assignor_name"] == "range"
    [member] = described["members"]
    assert member["member_id"] == "a" and member["member_type"] == 1
    assert member["assignment"]["topic_partitions"][0]["topic_name"] == "t"
    [missing] = group.coordinator.describe(["nope"], 1)
    assert missing["error_code"] == ErrorCode.GROUP_ID_NOT_FOUND
    assert missing["error_message"] == "Consumer group nope not found."


def test_a_new_subscription_bumps_the_group_epoch_before_the_assignment() -> None:
    group = Group(partitions=2)
    group.join("a")
    group.topics.create("u", 1)
    group.beat("a", 1, [0, 1], subscribed_topic_names=["t", "u"])
    assert group.coordinator.groups["g"].assignment_epoch == 2
    group.coordinator.groups["g"].group_epoch += 1
    assert group.coordinator.groups["g"].state == ASSIGNING


def test_offset_commits_of_members_check_the_member_epoch() -> None:
    group = Group(partitions=1)
    group.join("a")
    check = group.coordinator.commit_error
    assert check("g", "a", None, 1, 9) == ErrorCode.NONE
    assert check("g", "a", None, 0, 9) == ErrorCode.STALE_MEMBER_EPOCH
    assert check("g", "a", None, 1, 8) == ErrorCode.UNSUPPORTED_VERSION
    assert check("g", "a", None, 1, 8, transactional=True) == ErrorCode.NONE
    assert check("g", "zz", None, 1, 9) == ErrorCode.UNKNOWN_MEMBER_ID
    assert check("g", "", None, -1, 9) == ErrorCode.UNKNOWN_MEMBER_ID  # members present
    assert group.coordinator.fetch_error("g", "a", 0) == ErrorCode.STALE_MEMBER_EPOCH
    assert group.coordinator.fetch_error("g", None, -1) == ErrorCode.NONE


def _classic_join(state: ClusterState, group_id: str) -> Body | None:
    return state.classic.join(0.0, object(), group_id=group_id, member_id="", instance_id=None,
                              client_id="c", protocol_type="consumer",
                              protocols=[("range", b"")], session_timeout_ms=10_000,
                              rebalance_timeout_ms=10_000, require_known_member=False)


def test_one_group_id_belongs_to_one_group_type() -> None:
    state = ClusterState()
    state.create_topic("t", 1)
    _classic_join(state, "busy")
    beat = state.consumer.heartbeat(0.0, version=1, group_id="busy", member_id="m",
                                    member_epoch=0, rebalance_timeout_ms=1000,
                                    subscribed_topic_names=["t"], owned=[])
    assert beat["error_code"] == ErrorCode.GROUP_ID_NOT_FOUND
    assert beat["error_message"] == "Group busy is not a consumer group."
    # A consumer group with members refuses classic members (no mixed groups here).
    state.consumer.heartbeat(0.0, version=1, group_id="new", member_id="m", member_epoch=0,
                             rebalance_timeout_ms=1000, subscribed_topic_names=["t"], owned=[])
    refused = _classic_join(state, "new")
    assert refused is not None and refused["error_code"] == ErrorCode.INCONSISTENT_GROUP_PROTOCOL
    assert state.holder("new") == "consumer" and state.holder("busy") == "classic"
    # Once empty, the consumer group gives its id to a classic group, as Kafka converts it.
    state.consumer.heartbeat(0.0, version=1, group_id="new", member_id="m", member_epoch=-1)
    assert _classic_join(state, "new") is None  # parked: the classic join proceeds
    assert state.holder("new") == "classic"
    assert [(g, kind) for g, _, _, kind in state.listed_groups()] == [
        ("busy", "classic"), ("new", "classic")]
    # An empty classic group gives its id to a consumer group (maybeDeleteEmptyClassicGroup).
    [member_id] = state.classic.groups["busy"].members
    state.classic.leave(0.0, "busy", [(member_id, None)])
    taken = state.consumer.heartbeat(0.0, version=1, group_id="busy", member_id="m",
                                     member_epoch=0, rebalance_timeout_ms=1000,
                                     subscribed_topic_names=["t"], owned=[])
    assert taken["error_code"] == ErrorCode.NONE and state.holder("busy") == "consumer"


@pytest.mark.parametrize(("regex", "problem"), [
    ("(a+)+$", "a repeated group holds a repetition or an alternation"),
    ("(t|tt)+", "a repeated group holds a repetition or an alternation"),
    ("(?=t).*", "lookaround is not RE2 syntax"),
    (r"(t)\1", "backreferences are not RE2 syntax"),
    ("t" * 1001, "longer than 1000 characters"),
])
def test_regexes_re2j_refuses_or_that_could_stall_the_emulator_are_refused(
        regex: str, problem: str) -> None:
    group = Group()
    body = group.join("a", subscribed_topic_names=None, subscribed_topic_regex=regex)
    assert body["error_code"] == ErrorCode.INVALID_REGULAR_EXPRESSION
    assert problem in body["error_message"]
    ok = group.join("b", subscribed_topic_names=None, subscribed_topic_regex="[a-z]+(-[0-9]+)?")
    assert ok["error_code"] == ErrorCode.NONE


def test_groups_and_members_are_bounded() -> None:
    group = Group(max_size=2, max_members=3, max_groups=2)
    group.join("a")
    group.join("b")
    full = group.join("c")
    assert (full["error_code"], full["error_message"]) == (
        ErrorCode.GROUP_MAX_SIZE_REACHED,
        "The consumer group has reached its maximum capacity of 2 members.")
    other = group.coordinator.heartbeat(0.0, version=1, group_id="h", member_id="c",
                                        member_epoch=0, rebalance_timeout_ms=1,
                                        subscribed_topic_names=["t"], owned=[])
    assert other["error_code"] == ErrorCode.NONE
    crowded = group.coordinator.heartbeat(0.0, version=1, group_id="h", member_id="d",
                                          member_epoch=0, rebalance_timeout_ms=1,
                                          subscribed_topic_names=["t"], owned=[])
    assert crowded["error_message"] == ("the emulated cluster's consumer groups hold 3 members, "
                                        "its bound")
    third = group.coordinator.heartbeat(0.0, version=1, group_id="i", member_id="e",
                                        member_epoch=0, rebalance_timeout_ms=1,
                                        subscribed_topic_names=["t"], owned=[])
    assert third["error_code"] == ErrorCode.COORDINATOR_NOT_AVAILABLE


def test_a_members_transactional_commit_is_checked_by_its_group() -> None:
    """TxnOffsetCommit (any version) of a KIP-848 member: its epoch, as Kafka's
    validateTransactionalOffsetCommit checks it (isTransactional: no v9 floor)."""
    state = ClusterState()
    state.create_topic("t", 1)
    state.consumer.heartbeat(0.0, version=1, group_id="g", member_id="m", member_epoch=0,
                             rebalance_timeout_ms=1000, subscribed_topic_names=["t"], owned=[])
    check = state.commit_error
    assert check(0.0, "g", "m", None, 1, 3, transactional=True) == ErrorCode.NONE
    assert check(0.0, "g", "m", None, 7, 3, transactional=True) == ErrorCode.STALE_MEMBER_EPOCH
    assert check(0.0, "g", "m", None, 1, 3) == ErrorCode.UNSUPPORTED_VERSION
