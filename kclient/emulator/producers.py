"""The producer state of one partition: epochs, sequences, open and aborted transactions, pure.

Kafka's ``ProducerStateManager`` / ``ProducerAppendInfo`` (``storage/.../log/``), as
far as real clients meet it: each :class:`~kclient.emulator.log.PartitionLog` keeps a
:class:`ProducerState` that checks a batch of an idempotent or transactional producer
before it is appended (:meth:`ProducerState.check`), records it after
(:meth:`~ProducerState.appended`), and ends a transaction when its marker is written
(:meth:`~ProducerState.end_transaction`).  From it come the partition's last stable
offset (the first offset of its earliest open transaction) and the aborted
transactions a read_committed Fetch lists.

The checks, each a row of :mod:`kclient.emulator.rules` (which says from which
release they apply and with which error):

* an epoch older than the partition last saw: INVALID_PRODUCER_EPOCH;
* a new epoch whose first sequence is not 0, or a sequence that does not follow the
  last one: OUT_OF_ORDER_SEQUENCE_NUMBER; an unknown producer whose first sequence is
  not 0: UNKNOWN_PRODUCER_ID (Kafka 1.0-2.4; 2.5+ accept it, KIP-360);
* a batch equal to one of the producer's last five: a duplicate, answered with the
  first one's offset (Kafka 1.0+) or DUPLICATE_SEQUENCE_NUMBER (0.11);
* a non-transactional batch from a producer with an open transaction: INVALID_TXN_STATE.
"""

from __future__ import annotations

import bisect
import collections
from collections.abc import Iterable

import attrs

from kclient.emulator.records import Batch
from kclient.protocol.constants import ErrorCode

__all__ = ["CACHED_BATCHES", "MAX_PRODUCERS", "AbortedTxn", "ProducerPolicy", "ProducerState",
           "SequenceError"]

#: How many of a producer's last batches a partition remembers for duplicates (Kafka's
#: ``ProducerStateEntry.NUM_BATCHES_TO_RETAIN``).
CACHED_BATCHES = 5
#: The most producers one partition remembers (an emulator bound standing for Kafka's
#: ``producer.id.expiration.ms``): past it the longest-known producer without an open
#: transaction is forgotten, as if it had expired.
MAX_PRODUCERS = 10_000


class SequenceError(Exception):
    """A batch the partition's producer state refuses: ``code`` is Kafka's error."""

    def __init__(self, message: str, code: int) -> None:
        super().__init__(message)
        self.code = int(code)


@attrs.frozen
class ProducerPolicy:
    """How a release's brokers check producer state (see :mod:`kclient.emulator.rules`)."""

    #: A duplicate batch gets DUPLICATE_SEQUENCE_NUMBER (0.11) instead of its first offset.
    duplicate_is_error: bool = False
    #: An unknown producer whose first sequence is not 0 gets UNKNOWN_PRODUCER_ID (1.0-2.4).
    unknown_producer_is_error: bool = False


@attrs.frozen
class AbortedTxn:
    """An aborted transaction of one partition: its producer, first offset and marker offset."""

    producer_id: int
    first_offset: int
    last_offset: int


@attrs.define
class _Producer:
    epoch: int
    # (first sequence, last sequence, base offset) of the last batches, oldest first.
    batches: collections.deque[tuple[int, int, int]] = attrs.Factory(
        lambda: collections.deque(maxlen=CACHED_BATCHES))
    open_since: int | None = None  # first offset of the open transaction


def _in_sequence(last: int, first: int) -> bool:
    return first == last + 1 or (first == 0 and last == 2**31 - 1)


class ProducerState:
    """One partition's producers, open and aborted transactions (see the module text)."""

    def __init__(self) -> None:
        self._producers: dict[int, _Producer] = {}
        self._open: dict[int, int] = {}  # producer id -> first offset of its open transaction
        self._aborted: list[AbortedTxn] = []  # by last (marker) offset
        self._aborted_lasts: list[int] = []

    def check(self, batch: Batch, policy: ProducerPolicy) -> int | None:
        """Check ``batch`` before it is appended: None to append it, the base offset of the
        batch it duplicates, or :class:`SequenceError`."""
        if not batch.idempotent:
            return None
        entry = self._producers.get(batch.producer_id)
        if entry is None:
            if batch.base_sequence != 0 and policy.unknown_producer_is_error:
                raise SequenceError(f"no record of producer {batch.producer_id} on this "
                                    "partition and its first sequence is "
                                    f"{batch.base_sequence}, not 0",
                                    ErrorCode.UNKNOWN_PRODUCER_ID)
            return None
        if batch.producer_epoch < entry.epoch:
            raise SequenceError(f"producer {batch.producer_id}'s epoch {batch.producer_epoch} "
                                f"is older than the partition's {entry.epoch}",
                                ErrorCode.INVALID_PRODUCER_EPOCH)
        if batch.producer_epoch == entry.epoch:
            for first, last, offset in entry.batches:
                if (first, last) == (batch.base_sequence, batch.last_sequence):
                    if policy.duplicate_is_error:
                        raise SequenceError(f"duplicate sequence {first}-{last} of producer "
                                            f"{batch.producer_id}",
                                            ErrorCode.DUPLICATE_SEQUENCE_NUMBER)
                    return offset
        if not batch.transactional and entry.open_since is not None:
            raise SequenceError(f"producer {batch.producer_id} has an open transaction and "
                                "sent a non-transactional batch", ErrorCode.INVALID_TXN_STATE)
        if batch.producer_epoch != entry.epoch:
            if batch.base_sequence != 0:
                raise SequenceError(f"producer {batch.producer_id}'s new epoch "
                                    f"{batch.producer_epoch} starts at sequence "
                                    f"{batch.base_sequence}, not 0",
                                    ErrorCode.OUT_OF_ORDER_SEQUENCE_NUMBER)
        else:
            # No batch yet in this epoch (its marker bumped it): the sequence starts at 0.
            last = entry.batches[-1][1] if entry.batches else -1
            if not _in_sequence(last, batch.base_sequence):
                raise SequenceError(f"producer {batch.producer_id}'s sequence "
                                    f"{batch.base_sequence} does not follow {last}",
                                    ErrorCode.OUT_OF_ORDER_SEQUENCE_NUMBER)
        return None

    def _expire_one(self) -> None:
        for producer_id in self._producers:
            if producer_id not in self._open:
                del self._producers[producer_id]
                return

    def has_open_transaction(self, producer_id: int) -> bool:
        """True while ``producer_id`` has a transaction open on this partition."""
        return producer_id in self._open

    def appended(self, batch: Batch, base: int) -> None:
        """Record ``batch``, appended at ``base``."""
        if not batch.idempotent or batch.control:
            return
        entry = self._producers.get(batch.producer_id)
        if entry is None or batch.producer_epoch != entry.epoch:
            entry = self._producers[batch.producer_id] = _Producer(batch.producer_epoch,
                                                                   open_since=entry.open_since
                                                                   if entry else None)
            if len(self._producers) > MAX_PRODUCERS:
                self._expire_one()
        entry.batches.append((batch.base_sequence, batch.last_sequence, base))
        if batch.transactional and entry.open_since is None:
            entry.open_since = base
            self._open[batch.producer_id] = base

    def end_transaction(self, producer_id: int, epoch: int, commit: bool,
                        marker_offset: int) -> None:
        """A COMMIT or ABORT marker of ``producer_id`` was appended at ``marker_offset``."""
        entry = self._producers.get(producer_id)
        if entry is None:
            entry = self._producers[producer_id] = _Producer(epoch)
        elif epoch > entry.epoch:
            entry.epoch = epoch
            entry.batches.clear()
        first = self._open.pop(producer_id, None)
        entry.open_since = None
        if first is not None and not commit:
            self._aborted.append(AbortedTxn(producer_id, first, marker_offset))
            self._aborted_lasts.append(marker_offset)

    def first_unstable_offset(self) -> int | None:
        """The first offset of the earliest open transaction (None: none open)."""
        return min(self._open.values(), default=None)

    def aborted_between(self, start: int, end: int) -> list[AbortedTxn]:
        """The aborted transactions with records in ``[start, end)`` (Kafka's
        ``collectAbortedTxns``): what a read_committed consumer must skip there."""
        index = bisect.bisect_left(self._aborted_lasts, start)
        return [t for t in self._aborted[index:] if t.first_offset < end]

    def forget_before(self, offset: int) -> None:
        """Drop the aborted transactions that end before ``offset`` (retention moved on)."""
        index = bisect.bisect_left(self._aborted_lasts, offset)
        if index:
            del self._aborted[:index], self._aborted_lasts[:index]

    @property
    def producer_ids(self) -> Iterable[int]:
        """The producers this partition knows."""
        return list(self._producers)
