"""What the emulator's KIP-848-style group coordinators share, pure.

Kafka's consumer, share and streams groups (``group-coordinator/.../modern/``) are
all "modern" groups: members heartbeat with a member epoch, the coordinator keeps a
group epoch and computes assignments itself, and one group id belongs to one group
type.  This module holds the pieces the three coordinators of the emulator share:

* :class:`GroupError`, the refusal a coordinator answers with (Kafka's
  ``ApiException``: an error code and its message);
* :func:`new_member_id`, a member id as Kafka makes one;
* :class:`GroupIds`, what a coordinator asks the cluster about the other group
  types (which type holds an id; may a new group take it), because Kafka keeps
  every type of group in one map;
* subscription helpers: the existing topics a subscription names, their ids and
  partition counts, and an assignment as describe responses list it;
* the member-epoch check of a heartbeat (Kafka's ``throwIf*MemberEpochIsInvalid``);
* :func:`reconcile`, Kafka's ``CurrentAssignmentBuilder``: how a member moves towards
  its target assignment, revoking before anyone else may take what it gives up (the
  consumer groups' partitions and the streams groups' active tasks alike);
* the checks of an offset commit or fetch by a member (``validateOffsetCommit``,
  ``validateOffsetFetch`` of consumer and streams groups);
* :class:`Coordinator`, what the three coordinators share: the timers of their
  members (session and rebalance timeouts), describing groups, and (consumer and
  streams groups) finding the member a heartbeat speaks for, static members and
  leaving.
"""

from __future__ import annotations

import base64
import uuid
from collections.abc import Callable, Hashable, Iterable, Mapping, MutableMapping, Sequence
from typing import Any, Generic, Protocol, TypeVar

import attrs

from kclient.emulator.log import TopicStore
from kclient.protocol.constants import ErrorCode

__all__ = [
    "CLASSIC",
    "CONSUMER",
    "LEAVE_GROUP_MEMBER_EPOCH",
    "LEAVE_GROUP_STATIC_MEMBER_EPOCH",
    "SHARE",
    "STREAMS",
    "Coordinator",
    "GroupError",
    "GroupIds",
    "MemberState",
    "Reconciled",
    "check_member_epoch",
    "check_room",
    "described_assignment",
    "drop_member",
    "group_for",
    "leave_for_a_while",
    "leaving_member",
    "member_for",
    "new_member_id",
    "not_found",
    "offset_commit_error",
    "offset_fetch_error",
    "owns_any",
    "rebalance_timer",
    "reconcile",
    "static_member",
    "subscription_metadata",
]

Body = dict[str, Any]
#: Partitions (or tasks) by topic id (or subtopology id).
Parts = Mapping[Any, frozenset[int]]
#: What a heartbeat says a member owns: ``(topic id or subtopology id, partitions)`` pairs.
Owned = Sequence[tuple[Hashable, Sequence[int]]]


class MemberState:
    """A member's reconciliation state (Kafka's ``MemberState``)."""

    STABLE = "STABLE"
    UNREVOKED_PARTITIONS = "UNREVOKED_PARTITIONS"
    UNRELEASED_PARTITIONS = "UNRELEASED_PARTITIONS"

#: Group types, as ListGroups v5 names them.
CLASSIC, CONSUMER, SHARE, STREAMS = "classic", "consumer", "share", "streams"
#: The member epoch of a member leaving the group for good.
LEAVE_GROUP_MEMBER_EPOCH = -1
#: The member epoch of a static member leaving for a while (it keeps its assignment).
LEAVE_GROUP_STATIC_MEMBER_EPOCH = -2


class GroupError(Exception):
    """A request a coordinator refuses: ``code`` is Kafka's error, the text its message."""

    def __init__(self, code: int, message: str) -> None:
        super().__init__(message)
        self.code = int(code)


class GroupIds(Protocol):
    """What a coordinator asks the cluster about group ids held by the other group types."""

    def holder(self, group_id: str) -> str | None:
        """The type of the group holding ``group_id`` (None: no group holds it)."""
        ...

    def claim(self, group_id: str, kind: str) -> bool:
        """May a new group of type ``kind`` take ``group_id``?  An empty group of another
        type that Kafka would replace is deleted; False when another type keeps it."""
        ...


class _HasMembers(Protocol):
    @property
    def members(self) -> Mapping[str, Any]: ...


G = TypeVar("G", bound=_HasMembers)


def not_found(group_ids: GroupIds | None, group_id: str, kind: str) -> GroupError:
    """GROUP_ID_NOT_FOUND as Kafka words it: the id is another type's, or nobody's."""
    if group_ids is not None and group_ids.holder(group_id) is not None:
        return GroupError(ErrorCode.GROUP_ID_NOT_FOUND, f"Group {group_id} is not a {kind} group.")
    return GroupError(ErrorCode.GROUP_ID_NOT_FOUND,
                      f"{kind.capitalize()} group {group_id} not found.")


def group_for(groups: dict[str, G], group_id: str, *, kind: str, create: bool,
              group_ids: GroupIds | None, make: Callable[[str], G], max_groups: int) -> G:
    """The ``kind`` group ``group_id``, made when ``create`` and the id is free (Kafka's
    ``getOrMaybeCreate*Group``).  An emulator bound: at most ``max_groups`` groups; past it
    empty groups are dropped (Kafka expires them), and when none is empty the coordinator
    answers COORDINATOR_NOT_AVAILABLE."""
    group = groups.get(group_id)
    if group is not None:
        return group
    if not create or (group_ids is not None and not group_ids.claim(group_id, kind)):
        raise not_found(group_ids, group_id, kind)
    if len(groups) >= max_groups:
        for gone in [g for g, grp in groups.items() if not grp.members]:
            del groups[gone]
    if len(groups) >= max_groups:
        raise GroupError(ErrorCode.COORDINATOR_NOT_AVAILABLE,
                         f"the emulated cluster holds {len(groups)} {kind} groups, its bound")
    group = groups[group_id] = make(group_id)
    return group


def check_room(groups: Mapping[str, _HasMembers], group: _HasMembers, *, kind: str,
               max_size: int, max_members: int) -> None:
    """Raise GROUP_MAX_SIZE_REACHED for one more member of ``group`` when it has its
    ``group.<kind>.max.size`` members, or when the coordinator's groups hold
    ``max_members`` in all (an emulator bound)."""
    if len(group.members) >= max_size:
        raise GroupError(ErrorCode.GROUP_MAX_SIZE_REACHED,
                         f"The {kind} group has reached its maximum capacity of {max_size} "
                         "members.")
    if sum(len(g.members) for g in groups.values()) >= max_members:
        raise GroupError(ErrorCode.GROUP_MAX_SIZE_REACHED,
                         f"the emulated cluster's {kind} groups hold {max_members} members, "
                         "its bound")


def new_member_id() -> str:
    """A member id as Kafka makes one (``Uuid.randomUuid().toString()``: 22 characters)."""
    return base64.urlsafe_b64encode(uuid.uuid4().bytes).rstrip(b"=").decode()


def subscription_metadata(topics: TopicStore,
                          names: Iterable[str]) -> dict[str, tuple[uuid.UUID, int]]:
    """The existing topics among ``names``: name -> (topic id, partition count)."""
    out = {}
    for name in sorted(set(names)):
        topic = topics.by_name.get(name)
        if topic is not None:
            out[name] = (topic.topic_id, len(topic.partitions))
    return out


def described_assignment(topics: TopicStore,
                         assignment: Mapping[uuid.UUID, Iterable[int]]) -> Body:
    """An assignment as the describe responses list it (topic id, name, partitions)."""
    names = {t.topic_id: t.name for t in topics.by_name.values()}
    return {"topic_partitions": [
        {"topic_id": topic, "topic_name": names.get(topic, ""), "partitions": sorted(parts)}
        for topic, parts in sorted(assignment.items(), key=lambda item: str(item[0]))]}


def _freeze(parts: Mapping[Any, Iterable[int]]) -> dict[Any, frozenset[int]]:
    return {k: frozenset(v) for k, v in parts.items() if v}


def is_subset(owned: Owned | None, parts: Parts) -> bool:
    """True when every partition ``owned`` lists is in ``parts``."""
    if owned is None:
        return False
    return all(p in parts.get(key, frozenset()) for key, listed in owned for p in listed)


def owns_any(owned: Owned | None, parts: Parts) -> bool:
    """True when ``owned`` still lists one of ``parts`` (None: the member did not say,
    so it is taken to own them all)."""
    if owned is None:
        return True
    return any(p in parts.get(key, frozenset()) for key, listed in owned for p in listed)


def check_member_epoch(kind: str, current: int, previous: int, received: int, *,
                       owned: Owned | None = None, assigned: Parts | None = None) -> None:
    """Raise FENCED_MEMBER_EPOCH as Kafka does for a heartbeat at epoch ``received`` from a
    member the coordinator holds at ``current``: a greater epoch, or a smaller one other than
    the previous epoch (for a lost response; consumer and streams groups also want the owned
    partitions to be a subset of ``assigned``)."""
    side = "greater" if received > current else "smaller"
    if received > current or (received < current and (
            received != previous or (assigned is not None and not is_subset(owned, assigned)))):
        raise GroupError(ErrorCode.FENCED_MEMBER_EPOCH,
                         f"The {kind} group member has a {side} member epoch ({received}) than "
                         f"the one known by the group coordinator ({current}). The member must "
                         "abandon all its partitions and rejoin.")


@attrs.frozen
class Reconciled:
    """A member's state after :func:`reconcile`."""

    state: str
    member_epoch: int
    assigned: dict[Any, frozenset[int]]
    pending_revocation: dict[Any, frozenset[int]]


def reconcile(state: str, member_epoch: int, assigned: Parts, pending_revocation: Parts,
              target: Parts, target_epoch: int, owned: Owned | None,
              taken: Iterable[tuple[Hashable, int]]) -> Reconciled | None:
    """Kafka's ``CurrentAssignmentBuilder.build``: the member's next state towards ``target``
    (None: it cannot move yet, or is already there).  ``taken`` lists what other members own
    (assigned or still to revoke): those are never given to this one."""
    if state == MemberState.STABLE:
        if member_epoch == target_epoch:
            return None
        return _next(member_epoch, assigned, target, target_epoch, owned, set(taken))
    if state == MemberState.UNREVOKED_PARTITIONS:
        if owns_any(owned, pending_revocation):
            return None
        return _next(member_epoch + 1, assigned, target, target_epoch, owned, set(taken))
    return _next(member_epoch, assigned, target, target_epoch, owned, set(taken))


def _next(member_epoch: int, current: Parts, target: Parts, target_epoch: int,
          owned: Owned | None, taken: set[tuple[Hashable, int]]) -> Reconciled:
    """Kafka's ``computeNextAssignment``."""
    assigned: dict[Any, set[int]] = {}
    revoking: dict[Any, set[int]] = {}
    pending: dict[Any, set[int]] = {}
    unreleased = False
    for key in set(target) | set(current):
        want = target.get(key, frozenset())
        have = current.get(key, frozenset())
        keep = have & want
        assigned[key] = set(keep)
        revoking[key] = set(have - keep)
        free = {p for p in want - keep if (key, p) not in taken}
        unreleased = unreleased or len(free) < len(want - keep)
        pending[key] = free
    revoke, grant = _freeze(revoking), _freeze(pending)
    if revoke and owns_any(owned, revoke):
        return Reconciled(MemberState.UNREVOKED_PARTITIONS, member_epoch, _freeze(assigned),
                          revoke)
    for key, partitions in grant.items():
        assigned[key] |= partitions
    return Reconciled(MemberState.UNRELEASED_PARTITIONS if unreleased else MemberState.STABLE,
                      target_epoch, _freeze(assigned), {})


class _HasEpoch(Protocol):
    @property
    def member_epoch(self) -> int: ...


def offset_commit_error(members: Mapping[str, _HasEpoch], member_id: str, member_epoch: int,
                        version: int, *, transactional: bool = False) -> int:
    """The error of an OffsetCommit to a consumer or streams group (Kafka's
    ``validateOffsetCommit``): epoch -1 commits only to an empty group, a member must be
    known, use OffsetCommit v9+ (unless transactional) and give its current epoch."""
    if member_epoch < 0 and not members:
        return ErrorCode.NONE
    member = members.get(member_id)
    if member is None:
        return ErrorCode.UNKNOWN_MEMBER_ID
    if not transactional and version < 9:
        return ErrorCode.UNSUPPORTED_VERSION
    if member_epoch != member.member_epoch:
        return ErrorCode.STALE_MEMBER_EPOCH
    return ErrorCode.NONE


def offset_fetch_error(members: Mapping[str, _HasEpoch], member_id: str | None,
                       member_epoch: int) -> int:
    """The error of an OffsetFetch v9+ that names a member (Kafka's ``validateOffsetFetch``)."""
    if member_id is None and member_epoch < 0:
        return ErrorCode.NONE
    member = members.get(member_id or "")
    if member is None:
        return ErrorCode.UNKNOWN_MEMBER_ID
    if member_epoch != member.member_epoch:
        return ErrorCode.STALE_MEMBER_EPOCH
    return ErrorCode.NONE


# -- what the coordinators share ------------------------------------------------------------------
class _Group(Protocol):
    @property
    def members(self) -> MutableMapping[str, Any]: ...
    @property
    def state(self) -> str: ...
    @property
    def group_epoch(self) -> int: ...
    @property
    def assignment_epoch(self) -> int: ...


M = TypeVar("M")
GroupT = TypeVar("GroupT", bound=_Group)


def _deadlines(member: Any) -> tuple[float, float | None]:
    return member.session_deadline, getattr(member, "rebalance_deadline", None)


def _due(member: Any, now: float) -> bool:
    """Its session expired, or it did not revoke within its rebalance timeout."""
    session, rebalance = _deadlines(member)
    return session <= now or (rebalance is not None and rebalance <= now
                              and member.member_epoch == member.rebalance_epoch)


class Coordinator(Generic[GroupT]):
    """What a modern group coordinator has in common (see the module text): its groups of
    one ``kind``, the ids other types hold, the timers of its members."""

    kind: str
    groups: dict[str, GroupT]
    group_ids: GroupIds | None

    def drain(self) -> list[tuple[Any, Body]]:
        """Nothing is ever parked: every request is answered at once."""
        return []

    def next_deadline(self) -> float | None:
        """The earliest session or rebalance timeout of a member (None: no member)."""
        return min((t for g in self.groups.values() for m in g.members.values()
                    for t in _deadlines(m) if t is not None), default=None)

    def tick(self, now: float) -> None:
        """Fence every member whose session or rebalance timeout expired at ``now``."""
        for group in list(self.groups.values()):
            for member in list(group.members.values()):
                if member.member_id in group.members and _due(member, now):
                    self._fence(group, member)

    def is_empty(self, group_id: str) -> bool:
        """True when ``group_id`` is a group of this kind without members."""
        group = self.groups.get(group_id)
        return group is not None and not group.members

    def _fence(self, group: GroupT, member: Any) -> None:
        raise NotImplementedError

    def _leave(self, group_id: str, member_id: str, instance_id: str | None,
               member_epoch: int) -> None:
        """A leaving heartbeat: a static member with epoch -2 leaves for a while, any other
        member is fenced (Kafka's ``consumerGroupLeave``, ``shareGroupLeave``)."""
        group = self.groups.get(group_id)
        if group is None:
            raise self._not_found(group_id)
        member = leaving_member(group, member_id, instance_id)
        if member_epoch == LEAVE_GROUP_STATIC_MEMBER_EPOCH:
            leave_for_a_while(member)
        else:
            self._fence(group, member)

    def _not_found(self, group_id: str) -> GroupError:
        return not_found(self.group_ids, group_id, self.kind)

    def _describe(self, group_ids: Iterable[str], missing: Mapping[str, Any],
                  described: Callable[[GroupT], Body]) -> list[Body]:
        """One described group per id (a ...GroupDescribe answer): GROUP_ID_NOT_FOUND with
        ``missing``'s fields for an unknown one, else its state, epochs and ``described``."""
        out: list[Body] = []
        for group_id in group_ids:
            group = self.groups.get(group_id)
            if group is None:
                refused = self._not_found(group_id)
                out.append({"error_code": refused.code, "error_message": str(refused),
                            "group_id": group_id, "group_state": "Dead", "group_epoch": -1,
                            "assignment_epoch": -1, "members": [], **missing})
                continue
            out.append({"error_code": ErrorCode.NONE, "error_message": None,
                        "group_id": group_id, "group_state": group.state,
                        "group_epoch": group.group_epoch,
                        "assignment_epoch": group.assignment_epoch,
                        **described(group)})
        return out


def static_member(group: Any, member_id: str, instance_id: str) -> Any:
    """The member holding ``instance_id``, which must be ``member_id`` (Kafka's
    ``throwIfStaticMemberIsUnknown``, ``throwIfInstanceIdIsFenced``)."""
    existing_id = group.static.get(instance_id)
    existing = group.members.get(existing_id) if existing_id is not None else None
    if existing is None:
        raise GroupError(ErrorCode.UNKNOWN_MEMBER_ID, f"Instance id {instance_id} is unknown.")
    if existing.member_id != member_id:
        raise GroupError(ErrorCode.FENCED_INSTANCE_ID,
                         f"Static member {member_id} with instance id {instance_id} was "
                         f"fenced by member {existing.member_id}.")
    return existing


def member_for(group: Any, member_id: str, member_epoch: int, instance_id: str | None,
               owned: Owned | None, *, kind: str, make: Callable[[str], M],
               assigned: Callable[[M], Parts]) -> tuple[M, str | None]:
    """The member a consumer or streams heartbeat speaks for, new or known, and the member
    id a rejoining static member replaces (Kafka's ``getOrMaybeSubscribe*Member``): epoch 0
    joins; a known member's epoch is checked against what it owns (``assigned``); a static
    member rejoins under a new id only once the old one left (UNRELEASED_INSTANCE_ID)."""
    if instance_id is None:
        member = group.members.get(member_id)
        if member is None:
            if member_epoch != 0:
                raise GroupError(ErrorCode.UNKNOWN_MEMBER_ID,
                                 f"Member {member_id} is not a member of group "
                                 f"{group.group_id}.")
            return make(member_id), None
        check_member_epoch(kind, member.member_epoch, member.previous_member_epoch,
                           member_epoch, owned=owned, assigned=assigned(member))
        return member, None
    if member_epoch != 0:
        existing = static_member(group, member_id, instance_id)
        check_member_epoch(kind, existing.member_epoch, existing.previous_member_epoch,
                           member_epoch, owned=owned, assigned=assigned(existing))
        return existing, None
    existing_id = group.static.get(instance_id)
    existing = group.members.get(existing_id) if existing_id is not None else None
    if existing is None:
        return group.members.get(member_id) or make(member_id), None
    if existing.member_epoch != LEAVE_GROUP_STATIC_MEMBER_EPOCH:
        raise GroupError(ErrorCode.UNRELEASED_INSTANCE_ID,
                         f"Static member {member_id} with instance id {instance_id} cannot "
                         f"join the group because the instance id is owned by member "
                         f"{existing.member_id}.")
    replaced: M = attrs.evolve(existing, member_id=member_id, member_epoch=0,
                               previous_member_epoch=0)
    return replaced, existing.member_id


def leaving_member(group: Any, member_id: str, instance_id: str | None) -> Any:
    """The member a leaving heartbeat (epoch -1 or -2) speaks for (Kafka's
    ``consumerGroupLeave``): UNKNOWN_MEMBER_ID, or the static member's checks."""
    if instance_id is not None:
        return static_member(group, member_id, instance_id)
    member = group.members.get(member_id)
    if member is None:
        raise GroupError(ErrorCode.UNKNOWN_MEMBER_ID,
                         f"Member {member_id} is not a member of group {group.group_id}.")
    return member


def leave_for_a_while(member: Any) -> None:
    """A static member's leave with epoch -2: it keeps its assignment, gives up what it was
    revoking, and its session timeout still runs (``consumerGroupStaticMemberGroupLeave``)."""
    member.member_epoch = LEAVE_GROUP_STATIC_MEMBER_EPOCH
    member.pending_revocation = {}
    member.rebalance_deadline, member.rebalance_epoch = None, -1


def drop_member(group: Any, member_id: str) -> None:
    """Forget a member: its entry, its target assignment and its instance id."""
    member = group.members.pop(member_id, None)
    group.target.pop(member_id, None)
    if member is not None and member.instance_id is not None and group.static.get(
            member.instance_id) == member_id:
        del group.static[member.instance_id]


def rebalance_timer(member: Any, now: float) -> None:
    """Start the member's rebalance timeout when it must revoke (once per epoch), stop it
    otherwise (Kafka's ``maybeReconcile``: ``schedule``/``cancel...RebalanceTimeout``)."""
    if member.state != MemberState.UNREVOKED_PARTITIONS:
        member.rebalance_deadline, member.rebalance_epoch = None, -1
    elif member.rebalance_epoch != member.member_epoch or member.rebalance_deadline is None:
        member.rebalance_deadline = now + max(member.rebalance_timeout_ms, 0) / 1000
        member.rebalance_epoch = member.member_epoch
