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
