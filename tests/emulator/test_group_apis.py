"""Kafka 4's group APIs on the wire of an emulated broker: the feature levels that switch
them on, and what the older group APIs say of groups of the new types."""

from __future__ import annotations

from typing import Any

import pytest

from kclient.emulator import EmulatedBroker
from kclient.net import Connection
from kclient.protocol.constants import ErrorCode

pytestmark = pytest.mark.timeout(30)

#: A 4.0 cluster upgraded from 3.x keeps group.version 0 (a fresh one finalizes 1).
GROUP_V0 = {"group.version": (0, 0)}


def first_heartbeat(member_id: str = "", group_id: str = "g") -> dict[str, Any]:
    return {"group_id": group_id, "member_id": member_id, "member_epoch": 0,
            "rebalance_timeout_ms": 30000, "subscribed_topic_names": ["t"],
            "topic_partitions": []}


async def test_consumer_groups_are_off_without_a_finalized_group_version() -> None:
    async with EmulatedBroker(1, "4.0", finalized_features=GROUP_V0) as broker, \
            Connection("127.0.0.1", broker.port) as conn:
        beat = await conn.request("ConsumerGroupHeartbeat", first_heartbeat(), 0)
        assert beat.error_code == ErrorCode.UNSUPPORTED_VERSION
        described = await conn.request("ConsumerGroupDescribe", {"group_ids": ["g"]}, 0)
        assert described.groups[0].error_code == ErrorCode.UNSUPPORTED_VERSION
        assert broker.state.consumer.groups == {}


async def test_a_consumer_group_on_the_wire_with_commits_lists_and_describes() -> None:
    async with EmulatedBroker(1, "4.0") as broker, \
            Connection("127.0.0.1", broker.port) as conn:
        topic = broker.state.create_topic("t", 2)
        beat = await conn.request("ConsumerGroupHeartbeat", first_heartbeat(), 0)
        assert (beat.error_code, beat.member_epoch) == (0, 1) and len(beat.member_id) == 22
        assert beat.heartbeat_interval_ms == broker.state.consumer.settings.heartbeat_interval_ms
        [owned] = beat.assignment.topic_partitions
        assert (owned.topic_id, sorted(owned.partitions)) == (topic.topic_id, [0, 1])
        commit = {"group_id": "g", "member_id": beat.member_id,
                  "topics": [{"name": "t", "partitions": [
                      {"partition_index": 0, "committed_offset": 5, "committed_metadata": ""}]}]}
        stale = await conn.request("OffsetCommit", {**commit, "generation_id_or_member_epoch": 0},
                                   9)
        assert stale.topics[0].partitions[0].error_code == ErrorCode.STALE_MEMBER_EPOCH
        ok = await conn.request("OffsetCommit", {**commit, "generation_id_or_member_epoch": 1}, 9)
        assert ok.topics[0].partitions[0].error_code == ErrorCode.NONE
        old = await conn.request("OffsetCommit", {**commit, "generation_id_or_member_epoch": 1}, 8)
        assert old.topics[0].partitions[0].error_code == ErrorCode.UNSUPPORTED_VERSION
        fetched = await conn.request("OffsetFetch", {"groups": [
            {"group_id": "g", "member_id": beat.member_id, "member_epoch": 7,
             "topics": [{"name": "t", "partition_indexes": [0]}]}]}, 9)
        assert fetched.groups[0].error_code == ErrorCode.STALE_MEMBER_EPOCH
        listed = await conn.request("ListGroups", {"states_filter": [],
                                                   "types_filter": ["consumer"]}, 5)
        assert [(g.group_id, g.protocol_type, g.group_state, g.group_type)
                for g in listed.groups] == [("g", "consumer", "Stable", "consumer")]
        none = await conn.request("ListGroups", {"states_filter": [],
                                                 "types_filter": ["classic"]}, 5)
        assert none.groups == []
        classic = await conn.request("DescribeGroups", {"groups": ["g", "x"]}, 6)
        assert [(g.group_state, g.error_code, g.error_message) for g in classic.groups] == [
            ("Dead", ErrorCode.GROUP_ID_NOT_FOUND, "Group g is not a classic group."),
            ("Dead", ErrorCode.GROUP_ID_NOT_FOUND, "Group x not found.")]
        older = await conn.request("DescribeGroups", {"groups": ["g"]}, 5)
        assert (older.groups[0].group_state, older.groups[0].error_code) == ("Dead", 0)
        described = await conn.request("ConsumerGroupDescribe", {"group_ids": ["g"]}, 0)
        [group] = described.groups
        assert (group.group_state, group.group_epoch, group.assignor_name) == (
            "Stable", 1, "uniform")
        assert group.members[0].assignment.topic_partitions[0].topic_name == "t"
        left = await conn.request("ConsumerGroupHeartbeat", {
            **first_heartbeat(beat.member_id), "member_epoch": -1}, 0)
        assert (left.error_code, left.member_epoch) == (0, -1)
        assert broker.state.consumer.groups["g"].members == {}


async def test_share_groups_follow_share_version() -> None:
    """Kafka 4.1 clusters start with share.version 0 (preview, off), 4.2 with 1."""
    join = {"group_id": "q", "member_id": "m1", "member_epoch": 0,
            "subscribed_topic_names": ["t"]}
    async with EmulatedBroker(1, "4.1") as off, Connection("127.0.0.1", off.port) as conn:
        refused = await conn.request("ShareGroupHeartbeat", join, 1)
        assert refused.error_code == ErrorCode.UNSUPPORTED_VERSION
        fetch = await conn.request("ShareFetch", {
            "group_id": "q", "member_id": "m1", "share_session_epoch": 0, "max_wait_ms": 0,
            "min_bytes": 1, "max_records": 1, "batch_size": 1, "topics": [],
            "forgotten_topics_data": []}, 1)
        assert fetch.error_code == ErrorCode.UNSUPPORTED_VERSION
    async with EmulatedBroker(1, "4.2") as on, Connection("127.0.0.1", on.port) as conn:
        on.state.create_topic("t", 2)
        joined = await conn.request("ShareGroupHeartbeat", join, 1)
        assert (joined.error_code, joined.member_epoch) == (0, 1)
        assert sorted(joined.assignment.topic_partitions[0].partitions) == [0, 1]
        listed = await conn.request("ListGroups", {"states_filter": [], "types_filter": []}, 5)
        assert [(g.group_id, g.group_type, g.protocol_type, g.group_state)
                for g in listed.groups] == [("q", "share", "share", "Stable")]
        described = await conn.request("ShareGroupDescribe", {"group_ids": ["q", "none"]}, 1)
        assert [(g.group_state, g.error_code) for g in described.groups] == [
            ("Stable", 0), ("Dead", ErrorCode.GROUP_ID_NOT_FOUND)]


async def test_a_streams_group_on_the_wire() -> None:
    topology = {"epoch": 1, "subtopologies": [{
        "subtopology_id": "0", "source_topics": ["in"], "source_topic_regex": [],
        "state_changelog_topics": [{"name": "app-store-changelog", "partitions": 0,
                                    "replication_factor": 0, "topic_configs": []}],
        "repartition_sink_topics": [], "repartition_source_topics": [],
        "copartition_groups": []}]}
    join = {"group_id": "app", "member_id": "s1", "member_epoch": 0,
            "endpoint_information_epoch": 0, "rebalance_timeout_ms": 30000,
            "topology": topology, "active_tasks": [], "standby_tasks": [], "warmup_tasks": [],
            "process_id": "p1"}
    async with EmulatedBroker(1, "4.2", finalized_features={"streams.version": (0, 0)}) as off, \
            Connection("127.0.0.1", off.port) as conn:
        refused = await conn.request("StreamsGroupHeartbeat", join, 0)
        assert refused.error_code == ErrorCode.UNSUPPORTED_VERSION
    async with EmulatedBroker(1, "4.2") as broker, Connection("127.0.0.1", broker.port) as conn:
        broker.state.create_topic("in", 2)
        first = await conn.request("StreamsGroupHeartbeat", join, 0)
        assert [s.status_code for s in first.status] == [3]  # MISSING_INTERNAL_TOPICS
        assert len(broker.state.topics["app-store-changelog"].partitions) == 2  # created
        beat = {**join, "member_epoch": first.member_epoch, "topology": None,
                "active_tasks": None, "standby_tasks": None, "warmup_tasks": None}
        second = await conn.request("StreamsGroupHeartbeat", beat, 0)
        assert second.status == [] and [(t.subtopology_id, sorted(t.partitions))
                                        for t in second.active_tasks] == [("0", [0, 1])]
        described = await conn.request("StreamsGroupDescribe", {"group_ids": ["app"]}, 0)
        [group] = described.groups
        assert (group.group_state, group.topology.epoch) == ("Stable", 1)
        assert group.members[0].assignment.active_tasks[0].partitions == [0, 1]
        committed = await conn.request("OffsetCommit", {
            "group_id": "app", "generation_id_or_member_epoch": second.member_epoch,
            "member_id": "s1", "topics": [{"name": "in", "partitions": [
                {"partition_index": 0, "committed_offset": 1, "committed_metadata": ""}]}]}, 9)
        assert committed.topics[0].partitions[0].error_code == 0
