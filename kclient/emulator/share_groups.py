"""The share group coordinator of KIP-932 (ShareGroupHeartbeat, ShareGroupDescribe, the
share-group offset admin APIs), pure.

Share groups are modern groups (:mod:`kclient.emulator.modern_groups`) whose members
may share partitions: the group coordinator assigns them with the ``simple``
assignor (:func:`kclient.emulator.assignors.simple`) and, unlike a consumer group,
hands a member its new assignment at once (Kafka's ``ShareGroupAssignmentBuilder``:
no revocation step, since records, not partitions, are locked).  The records
themselves are acquired, locked and acknowledged on the partitions' side
(:mod:`kclient.emulator.share_partitions`), which this coordinator tells when a
member's partitions are assigned (the share partitions start then, per
``share.auto.offset.reset``) and when a member leaves (its locks are released).

The rules follow Kafka's group coordinator (``GroupMetadataManager.shareGroupHeartbeat``,
``throwIfShareGroupHeartbeatRequestIsInvalid``, ``throwIfShareGroupMemberEpochIsInvalid``,
``shareGroupLeave``, ``shareGroupFenceMember``, ``modern/share/ShareGroup.java``):
ShareGroupHeartbeat v1 (Kafka 4.1; v0 was 4.0's early access) requires a
client-generated member id, epoch 0 joins (``SubscribedTopicNames`` required), -1
leaves, a wrong epoch is FENCED_MEMBER_EPOCH, an unknown member UNKNOWN_MEMBER_ID,
``group.share.max.size`` members at most (GROUP_MAX_SIZE_REACHED), a silent member is
fenced after ``group.share.session.timeout.ms``.  A share group's id cannot be used
by another group type (GROUP_ID_NOT_FOUND, "Group ... is not a share group.").
The offset admin APIs (Kafka 4.1/4.2): DescribeShareGroupOffsets lists each
partition's share-partition start offset (and lag, v1); AlterShareGroupOffsets and
DeleteShareGroupOffsets need an empty group (NON_EMPTY_GROUP), and Alter creates the
group when there is none (KAFKA-19662, Kafka 4.2).

Simplifications: no rack-aware or heterogeneous-subscription refinements of Kafka's
``SimpleAssignor`` (see :mod:`kclient.emulator.assignors`), no dynamic group configs
(``share.auto.offset.reset`` is a coordinator setting, and per group through
:meth:`ShareGroupCoordinator.set_auto_offset_reset`), no DeleteGroups; the heartbeat
interval is 0.5 s by default (Kafka: 5 s).
"""

from __future__ import annotations

import uuid
from collections.abc import Iterable, Sequence
from typing import Any

import attrs

from kclient.emulator.assignors import Assignment, MemberSpec, simple
from kclient.emulator.log import TopicStore
from kclient.emulator.modern_groups import (
    LEAVE_GROUP_MEMBER_EPOCH,
    SHARE,
    Coordinator,
    GroupError,
    GroupIds,
    check_member_epoch,
    check_room,
    described_assignment,
    group_for,
    subscription_metadata,
)
from kclient.emulator.share_partitions import SharePartitionManager, ShareSettings
from kclient.protocol.constants import ErrorCode

__all__ = ["EMPTY", "STABLE", "ShareGroup", "ShareGroupCoordinator", "ShareMember"]

Body = dict[str, Any]
EMPTY, STABLE = "Empty", "Stable"


@attrs.define(eq=False)
class ShareMember:
    """A member of a share group."""

    member_id: str
    rack_id: str | None = None
    client_id: str = ""
    client_host: str = ""
    subscribed_topic_names: tuple[str, ...] = ()
    member_epoch: int = 0
    previous_member_epoch: int = -1
    assigned: Assignment = attrs.Factory(dict)
    session_deadline: float = 0.0


@attrs.define(eq=False)
class ShareGroup:
    """One share group: epochs, members, target assignment and subscribed topics."""

    group_id: str
    group_epoch: int = 0
    assignment_epoch: int = 0
    members: dict[str, ShareMember] = attrs.Factory(dict)
    target: dict[str, Assignment] = attrs.Factory(dict)
    subscription: dict[str, tuple[uuid.UUID, int]] = attrs.Factory(dict)

    @property
    def state(self) -> str:
        """Empty or Stable (Kafka's ``ShareGroupState``)."""
        return STABLE if self.members else EMPTY


class ShareGroupCoordinator(Coordinator[ShareGroup]):
    """The share groups of one emulated cluster (see the module text)."""

    kind = SHARE

    def __init__(self, topics: TopicStore, partitions: SharePartitionManager,
                 group_ids: GroupIds | None = None) -> None:
        self.topics = topics
        self.partitions = partitions
        self.group_ids = group_ids
        self.groups: dict[str, ShareGroup] = {}

    @property
    def settings(self) -> ShareSettings:
        """The share-group broker settings (shared with the share partitions)."""
        return self.partitions.settings

    def set_auto_offset_reset(self, group_id: str, value: str) -> None:
        """Set the group's ``share.auto.offset.reset`` (``earliest`` or ``latest``)."""
        if value not in ("earliest", "latest"):
            raise ValueError(f"share.auto.offset.reset is earliest or latest, not {value!r}")
        self.partitions.auto_offset_reset[group_id] = value

    # -- ShareGroupHeartbeat --------------------------------------------------------------------
    def heartbeat(self, now: float, *, group_id: str, member_id: str, member_epoch: int,
                  rack_id: str | None = None, subscribed_topic_names: Sequence[str] | None = None,
                  client_id: str = "", client_host: str = "") -> Body:
        """ShareGroupHeartbeat (v1): the response body."""
        try:
            self._validate(group_id, member_id, member_epoch, rack_id, subscribed_topic_names)
            if member_epoch == LEAVE_GROUP_MEMBER_EPOCH:
                self._leave(group_id, member_id, None, member_epoch)
                return {"error_code": ErrorCode.NONE, "error_message": None,
                        "member_id": member_id, "member_epoch": member_epoch,
                        "heartbeat_interval_ms": 0, "assignment": None}
            return self._join_or_beat(now, group_id, member_id, member_epoch, rack_id,
                                      subscribed_topic_names, client_id, client_host)
        except GroupError as exc:
            return {"error_code": exc.code, "error_message": str(exc), "member_id": None,
                    "member_epoch": 0, "heartbeat_interval_ms": 0, "assignment": None}

    @staticmethod
    def _validate(group_id: str, member_id: str, member_epoch: int, rack_id: str | None,
                  names: Sequence[str] | None) -> None:
        invalid = ErrorCode.INVALID_REQUEST
        if not group_id:
            raise GroupError(invalid, "GroupId can't be empty.")
        if not member_id:
            raise GroupError(invalid, "MemberId can't be empty.")
        if rack_id == "":
            raise GroupError(invalid, "RackId can't be empty.")
        if member_epoch == 0:
            if not names:
                raise GroupError(invalid, "SubscribedTopicNames must be set in first request.")
        elif member_epoch < LEAVE_GROUP_MEMBER_EPOCH:
            raise GroupError(invalid, "MemberEpoch is invalid.")

    def _existing(self, group_id: str) -> ShareGroup:
        group = self.groups.get(group_id)
        if group is None:
            raise self._not_found(group_id)
        return group

    def _create(self, group_id: str) -> ShareGroup:
        return group_for(self.groups, group_id, kind=SHARE, create=True,
                         group_ids=self.group_ids, make=ShareGroup,
                         max_groups=self.settings.max_groups)

    def _join_or_beat(self, now: float, group_id: str, member_id: str, member_epoch: int,
                      rack_id: str | None, names: Sequence[str] | None, client_id: str,
                      client_host: str) -> Body:
        group = self._create(group_id) if member_epoch == 0 else self._existing(group_id)
        member = group.members.get(member_id)
        if member is None:
            if member_epoch != 0:
                raise GroupError(ErrorCode.UNKNOWN_MEMBER_ID,
                                 f"Member {member_id} is not a member of group {group_id}.")
            check_room(self.groups, group, kind=SHARE, max_size=self.settings.max_size,
                       max_members=self.settings.max_members)
            member = ShareMember(member_id)
        else:
            check_member_epoch("share", member.member_epoch, member.previous_member_epoch,
                               member_epoch)
        before = dict(member.assigned)
        old_names = member.subscribed_topic_names if member_id in group.members else ()
        if rack_id is not None:
            member.rack_id = rack_id
        if names is not None:
            member.subscribed_topic_names = tuple(names)
        member.client_id, member.client_host = client_id, client_host
        group.members[member_id] = member
        bump = member.subscribed_topic_names != old_names
        metadata = self._metadata(group)
        if metadata != group.subscription:
            group.subscription, bump = metadata, True
        if bump:
            group.group_epoch += 1
        if group.group_epoch > group.assignment_epoch:
            self._assign(group)
        if member.member_epoch != group.assignment_epoch:
            member.previous_member_epoch = member.member_epoch
            member.member_epoch = group.assignment_epoch
        member.assigned = dict(group.target.get(member_id, {}))
        for topic_id, parts in member.assigned.items():
            for index in parts:
                self.partitions.initialize(group_id, topic_id, index)
        member.session_deadline = now + self.settings.session_timeout_ms / 1000
        body: Body = {"error_code": ErrorCode.NONE, "error_message": None,
                      "member_id": member_id, "member_epoch": member.member_epoch,
                      "heartbeat_interval_ms": self.settings.heartbeat_interval_ms,
                      "assignment": None}
        if member_epoch == 0 or names is not None or member.assigned != before:
            body["assignment"] = {"topic_partitions": [
                {"topic_id": topic, "partitions": sorted(parts)}
                for topic, parts in sorted(member.assigned.items(), key=lambda i: str(i[0]))]}
        return body

    def _metadata(self, group: ShareGroup) -> dict[str, tuple[uuid.UUID, int]]:
        return subscription_metadata(self.topics, (
            n for m in group.members.values() for n in m.subscribed_topic_names))

    def _assign(self, group: ShareGroup) -> None:
        specs = [MemberSpec(m.member_id, frozenset(
                    group.subscription[n][0] for n in m.subscribed_topic_names
                    if n in group.subscription), group.target.get(m.member_id, {}))
                 for m in sorted(group.members.values(), key=lambda m: m.member_id)]
        group.target = simple(specs, dict(group.subscription.values()))
        group.assignment_epoch = group.group_epoch

    def _fence(self, group: ShareGroup, member: ShareMember) -> None:
        group.members.pop(member.member_id, None)
        group.target.pop(member.member_id, None)
        self.partitions.release_member(group.group_id, member.member_id)
        group.subscription = self._metadata(group)
        group.group_epoch += 1

    # -- ShareGroupDescribe ----------------------------------------------------------------------
    def describe(self, group_ids: Iterable[str]) -> list[Body]:
        """ShareGroupDescribe: one described group per id."""
        return self._describe(group_ids, {"assignor_name": ""}, lambda group: {
            "assignor_name": "simple", "members": [{
                "member_id": m.member_id, "rack_id": m.rack_id, "member_epoch": m.member_epoch,
                "client_id": m.client_id, "client_host": m.client_host,
                "subscribed_topic_names": list(m.subscribed_topic_names),
                "assignment": described_assignment(self.topics, m.assigned)}
                for m in group.members.values()]})

    # -- share-group offsets ----------------------------------------------------------------------
    def describe_offsets(self, group_id: str,
                         wanted: Sequence[tuple[str, Sequence[int]]] | None) -> Body:
        """DescribeShareGroupOffsets of one group (``wanted`` None: every partition it has)."""
        if group_id in self.groups or self.group_ids is None or (
                self.group_ids.holder(group_id) is None):
            topics: list[Body] = []
            if wanted is None:
                by_topic: dict[uuid.UUID, list[int]] = {}
                for topic_id, index in self.partitions.partitions_of(group_id):
                    by_topic.setdefault(topic_id, []).append(index)
                names = {t.topic_id: t.name for t in self.topics.by_name.values()}
                wanted = [(names[t], parts) for t, parts in by_topic.items() if t in names]
            for name, indexes in wanted:
                topic = self.topics.by_name.get(name)
                parts = []
                for index in indexes:
                    start = (self.partitions.start_offset(group_id, topic.topic_id, index)
                             if topic is not None else None)
                    code = ErrorCode.NONE if topic is not None else (
                        ErrorCode.UNKNOWN_TOPIC_OR_PARTITION)
                    parts.append({
                        "partition_index": index, "error_code": code, "error_message": None,
                        "start_offset": -1 if start is None else start, "leader_epoch": 0,
                        "lag": -1 if topic is None or start is None else self.partitions.lag(
                            group_id, topic.topic_id, index)})
                topics.append({"topic_name": name,
                               "topic_id": topic.topic_id if topic else uuid.UUID(int=0),
                               "partitions": parts})
            return {"group_id": group_id, "error_code": ErrorCode.NONE, "error_message": None,
                    "topics": topics}
        return {"group_id": group_id, "error_code": ErrorCode.GROUP_ID_NOT_FOUND,
                "error_message": str(self._not_found(group_id)), "topics": []}

    def alter_offsets(self, group_id: str,
                      wanted: Sequence[tuple[str, Sequence[tuple[int, int]]]]) -> Body:
        """AlterShareGroupOffsets: put start offsets of an empty (or new) share group."""
        try:
            group = self._create(group_id)
        except GroupError as exc:
            return {"error_code": exc.code, "error_message": str(exc), "responses": []}
        if group.members:
            return {"error_code": ErrorCode.NON_EMPTY_GROUP,
                    "error_message": f"Share group {group_id} is not empty.", "responses": []}
        responses = []
        for name, parts in wanted:
            topic = self.topics.by_name.get(name)
            out = []
            for index, offset in parts:
                code: int = ErrorCode.NONE
                if topic is None or not 0 <= index < len(topic.partitions):
                    code = ErrorCode.UNKNOWN_TOPIC_OR_PARTITION
                else:
                    self.partitions.set_start_offset(group_id, topic.topic_id, index, offset)
                out.append({"partition_index": index, "error_code": code, "error_message": None})
            responses.append({"topic_name": name,
                              "topic_id": topic.topic_id if topic else uuid.UUID(int=0),
                              "partitions": out})
        return {"error_code": ErrorCode.NONE, "error_message": None, "responses": responses}

    def delete_offsets(self, group_id: str, names: Sequence[str]) -> Body:
        """DeleteShareGroupOffsets: forget the start offsets of topics of an empty group."""
        group = self.groups.get(group_id)
        if group is None:
            return {"error_code": ErrorCode.GROUP_ID_NOT_FOUND,
                    "error_message": str(self._not_found(group_id)), "responses": []}
        if group.members:
            return {"error_code": ErrorCode.NON_EMPTY_GROUP,
                    "error_message": f"Share group {group_id} is not empty.", "responses": []}
        responses = []
        for name in names:
            topic = self.topics.by_name.get(name)
            if topic is not None:
                self.partitions.delete(group_id, topic.topic_id)
            responses.append({
                "topic_name": name, "topic_id": topic.topic_id if topic else uuid.UUID(int=0),
                "error_code": ErrorCode.NONE if topic else ErrorCode.UNKNOWN_TOPIC_OR_PARTITION,
                "error_message": None})
        return {"error_code": ErrorCode.NONE, "error_message": None, "responses": responses}
