"""Share partitions and share sessions (KIP-932): acquisition locks, delivery counts, pure.

What Kafka's ``SharePartitionManager`` and ``SharePartition`` do on a partition's
leader (``core/.../server/share/SharePartition.java``), with the state Kafka's share
coordinator persists kept in memory:

* each (share group, topic partition) has a **share-partition start offset** (SPSO)
  and records **in flight** above it, each AVAILABLE, ACQUIRED (by one member, under
  a lock), ACKNOWLEDGED or ARCHIVED (``RecordState``); the SPSO moves past records
  that are acknowledged or archived;
* a ShareFetch **acquires** available records for the member: records released
  earlier first, then new ones from the log, at most ``MaxRecords``; each acquisition adds
  one to the record's **delivery count** and locks it for
  ``group.share.record.lock.duration.ms``; new records are taken only while fewer than
  ``group.share.partition.max.record.locks`` lie between the SPSO and the end of what
  was fetched (Kafka's in-flight window);
* acknowledgements (in ShareFetch or ShareAcknowledge) ACCEPT (acknowledged),
  RELEASE (available again), REJECT or GAP (archived), or RENEW the lock (v2);
  only the member that holds a record may acknowledge it (INVALID_RECORD_STATE
  otherwise), and a partition's acknowledgements apply all or nothing, as Kafka
  rolls a failed batch back;
* a released record, or one whose lock expires, becomes available again, unless its
  delivery count reached ``group.share.delivery.count.limit``: then it is archived;
* **share sessions** (``ShareSessionCache``), one per member per broker: epoch 0
  opens one (closing the old, whose locks are released), each later request gives the
  next epoch (SHARE_SESSION_NOT_FOUND / INVALID_SHARE_SESSION_EPOCH otherwise), -1
  closes it after its acknowledgements; at most ``group.share.max.share.sessions``
  (SHARE_SESSION_LIMIT_REACHED);
* a partition's SPSO starts where ``share.auto.offset.reset`` says (``latest`` by
  default, as in Kafka; ``earliest`` as an emulator setting) when the partition is
  first assigned or fetched, or where AlterShareGroupOffsets put it.

Simplifications: records are tracked one offset at a time (Kafka keeps whole batches
until it must split them; the acquired ranges a client sees can be finer here), a
ShareFetch always honours ``MaxRecords`` strictly (Kafka's default acquire mode may
round up to batch ends), the read-committed isolation level of share groups and
dynamic group configs are not modelled, and a closed connection does not release its
session's locks (they expire).
"""

from __future__ import annotations

import uuid
from collections.abc import Iterable, Sequence
from typing import Any

import attrs

from kclient.emulator.log import PartitionLog, TopicStore
from kclient.protocol.constants import ErrorCode

__all__ = [
    "ACCEPT",
    "ACKNOWLEDGED",
    "ACQUIRED",
    "ARCHIVED",
    "AVAILABLE",
    "GAP",
    "REJECT",
    "RELEASE",
    "RENEW",
    "Acquired",
    "InFlight",
    "SharePartition",
    "SharePartitionManager",
    "ShareSession",
    "ShareSettings",
]

Body = dict[str, Any]
#: A partition of a share group: (group id, topic id, partition index).
Key = tuple[str, uuid.UUID, int]
#: An acknowledgement batch: (first offset, last offset, acknowledge types).
AckBatch = tuple[int, int, Sequence[int]]

# Record states (Kafka's RecordState).
AVAILABLE, ACQUIRED, ACKNOWLEDGED, ARCHIVED = "AVAILABLE", "ACQUIRED", "ACKNOWLEDGED", "ARCHIVED"
# Acknowledge types of ShareFetch / ShareAcknowledge.
GAP, ACCEPT, RELEASE, REJECT, RENEW = 0, 1, 2, 3, 4
#: Share session epochs with a meaning of their own (Kafka's ShareRequestMetadata).
INITIAL_EPOCH, FINAL_EPOCH = 0, -1


@attrs.frozen
class ShareSettings:
    """Broker settings of share groups (Kafka's names; times in ms)."""

    #: ``group.share.record.lock.duration.ms``.
    record_lock_duration_ms: int = 30_000
    #: ``group.share.delivery.count.limit``.
    delivery_count_limit: int = 5
    #: ``group.share.partition.max.record.locks``.
    partition_max_record_locks: int = 2000
    #: ``group.share.max.share.sessions``.
    max_share_sessions: int = 2000
    #: ``share.auto.offset.reset`` of a group without its own (``latest`` or ``earliest``).
    auto_offset_reset: str = "latest"
    #: ``group.share.session.timeout.ms``.
    session_timeout_ms: int = 45_000
    #: ``group.share.heartbeat.interval.ms`` (Kafka: 5000; shortened for tests).
    heartbeat_interval_ms: int = 500
    #: ``group.share.max.size``.
    max_size: int = 200
    #: The most share groups one emulated cluster keeps (an emulator bound).
    max_groups: int = 10_000
    #: The most members its share groups hold in all (an emulator bound).
    max_members: int = 100_000


@attrs.define
class InFlight:
    """One record above the SPSO: its state, delivery count, holder and lock expiry."""

    state: str = AVAILABLE
    delivery_count: int = 0
    member_id: str = ""
    deadline: float | None = None


@attrs.frozen
class Acquired:
    """A range of records acquired by one ShareFetch."""

    first_offset: int
    last_offset: int
    delivery_count: int


@attrs.define(eq=False)
class SharePartition:
    """One topic partition as one share group consumes it."""

    start_offset: int
    #: The first offset never fetched (Kafka's end offset + 1).
    next_offset: int
    records: dict[int, InFlight] = attrs.Factory(dict)

    def release(self, offset: int, limit: int) -> None:
        record = self.records[offset]
        record.state = ARCHIVED if record.delivery_count >= limit else AVAILABLE
        record.member_id, record.deadline = "", None

    def advance(self, log_start: int) -> None:
        """Move the SPSO past acknowledged and archived records (and below the log start)."""
        if self.start_offset < log_start:
            for offset in [o for o in self.records if o < log_start]:
                del self.records[offset]
            self.start_offset = log_start
            self.next_offset = max(self.next_offset, log_start)
        while self.start_offset < self.next_offset:
            record = self.records.get(self.start_offset)
            if record is None or record.state not in (ACKNOWLEDGED, ARCHIVED):
                break
            del self.records[self.start_offset]
            self.start_offset += 1


@attrs.define(eq=False)
class ShareSession:
    """A member's share session on one broker: its next epoch and its partitions."""

    epoch: int = 1
    partitions: set[tuple[uuid.UUID, int]] = attrs.Factory(set)


class SharePartitionManager:
    """Share partitions and share sessions of one emulated cluster (see the module text)."""

    def __init__(self, topics: TopicStore, settings: ShareSettings | None = None) -> None:
        self.topics = topics
        self.settings = settings or ShareSettings()
        self.partitions: dict[Key, SharePartition] = {}
        #: (group id, member id, node id) -> session.
        self.sessions: dict[tuple[str, str, int], ShareSession] = {}
        #: Per-group ``share.auto.offset.reset`` (Kafka's dynamic group config).
        self.auto_offset_reset: dict[str, str] = {}

    # -- runtime.Machine ---------------------------------------------------------------------
    def drain(self) -> list[tuple[Any, Body]]:
        """Nothing is ever parked here (ShareFetch waits in its handler)."""
        return []

    def next_deadline(self) -> float | None:
        """The earliest acquisition lock expiry (None: no record is locked)."""
        return min((r.deadline for p in self.partitions.values() for r in p.records.values()
                    if r.deadline is not None), default=None)

    def tick(self, now: float) -> None:
        """Release every record whose acquisition lock expired at ``now``."""
        limit = self.settings.delivery_count_limit
        for key, part in self.partitions.items():
            for offset, record in list(part.records.items()):
                if record.state == ACQUIRED and record.deadline is not None and (
                        record.deadline <= now):
                    part.release(offset, limit)
            part.advance(self._log_start(key))

    # -- share partitions ---------------------------------------------------------------------
    def _log(self, topic_id: uuid.UUID, partition: int) -> PartitionLog | None:
        topic = self.topics.by_id.get(topic_id)
        if topic is None or not 0 <= partition < len(topic.partitions):
            return None
        return topic.partitions[partition]

    def _log_start(self, key: Key) -> int:
        log = self._log(key[1], key[2])
        return log.log_start_offset if log is not None else 0

    def initialize(self, group_id: str, topic_id: uuid.UUID, partition: int) -> SharePartition:
        """The share partition of ``group_id``, started per ``share.auto.offset.reset`` when new."""
        key = (group_id, topic_id, partition)
        part = self.partitions.get(key)
        if part is None:
            log = self._log(topic_id, partition)
            earliest = self.auto_offset_reset.get(group_id, self.settings.auto_offset_reset)
            start = 0 if log is None else (
                log.log_start_offset if earliest == "earliest" else log.high_watermark)
            part = self.partitions[key] = SharePartition(start, start)
        return part

    def acquire(self, now: float, group_id: str, member_id: str, topic_id: uuid.UUID,
                partition: int, max_records: int) -> list[Acquired]:
        """Acquire up to ``max_records`` records of one partition for ``member_id``."""
        log = self._log(topic_id, partition)
        part = self.initialize(group_id, topic_id, partition)
        if log is None or max_records <= 0:
            return []
        part.advance(log.log_start_offset)
        deadline = now + self.settings.record_lock_duration_ms / 1000
        taken: list[int] = []
        for offset in sorted(part.records):
            if len(taken) >= max_records:
                break
            if part.records[offset].state == AVAILABLE:
                taken.append(offset)
        window = self.settings.partition_max_record_locks - (part.next_offset - part.start_offset)
        room = min(max_records - len(taken), window)
        offset = part.next_offset
        while room > 0 and offset < log.high_watermark:
            part.records[offset] = InFlight()
            taken.append(offset)
            offset += 1
            room -= 1
        part.next_offset = max(part.next_offset, offset)
        for offset in taken:
            record = part.records[offset]
            record.state, record.member_id, record.deadline = ACQUIRED, member_id, deadline
            record.delivery_count += 1
        return _ranges(sorted(taken), part.records)

    def records_bytes(self, topic_id: uuid.UUID, partition: int,
                      acquired: Sequence[Acquired], max_bytes: int) -> bytes:
        """The stored batches that hold the acquired records (whole batches, as Kafka sends)."""
        log = self._log(topic_id, partition)
        if log is None or not acquired:
            return b""
        out = bytearray()
        last = acquired[-1].last_offset
        for stored in log.batches_from(acquired[0].first_offset):
            if stored.base > last or (out and len(out) + len(stored.data) > max_bytes):
                break
            if any(a.first_offset <= stored.last and stored.base <= a.last_offset
                   for a in acquired):
                out += stored.data
        return bytes(out)

    def acknowledge(self, now: float, group_id: str, member_id: str, topic_id: uuid.UUID,
                    partition: int, batches: Sequence[AckBatch], *,
                    renew_allowed: bool = False) -> tuple[int, str | None]:
        """Apply acknowledgement ``batches`` to one partition, all or nothing:
        ``(error code, message)``."""
        problem = _batch_problem(batches, renew_allowed)
        if problem is not None:
            return ErrorCode.INVALID_REQUEST, problem
        part = self.partitions.get((group_id, topic_id, partition))
        changes: list[tuple[int, int]] = []
        for first, last, types in batches:
            for offset in range(first, last + 1):
                kind = types[0] if len(types) == 1 else types[offset - first]
                record = part.records.get(offset) if part is not None else None
                if record is None or record.state != ACQUIRED:
                    return (ErrorCode.INVALID_RECORD_STATE,
                            "The record cannot be acknowledged: it is not in the acquired state.")
                if record.member_id != member_id:
                    return (ErrorCode.INVALID_RECORD_STATE,
                            "Member is not the owner of batch record")
                changes.append((offset, kind))
        assert part is not None or not changes
        limit = self.settings.delivery_count_limit
        for offset, kind in changes:
            assert part is not None
            record = part.records[offset]
            if kind == ACCEPT:
                record.state, record.member_id, record.deadline = ACKNOWLEDGED, "", None
            elif kind == RELEASE:
                part.release(offset, limit)
            elif kind == RENEW:
                record.deadline = now + self.settings.record_lock_duration_ms / 1000
            else:  # REJECT and GAP archive the record
                record.state, record.member_id, record.deadline = ARCHIVED, "", None
        if part is not None:
            part.advance(self._log_start((group_id, topic_id, partition)))
        return ErrorCode.NONE, None

    def release_member(self, group_id: str, member_id: str,
                       partitions: Iterable[tuple[uuid.UUID, int]] | None = None) -> None:
        """Release the records ``member_id`` holds (of ``partitions``; None: all of the group's)."""
        wanted = None if partitions is None else set(partitions)
        limit = self.settings.delivery_count_limit
        for (group, topic_id, index), part in self.partitions.items():
            if group != group_id or (wanted is not None and (topic_id, index) not in wanted):
                continue
            for offset, record in list(part.records.items()):
                if record.state == ACQUIRED and record.member_id == member_id:
                    part.release(offset, limit)
            part.advance(self._log_start((group, topic_id, index)))

    # -- share sessions ------------------------------------------------------------------------
    def session(self, group_id: str, member_id: str, node_id: int,
                epoch: int, *, fetch: bool) -> tuple[int, ShareSession | None]:
        """The session a ShareFetch (``fetch``) or ShareAcknowledge at ``epoch`` uses: an
        error code (NONE) and the session (a new one for epoch 0)."""
        key = (group_id, member_id, node_id)
        found = self.sessions.get(key)
        if epoch == INITIAL_EPOCH:
            if not fetch:
                return ErrorCode.INVALID_SHARE_SESSION_EPOCH, None
            if found is not None:
                self.close_session(group_id, member_id, node_id)
            elif len(self.sessions) >= self.settings.max_share_sessions:
                return ErrorCode.SHARE_SESSION_LIMIT_REACHED, None
            session = self.sessions[key] = ShareSession()
            return ErrorCode.NONE, session
        if found is None:
            return ErrorCode.SHARE_SESSION_NOT_FOUND, None
        if epoch != FINAL_EPOCH:
            if epoch != found.epoch:
                return ErrorCode.INVALID_SHARE_SESSION_EPOCH, None
            found.epoch = epoch + 1 if epoch < 2**31 - 1 else 1
        return ErrorCode.NONE, found

    def close_session(self, group_id: str, member_id: str, node_id: int) -> None:
        """Close a share session and release the records its member holds in its partitions."""
        session = self.sessions.pop((group_id, member_id, node_id), None)
        if session is not None:
            self.release_member(group_id, member_id, session.partitions)

    # -- share-group offsets (admin) -----------------------------------------------------------
    def start_offset(self, group_id: str, topic_id: uuid.UUID, partition: int) -> int | None:
        """The SPSO of a partition (None: the group has no state for it)."""
        part = self.partitions.get((group_id, topic_id, partition))
        return None if part is None else part.start_offset

    def lag(self, group_id: str, topic_id: uuid.UUID, partition: int) -> int:
        """Records above the SPSO not yet acknowledged or archived (-1: unknown)."""
        part = self.partitions.get((group_id, topic_id, partition))
        log = self._log(topic_id, partition)
        if part is None or log is None:
            return -1
        done = sum(1 for o, r in part.records.items() if r.state in (ACKNOWLEDGED, ARCHIVED))
        return max(log.high_watermark - part.start_offset - done, 0)

    def set_start_offset(self, group_id: str, topic_id: uuid.UUID, partition: int,
                         offset: int) -> None:
        """Put a partition's SPSO at ``offset`` and forget its records in flight."""
        self.partitions[(group_id, topic_id, partition)] = SharePartition(offset, offset)

    def delete(self, group_id: str, topic_id: uuid.UUID | None = None) -> None:
        """Forget the group's share partitions (of one topic, or all)."""
        for key in [k for k in self.partitions
                    if k[0] == group_id and (topic_id is None or k[1] == topic_id)]:
            del self.partitions[key]

    def forget_topic(self, topic_id: uuid.UUID) -> None:
        """Forget every group's share partitions of a deleted topic (and its place in the
        share sessions), as Kafka deletes the share-group state of a deleted topic."""
        for key in [k for k in self.partitions if k[1] == topic_id]:
            del self.partitions[key]
        for session in self.sessions.values():
            session.partitions = {p for p in session.partitions if p[0] != topic_id}

    def partitions_of(self, group_id: str) -> list[tuple[uuid.UUID, int]]:
        """The (topic id, partition) pairs ``group_id`` has state for."""
        return sorted(((t, p) for g, t, p in self.partitions if g == group_id),
                      key=lambda item: (str(item[0]), item[1]))


def _ranges(offsets: Sequence[int], records: dict[int, InFlight]) -> list[Acquired]:
    """Contiguous acquired offsets with the same delivery count, as ranges."""
    out: list[Acquired] = []
    for offset in offsets:
        count = records[offset].delivery_count
        if out and out[-1].last_offset == offset - 1 and out[-1].delivery_count == count:
            out[-1] = Acquired(out[-1].first_offset, offset, count)
        else:
            out.append(Acquired(offset, offset, count))
    return out


def _batch_problem(batches: Sequence[AckBatch], renew_allowed: bool) -> str | None:
    """Why Kafka refuses a partition's acknowledgement batches (None: they are well-formed)."""
    previous = -1
    top = RENEW if renew_allowed else REJECT
    for first, last, types in batches:
        if first < 0 or last < first:
            return f"Invalid acknowledgement batch: first offset {first}, last offset {last}."
        if first <= previous:
            return "Acknowledgement batches overlap or are not in order of offset."
        if len(types) not in (1, last - first + 1):
            return ("The acknowledge types must be one for the batch or one for each offset of "
                    "the batch.")
        if any(not 0 <= t <= top for t in types):
            return f"Invalid acknowledge type in {list(types)}."
        previous = last
    return None
