"""The classic group coordinator (JoinGroup, SyncGroup, Heartbeat, LeaveGroup), pure.

A state machine in the manner of h11: no sockets, no event loop and no clock of its
own.  Every call takes ``now`` (seconds, any monotonic origin); a request that Kafka
answers later (a JoinGroup waiting for the rebalance, a follower's SyncGroup waiting
for the leader's) is *parked* under a reference the caller chooses and its answer
appears in :meth:`ClassicGroupCoordinator.drain` once the group moves on;
:meth:`~ClassicGroupCoordinator.next_deadline` says when :meth:`~ClassicGroupCoordinator.tick`
must run next (initial rebalance delay, rebalance and sync timeouts, session and
pending-member expiry).  The asyncio side (:mod:`kclient.emulator.runtime`) carries
the waiting requests and the time.

The rules follow Kafka's classic group handling in the group coordinator
(``group-coordinator/.../GroupMetadataManager.java``: ``classicGroupJoin*``,
``completeClassicGroupJoin``, ``prepareRebalance``, ``classicGroupSync*``,
``classicGroupHeartbeat*``, ``classicGroupLeave*``, ``expirePendingSync``,
``expireClassicGroupMemberHeartbeat``; ``classic/ClassicGroup.java``:
``supportsProtocols``, ``selectProtocol``, ``validateMember``,
``validateOffsetCommit``), with Kafka's defaults for ``group.min.session.timeout.ms``
(6 s), ``group.max.session.timeout.ms`` (30 min) and the new-member join timeout
(5 min); ``group.initial.rebalance.delay.ms`` is 3 s in Kafka and 0.1 s here by
default, so that tests do not wait.  What it leaves out: group size limits
(``group.max.size``), upgrades of a classic group to a consumer group, and the
records Kafka writes to ``__consumer_offsets``.
"""

from __future__ import annotations

import heapq
import uuid
from collections.abc import Hashable, Iterable, Sequence
from typing import Any

import attrs

from kclient.emulator.modern_groups import CLASSIC, GroupIds
from kclient.protocol.constants import ErrorCode

__all__ = [
    "COMPLETING_REBALANCE",
    "EMPTY",
    "PREPARING_REBALANCE",
    "STABLE",
    "ClassicGroup",
    "ClassicGroupCoordinator",
    "ClassicMember",
    "GroupSettings",
]

Body = dict[str, Any]
#: A parked request's handle, chosen by the caller (any hashable value).
Ref = Hashable

EMPTY = "Empty"
PREPARING_REBALANCE = "PreparingRebalance"
COMPLETING_REBALANCE = "CompletingRebalance"
STABLE = "Stable"


@attrs.frozen
class GroupSettings:
    """The broker settings the group coordinators use (Kafka's names, in milliseconds)."""

    #: ``group.initial.rebalance.delay.ms`` (Kafka: 3000; shortened for tests).
    initial_rebalance_delay_ms: int = 100
    #: ``group.min.session.timeout.ms``.
    min_session_timeout_ms: int = 6000
    #: ``group.max.session.timeout.ms``.
    max_session_timeout_ms: int = 1_800_000
    #: How long a new member may wait for its first join to complete (Kafka: 5 min).
    new_member_join_timeout_ms: int = 300_000
    #: The most groups with members one emulated cluster keeps (an emulator bound).
    max_groups: int = 10_000


@attrs.define(eq=False)
class ClassicMember:
    """A member of a classic group."""

    member_id: str
    instance_id: str | None
    client_id: str
    session_timeout_ms: int
    rebalance_timeout_ms: int
    protocol_type: str
    protocols: list[tuple[str, bytes]]
    deadline: float
    assignment: bytes = b""
    is_new: bool = True
    #: The parked JoinGroup / SyncGroup of this member (None: none waiting).
    join_ref: Ref | None = None
    sync_ref: Ref | None = None
    joined: bool = False  # awaiting a join response in this rebalance
    syncing: bool = False  # awaiting a sync response

    def metadata(self, protocol: str | None) -> bytes:
        """The member's metadata for ``protocol``."""
        return dict(self.protocols).get(protocol or "", b"")

    def vote(self, candidates: set[str]) -> str:
        """The member's preferred protocol among ``candidates``."""
        return next(name for name, _ in self.protocols if name in candidates)


@attrs.define(eq=False)
class ClassicGroup:
    """One classic group: its state, generation, protocol, leader and members."""

    group_id: str
    state: str = EMPTY
    previous_state: str = EMPTY
    generation: int = 0
    protocol_type: str | None = None
    protocol: str | None = None
    leader: str | None = None
    members: dict[str, ClassicMember] = attrs.Factory(dict)
    #: instance id -> member id of the static members.
    static: dict[str, str] = attrs.Factory(dict)
    #: Member ids handed out with MEMBER_ID_REQUIRED, not yet joined -> expiry time.
    pending: dict[str, float] = attrs.Factory(dict)
    #: Members that have not sent SyncGroup since the join completed.
    pending_sync: set[str] = attrs.Factory(set)
    new_member_added: bool = False
    join_deadline: float | None = None
    initial_remaining_ms: int | None = None  # set while the initial delay runs
    sync_deadline: float | None = None

    def transition(self, state: str) -> None:
        self.previous_state, self.state = self.state, state

    @property
    def rebalance_timeout_ms(self) -> int:
        return max((m.rebalance_timeout_ms for m in self.members.values()), default=0)

    def all_joined(self) -> bool:
        return all(m.joined for m in self.members.values()) and not self.pending

    def supports(self, protocol_type: str, names: set[str]) -> bool:
        if self.state == EMPTY:
            return bool(protocol_type) and bool(names)
        return self.protocol_type == protocol_type and any(
            all(any(n == name for n, _ in m.protocols) for m in self.members.values())
            for name in names)

    def select_protocol(self) -> str:
        candidates = set.intersection(*({n for n, _ in m.protocols}
                                        for m in self.members.values()))
        votes: dict[str, int] = {}
        for member in self.members.values():
            choice = member.vote(candidates)
            votes[choice] = votes.get(choice, 0) + 1
        return max(votes, key=lambda name: votes[name])

    def join_answer(self, member: ClassicMember, *, with_members: bool) -> Body:
        listed = [{"member_id": m.member_id, "group_instance_id": m.instance_id,
                   "metadata": m.metadata(self.protocol)}
                  for m in self.members.values()] if with_members else []
        return {"error_code": ErrorCode.NONE, "generation_id": self.generation,
                "protocol_type": self.protocol_type, "protocol_name": self.protocol,
                "leader": self.leader or "", "member_id": member.member_id,
                "members": listed, "skip_assignment": False}


def _error(code: int, member_id: str = "") -> Body:
    return {"error_code": code, "member_id": member_id, "generation_id": -1,
            "protocol_type": None, "protocol_name": None, "leader": "", "members": []}


class ClassicGroupCoordinator:
    """The classic groups of one emulated cluster (see the module text)."""

    def __init__(self, settings: GroupSettings | None = None,
                 group_ids: GroupIds | None = None) -> None:
        self.settings = settings or GroupSettings()
        #: Answers for the ids other group types hold (None: classic groups only).
        self.group_ids = group_ids
        self.groups: dict[str, ClassicGroup] = {}
        self._outbox: list[tuple[Ref, Body]] = []
        # Each group's earliest deadline, and a heap of (deadline, group id) holding
        # them (entries that no longer match ``_due`` are stale and skipped).
        self._due: dict[str, float] = {}
        self._heap: list[tuple[float, str]] = []

    # -- the caller's side -------------------------------------------------------------
    def drain(self) -> list[tuple[Ref, Body]]:
        """The answers of parked requests that are ready, oldest first (then forgotten)."""
        out, self._outbox = self._outbox, []
        return out

    def next_deadline(self) -> float | None:
        """When :meth:`tick` must run next (None: no timer is set)."""
        heap = self._heap
        while heap and self._due.get(heap[0][1]) != heap[0][0]:
            heapq.heappop(heap)
        return heap[0][0] if heap else None

    def tick(self, now: float) -> None:
        """Run every timer that is due at ``now``."""
        due: list[str] = []
        while (at := self.next_deadline()) is not None and at <= now:
            _, group_id = heapq.heappop(self._heap)
            del self._due[group_id]
            due.append(group_id)
        for group_id in due:
            group = self.groups.get(group_id)
            if group is not None:
                self._tick_group(group, now)
                self._touch(group)

    def _touch(self, group: ClassicGroup) -> None:
        """Record ``group``'s earliest deadline after a change."""
        times = [t for t in (group.join_deadline, group.sync_deadline, *group.pending.values(),
                             *(m.deadline for m in group.members.values())) if t is not None]
        at = min(times, default=None)
        if at is None:
            self._due.pop(group.group_id, None)
        elif self._due.get(group.group_id) != at:
            self._due[group.group_id] = at
            heapq.heappush(self._heap, (at, group.group_id))

    def _tick_group(self, group: ClassicGroup, now: float) -> None:
        for member_id, expiry in list(group.pending.items()):
            if expiry <= now:
                del group.pending[member_id]
                if group.state == PREPARING_REBALANCE and group.all_joined():
                    self._complete_join(group, now)
        if group.join_deadline is not None and group.join_deadline <= now:
            group.join_deadline = None
            remaining = group.initial_remaining_ms
            if remaining is not None and group.new_member_added and remaining > 0:
                group.new_member_added = False
                delay = min(self.settings.initial_rebalance_delay_ms, remaining)
                group.initial_remaining_ms = max(remaining - delay, 0)
                group.join_deadline = now + delay / 1000
            else:
                group.initial_remaining_ms = None
                self._complete_join(group, now)
        if group.sync_deadline is not None and group.sync_deadline <= now:
            group.sync_deadline = None
            if group.state in (COMPLETING_REBALANCE, STABLE) and group.pending_sync:
                for member_id in list(group.pending_sync):
                    self._remove(group, group.members[member_id])
                self._prepare_rebalance(group, now)
        for member in list(group.members.values()):
            if member.member_id in group.members and member.deadline <= now:
                if not member.is_new and (member.joined or member.syncing):
                    member.deadline = now + member.session_timeout_ms / 1000
                else:
                    self._remove_and_update(group, member, now)

    # -- the requests: each records its group's deadlines when it is done -------------------
    def join(self, now: float, ref: Ref, *, group_id: str, member_id: str,
             instance_id: str | None, client_id: str, protocol_type: str,
             protocols: Sequence[tuple[str, bytes]], session_timeout_ms: int,
             rebalance_timeout_ms: int, require_known_member: bool) -> Body | None:
        """JoinGroup: the answer now, or None when parked under ``ref``."""
        try:
            return self._join(now, ref, group_id, member_id, instance_id, client_id,
                              protocol_type, protocols, session_timeout_ms,
                              rebalance_timeout_ms, require_known_member)
        finally:
            self._touched(group_id)

    def sync(self, now: float, ref: Ref, *, group_id: str, member_id: str,
             instance_id: str | None, generation: int, protocol_type: str | None,
             protocol_name: str | None, assignments: dict[str, bytes]) -> Body | None:
        """SyncGroup: the answer now, or None when parked under ``ref``."""
        try:
            return self._sync(now, ref, group_id, member_id, instance_id, generation,
                              protocol_type, protocol_name, assignments)
        finally:
            self._touched(group_id)

    def heartbeat(self, now: float, *, group_id: str, member_id: str, instance_id: str | None,
                  generation: int) -> int:
        """Heartbeat: the error code."""
        try:
            return self._heartbeat(now, group_id, member_id, instance_id, generation)
        finally:
            self._touched(group_id)

    def leave(self, now: float, group_id: str,
              members: Iterable[tuple[str, str | None]]) -> tuple[int, list[int]]:
        """LeaveGroup of ``(member id, instance id)`` pairs: (top error, one code each)."""
        try:
            return self._leave(now, group_id, members)
        finally:
            self._touched(group_id)

    def commit_error(self, now: float, group_id: str, member_id: str, instance_id: str | None,
                     generation: int, *, transactional: bool = False) -> int:
        """The error of an offset commit to ``group_id`` (Kafka's ``validateOffsetCommit``)."""
        try:
            return self._commit_error(now, group_id, member_id, instance_id, generation,
                                      transactional=transactional)
        finally:
            self._touched(group_id)

    def _touched(self, group_id: str) -> None:
        group = self.groups.get(group_id)
        if group is not None:
            self._touch(group)

    # -- JoinGroup ----------------------------------------------------------------------
    def _join(self, now: float, ref: Ref, group_id: str, member_id: str,
              instance_id: str | None, client_id: str, protocol_type: str,
              protocols: Sequence[tuple[str, bytes]], session_timeout_ms: int,
              rebalance_timeout_ms: int, require_known_member: bool) -> Body | None:
        settings = self.settings
        if not group_id:
            return _error(ErrorCode.INVALID_GROUP_ID, member_id)
        if group_id not in self.groups and self.group_ids is not None and not (
                self.group_ids.claim(group_id, CLASSIC)):
            return _error(ErrorCode.INCONSISTENT_GROUP_PROTOCOL)  # a group of another type
        if not (settings.min_session_timeout_ms <= session_timeout_ms
                <= settings.max_session_timeout_ms):
            return _error(ErrorCode.INVALID_SESSION_TIMEOUT, member_id)
        group = self.groups.get(group_id)
        if group is None:
            if member_id:
                return _error(ErrorCode.UNKNOWN_MEMBER_ID, member_id)
            if len(self.groups) >= settings.max_groups:
                # Kafka drops empty groups on its retention check; here when room is needed.
                for gone in [g.group_id for g in self.groups.values()
                             if g.state == EMPTY and not g.members and not g.pending]:
                    del self.groups[gone]
            if len(self.groups) >= settings.max_groups:
                return _error(ErrorCode.COORDINATOR_NOT_AVAILABLE, member_id)
            group = self.groups[group_id] = ClassicGroup(group_id)
        names = {name for name, _ in protocols}
        if not group.supports(protocol_type, names):
            return _error(ErrorCode.INCONSISTENT_GROUP_PROTOCOL, member_id)
        request = (client_id, protocol_type, list(protocols), session_timeout_ms,
                   rebalance_timeout_ms)
        if not member_id:
            new_id = f"{instance_id or client_id}-{uuid.uuid4()}"
            if instance_id is not None:
                existing = group.static.get(instance_id)
                if existing is not None:
                    return self._replace_static(group, now, ref, existing, new_id, instance_id,
                                                request)
                return self._add_member(group, now, ref, new_id, instance_id, request)
            if require_known_member:
                group.pending[new_id] = now + session_timeout_ms / 1000
                return _error(ErrorCode.MEMBER_ID_REQUIRED, new_id)
            return self._add_member(group, now, ref, new_id, None, request)
        if member_id in group.pending:
            del group.pending[member_id]
            return self._add_member(group, now, ref, member_id, instance_id, request)
        code = self._validate_member(group, member_id, instance_id)
        if code != ErrorCode.NONE:
            return _error(code, member_id)
        member = group.members[member_id]
        same = [(n, bytes(m)) for n, m in protocols] == member.protocols
        if group.state == PREPARING_REBALANCE:
            return self._update_member(group, now, ref, member, request)
        if group.state == COMPLETING_REBALANCE:
            if same:
                return group.join_answer(member, with_members=member_id == group.leader)
            return self._update_member(group, now, ref, member, request)
        if group.state == STABLE:
            if member_id == group.leader or not same:
                return self._update_member(group, now, ref, member, request)
            return group.join_answer(member, with_members=False)
        return _error(ErrorCode.UNKNOWN_MEMBER_ID, member_id)

    @staticmethod
    def _validate_member(group: ClassicGroup, member_id: str, instance_id: str | None) -> int:
        if instance_id is not None:
            existing = group.static.get(instance_id)
            if existing is None:
                return ErrorCode.UNKNOWN_MEMBER_ID
            if existing != member_id:
                return ErrorCode.FENCED_INSTANCE_ID
        return ErrorCode.NONE if member_id in group.members else ErrorCode.UNKNOWN_MEMBER_ID

    def _add_member(self, group: ClassicGroup, now: float, ref: Ref, member_id: str,
                    instance_id: str | None, request: tuple[Any, ...]) -> Body | None:
        client_id, protocol_type, protocols, session, rebalance = request
        member = ClassicMember(
            member_id, instance_id, client_id, session, rebalance, protocol_type,
            [(n, bytes(m)) for n, m in protocols],
            now + self.settings.new_member_join_timeout_ms / 1000)
        if group.state == PREPARING_REBALANCE and group.previous_state == EMPTY:
            group.new_member_added = True
        group.members[member_id] = member
        if instance_id is not None:
            group.static[instance_id] = member_id
        if group.leader is None:
            group.leader = member_id
        if group.protocol_type is None or group.state == EMPTY:
            group.protocol_type = protocol_type
        member.join_ref, member.joined = ref, True
        self._rebalance_or_complete(group, now)
        return self._take_answer(ref)

    def _update_member(self, group: ClassicGroup, now: float, ref: Ref, member: ClassicMember,
                       request: tuple[Any, ...]) -> Body | None:
        _client, _type, protocols, session, rebalance = request
        member.protocols = [(n, bytes(m)) for n, m in protocols]
        member.session_timeout_ms, member.rebalance_timeout_ms = session, rebalance
        if member.join_ref is not None and member.join_ref != ref:
            self._outbox.append((member.join_ref, _error(ErrorCode.UNKNOWN_MEMBER_ID,
                                                          member.member_id)))
        member.join_ref, member.joined = ref, True
        self._rebalance_or_complete(group, now)
        return self._take_answer(ref)

    def _replace_static(self, group: ClassicGroup, now: float, ref: Ref, old_id: str,
                        new_id: str, instance_id: str, request: tuple[Any, ...]) -> Body | None:
        old = group.members.pop(old_id)
        for parked, code in ((old.join_ref, ErrorCode.FENCED_INSTANCE_ID),
                             (old.sync_ref, ErrorCode.FENCED_INSTANCE_ID)):
            if parked is not None:
                self._outbox.append((parked, _error(code, old_id)))
        old.join_ref = old.sync_ref = None
        old.member_id = new_id
        group.members[new_id] = old
        group.static[instance_id] = new_id
        group.pending_sync.discard(old_id)
        if group.leader == old_id:
            group.leader = new_id
        old.deadline = now + old.session_timeout_ms / 1000
        previous = group.protocol
        self._update_fields(old, request)
        if group.state == STABLE:
            if group.select_protocol() == previous:
                return group.join_answer(old, with_members=group.leader == new_id)
            old.join_ref, old.joined = ref, True
            self._rebalance_or_complete(group, now)
            return self._take_answer(ref)
        old.join_ref, old.joined = ref, True
        if group.state == COMPLETING_REBALANCE:
            self._prepare_rebalance(group, now)
        elif group.state == PREPARING_REBALANCE and group.all_joined():
            self._complete_join(group, now)
        return self._take_answer(ref)

    @staticmethod
    def _update_fields(member: ClassicMember, request: tuple[Any, ...]) -> None:
        _client, _type, protocols, session, rebalance = request
        member.protocols = [(n, bytes(m)) for n, m in protocols]
        member.session_timeout_ms, member.rebalance_timeout_ms = session, rebalance

    def _take_answer(self, ref: Ref) -> Body | None:
        """The answer for ``ref`` if the call that parked it already produced it."""
        for index, (parked, body) in enumerate(self._outbox):
            if parked == ref:
                del self._outbox[index]
                return body
        return None

    def _rebalance_or_complete(self, group: ClassicGroup, now: float) -> None:
        if group.state in (EMPTY, STABLE, COMPLETING_REBALANCE):
            self._prepare_rebalance(group, now)
        elif (group.state == PREPARING_REBALANCE and group.previous_state != EMPTY
              and group.all_joined()):
            self._complete_join(group, now)

    def _prepare_rebalance(self, group: ClassicGroup, now: float) -> None:
        if group.state == COMPLETING_REBALANCE:
            self._propagate(group, now, ErrorCode.REBALANCE_IN_PROGRESS, reset=True)
        group.pending_sync.clear()
        group.sync_deadline = None
        initial = group.state == EMPTY
        group.transition(PREPARING_REBALANCE)
        if initial:
            delay = self.settings.initial_rebalance_delay_ms
            group.initial_remaining_ms = max(group.rebalance_timeout_ms - delay, 0)
            group.join_deadline = now + delay / 1000
        elif group.all_joined():
            self._complete_join(group, now)
        else:
            group.join_deadline = now + group.rebalance_timeout_ms / 1000

    def _complete_join(self, group: ClassicGroup, now: float) -> None:
        group.join_deadline = None
        group.initial_remaining_ms = None
        for member in [m for m in group.members.values()
                       if not m.joined and m.instance_id is None]:
            self._remove(group, member)
        if group.leader is not None and group.leader in group.members and not (
                group.members[group.leader].joined):
            joined = next((m.member_id for m in group.members.values() if m.joined), None)
            if joined is None:
                group.join_deadline = now + group.rebalance_timeout_ms / 1000
                return
            group.leader = joined
        group.generation += 1
        group.pending_sync.clear()
        if not group.members:
            group.protocol, group.leader = None, None
            group.transition(EMPTY)
            return
        group.protocol = group.select_protocol()
        group.transition(COMPLETING_REBALANCE)
        for member in group.members.values():
            answer = group.join_answer(member, with_members=member.member_id == group.leader)
            if member.join_ref is not None:
                self._outbox.append((member.join_ref, answer))
            member.join_ref, member.joined, member.is_new = None, False, False
            member.deadline = now + member.session_timeout_ms / 1000
            group.pending_sync.add(member.member_id)
        group.sync_deadline = now + group.rebalance_timeout_ms / 1000

    def _propagate(self, group: ClassicGroup, now: float, code: int, *,
                   reset: bool = False) -> None:
        """Answer the parked SyncGroups; a member answered gets a new session deadline."""
        ok = code == ErrorCode.NONE
        for member in group.members.values():
            if reset:
                member.assignment = b""
            if member.sync_ref is not None:
                self._outbox.append((member.sync_ref, {
                    "error_code": code, "assignment": member.assignment,
                    "protocol_type": group.protocol_type if ok else None,
                    "protocol_name": group.protocol if ok else None}))
                member.deadline = now + member.session_timeout_ms / 1000
            member.sync_ref, member.syncing = None, False

    def _remove(self, group: ClassicGroup, member: ClassicMember) -> None:
        group.members.pop(member.member_id, None)
        group.pending_sync.discard(member.member_id)
        if member.instance_id is not None and group.static.get(member.instance_id) == (
                member.member_id):
            del group.static[member.instance_id]
        for parked in (member.join_ref, member.sync_ref):
            if parked is not None:
                self._outbox.append((parked, _error(ErrorCode.UNKNOWN_MEMBER_ID,
                                                    member.member_id)))
        member.join_ref = member.sync_ref = None
        if group.leader == member.member_id:
            group.leader = next(iter(group.members), None)

    def _remove_and_update(self, group: ClassicGroup, member: ClassicMember,
                           now: float) -> None:
        self._remove(group, member)
        if group.state in (STABLE, COMPLETING_REBALANCE):
            self._prepare_rebalance(group, now)
        elif group.state == PREPARING_REBALANCE and group.all_joined():
            self._complete_join(group, now)

    # -- SyncGroup / Heartbeat / LeaveGroup --------------------------------------------------
    def _sync(self, now: float, ref: Ref, group_id: str, member_id: str,
              instance_id: str | None, generation: int, protocol_type: str | None,
              protocol_name: str | None, assignments: dict[str, bytes]) -> Body | None:
        group = self.groups.get(group_id)
        if group is None or not group.members:
            return {"error_code": ErrorCode.UNKNOWN_MEMBER_ID, "assignment": b""}
        code = self._validate_member(group, member_id, instance_id)
        if code == ErrorCode.NONE and generation != group.generation:
            code = ErrorCode.ILLEGAL_GENERATION
        if code == ErrorCode.NONE and (
                (protocol_type is not None and protocol_type != group.protocol_type)
                or (protocol_name is not None and protocol_name != group.protocol)):
            code = ErrorCode.INCONSISTENT_GROUP_PROTOCOL
        if code == ErrorCode.NONE and group.state == PREPARING_REBALANCE:
            code = ErrorCode.REBALANCE_IN_PROGRESS
        if code != ErrorCode.NONE:
            return {"error_code": code, "assignment": b""}
        member = group.members[member_id]
        member.deadline = now + member.session_timeout_ms / 1000
        group.pending_sync.discard(member_id)
        if not group.pending_sync:
            group.sync_deadline = None
        if group.state == STABLE:
            return {"error_code": ErrorCode.NONE, "assignment": member.assignment,
                    "protocol_type": group.protocol_type, "protocol_name": group.protocol}
        member.sync_ref, member.syncing = ref, True
        if member_id == group.leader:
            for other in group.members.values():
                other.assignment = bytes(assignments.get(other.member_id, b""))
            self._propagate(group, now, ErrorCode.NONE)
            group.transition(STABLE)
        return self._take_answer(ref)

    def _heartbeat(self, now: float, group_id: str, member_id: str, instance_id: str | None,
                   generation: int) -> int:
        group = self.groups.get(group_id)
        if group is None:
            return ErrorCode.UNKNOWN_MEMBER_ID
        code = self._validate_member(group, member_id, instance_id)
        if code != ErrorCode.NONE:
            return code
        if generation != group.generation:
            return ErrorCode.ILLEGAL_GENERATION
        member = group.members[member_id]
        if group.state == EMPTY:
            return ErrorCode.UNKNOWN_MEMBER_ID
        member.deadline = now + member.session_timeout_ms / 1000
        if group.state == PREPARING_REBALANCE:
            return ErrorCode.REBALANCE_IN_PROGRESS
        return ErrorCode.NONE

    def _leave(self, now: float, group_id: str,
               members: Iterable[tuple[str, str | None]]) -> tuple[int, list[int]]:
        group = self.groups.get(group_id)
        if group is None:
            return ErrorCode.UNKNOWN_MEMBER_ID, [ErrorCode.UNKNOWN_MEMBER_ID for _ in members]
        codes: list[int] = []
        left = False
        for member_id, instance_id in members:
            if instance_id is not None:
                existing = group.static.get(instance_id)
                if existing is None:
                    codes.append(ErrorCode.UNKNOWN_MEMBER_ID)
                    continue
                if member_id and existing != member_id:
                    codes.append(ErrorCode.FENCED_INSTANCE_ID)
                    continue
                member_id = existing
            if member_id in group.pending:
                del group.pending[member_id]
                codes.append(ErrorCode.NONE)
                left = True
                continue
            member = group.members.get(member_id)
            if member is None:
                codes.append(ErrorCode.UNKNOWN_MEMBER_ID)
                continue
            self._remove(group, member)
            codes.append(ErrorCode.NONE)
            left = True
        if left:
            if group.state in (STABLE, COMPLETING_REBALANCE):
                self._prepare_rebalance(group, now)
            elif group.state == PREPARING_REBALANCE and group.all_joined():
                self._complete_join(group, now)
        return ErrorCode.NONE, codes

    def _commit_error(self, now: float, group_id: str, member_id: str,
                      instance_id: str | None, generation: int, *,
                      transactional: bool = False) -> int:
        group = self.groups.get(group_id)
        if group is None:
            return ErrorCode.NONE if generation < 0 else ErrorCode.ILLEGAL_GENERATION
        if generation < 0 and group.state == EMPTY:
            return ErrorCode.NONE
        if generation >= 0 or member_id or instance_id is not None:
            code = self._validate_member(group, member_id, instance_id)
            if code != ErrorCode.NONE:
                return code
            if generation != group.generation:
                return ErrorCode.ILLEGAL_GENERATION
        elif not transactional and group.state != EMPTY:
            return ErrorCode.UNKNOWN_MEMBER_ID
        if not transactional and group.state == COMPLETING_REBALANCE:
            return ErrorCode.REBALANCE_IN_PROGRESS
        member = group.members.get(member_id)
        if member is not None:
            member.deadline = max(member.deadline, now + member.session_timeout_ms / 1000)
        return ErrorCode.NONE
