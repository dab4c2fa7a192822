"""Server-side partition assignors of the emulated group coordinators, pure.

KIP-848 moved the assignment of a consumer group's partitions to the group
coordinator: it runs one of the assignors named by the broker setting
``group.consumer.assignors`` (Kafka's default ``uniform,range``; the first is the
default, a member may ask for another by name in ``ServerAssignor``).  Share groups
(KIP-932) use the ``simple`` assignor, where one partition may go to several
members.  Each assignor here is a function of the members (their subscribed topic
ids and the partitions the previous target assignment gave them) and the partition
count of each topic, returning every member's new target assignment; none of them
looks at time, racks or anything else.

* :func:`uniform` follows Kafka's ``UniformAssignor``: balance first (no two
  members' counts differ by more than one), stickiness second.  When every member
  subscribes to the same topics it is Kafka's ``UniformHomogeneousAssignmentBuilder``
  step for step (members keep what they had up to their quota, the rest is dealt to
  the members below quota); with different subscriptions it reaches the same goals
  with a simpler balancing pass than Kafka's ``UniformHeterogeneousAssignmentBuilder``
  (so the partitions can land on other members than on a real broker, never
  unbalanced).
* :func:`range_assignor` is Kafka's ``RangeAssignor``: members sorted (static
  members by instance id first, then by member id), each topic cut into contiguous
  ranges, co-partitioned when the members share their subscriptions.
* :func:`simple` is the share groups' ``SimpleAssignor`` of Kafka 4.1+ in outline:
  with no more members than partitions every partition goes to one member (balanced,
  sticky); with more members than partitions the partitions are shared so that every
  member gets one.  Kafka 4.0's early-access assignor gave every member every
  partition.

Member order matters only for ties; the caller passes members in a stable order.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import Any

import attrs

__all__ = [
    "ASSIGNORS",
    "Assignment",
    "MemberSpec",
    "range_assignor",
    "simple",
    "uniform",
]

#: What an assignor deals out: a topic id (a UUID) or, for streams groups, a subtopology
#: id (a string); any hashable key that ``str`` orders.
Key = Any
#: Partitions (or tasks) by topic id (or subtopology id).
Assignment = dict[Key, frozenset[int]]


@attrs.frozen
class MemberSpec:
    """What an assignor knows of one member."""

    member_id: str
    #: Ids of the existing topics the member subscribes to (streams: subtopology ids).
    topics: frozenset[Key]
    #: The member's previous target assignment (stickiness).
    current: Mapping[Key, frozenset[int]] = attrs.field(factory=dict)
    instance_id: str | None = None


Assignor = Callable[[Sequence[MemberSpec], Mapping[Key, int]], dict[str, Assignment]]


def _freeze(partitions: Mapping[Key, set[int]]) -> Assignment:
    return {t: frozenset(p) for t, p in partitions.items() if p}


def _all_partitions(topics: frozenset[Key] | set[Key],
                    counts: Mapping[Key, int]) -> list[tuple[Key, int]]:
    return [(t, p) for t in sorted(topics, key=str) for p in range(counts.get(t, 0))]


# -- uniform ----------------------------------------------------------------------------------
def uniform(members: Sequence[MemberSpec],
            counts: Mapping[Key, int]) -> dict[str, Assignment]:
    """Kafka's ``uniform`` assignor (see the module text)."""
    if not members:
        return {}
    if len({m.topics for m in members}) == 1:
        return _uniform_homogeneous(members, counts)
    return _uniform_heterogeneous(members, counts)


def _uniform_homogeneous(members: Sequence[MemberSpec],
                         counts: Mapping[Key, int]) -> dict[str, Assignment]:
    topics = members[0].topics
    every = _all_partitions(topics, counts)
    if not every:
        return {m.member_id: {} for m in members}
    held = {(t, p) for m in members for t, parts in m.current.items() if t in topics
            for p in parts if p < counts.get(t, 0)}
    unassigned = [tp for tp in every if tp not in held]
    quota_min, extra = divmod(len(every), len(members))
    target: dict[str, dict[Key, set[int]]] = {}
    unfilled: list[tuple[str, int]] = []
    kept_anywhere: set[tuple[Key, int]] = set()
    for member in members:
        quota = quota_min + (1 if extra > 0 else 0)
        extra -= 1 if extra > 0 else 0
        kept: dict[Key, set[int]] = {}
        for topic in sorted(member.current, key=str):
            if topic not in topics:
                continue  # no longer subscribed: the whole topic goes
            for partition in sorted(member.current[topic]):
                key = (topic, partition)
                if partition >= counts.get(topic, 0) or key in kept_anywhere:
                    continue
                if quota > 0:
                    kept.setdefault(topic, set()).add(partition)
                    kept_anywhere.add(key)
                    quota -= 1
                else:
                    unassigned.append(key)
        target[member.member_id] = kept
        if quota > 0:
            unfilled.append((member.member_id, quota))
    index = 0
    for member_id, quota in unfilled:
        for _ in range(quota):
            if index >= len(unassigned):
                break
            topic, partition = unassigned[index]
            index += 1
            target[member_id].setdefault(topic, set()).add(partition)
    return {member_id: _freeze(parts) for member_id, parts in target.items()}


def _uniform_heterogeneous(members: Sequence[MemberSpec],
                           counts: Mapping[Key, int]) -> dict[str, Assignment]:
    owner: dict[tuple[Key, int], str] = {}
    load = {m.member_id: 0 for m in members}
    order = {m.member_id: i for i, m in enumerate(members)}
    subscribers: dict[Key, list[str]] = {}
    for member in members:
        for topic in member.topics:
            if counts.get(topic, 0) > 0:
                subscribers.setdefault(topic, []).append(member.member_id)
    # Stickiness: a member keeps what it had of the topics it still subscribes to.
    for member in members:
        for topic, partitions in member.current.items():
            if topic not in member.topics:
                continue
            for partition in partitions:
                key = (topic, partition)
                if partition < counts.get(topic, 0) and key not in owner:
                    owner[key] = member.member_id
                    load[member.member_id] += 1
    # Topics with the fewest subscribers first: they have the least freedom.
    for topic in sorted(subscribers, key=lambda t: (len(subscribers[t]), str(t))):
        for partition in range(counts[topic]):
            if (topic, partition) not in owner:
                chosen = min(subscribers[topic], key=lambda m: (load[m], order[m]))
                owner[(topic, partition)] = chosen
                load[chosen] += 1
    # Balance: move a partition from a member with two or more above a subscriber.
    for _ in range(16):  # Kafka's MAX_ITERATION_COUNT bounds its balancing the same way
        moved = False
        for key in sorted(owner, key=lambda k: (str(k[0]), k[1])):
            current = owner[key]
            best = min(subscribers[key[0]], key=lambda m: (load[m], order[m]))
            if load[current] - load[best] >= 2:
                owner[key] = best
                load[current] -= 1
                load[best] += 1
                moved = True
        if not moved:
            break
    out: dict[str, dict[Key, set[int]]] = {m.member_id: {} for m in members}
    for (topic, partition), member_id in owner.items():
        out[member_id].setdefault(topic, set()).add(partition)
    return {member_id: _freeze(parts) for member_id, parts in out.items()}


# -- range ------------------------------------------------------------------------------------
def range_assignor(members: Sequence[MemberSpec],
                   counts: Mapping[Key, int]) -> dict[str, Assignment]:
    """Kafka's ``range`` assignor (see the module text)."""
    ordered = sorted(members, key=lambda m: (
        (0, m.instance_id, "") if m.instance_id is not None else (1, "", m.member_id)))
    subscribers: dict[Key, int] = {}
    for member in ordered:
        for topic in member.topics:
            if counts.get(topic, 0) > 0:
                subscribers[topic] = subscribers.get(topic, 0) + 1
    next_start = dict.fromkeys(subscribers, 0)
    extra = {t: counts[t] % n for t, n in subscribers.items()}
    quota = {t: counts[t] // n for t, n in subscribers.items()}
    out: dict[str, Assignment] = {}
    for member in ordered:
        parts: dict[Key, set[int]] = {}
        for topic in sorted(member.topics, key=str):
            if topic not in subscribers:
                continue
            size = quota[topic] + (1 if extra[topic] > 0 else 0)
            extra[topic] -= 1 if extra[topic] > 0 else 0
            start = next_start[topic]
            end = min(start + size, counts[topic])
            next_start[topic] = end
            if start < end:
                parts[topic] = set(range(start, end))
        out[member.member_id] = _freeze(parts)
    return out


# -- simple (share groups) ----------------------------------------------------------------------
def simple(members: Sequence[MemberSpec],
           counts: Mapping[Key, int]) -> dict[str, Assignment]:
    """The share groups' ``simple`` assignor (see the module text)."""
    out: dict[str, dict[Key, set[int]]] = {m.member_id: {} for m in members}
    by_topics: dict[frozenset[Key], list[MemberSpec]] = {}
    for member in members:
        by_topics.setdefault(member.topics, []).append(member)
    for topics, group in by_topics.items():
        every = _all_partitions(topics, counts)
        if not every:
            continue
        if len(group) > len(every):
            for index, member in enumerate(group):
                topic, partition = every[index % len(every)]
                out[member.member_id].setdefault(topic, set()).add(partition)
            continue
        spread = _uniform_homogeneous(group, counts)
        for member_id, parts in spread.items():
            for topic, partitions in parts.items():
                out[member_id].setdefault(topic, set()).update(partitions)
    return {member_id: _freeze(parts) for member_id, parts in out.items()}


#: The consumer-group assignors by the name Kafka's ``group.consumer.assignors`` uses.
ASSIGNORS: Mapping[str, Assignor] = {"uniform": uniform, "range": range_assignor}
