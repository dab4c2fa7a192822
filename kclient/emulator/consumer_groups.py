"""The consumer group coordinator of KIP-848 (ConsumerGroupHeartbeat, ConsumerGroupDescribe), pure.

A state machine like :mod:`kclient.emulator.classic_groups`: no sockets, no event
loop, no clock of its own.  Every call takes ``now`` (seconds, any monotonic
origin) and answers at once (the consumer protocol parks nothing: a member learns
what changed on its next heartbeat); :meth:`ConsumerGroupCoordinator.next_deadline`
and :meth:`~ConsumerGroupCoordinator.tick` run the session and rebalance timeouts.

The rules follow Kafka's group coordinator (``group-coordinator/.../GroupMetadataManager.java``:
``consumerGroupHeartbeat``, ``throwIfConsumerGroupHeartbeatRequestIsInvalid``,
``throwIfConsumerGroupMemberEpochIsInvalid``, ``getOrMaybeSubscribe*ConsumerGroupMember``,
``updateTargetAssignment``, ``maybeReconcile``, ``consumerGroupLeave``,
``consumerGroupFenceMember``, ``scheduleConsumerGroupSessionTimeout`` /
``RebalanceTimeout``; ``modern/consumer/CurrentAssignmentBuilder.java``;
``modern/consumer/ConsumerGroup.java``: ``validateOffsetCommit``, ``validateOffsetFetch``,
``maybeUpdateGroupState``):

* a heartbeat updates the member (subscription, regex, assignor, rebalance timeout);
  a changed subscription, or a change in the subscribed topics' partitions, bumps
  the **group epoch**; a group epoch above the **assignment epoch** runs the
  assignor (:mod:`kclient.emulator.assignors`, ``group.consumer.assignors``:
  ``uniform`` then ``range``) for a new **target assignment**;
* each member is reconciled towards its target as Kafka's ``CurrentAssignmentBuilder``
  does: partitions it must give up are **revoked first** (the member stays at its
  epoch, in ``UNREVOKED_PARTITIONS``, until a heartbeat no longer lists them among
  its owned partitions), and a partition is never **assigned** to a member while
  another member still owns it (``UNRELEASED_PARTITIONS``);
* the member epoch of each request is checked (FENCED_MEMBER_EPOCH; the previous
  epoch is accepted when its owned partitions are a subset of the assignment, for
  a lost response), unknown members get UNKNOWN_MEMBER_ID, static members
  (``InstanceId``) leave with epoch -2 and are replaced by a new member id with the
  same instance id (UNRELEASED_INSTANCE_ID while the old one has not left,
  FENCED_INSTANCE_ID for a stale member id);
* a member whose heartbeats stop for ``group.consumer.session.timeout.ms`` is
  fenced (removed, group epoch bumped), and one that does not revoke within its
  rebalance timeout is fenced too;
* ConsumerGroupHeartbeat v1 (Kafka 4.0) adds ``SubscribedTopicRegex`` and requires
  a client-generated member id (KIP-1082: an empty one is INVALID_REQUEST).

Simplifications, each a place where a real broker can answer differently:

* the regex is resolved at once on each heartbeat with Python's ``re`` (full match,
  as RE2J's ``matches``); Kafka resolves it asynchronously with RE2J.  What RE2J
  refuses (backreferences, lookaround) is INVALID_REGULAR_EXPRESSION here too, and so,
  as an emulator bound, is a pattern longer than :data:`MAX_REGEX` characters or a
  repeated group holding a repetition or an alternation (``(a+)+``, ``(a|aa)+``:
  linear in RE2J, exponential in Python's engine);
* topics are read at every heartbeat, so a new topic or partition count shows up
  at the next heartbeat (Kafka refreshes on its metadata image);
* no mixed groups: Kafka lets classic members (JoinGroup) join a consumer group
  and converts a classic group with members into a consumer group
  (``group.consumer.migration.policy``); here a consumer group's id refuses
  JoinGroup with INCONSISTENT_GROUP_PROTOCOL while it has members, and a classic
  group with members refuses ConsumerGroupHeartbeat with GROUP_ID_NOT_FOUND (what
  Kafka answers when it cannot convert); an empty group of the other type is
  deleted and replaced, as in Kafka;
* a member fenced while the coordinator still holds it is fenced again when it
  rejoins with epoch 0 under the same member id (Kafka up to 4.2; KAFKA-19233,
  merged in 2026, accepts that rejoin);
* no rack-aware assignment, no client-side assignors, no dynamic group configs;
  besides Kafka's ``group.consumer.max.size``, emulator bounds of 10,000 groups and
  100,000 members in all; the heartbeat interval is 0.5 s by default (Kafka: 5 s) so
  that rebalances settle fast in tests.
"""

from __future__ import annotations

import importlib
import re
import uuid
from collections.abc import Iterable, Sequence
from typing import Any

import attrs

from kclient.emulator.assignors import ASSIGNORS, Assignment, MemberSpec
from kclient.emulator.log import TopicStore
from kclient.emulator.modern_groups import (
    CONSUMER,
    LEAVE_GROUP_MEMBER_EPOCH,
    LEAVE_GROUP_STATIC_MEMBER_EPOCH,
    Coordinator,
    GroupError,
    GroupIds,
    MemberState,
    Owned,
    check_room,
    described_assignment,
    drop_member,
    group_for,
    member_for,
    new_member_id,
    offset_commit_error,
    offset_fetch_error,
    rebalance_timer,
    reconcile,
    subscription_metadata,
)
from kclient.protocol.constants import ErrorCode

__all__ = [
    "ASSIGNING",
    "EMPTY",
    "LEAVE_GROUP_MEMBER_EPOCH",
    "LEAVE_GROUP_STATIC_MEMBER_EPOCH",
    "MAX_REGEX",
    "RECONCILING",
    "STABLE",
    "ConsumerGroup",
    "ConsumerGroupCoordinator",
    "ConsumerGroupSettings",
    "ConsumerMember",
    "regex_problem",
]

Body = dict[str, Any]

EMPTY = "Empty"
ASSIGNING = "Assigning"
RECONCILING = "Reconciling"
STABLE = "Stable"
#: ConsumerGroupHeartbeat version from which the client generates its member id.
CLIENT_GENERATED_MEMBER_ID_VERSION = 1
#: The longest subscription regex the emulator compiles (an emulator bound).
MAX_REGEX = 1000

_sre: Any = importlib.import_module("re._parser")  # the parse tree Python's engine runs
_REPEATS = ("MAX_REPEAT", "MIN_REPEAT", "POSSESSIVE_REPEAT")


def regex_problem(pattern: str) -> str | None:
    """Why a subscription regex is refused (None: it is taken); see the module text."""
    if len(pattern) > MAX_REGEX:
        return f"longer than {MAX_REGEX} characters (an emulator bound)"
    try:
        tree = _sre.parse(pattern)
    except re.error as exc:
        return str(exc)
    return _tree_problem(list(tree), inside_repeat=False)


def _tree_problem(items: list[Any], inside_repeat: bool) -> str | None:
    for op, arg in items:
        name = str(op)
        if name in ("ASSERT", "ASSERT_NOT"):
            return "lookaround is not RE2 syntax"
        if name in ("GROUPREF", "GROUPREF_EXISTS"):
            return "backreferences are not RE2 syntax"
        if name in _REPEATS and arg[1] <= 1:  # x? repeats nothing
            if (found := _tree_problem(list(arg[2]), inside_repeat)) is not None:
                return found
        elif name in _REPEATS or name == "BRANCH":
            if inside_repeat:
                return ("a repeated group holds a repetition or an alternation (exponential "
                        "time in the emulator's engine; an emulator bound)")
            children = [list(arg[2])] if name in _REPEATS else [list(b) for b in arg[1]]
            for child in children:
                if (found := _tree_problem(child, name in _REPEATS)) is not None:
                    return found
        elif name == "SUBPATTERN" and (
                found := _tree_problem(list(arg[3]), inside_repeat)) is not None:
            return found
    return None


@attrs.frozen
class ConsumerGroupSettings:
    """The broker settings of the consumer group coordinator (Kafka's names, in ms)."""

    #: ``group.consumer.session.timeout.ms``.
    session_timeout_ms: int = 45_000
    #: ``group.consumer.heartbeat.interval.ms`` (Kafka: 5000; shortened for tests).
    heartbeat_interval_ms: int = 500
    #: ``group.consumer.assignors``: the first is the default.
    assignors: tuple[str, ...] = ("uniform", "range")
    #: ``group.consumer.max.size``.
    max_size: int = 2**31 - 1
    #: The most consumer groups one emulated cluster keeps (an emulator bound).
    max_groups: int = 10_000
    #: The most members its consumer groups hold in all (an emulator bound).
    max_members: int = 100_000


@attrs.define(eq=False)
class ConsumerMember:
    """A member of a consumer group, as the coordinator keeps it."""

    member_id: str
    instance_id: str | None = None
    rack_id: str | None = None
    client_id: str = ""
    client_host: str = ""
    rebalance_timeout_ms: int = -1
    server_assignor: str | None = None
    subscribed_topic_names: tuple[str, ...] = ()
    subscribed_topic_regex: str | None = None
    member_epoch: int = 0
    previous_member_epoch: int = -1
    state: str = MemberState.STABLE
    assigned: Assignment = attrs.Factory(dict)
    pending_revocation: Assignment = attrs.Factory(dict)
    session_deadline: float = 0.0
    #: When the member must have revoked (None: nothing to revoke), and at which epoch.
    rebalance_deadline: float | None = None
    rebalance_epoch: int = -1

    def subscription(self) -> tuple[tuple[str, ...], str | None]:
        return self.subscribed_topic_names, self.subscribed_topic_regex


@attrs.define(eq=False)
class ConsumerGroup:
    """One consumer group: epochs, members, target assignment and subscribed topics."""

    group_id: str
    group_epoch: int = 0
    assignment_epoch: int = 0
    members: dict[str, ConsumerMember] = attrs.Factory(dict)
    #: instance id -> member id of the static members.
    static: dict[str, str] = attrs.Factory(dict)
    #: member id -> target assignment.
    target: dict[str, Assignment] = attrs.Factory(dict)
    #: Subscribed topic name -> (topic id, partition count) when the epoch was last bumped.
    subscription: dict[str, tuple[uuid.UUID, int]] = attrs.Factory(dict)

    @property
    def state(self) -> str:
        """Empty, Assigning, Reconciling or Stable (Kafka's ``maybeUpdateGroupState``)."""
        if not self.members:
            return EMPTY
        if self.group_epoch > self.assignment_epoch:
            return ASSIGNING
        if any(m.member_epoch != self.assignment_epoch or m.state != MemberState.STABLE
               for m in self.members.values()):
            return RECONCILING
        return STABLE

    def owner_epochs(self, skip: str | None = None) -> dict[tuple[uuid.UUID, int], int]:
        """Each partition some member owns (assigned or still to revoke) -> its epoch."""
        out: dict[tuple[uuid.UUID, int], int] = {}
        for member in self.members.values():
            if member.member_id == skip:
                continue
            for part in (member.assigned, member.pending_revocation):
                for topic, partitions in part.items():
                    for partition in partitions:
                        out[(topic, partition)] = member.member_epoch
        return out


class ConsumerGroupCoordinator(Coordinator[ConsumerGroup]):
    """The consumer groups of one emulated cluster (see the module text).

    ``topics`` is the cluster's partition logs (read for topic ids and partition
    counts); ``group_ids`` answers for the ids other group types hold (None: this
    coordinator is alone).
    """

    def __init__(self, topics: TopicStore, settings: ConsumerGroupSettings | None = None,
                 group_ids: GroupIds | None = None) -> None:
        self.topics = topics
        self.settings = settings or ConsumerGroupSettings()
        self.group_ids = group_ids
        self.groups: dict[str, ConsumerGroup] = {}

    kind = CONSUMER

    # -- ConsumerGroupHeartbeat -------------------------------------------------------------
    def heartbeat(self, now: float, *, version: int, group_id: str, member_id: str,
                  member_epoch: int, instance_id: str | None = None,
                  rack_id: str | None = None, rebalance_timeout_ms: int = -1,
                  subscribed_topic_names: Sequence[str] | None = None,
                  subscribed_topic_regex: str | None = None,
                  server_assignor: str | None = None, owned: Owned | None = None,
                  client_id: str = "", client_host: str = "") -> Body:
        """ConsumerGroupHeartbeat: the response body (``error_code`` NONE or Kafka's error)."""
        try:
            self._validate(version, group_id, member_id, member_epoch, instance_id, rack_id,
                           rebalance_timeout_ms, subscribed_topic_names,
                           subscribed_topic_regex, server_assignor, owned)
            if member_epoch in (LEAVE_GROUP_MEMBER_EPOCH, LEAVE_GROUP_STATIC_MEMBER_EPOCH):
                self._leave(group_id, member_id, instance_id, member_epoch)
                return {"error_code": ErrorCode.NONE, "error_message": None,
                        "member_id": member_id, "member_epoch": member_epoch,
                        "heartbeat_interval_ms": 0, "assignment": None}
            return self._join_or_beat(
                now, group_id, member_id, member_epoch, instance_id, rack_id,
                rebalance_timeout_ms, subscribed_topic_names, subscribed_topic_regex,
                server_assignor, owned, client_id, client_host)
        except GroupError as exc:
            return {"error_code": exc.code, "error_message": str(exc), "member_id": None,
                    "member_epoch": 0, "heartbeat_interval_ms": 0, "assignment": None}

    def _validate(self, version: int, group_id: str, member_id: str, member_epoch: int,
                  instance_id: str | None, rack_id: str | None, rebalance_timeout_ms: int,
                  names: Sequence[str] | None, regex: str | None, assignor: str | None,
                  owned: Owned | None) -> None:
        invalid = ErrorCode.INVALID_REQUEST
        if (version >= CLIENT_GENERATED_MEMBER_ID_VERSION or member_epoch > 0
                or member_epoch == LEAVE_GROUP_MEMBER_EPOCH) and member_id == "":
            raise GroupError(invalid, "MemberId can't be empty.")
        for value, name in ((group_id, "GroupId"), (instance_id, "InstanceId"),
                            (rack_id, "RackId")):
            if value == "":
                raise GroupError(invalid, f"{name} can't be empty.")
        if member_epoch == 0:
            if rebalance_timeout_ms == -1:
                raise GroupError(invalid, "RebalanceTimeoutMs must be provided in first request.")
            if owned is None or len(owned) > 0:
                raise GroupError(invalid, "TopicPartitions must be empty when (re-)joining.")
            if names is None and regex is None:
                raise GroupError(invalid, "Either SubscribedTopicNames or SubscribedTopicRegex "
                                          "must be non-null when (re-)joining.")
        elif member_epoch == LEAVE_GROUP_STATIC_MEMBER_EPOCH:
            if instance_id is None:
                raise GroupError(invalid, "InstanceId can't be null.")
        elif member_epoch < LEAVE_GROUP_STATIC_MEMBER_EPOCH:
            raise GroupError(invalid, "MemberEpoch is invalid.")
        if regex is not None and (problem := regex_problem(regex)) is not None:
            raise GroupError(ErrorCode.INVALID_REGULAR_EXPRESSION,
                             f"SubscribedTopicRegex `{regex}` is not a valid regular "
                             f"expression: {problem}.")
        if assignor is not None and assignor not in self.settings.assignors:
            raise GroupError(ErrorCode.UNSUPPORTED_ASSIGNOR,
                             f"ServerAssignor {assignor} is not supported. Supported assignors: "
                             f"{', '.join(self.settings.assignors)}.")

    def _group(self, group_id: str, create: bool) -> ConsumerGroup:
        return group_for(self.groups, group_id, kind=CONSUMER, create=create,
                         group_ids=self.group_ids, make=ConsumerGroup,
                         max_groups=self.settings.max_groups)

    def _join_or_beat(self, now: float, group_id: str, member_id: str, member_epoch: int,
                      instance_id: str | None, rack_id: str | None, rebalance_timeout_ms: int,
                      names: Sequence[str] | None, regex: str | None, assignor: str | None,
                      owned: Owned | None, client_id: str, client_host: str) -> Body:
        group = self._group(group_id, create=member_epoch == 0)
        if not member_id:
            member_id = new_member_id()
        if member_id not in group.members and (instance_id is None
                                               or instance_id not in group.static):
            check_room(self.groups, group, kind=CONSUMER, max_size=self.settings.max_size,
                       max_members=self.settings.max_members)
        member, replaced = member_for(group, member_id, member_epoch, instance_id, owned,
                                     kind=CONSUMER, make=ConsumerMember,
                                     assigned=lambda m: m.assigned)
        old_subscription = member.subscription()
        before = dict(member.assigned)
        updated = attrs.evolve(member)
        if instance_id is not None:
            updated.instance_id = instance_id
        if rack_id is not None:
            updated.rack_id = rack_id
        if rebalance_timeout_ms != -1:
            updated.rebalance_timeout_ms = rebalance_timeout_ms
        if assignor is not None:
            updated.server_assignor = assignor
        if names is not None:
            updated.subscribed_topic_names = tuple(names)
        if regex is not None:
            updated.subscribed_topic_regex = regex or None
        updated.client_id, updated.client_host = client_id, client_host
        if replaced is not None:  # the new static member inherits the old one's target
            inherited = group.target.pop(replaced, None)
            drop_member(group, replaced)
            if inherited is not None:
                group.target[updated.member_id] = inherited
        group.members[updated.member_id] = updated
        if updated.instance_id is not None:
            group.static[updated.instance_id] = updated.member_id
        bump = old_subscription != updated.subscription()
        metadata = self._subscription_metadata(group)
        if metadata != group.subscription:
            group.subscription = metadata
            bump = True
        if bump:
            group.group_epoch += 1
        if group.group_epoch > group.assignment_epoch:
            self._assign(group)
        self._reconcile(group, updated, now, owned)
        updated.session_deadline = now + self.settings.session_timeout_ms / 1000
        full = member_epoch == 0 or (rebalance_timeout_ms != -1 and owned is not None and (
            names is not None or regex is not None))
        body: Body = {"error_code": ErrorCode.NONE, "error_message": None,
                      "member_id": updated.member_id, "member_epoch": updated.member_epoch,
                      "heartbeat_interval_ms": self.settings.heartbeat_interval_ms,
                      "assignment": None}
        if full or updated.assigned != before:
            body["assignment"] = {"topic_partitions": [
                {"topic_id": topic, "partitions": sorted(parts)}
                for topic, parts in sorted(updated.assigned.items(), key=lambda i: str(i[0]))]}
        return body

    # -- subscriptions and assignment ------------------------------------------------------
    def _resolved(self, member: ConsumerMember) -> set[str]:
        names = {n for n in member.subscribed_topic_names if n in self.topics.by_name}
        if member.subscribed_topic_regex:
            pattern = re.compile(member.subscribed_topic_regex)
            names.update(n for n in self.topics.by_name if pattern.fullmatch(n))
        return names

    def _subscription_metadata(self, group: ConsumerGroup) -> dict[str, tuple[uuid.UUID, int]]:
        names: set[str] = set()
        for member in group.members.values():
            names |= self._resolved(member)
        return subscription_metadata(self.topics, names)

    def _assignor(self, group: ConsumerGroup) -> str:
        """The assignor most members ask for (Kafka's ``computePreferredServerAssignor``),
        else the default."""
        chosen = sorted(m.server_assignor for m in group.members.values() if m.server_assignor)
        return max(chosen, key=chosen.count) if chosen else self.settings.assignors[0]

    def _assign(self, group: ConsumerGroup) -> None:
        name = self._assignor(group)
        specs = []
        for member in sorted(group.members.values(), key=lambda m: m.member_id):
            ids = frozenset(self.topics.by_name[n].topic_id for n in self._resolved(member))
            specs.append(MemberSpec(member.member_id, ids, group.target.get(member.member_id, {}),
                                    member.instance_id))
        counts = {tid: count for tid, count in group.subscription.values()}
        group.target = ASSIGNORS[name](specs, counts)
        group.assignment_epoch = group.group_epoch

    def _reconcile(self, group: ConsumerGroup, member: ConsumerMember, now: float,
                   owned: Owned | None) -> None:
        """Move ``member`` towards its target (Kafka's ``maybeReconcile``); a member that
        must revoke gets its rebalance timeout."""
        taken = group.owner_epochs(skip=member.member_id)
        moved = reconcile(member.state, member.member_epoch, member.assigned,
                          member.pending_revocation, group.target.get(member.member_id, {}),
                          group.assignment_epoch, owned, taken)
        if moved is not None:
            member.previous_member_epoch = member.member_epoch
            member.state, member.member_epoch = moved.state, moved.member_epoch
            member.assigned, member.pending_revocation = moved.assigned, moved.pending_revocation
        rebalance_timer(member, now)

    # -- leaving and fencing ---------------------------------------------------------------
    def _fence(self, group: ConsumerGroup, member: ConsumerMember) -> None:
        """Remove ``member`` and bump the group epoch (Kafka's ``consumerGroupFenceMember``)."""
        drop_member(group, member.member_id)
        group.subscription = self._subscription_metadata(group)
        group.group_epoch += 1

    # -- ConsumerGroupDescribe ---------------------------------------------------------------
    def describe(self, group_ids: Iterable[str], version: int) -> list[Body]:
        """ConsumerGroupDescribe: one described group per id."""
        return self._describe(group_ids, {"assignor_name": ""}, lambda group: {
            "assignor_name": self._assignor(group),
            "members": [self._described(group, m, version) for m in group.members.values()]})

    def _described(self, group: ConsumerGroup, member: ConsumerMember, version: int) -> Body:
        described: Body = {"member_id": member.member_id, "instance_id": member.instance_id,
                "rack_id": member.rack_id, "member_epoch": member.member_epoch,
                "client_id": member.client_id, "client_host": member.client_host,
                "subscribed_topic_names": list(member.subscribed_topic_names),
                "subscribed_topic_regex": member.subscribed_topic_regex,
                "assignment": described_assignment(self.topics, member.assigned),
                "target_assignment": described_assignment(
                    self.topics, group.target.get(member.member_id, {}))}
        if version >= 1:
            described["member_type"] = 1  # a member of the consumer protocol (0: classic)
        return described

    # -- offsets of consumer-group members --------------------------------------------------
    def commit_error(self, group_id: str, member_id: str, instance_id: str | None,
                     member_epoch: int, version: int, *, transactional: bool = False) -> int:
        """The error of an offset commit to consumer group ``group_id``."""
        return offset_commit_error(self.groups[group_id].members, member_id, member_epoch,
                                   version, transactional=transactional)

    def fetch_error(self, group_id: str, member_id: str | None, member_epoch: int) -> int:
        """The error of an OffsetFetch v9+ naming a member of ``group_id``."""
        return offset_fetch_error(self.groups[group_id].members, member_id, member_epoch)
