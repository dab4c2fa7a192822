"""The emulated cluster's partition logs: topics, their configs and their stored batches.

Pure state, no I/O and no clock: :class:`TopicStore` holds the topics of one
emulated cluster (created by CreateTopics, Metadata auto-creation or the pytest
plugin), each a :class:`Topic` with its configs and :class:`PartitionLog` list.
A partition log takes produced record sets (read by :mod:`kclient.emulator.records`),
gives their batches offsets as a leader does and serves reads by offset and by
timestamp.  Bounds, each the way Kafka bounds it or, where Kafka's bound is a disk,
an emulator bound named here:

* topic names follow Kafka's ``Topic.validate`` (1-249 characters of ASCII letters,
  digits, ``.``, ``_`` and ``-``; not ``.`` or ``..``) and may not collide with an
  existing topic once ``.`` and ``_`` are unified (``ReplicationControlManager.
  validateNewTopicNames``); Kafka's internal topics (``__consumer_offsets``,
  ``__transaction_state``, ``__share_group_state``, ``__cluster_metadata``) are not
  topics here (the emulator keeps that state itself) and cannot be created;
* one request creates at most :data:`MAX_RECORDS_PER_OPERATION` metadata records (a
  topic and each of its partitions and configs count one each), the KRaft controller's
  ``QuorumController.MAX_RECORDS_PER_USER_OP``; past it the whole request is a
  POLICY_VIOLATION ("Unable to perform excessively large batch operation.");
* a cluster holds at most :data:`MAX_PARTITIONS` partitions (an emulator bound);
* the stored batches of a cluster take at most ``max_stored_bytes`` (an emulator bound,
  256 MiB by default): past it the oldest batches are deleted, cluster-wide, as
  retention deletes old segments (their partitions' log start offsets move on and a
  consumer behind them gets OFFSET_OUT_OF_RANGE, as from Kafka).
"""

from __future__ import annotations

import bisect
import collections
import re
import uuid
from collections.abc import Iterator, Mapping

import attrs

from kclient.emulator.producers import ProducerState
from kclient.emulator.records import DEFAULT_MAX_MESSAGE_BYTES, Batch, control_batch
from kclient.protocol.constants import ErrorCode

__all__ = [
    "DEFAULT_MAX_STORED_BYTES",
    "DEFAULT_PARTITIONS",
    "INTERNAL_TOPICS",
    "LEADER_EPOCH",
    "MAX_PARTITIONS",
    "MAX_RECORDS_PER_OPERATION",
    "MAX_TOPIC_NAME",
    "PartitionLog",
    "StoredBatch",
    "Topic",
    "TopicError",
    "TopicStore",
    "creation_records",
    "topic_name_problem",
]

#: The leader epoch of every emulated partition (no leader ever changes).
LEADER_EPOCH = 0
#: Kafka's default ``num.partitions`` for a topic created without a count.
DEFAULT_PARTITIONS = 1
#: Kafka's longest topic name (``Topic.MAX_NAME_LENGTH``).
MAX_TOPIC_NAME = 249
#: Kafka's internal topics: state the emulator keeps itself, never a topic here.
INTERNAL_TOPICS = frozenset({"__consumer_offsets", "__transaction_state",
                             "__share_group_state", "__cluster_metadata"})
#: The KRaft controller's bound on the records one request may create.
MAX_RECORDS_PER_OPERATION = 10_000
#: The most partitions one emulated cluster holds (an emulator bound).
MAX_PARTITIONS = 100_000
#: The most bytes of stored batches one emulated cluster keeps (an emulator bound).
DEFAULT_MAX_STORED_BYTES = 256 * 1024 * 1024

_LEGAL_NAME = re.compile(r"[a-zA-Z0-9._-]+")


def topic_name_problem(name: object) -> str | None:
    """Why Kafka refuses ``name`` as a new topic's name (None when it takes it)."""
    if not isinstance(name, str):
        return f"a topic name is text, got {type(name).__name__}"
    if not name:
        return "the empty string is not allowed"
    if name in (".", ".."):
        return f"'{name}' is not allowed"
    if len(name) > MAX_TOPIC_NAME:
        return f"the name is {len(name)} characters long, more than {MAX_TOPIC_NAME}"
    if not _LEGAL_NAME.fullmatch(name):
        bad = next(c for c in name if not _LEGAL_NAME.fullmatch(c))
        return (f"it contains {bad!r}; only ASCII letters, digits, '.', '_' and '-' are "
                "allowed")
    if name in INTERNAL_TOPICS:
        return f"{name} is one of Kafka's internal topics"
    return None


class TopicError(Exception):
    """A topic Kafka would not create: ``code`` is the error Kafka answers with."""

    def __init__(self, message: str, code: int) -> None:
        super().__init__(message)
        self.code = int(code)


@attrs.frozen
class StoredBatch:
    """A batch as stored: its first and last offsets and what was read of it."""

    base: int
    last: int
    batch: Batch
    data: bytes


class PartitionLog:
    """One partition: its stored batches, log start offset and high watermark.

    Reads by offset and by timestamp are binary searches: ``_lasts`` holds each
    batch's last offset, ``_time_index`` the running maximum of the batches'
    timestamps (non-decreasing, like Kafka's time index), so the first batch at or
    after a timestamp is the first whose running maximum reaches it.
    """

    def __init__(self, store: TopicStore | None = None) -> None:
        #: The store that counts this log's bytes (None once its topic is deleted).
        self.store = store
        self._batches: list[StoredBatch] = []
        self._lasts: list[int] = []
        self._time_index: list[int] = []
        self._first = 0  # batches before this index were deleted
        self._max_timestamp = (-1, -1)
        self.log_start_offset = 0
        self.high_watermark = 0
        self.size = 0
        #: Its producers' epochs and sequences, open and aborted transactions.
        self.producers = ProducerState()

    def __len__(self) -> int:
        return len(self._batches) - self._first

    def append(self, batches: list[Batch]) -> int:
        """Append read ``batches``; return the base offset given to the first."""
        base = offset = self.high_watermark
        stored = []
        for batch in batches:
            stored.append(StoredBatch(offset, offset + batch.count - 1, batch,
                                      _with_offsets(batch, offset)))
            offset += batch.count
        for item in stored:
            self._batches.append(item)
            self._lasts.append(item.last)
            stamp = item.batch.max_timestamp
            self._time_index.append(max(self._time_index[-1], stamp) if self._time_index
                                    else stamp)
            if item.batch.max_timestamp > self._max_timestamp[0]:
                self._max_timestamp = (item.batch.max_timestamp, item.last)
            self.size += len(item.data)
            self.producers.appended(item.batch, item.base)
        self.high_watermark = offset
        if self.store is not None:
            self.store.stored(self, stored)
        return base

    def append_marker(self, producer_id: int, producer_epoch: int, commit: bool,
                      coordinator_epoch: int, timestamp: int) -> int:
        """Append a transaction's COMMIT or ABORT marker (a control batch), as Kafka's
        WriteTxnMarkers does; return its offset."""
        offset = self.append([control_batch(producer_id, producer_epoch, commit,
                                            coordinator_epoch, timestamp)])
        self.producers.end_transaction(producer_id, producer_epoch, commit, offset)
        return offset

    @property
    def last_stable_offset(self) -> int:
        """The first offset of the earliest open transaction, else the high watermark:
        where a read_committed consumer stops."""
        first = self.producers.first_unstable_offset()
        return self.high_watermark if first is None else first

    def detach(self) -> int:
        """Leave the store (the topic is deleted); return the bytes it counted for this log."""
        self.store = None
        size, self.size = self.size, 0
        return size

    def batches_from(self, offset: int) -> Iterator[StoredBatch]:
        """The stored batches from the one holding ``offset`` on."""
        index = max(bisect.bisect_left(self._lasts, offset), self._first)
        for i in range(index, len(self._batches)):
            yield self._batches[i]

    def read(self, offset: int, max_bytes: int) -> bytes:
        """Batches from the one holding ``offset`` on, up to about ``max_bytes`` (always at
        least one batch when there is one, as Kafka does since KIP-74)."""
        return self.read_batches(offset, max_bytes)[0]

    def read_batches(self, offset: int, max_bytes: int, limit: int | None = None,
                     ) -> tuple[bytes, int, list[StoredBatch]]:
        """:meth:`read`, with ``limit`` only the batches that start before it (the last
        stable offset), and the offset after the last batch read and the batches read."""
        out = bytearray()
        end = offset
        read: list[StoredBatch] = []
        for stored in self.batches_from(offset):
            if limit is not None and stored.base >= limit:
                break
            if out and len(out) + len(stored.data) > max_bytes:
                break
            out += stored.data
            end = stored.last + 1
            read.append(stored)
        return bytes(out), end, read

    def offset_for_timestamp(self, timestamp: int) -> int:
        """The first offset of the first batch with a timestamp at or after ``timestamp``
        (the high watermark when none)."""
        index = max(bisect.bisect_left(self._time_index, timestamp), self._first)
        return self._batches[index].base if index < len(self._batches) else self.high_watermark

    def max_timestamp(self) -> tuple[int, int]:
        """``(timestamp, offset)`` of the batch with the highest timestamp (-1, -1 if empty)."""
        return self._max_timestamp

    def delete_oldest(self) -> int:
        """Delete the oldest stored batch (retention); return the bytes it freed."""
        if self._first >= len(self._batches):
            return 0
        oldest = self._batches[self._first]
        self._first += 1
        self.log_start_offset = oldest.last + 1
        self.size -= len(oldest.data)
        self.producers.forget_before(self.log_start_offset)
        if self._first > 1024 and self._first * 2 > len(self._batches):
            del self._batches[:self._first], self._lasts[:self._first]
            del self._time_index[:self._first]
            self._first = 0
        return len(oldest.data)


def _with_offsets(batch: Batch, base: int) -> bytes:
    """``batch``'s bytes with the offsets a leader gives it: a v2 batch's baseOffset (and
    partition leader epoch, which its CRC does not cover); a magic 0/1 message's offset
    (a compressed magic 1 wrapper takes the offset of its last inner message)."""
    data = bytearray(batch.data)
    if batch.magic == 2:
        data[0:8] = base.to_bytes(8, "big", signed=True)
        data[12:16] = LEADER_EPOCH.to_bytes(4, "big", signed=True)
    else:
        data[0:8] = (base + batch.count - 1).to_bytes(8, "big", signed=True)
    return bytes(data)


@attrs.define(eq=False)
class Topic:
    """A topic: its name, id, creation index (spreads leaders), partition logs and configs."""

    name: str
    topic_id: uuid.UUID
    index: int
    partitions: list[PartitionLog]
    replication_factor: int = 1
    configs: dict[str, str | None] = attrs.Factory(dict)

    @property
    def max_message_bytes(self) -> int:
        """The largest batch the topic takes (``max.message.bytes``)."""
        value = self.configs.get("max.message.bytes")
        return int(value) if value is not None and value.isdigit() else DEFAULT_MAX_MESSAGE_BYTES

    @property
    def compression_type(self) -> str:
        """The topic's ``compression.type`` (``producer`` by default, as in Kafka)."""
        return self.configs.get("compression.type") or "producer"


class TopicStore:
    """The topics of one emulated cluster, by name and by id (see the module text)."""

    def __init__(self, *, default_partitions: int = DEFAULT_PARTITIONS,
                 max_stored_bytes: int = DEFAULT_MAX_STORED_BYTES) -> None:
        self.default_partitions = default_partitions
        self.max_stored_bytes = max_stored_bytes
        self.by_name: dict[str, Topic] = {}
        self.by_id: dict[uuid.UUID, Topic] = {}
        # Names with '.' unified to '_' -> the topic holding it (Kafka's collision check).
        self._unified: dict[str, str] = {}
        self.partition_count = 0
        self.stored_bytes = 0
        self._created = 0
        # Every stored batch in append order, oldest first, with its partition: what
        # retention deletes first when the cluster holds too much.
        self._appends: collections.deque[tuple[PartitionLog, int]] = collections.deque()

    def check_new(self, name: object, partitions: int) -> None:
        """Raise :class:`TopicError` when Kafka would refuse creating topic ``name``."""
        problem = topic_name_problem(name)
        if problem is not None:
            code = (ErrorCode.INVALID_REQUEST if name in INTERNAL_TOPICS
                    else ErrorCode.INVALID_TOPIC_EXCEPTION)
            raise TopicError(f"Topic name is invalid: {problem}", code)
        assert isinstance(name, str)
        if name in self.by_name:
            raise TopicError(f"Topic '{name}' already exists.", ErrorCode.TOPIC_ALREADY_EXISTS)
        other = self._unified.get(name.replace(".", "_"))
        if other is not None:
            raise TopicError(f"Topic '{name}' collides with existing topic: {other}",
                             ErrorCode.INVALID_TOPIC_EXCEPTION)
        if partitions < 1:
            raise TopicError("Number of partitions must be larger than 0.",
                             ErrorCode.INVALID_PARTITIONS)
        if self.partition_count + partitions > MAX_PARTITIONS:
            raise TopicError(f"the emulated cluster holds {self.partition_count} partitions; "
                             f"{partitions} more would pass its bound of {MAX_PARTITIONS}",
                             ErrorCode.POLICY_VIOLATION)

    def create(self, name: str, partitions: int | None = None, replication_factor: int = 1,
               configs: Mapping[str, str | None] | None = None) -> Topic:
        """Create topic ``name`` (``partitions`` None: the default count); return it.

        Raises :class:`TopicError` for what Kafka refuses (:meth:`check_new`).
        """
        count = self.default_partitions if partitions is None or partitions == -1 else partitions
        self.check_new(name, count)
        topic = Topic(name, uuid.uuid4(), self._created,
                      [PartitionLog(self) for _ in range(count)], replication_factor,
                      dict(configs or {}))
        self._created += 1
        self.by_name[name] = topic
        self.by_id[topic.topic_id] = topic
        self._unified[name.replace(".", "_")] = name
        self.partition_count += count
        return topic

    def delete(self, name: str) -> bool:
        """Delete topic ``name``; False when there is none."""
        topic = self.by_name.pop(name, None)
        if topic is None:
            return False
        del self.by_id[topic.topic_id]
        del self._unified[name.replace(".", "_")]
        self.partition_count -= len(topic.partitions)
        for log in topic.partitions:
            self.stored_bytes -= log.detach()
        return True

    def stored(self, log: PartitionLog, batches: list[StoredBatch]) -> None:
        """Count batches just appended to ``log``; delete the oldest past the bound."""
        for item in batches:
            self._appends.append((log, len(item.data)))
            self.stored_bytes += len(item.data)
        while self.stored_bytes > self.max_stored_bytes and self._appends:
            oldest, _size = self._appends.popleft()
            if oldest.store is self:
                self.stored_bytes -= oldest.delete_oldest()

    def __iter__(self) -> Iterator[Topic]:
        return iter(list(self.by_name.values()))

    def __len__(self) -> int:
        return len(self.by_name)


def creation_records(topics: list[tuple[int, int]]) -> int:
    """The metadata records a CreateTopics of ``(partitions, configs)`` pairs makes."""
    return sum(1 + max(partitions, 0) + configs for partitions, configs in topics)

