"""The KIP-1071 streams group coordinator, pure, on synthetic time: request checks,
topology configuration (missing and internal topics), task assignment with revocation
before reassignment, statuses, describe and member offset commits."""

from __future__ import annotations

from typing import Any

import pytest

from kclient.emulator.log import TopicStore
from kclient.emulator.streams_groups import (
    NOT_READY,
    STABLE,
    Status,
    StreamsGroupCoordinator,
    StreamsSettings,
    Subtopology,
    TopicInfo,
    Topology,
)
from kclient.protocol.constants import ErrorCode

Body = dict[str, Any]

TOPOLOGY = Topology(1, (Subtopology("0", source_topics=("in",),
                                    state_changelog_topics=(TopicInfo("app-store-changelog"),)),))


class Streams:
    def __init__(self, partitions: int = 4, **settings: Any) -> None:
        self.topics = TopicStore()
        if partitions:
            self.topics.create("in", partitions)
        self.coordinator = StreamsGroupCoordinator(self.topics, StreamsSettings(**settings))

    def join(self, member_id: str, topology: Topology = TOPOLOGY, **fields: Any) -> Body:
        beat = self.coordinator.heartbeat(
            0.0, group_id="app", member_id=member_id, member_epoch=0, rebalance_timeout_ms=5000,
            topology=topology, active_tasks=[], standby_tasks=[], warmup_tasks=[],
            process_id=f"process-{member_id}", **fields)
        for name, partitions, _factor, configs in beat.create:
            self.topics.create(name, partitions, 1, configs)
        return beat.body

    def beat(self, member_id: str, epoch: int, active: list[int] | None = None) -> Body:
        listed = None if active is None else [("0", active)]
        return self.coordinator.heartbeat(
            0.0, group_id="app", member_id=member_id, member_epoch=epoch,
            active_tasks=listed, standby_tasks=None if active is None else [],
            warmup_tasks=None if active is None else []).body

    def member(self, member_id: str) -> Any:
        return self.coordinator.groups["app"].members[member_id]


def active(body: Body) -> list[int]:
    assert body["error_code"] == ErrorCode.NONE, body
    return sorted(p for t in body["active_tasks"] for p in t["partitions"])


def test_internal_topics_are_created_and_tasks_dealt_once_they_exist() -> None:
    streams = Streams(partitions=4)
    first = streams.join("a")
    # The changelog topic is missing on the first heartbeat: asked for, no tasks yet.
    assert [s["status_code"] for s in first["status"]] == [Status.MISSING_INTERNAL_TOPICS]
    assert active(first) == [] and streams.coordinator.groups["app"].state == NOT_READY
    assert len(streams.topics.by_name["app-store-changelog"].partitions) == 4
    second = streams.beat("a", first["member_epoch"], [])
    assert second["status"] == [] and active(second) == [0, 1, 2, 3]
    assert streams.coordinator.groups["app"].state == STABLE


def test_a_task_moves_only_after_its_owner_revoked_it() -> None:
    streams = Streams(partitions=2)
    streams.join("a")
    owned = active(streams.beat("a", 1, []))
    assert owned == [0, 1]
    joined = streams.join("b")
    assert active(joined) == []  # both tasks still belong to a
    keep = active(streams.beat("a", 2, owned))
    assert len(keep) == 1 and streams.member("a").member_epoch == 2
    assert streams.beat("b", 3, [])["active_tasks"] is None
    streams.beat("a", 2, keep)
    assert active(streams.beat("b", 3, [])) == sorted({0, 1} - set(keep))


def test_missing_source_topics_leave_the_group_not_ready() -> None:
    streams = Streams(partitions=0)
    body = streams.join("a")
    assert body["status"] == [{"status_code": Status.MISSING_SOURCE_TOPICS,
                               "status_detail": "Source topics in are missing."}]
    assert streams.coordinator.groups["app"].state == NOT_READY


@pytest.mark.timeout(30)  # before: 2**31 tasks dealt one by one, a hang
def test_tasks_are_counted_from_existing_topics_never_from_a_declared_count() -> None:
    # A repartition topic that exists with 2 partitions, declared with 2**31 - 1: the
    # tasks would be counted (and dealt one by one) from the declared number.  It is an
    # incorrectly partitioned topic instead, at once; the declared count is honoured
    # only for a topic the coordinator has to make (within the cluster's partition bound).
    def topology(declared: int) -> Topology:
        return Topology(1, (
            Subtopology("0", source_topics=("in",), repartition_sink_topics=("app-rep",)),
            Subtopology("1", repartition_source_topics=(TopicInfo("app-rep", declared),))))

    streams = Streams(partitions=2)
    streams.topics.create("app-rep", 2)
    body = streams.join("a", topology(2**31 - 1))
    assert body["status"] == [{"status_code": Status.INCORRECTLY_PARTITIONED_TOPICS,
                               "status_detail": "Internal topic app-rep has 2 partitions, "
                                                "the topology asks for 2147483647"}]
    assert active(body) == [] and streams.coordinator.groups["app"].state == NOT_READY
    fitting = Streams(partitions=2)
    fitting.topics.create("app-rep", 2)
    assert active(fitting.join("a", topology(2))) == [0, 0, 1, 1]  # two tasks each


def test_topology_epochs() -> None:
    streams = Streams()
    streams.join("a")
    other = Topology(1, (Subtopology("0", source_topics=("in", "other")),))
    refused = streams.join("b", topology=other)
    assert refused["error_code"] == ErrorCode.STREAMS_INVALID_TOPOLOGY_EPOCH
    older = streams.join("c", topology=Topology(0, TOPOLOGY.subtopologies))
    assert Status.STALE_TOPOLOGY in [s["status_code"] for s in older["status"]]


@pytest.mark.parametrize(("fields", "code", "message"), [
    ({"member_id": " "}, ErrorCode.INVALID_REQUEST, "MemberId can't be empty."),
    ({"topology": None}, ErrorCode.INVALID_REQUEST,
     "Topology must be non-null when (re-)joining."),
    ({"active_tasks": [("0", [1])]}, ErrorCode.INVALID_REQUEST,
     "ActiveTasks must be empty when (re-)joining."),
    ({"rebalance_timeout_ms": -1}, ErrorCode.INVALID_REQUEST,
     "RebalanceTimeoutMs must be provided in first request."),
    ({"source_topic_regex": True}, ErrorCode.INVALID_REQUEST,
     "Regular expressions for source topics are not supported yet."),
    ({"topology": Topology(1, (Subtopology("0", ("in",), state_changelog_topics=(
        TopicInfo("c", 3),)),))}, ErrorCode.STREAMS_INVALID_TOPOLOGY,
     "Changelog topic c must have an undefined partition count, but it is set to 3."),
    ({"member_epoch": -3}, ErrorCode.INVALID_REQUEST,
     "MemberEpoch is -3, but must be greater than or equal to -2."),
])
def test_invalid_streams_heartbeats_are_refused(fields: dict[str, Any], code: int,
                                                 message: str) -> None:
    streams = Streams()
    request: dict[str, Any] = {
        "group_id": "app", "member_id": "a", "member_epoch": 0, "rebalance_timeout_ms": 5000,
        "topology": TOPOLOGY, "active_tasks": [], "standby_tasks": [], "warmup_tasks": []}
    request.update(fields)
    body = streams.coordinator.heartbeat(0.0, **request).body
    assert (body["error_code"], body["error_message"]) == (code, message)


def test_standby_tasks_go_to_other_processes_and_shutdown_reaches_everyone() -> None:
    streams = Streams(partitions=2, num_standby_replicas=1)
    streams.topics.create("app-store-changelog", 2)
    streams.join("a")
    streams.join("b")
    for _ in range(3):
        for member_id in ("a", "b"):
            member = streams.member(member_id)
            streams.beat(member_id, member.member_epoch,
                         sorted(member.active.get("0", frozenset())))
    a, b = streams.member("a"), streams.member("b")
    assert a.active["0"] | b.active["0"] == {0, 1}
    assert a.standby["0"] == b.active["0"] and b.standby["0"] == a.active["0"]
    stop = streams.coordinator.heartbeat(0.0, group_id="app", member_id="a",
                                         member_epoch=a.member_epoch,
                                         shutdown_application=True).body
    assert Status.SHUTDOWN_APPLICATION in [s["status_code"] for s in stop["status"]]
    other = streams.beat("b", b.member_epoch)
    assert Status.SHUTDOWN_APPLICATION in [s["status_code"] for s in other["status"]]


def test_describe_commits_and_timeouts() -> None:
    streams = Streams(partitions=1)
    streams.topics.create("app-store-changelog", 1)
    body = streams.join("a", user_endpoint=("host", 8080))
    [described] = streams.coordinator.describe(["app"])
    assert described["group_state"] == STABLE and described["topology"]["epoch"] == 1
    [member] = described["members"]
    assert member["user_endpoint"] == {"host": "host", "port": 8080}
    assert member["assignment"]["active_tasks"] == [{"subtopology_id": "0", "partitions": [0]}]
    assert body["partitions_by_user_endpoint"][0]["active_partitions"] == [
        {"topic": "in", "partitions": [0]}]
    check = streams.coordinator.commit_error
    assert check("app", "a", body["member_epoch"], 9) == ErrorCode.NONE
    assert check("app", "a", 0, 9) == ErrorCode.STALE_MEMBER_EPOCH
    [missing] = streams.coordinator.describe(["nope"])
    assert missing["error_message"] == "Streams group nope not found."
    streams.coordinator.tick(45.0)
    assert streams.coordinator.groups["app"].members == {}
