"""The streams group coordinator of KIP-1071 (StreamsGroupHeartbeat, StreamsGroupDescribe), pure.

Kafka Streams applications with ``group.protocol=streams`` (Kafka 4.1 early access,
4.2 production-ready) let the group coordinator assign their **tasks**: a member
joins with its application's topology (subtopologies with their source, repartition
and changelog topics), the coordinator checks the topology against the cluster's
topics, and deals the tasks (one per partition of each subtopology) to the members.
The rules follow Kafka's group coordinator (``GroupCoordinatorService.
throwIfStreamsGroupHeartbeatRequestIsInvalid``, ``GroupMetadataManager.
streamsGroupHeartbeat``, ``streams/StreamsGroup.java``, ``streams/TopologyMetadata``,
``StreamsGroupHeartbeatResponse.Status``):

* the request checks Kafka makes, in its order (no source-topic regex yet, member
  id required, tasks empty and a topology when joining, changelog partition counts
  left undefined, a topology only when joining, all three task lists or none);
* the group's topology is the one its first member brings; a member with a newer
  topology epoch replaces it, one with an older epoch is told STALE_TOPOLOGY, and
  another topology under the same epoch is STREAMS_INVALID_TOPOLOGY_EPOCH;
* the topology is **configured** against the topics: a subtopology has as many tasks
  as its source topics have partitions; missing source topics are
  MISSING_SOURCE_TOPICS and source topics meant to be co-partitioned with other
  counts INCORRECTLY_PARTITIONED_TOPICS, and so is an existing repartition topic
  whose partition count is not the one the topology gives (tasks are counted from the
  topics that exist, never from a count a client declares, so they stay within the
  cluster's partition bound; no tasks are assigned then, the group is
  ``NotReady``); missing internal topics (changelog and repartition topics) are
  created, as Kafka's broker creates them, and reported MISSING_INTERNAL_TOPICS
  until they exist;
* active tasks are dealt with the sticky, balanced ``uniform`` rule and reconciled as
  consumer groups reconcile partitions (:func:`kclient.emulator.modern_groups.reconcile`):
  a task is revoked from its old owner before anyone else gets it; standby tasks
  (``num.standby.replicas``, 0 by default) go to members of other processes;
* group and member epochs, fencing, static members, session and rebalance timeouts,
  leaving (-1) and static leaving (-2) as in consumer groups; a member asking to
  shut the application down makes every member hear SHUTDOWN_APPLICATION;
* StreamsGroupDescribe shows the group state (Empty, NotReady, Assigning,
  Reconciling, Stable), epochs, topology and members with their current and target
  tasks; offset commits of members check their epochs as in consumer groups.

Simplifications: the assignment is per member, not Kafka's process-aware sticky task
assignor (no warm-up tasks, no lag-based placement; ``TaskOffsets`` are kept and shown
but not used); standby and warm-up tasks are given without a revocation step; the
endpoint information (``PartitionsByUserEndpoint``) lists active partitions only;
repartition topics without a partition count take the largest task count of the
subtopologies writing to them; topics are read at every heartbeat; the heartbeat
interval is 0.5 s by default (Kafka: 5 s).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from typing import Any

import attrs

from kclient.emulator.assignors import MemberSpec, uniform
from kclient.emulator.log import TopicStore
from kclient.emulator.modern_groups import (
    LEAVE_GROUP_MEMBER_EPOCH,
    LEAVE_GROUP_STATIC_MEMBER_EPOCH,
    STREAMS,
    Coordinator,
    GroupError,
    GroupIds,
    MemberState,
    Owned,
    check_room,
    drop_member,
    group_for,
    member_for,
    offset_commit_error,
    offset_fetch_error,
    rebalance_timer,
    reconcile,
)
from kclient.protocol.constants import ErrorCode

__all__ = [
    "ASSIGNING",
    "EMPTY",
    "NOT_READY",
    "RECONCILING",
    "STABLE",
    "Heartbeat",
    "Status",
    "StreamsGroup",
    "StreamsGroupCoordinator",
    "StreamsMember",
    "StreamsSettings",
    "Subtopology",
    "TopicInfo",
    "Topology",
    "error_body",
]

Body = dict[str, Any]
#: Tasks by subtopology id.
Tasks = dict[str, frozenset[int]]

EMPTY, NOT_READY, ASSIGNING, RECONCILING, STABLE = (
    "Empty", "NotReady", "Assigning", "Reconciling", "Stable")


class Status:
    """The status codes of a StreamsGroupHeartbeat response (Kafka's ``Status``)."""

    STALE_TOPOLOGY = 0
    MISSING_SOURCE_TOPICS = 1
    INCORRECTLY_PARTITIONED_TOPICS = 2
    MISSING_INTERNAL_TOPICS = 3
    SHUTDOWN_APPLICATION = 4


@attrs.frozen
class StreamsSettings:
    """Broker and group settings of streams groups (Kafka's names; times in ms)."""

    #: ``group.streams.session.timeout.ms``.
    session_timeout_ms: int = 45_000
    #: ``group.streams.heartbeat.interval.ms`` (Kafka: 5000; shortened for tests).
    heartbeat_interval_ms: int = 500
    #: ``group.streams.num.standby.replicas``.
    num_standby_replicas: int = 0
    #: ``streams.acceptable.recovery.lag`` as the heartbeat response reports it.
    acceptable_recovery_lag: int = 10_000
    #: ``streams.task.offset.interval.ms`` as the heartbeat response reports it.
    task_offset_interval_ms: int = 60_000
    #: ``group.streams.max.size``.
    max_size: int = 2**31 - 1
    #: The most streams groups one emulated cluster keeps (an emulator bound).
    max_groups: int = 10_000
    #: The most members its streams groups hold in all (an emulator bound).
    max_members: int = 100_000


@attrs.frozen
class TopicInfo:
    """An internal topic of a topology (0 partitions: left to the coordinator)."""

    name: str
    partitions: int = 0
    replication_factor: int = 0
    configs: tuple[tuple[str, str], ...] = ()


@attrs.frozen
class Subtopology:
    """One subtopology: its id and its topics."""

    subtopology_id: str
    source_topics: tuple[str, ...] = ()
    repartition_sink_topics: tuple[str, ...] = ()
    state_changelog_topics: tuple[TopicInfo, ...] = ()
    repartition_source_topics: tuple[TopicInfo, ...] = ()
    #: Groups of source topics (indexes into ``source_topics``) that must be co-partitioned.
    copartition_groups: tuple[tuple[int, ...], ...] = ()


@attrs.frozen
class Topology:
    """A streams application's topology, as its members send it."""

    epoch: int
    subtopologies: tuple[Subtopology, ...]


@attrs.define(eq=False)
class StreamsMember:
    """A member of a streams group."""

    member_id: str
    instance_id: str | None = None
    rack_id: str | None = None
    client_id: str = ""
    client_host: str = ""
    process_id: str = ""
    user_endpoint: tuple[str, int] | None = None
    client_tags: tuple[tuple[str, str], ...] = ()
    topology_epoch: int = -1
    rebalance_timeout_ms: int = -1
    member_epoch: int = 0
    previous_member_epoch: int = -1
    state: str = MemberState.STABLE
    active: Tasks = attrs.Factory(dict)
    pending_revocation: Tasks = attrs.Factory(dict)
    standby: Tasks = attrs.Factory(dict)
    warmup: Tasks = attrs.Factory(dict)
    task_offsets: tuple[tuple[str, int, int], ...] = ()
    task_end_offsets: tuple[tuple[str, int, int], ...] = ()
    session_deadline: float = 0.0
    rebalance_deadline: float | None = None
    rebalance_epoch: int = -1


@attrs.define(eq=False)
class StreamsGroup:
    """One streams group: epochs, topology, members and target tasks."""

    group_id: str
    group_epoch: int = 0
    assignment_epoch: int = 0
    topology: Topology | None = None
    members: dict[str, StreamsMember] = attrs.Factory(dict)
    static: dict[str, str] = attrs.Factory(dict)
    #: member id -> (active, standby) target tasks.
    target: dict[str, tuple[Tasks, Tasks]] = attrs.Factory(dict)
    #: Task count by subtopology id once the topology is configured (None: not ready).
    tasks: dict[str, int] | None = None
    #: The topics the topology reads, with their partition counts, when last configured.
    metadata: dict[str, int] = attrs.Factory(dict)
    #: Set by a configuration that saw other topics or partition counts than the last one.
    metadata_changed: bool = False
    statuses: list[tuple[int, str]] = attrs.Factory(list)
    endpoint_epoch: int = 0
    shutdown: bool = False

    @property
    def state(self) -> str:
        """Empty, NotReady, Assigning, Reconciling or Stable (Kafka's ``StreamsGroupState``)."""
        if not self.members:
            return EMPTY
        if self.tasks is None:
            return NOT_READY
        if self.group_epoch > self.assignment_epoch:
            return ASSIGNING
        if any(m.member_epoch != self.assignment_epoch or m.state != MemberState.STABLE
               for m in self.members.values()):
            return RECONCILING
        return STABLE

    def taken(self, skip: str) -> set[tuple[str, int]]:
        """Active tasks other members own (assigned or still to revoke)."""
        return {(sub, p) for m in self.members.values() if m.member_id != skip
                for part in (m.active, m.pending_revocation)
                for sub, tasks in part.items() for p in tasks}


@attrs.frozen
class Heartbeat:
    """A StreamsGroupHeartbeat's answer and the internal topics to create (name,
    partitions, replication factor, configs)."""

    body: Body
    create: tuple[tuple[str, int, int, dict[str, str]], ...] = ()


def error_body(code: int, message: str | None) -> Body:
    """A StreamsGroupHeartbeat response body carrying only an error."""
    return {"error_code": code, "error_message": message, "member_id": "", "member_epoch": 0,
            "heartbeat_interval_ms": 0, "acceptable_recovery_lag": 0,
            "task_offset_interval_ms": 0, "status": [], "active_tasks": None,
            "standby_tasks": None, "warmup_tasks": None, "endpoint_information_epoch": 0,
            "partitions_by_user_endpoint": None}


def _listed(tasks: Mapping[str, frozenset[int]]) -> list[Body]:
    return [{"subtopology_id": sub, "partitions": sorted(parts)}
            for sub, parts in sorted(tasks.items())]


class StreamsGroupCoordinator(Coordinator[StreamsGroup]):
    """The streams groups of one emulated cluster (see the module text)."""

    kind = STREAMS

    def __init__(self, topics: TopicStore, settings: StreamsSettings | None = None,
                 group_ids: GroupIds | None = None) -> None:
        self.topics = topics
        self.settings = settings or StreamsSettings()
        self.group_ids = group_ids
        self.groups: dict[str, StreamsGroup] = {}

    # -- StreamsGroupHeartbeat -----------------------------------------------------------------
    def heartbeat(self, now: float, *, group_id: str, member_id: str, member_epoch: int,
                  endpoint_information_epoch: int = 0, instance_id: str | None = None,
                  rack_id: str | None = None, rebalance_timeout_ms: int = -1,
                  topology: Topology | None = None, source_topic_regex: bool = False,
                  active_tasks: Sequence[tuple[str, Sequence[int]]] | None = None,
                  standby_tasks: Sequence[tuple[str, Sequence[int]]] | None = None,
                  warmup_tasks: Sequence[tuple[str, Sequence[int]]] | None = None,
                  process_id: str | None = None, user_endpoint: tuple[str, int] | None = None,
                  client_tags: Sequence[tuple[str, str]] | None = None,
                  task_offsets: Sequence[tuple[str, int, int]] | None = None,
                  task_end_offsets: Sequence[tuple[str, int, int]] | None = None,
                  shutdown_application: bool = False, client_id: str = "",
                  client_host: str = "") -> Heartbeat:
        """StreamsGroupHeartbeat: the response body and the internal topics to create."""
        try:
            self._validate(group_id, member_id, member_epoch, instance_id, rack_id,
                           rebalance_timeout_ms, topology, source_topic_regex, active_tasks,
                           standby_tasks, warmup_tasks)
            if member_epoch in (LEAVE_GROUP_MEMBER_EPOCH, LEAVE_GROUP_STATIC_MEMBER_EPOCH):
                self._leave(group_id, member_id, instance_id, member_epoch)
                left = error_body(ErrorCode.NONE, None)
                left.update(member_id=member_id, member_epoch=member_epoch)
                return Heartbeat(left)
            return self._join_or_beat(
                now, group_id, member_id, member_epoch, endpoint_information_epoch,
                instance_id, rack_id, rebalance_timeout_ms, topology, active_tasks,
                standby_tasks, warmup_tasks, process_id, user_endpoint, client_tags,
                task_offsets, task_end_offsets, shutdown_application, client_id, client_host)
        except GroupError as exc:
            return Heartbeat(error_body(exc.code, str(exc)))

    @staticmethod
    def _validate(group_id: str, member_id: str, member_epoch: int, instance_id: str | None,
                  rack_id: str | None, rebalance_timeout_ms: int, topology: Topology | None,
                  source_topic_regex: bool, *tasks: Sequence[Any] | None) -> None:
        invalid = ErrorCode.INVALID_REQUEST
        if source_topic_regex:
            raise GroupError(invalid, "Regular expressions for source topics are not "
                                      "supported yet.")
        for value, name in ((member_id, "MemberId"), (group_id, "GroupId"),
                            (instance_id, "InstanceId"), (rack_id, "RackId")):
            if value is not None and not value.strip():
                raise GroupError(invalid, f"{name} can't be empty.")
        active, standby, warmup = tasks
        if member_epoch == 0:
            if rebalance_timeout_ms == -1:
                raise GroupError(invalid, "RebalanceTimeoutMs must be provided in first request.")
            for listed, name in ((active, "ActiveTasks"), (standby, "StandbyTasks"),
                                 (warmup, "WarmupTasks")):
                if listed:
                    raise GroupError(invalid, f"{name} must be empty when (re-)joining.")
            if topology is None:
                raise GroupError(invalid, "Topology must be non-null when (re-)joining.")
            for sub in topology.subtopologies:
                for info in sub.state_changelog_topics:
                    if info.partitions != 0:
                        raise GroupError(ErrorCode.STREAMS_INVALID_TOPOLOGY,
                                         f"Changelog topic {info.name} must have an undefined "
                                         f"partition count, but it is set to {info.partitions}.")
        elif member_epoch == LEAVE_GROUP_STATIC_MEMBER_EPOCH:
            if instance_id is None:
                raise GroupError(invalid, "InstanceId can't be null.")
        elif member_epoch < LEAVE_GROUP_STATIC_MEMBER_EPOCH:
            raise GroupError(invalid, f"MemberEpoch is {member_epoch}, but must be greater than "
                                      "or equal to -2.")
        if any(t is not None for t in tasks) and any(t is None for t in tasks):
            raise GroupError(invalid, "If one task-type is non-null, all must be non-null.")
        if member_epoch != 0 and topology is not None:
            raise GroupError(invalid, "Topology can only be provided when (re-)joining.")

    def _group(self, group_id: str, create: bool) -> StreamsGroup:
        return group_for(self.groups, group_id, kind=STREAMS, create=create,
                         group_ids=self.group_ids, make=StreamsGroup,
                         max_groups=self.settings.max_groups)

    def _join_or_beat(self, now: float, group_id: str, member_id: str, member_epoch: int,
                      endpoint_epoch: int, instance_id: str | None, rack_id: str | None,
                      rebalance_timeout_ms: int, topology: Topology | None,
                      active: Sequence[tuple[str, Sequence[int]]] | None,
                      standby: Sequence[tuple[str, Sequence[int]]] | None,
                      warmup: Sequence[tuple[str, Sequence[int]]] | None,
                      process_id: str | None, user_endpoint: tuple[str, int] | None,
                      client_tags: Sequence[tuple[str, str]] | None,
                      task_offsets: Sequence[tuple[str, int, int]] | None,
                      task_end_offsets: Sequence[tuple[str, int, int]] | None,
                      shutdown: bool, client_id: str, client_host: str) -> Heartbeat:
        group = self._group(group_id, create=member_epoch == 0)
        if member_id not in group.members and (instance_id is None
                                               or instance_id not in group.static):
            check_room(self.groups, group, kind=STREAMS, max_size=self.settings.max_size,
                       max_members=self.settings.max_members)
        owned = None if active is None else [(sub, list(parts)) for sub, parts in active]
        member, replaced = member_for(group, member_id, member_epoch, instance_id, owned,
                                     kind=STREAMS, make=StreamsMember,
                                     assigned=lambda m: m.active)
        bump = member.member_id not in group.members or replaced is not None
        if topology is not None:
            bump = self._take_topology(group, topology) or bump
            member.topology_epoch = topology.epoch
        old_endpoint = member.user_endpoint
        for value, name in ((instance_id, "instance_id"), (rack_id, "rack_id"),
                            (process_id, "process_id"), (user_endpoint, "user_endpoint")):
            if value is not None and getattr(member, name) != value:
                setattr(member, name, value)
                bump = bump or name != "user_endpoint"
        if rebalance_timeout_ms != -1:
            member.rebalance_timeout_ms = rebalance_timeout_ms
        if client_tags is not None:
            member.client_tags = tuple(client_tags)
        if task_offsets is not None:
            member.task_offsets = tuple(task_offsets)
        if task_end_offsets is not None:
            member.task_end_offsets = tuple(task_end_offsets)
        member.client_id, member.client_host = client_id, client_host
        if replaced is not None:
            inherited = group.target.pop(replaced, None)
            drop_member(group, replaced)
            if inherited is not None:
                group.target[member.member_id] = inherited
        group.members[member.member_id] = member
        if member.instance_id is not None:
            group.static[member.instance_id] = member.member_id
        if member.user_endpoint != old_endpoint:
            group.endpoint_epoch += 1
        group.shutdown = group.shutdown or shutdown
        create = self._configure(group)
        if group.metadata_changed:
            bump = True
            group.metadata_changed = False
        if bump:
            group.group_epoch += 1
        if group.group_epoch > group.assignment_epoch:
            self._assign(group)
        before = (dict(member.active), dict(member.standby), dict(member.warmup))
        self._reconcile(group, member, now, owned)
        member.session_deadline = now + self.settings.session_timeout_ms / 1000
        changed = (member.active, member.standby, member.warmup) != before
        full = member_epoch == 0 or changed
        statuses = list(group.statuses)
        if group.topology is not None and member.topology_epoch < group.topology.epoch:
            statuses.append((Status.STALE_TOPOLOGY,
                             f"The member's topology epoch {member.topology_epoch} is behind the "
                             f"group's topology epoch {group.topology.epoch}."))
        if group.shutdown:
            statuses.append((Status.SHUTDOWN_APPLICATION,
                             "A client requested the shutdown of the whole application."))
        body: Body = {
            "error_code": ErrorCode.NONE, "error_message": None, "member_id": member.member_id,
            "member_epoch": member.member_epoch,
            "heartbeat_interval_ms": self.settings.heartbeat_interval_ms,
            "acceptable_recovery_lag": self.settings.acceptable_recovery_lag,
            "task_offset_interval_ms": self.settings.task_offset_interval_ms,
            "status": [{"status_code": c, "status_detail": d} for c, d in statuses],
            "active_tasks": _listed(member.active) if full else None,
            "standby_tasks": _listed(member.standby) if full else None,
            "warmup_tasks": _listed(member.warmup) if full else None,
            "endpoint_information_epoch": group.endpoint_epoch,
            "partitions_by_user_endpoint": (self._endpoints(group)
                                            if endpoint_epoch < group.endpoint_epoch else None)}
        return Heartbeat(body, create)

    # -- topology ------------------------------------------------------------------------------
    @staticmethod
    def _take_topology(group: StreamsGroup, topology: Topology) -> bool:
        """Adopt a joining member's topology (True: the group's topology changed)."""
        current = group.topology
        if current is None or topology.epoch > current.epoch:
            group.topology = topology
            return True
        if topology.epoch == current.epoch and topology != current:
            raise GroupError(ErrorCode.STREAMS_INVALID_TOPOLOGY_EPOCH,
                             f"The topology of epoch {topology.epoch} differs from the group's "
                             "topology of the same epoch.")
        return False

    def _configure(self, group: StreamsGroup) -> tuple[tuple[str, int, int, dict[str, str]], ...]:
        """Check the topology against the topics: task counts, statuses, internal topics to make."""
        group.statuses = []
        topology = group.topology
        if topology is None:
            group.tasks = None
            return ()
        partitions = {n: len(t.partitions) for n, t in self.topics.by_name.items()}
        missing = sorted({n for s in topology.subtopologies for n in s.source_topics
                          if n not in partitions})
        named = {n for s in topology.subtopologies for n in (
            *s.source_topics, *(i.name for i in s.state_changelog_topics),
            *(i.name for i in s.repartition_source_topics))}
        seen = {n: partitions[n] for n in sorted(named) if n in partitions}
        group.metadata_changed = seen != group.metadata
        group.metadata = seen
        if missing:
            group.statuses.append((Status.MISSING_SOURCE_TOPICS,
                                   f"Source topics {', '.join(missing)} are missing."))
            group.tasks = None
            return ()
        tasks: dict[str, int] = {}
        for sub in topology.subtopologies:
            counts = [partitions[n] for n in sub.source_topics]
            for group_of in sub.copartition_groups:
                together = [sub.source_topics[i] for i in group_of
                            if i < len(sub.source_topics)]
                if len({partitions[n] for n in together}) > 1:
                    group.statuses.append((Status.INCORRECTLY_PARTITIONED_TOPICS,
                                           f"Following topics do not have the same number of "
                                           f"partitions: [{', '.join(sorted(together))}]"))
            tasks[sub.subtopology_id] = max(counts, default=0)
        for sub in topology.subtopologies:  # repartition sources: given, else their writers'
            for info in sub.repartition_source_topics:
                if info.name in partitions:  # it exists: its partitions are what tasks read
                    count = partitions[info.name]
                    if info.partitions and info.partitions != count:
                        group.statuses.append((
                            Status.INCORRECTLY_PARTITIONED_TOPICS,
                            f"Internal topic {info.name} has {count} partitions, the "
                            f"topology asks for {info.partitions}"))
                else:  # made below, with the count given or its writers' task count
                    writers = [tasks[s.subtopology_id] for s in topology.subtopologies
                               if info.name in s.repartition_sink_topics]
                    count = info.partitions or max(writers, default=1) or 1
                tasks[sub.subtopology_id] = max(tasks[sub.subtopology_id], count)
        if any(c == Status.INCORRECTLY_PARTITIONED_TOPICS for c, _ in group.statuses):
            group.tasks = None
            return ()
        wanted: dict[str, tuple[int, int, dict[str, str]]] = {}
        for sub in topology.subtopologies:
            for info in sub.repartition_source_topics:
                wanted[info.name] = (info.partitions or tasks[sub.subtopology_id],
                                     info.replication_factor, dict(info.configs))
            for info in sub.state_changelog_topics:
                wanted[info.name] = (tasks[sub.subtopology_id], info.replication_factor,
                                     dict(info.configs))
        create = tuple((name, count, factor, configs)
                       for name, (count, factor, configs) in sorted(wanted.items())
                       if name not in partitions)
        if create:
            group.statuses.append((Status.MISSING_INTERNAL_TOPICS,
                                   "Internal topics are missing: "
                                   f"[{', '.join(n for n, *_ in create)}]"))
            group.tasks = None
            return create
        group.tasks = tasks
        return ()

    # -- assignment and reconciliation ------------------------------------------------------
    def _assign(self, group: StreamsGroup) -> None:
        """A new target assignment (nothing while the topology is not ready, as Kafka)."""
        tasks = group.tasks or {}
        members = sorted(group.members.values(), key=lambda m: m.member_id)
        specs = [MemberSpec(m.member_id, frozenset(tasks), group.target.get(m.member_id,
                                                                            ({}, {}))[0])
                 for m in members]
        active = uniform(specs, tasks)
        standby: dict[str, dict[str, set[int]]] = {m.member_id: {} for m in members}
        for _ in range(self.settings.num_standby_replicas):
            for sub, count in sorted(tasks.items()):
                for partition in range(count):
                    owner = next((m for m in members if partition in active[m.member_id].get(
                        sub, frozenset())), None)
                    choices = [m for m in members if owner is None
                               or m.process_id != owner.process_id]
                    choices = [m for m in choices if partition not in standby[m.member_id].get(
                        sub, set())]
                    if choices:
                        pick = min(choices, key=lambda m: sum(
                            len(p) for p in standby[m.member_id].values()))
                        standby[pick.member_id].setdefault(sub, set()).add(partition)
        group.target = {m.member_id: (active[m.member_id],
                                      {s: frozenset(p) for s, p in standby[m.member_id].items()})
                        for m in members}
        group.assignment_epoch = group.group_epoch

    def _reconcile(self, group: StreamsGroup, member: StreamsMember, now: float,
                   owned: Owned | None) -> None:
        active_target, standby_target = group.target.get(member.member_id, ({}, {}))
        moved = reconcile(member.state, member.member_epoch, member.active,
                          member.pending_revocation, active_target, group.assignment_epoch,
                          owned, group.taken(member.member_id))
        if moved is not None:
            member.previous_member_epoch = member.member_epoch
            member.state, member.member_epoch = moved.state, moved.member_epoch
            member.active, member.pending_revocation = moved.assigned, moved.pending_revocation
            member.standby = dict(standby_target)
        rebalance_timer(member, now)

    def _endpoints(self, group: StreamsGroup) -> list[Body]:
        topology = group.topology
        sources = {s.subtopology_id: s.source_topics for s in topology.subtopologies} if (
            topology is not None) else {}
        out = []
        for member in group.members.values():
            if member.user_endpoint is None:
                continue
            by_topic: dict[str, set[int]] = {}
            for sub, parts in member.active.items():
                for name in sources.get(sub, ()):
                    by_topic.setdefault(name, set()).update(parts)
            host, port = member.user_endpoint
            out.append({"user_endpoint": {"host": host, "port": port},
                        "active_partitions": [{"topic": t, "partitions": sorted(p)}
                                              for t, p in sorted(by_topic.items())],
                        "standby_partitions": []})
        return out

    # -- leaving and fencing -------------------------------------------------------------------
    def _fence(self, group: StreamsGroup, member: StreamsMember) -> None:
        drop_member(group, member.member_id)
        group.group_epoch += 1
        if not group.members:
            group.shutdown = False
        if member.user_endpoint is not None:
            group.endpoint_epoch += 1

    # -- StreamsGroupDescribe --------------------------------------------------------------------
    def describe(self, group_ids: Iterable[str]) -> list[Body]:
        """StreamsGroupDescribe: one described group per id."""
        return self._describe(group_ids, {"topology": None}, lambda group: {
            "topology": None if group.topology is None else {
                "epoch": group.topology.epoch, "subtopologies": [
                    {"subtopology_id": s.subtopology_id, "source_topics": list(s.source_topics),
                     "repartition_sink_topics": list(s.repartition_sink_topics),
                     "state_changelog_topics": [_info(i) for i in s.state_changelog_topics],
                     "repartition_source_topics": [_info(i)
                                                   for i in s.repartition_source_topics]}
                    for s in group.topology.subtopologies]},
            "members": [self._described(group, m) for m in group.members.values()]})

    @staticmethod
    def _described(group: StreamsGroup, member: StreamsMember) -> Body:
        active, standby = group.target.get(member.member_id, ({}, {}))
        host_port = member.user_endpoint
        return {
            "member_id": member.member_id, "member_epoch": member.member_epoch,
            "instance_id": member.instance_id, "rack_id": member.rack_id,
            "client_id": member.client_id, "client_host": member.client_host,
            "topology_epoch": member.topology_epoch, "process_id": member.process_id,
            "user_endpoint": None if host_port is None else {"host": host_port[0],
                                                             "port": host_port[1]},
            "client_tags": [{"key": k, "value": v} for k, v in member.client_tags],
            "task_offsets": [{"subtopology_id": s, "partition": p, "offset": o}
                             for s, p, o in member.task_offsets],
            "task_end_offsets": [{"subtopology_id": s, "partition": p, "offset": o}
                                 for s, p, o in member.task_end_offsets],
            "assignment": {"active_tasks": _listed(member.active),
                           "standby_tasks": _listed(member.standby),
                           "warmup_tasks": _listed(member.warmup)},
            "target_assignment": {"active_tasks": _listed(active),
                                  "standby_tasks": _listed(standby), "warmup_tasks": []},
            "is_classic": False}

    # -- offsets of streams-group members ---------------------------------------------------------
    def commit_error(self, group_id: str, member_id: str, member_epoch: int, version: int, *,
                     transactional: bool = False) -> int:
        """The error of an offset commit to streams group ``group_id``."""
        return offset_commit_error(self.groups[group_id].members, member_id, member_epoch,
                                   version, transactional=transactional)

    def fetch_error(self, group_id: str, member_id: str | None, member_epoch: int) -> int:
        """The error of an OffsetFetch v9+ naming a member of ``group_id``."""
        return offset_fetch_error(self.groups[group_id].members, member_id, member_epoch)


def _info(info: TopicInfo) -> Body:
    return {"name": info.name, "partitions": info.partitions,
            "replication_factor": info.replication_factor,
            "topic_configs": [{"key": k, "value": v} for k, v in info.configs]}

