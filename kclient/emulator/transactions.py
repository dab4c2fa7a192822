"""The transaction coordinator (InitProducerId, AddPartitionsToTxn, AddOffsetsToTxn, EndTxn), pure.

A state machine in the manner of :mod:`kclient.emulator.classic_groups`: no sockets,
no event loop and no clock of its own; every call takes ``now`` (seconds, any
monotonic origin) and :meth:`TransactionCoordinator.next_deadline` /
:meth:`~TransactionCoordinator.tick` carry the transaction timeouts.  It holds what
Kafka's ``TransactionCoordinator`` and ``TransactionStateManager`` hold: the producer
ids it hands out (Kafka's ``ProducerIdManager``) and, per transactional id, a
:class:`TransactionMetadata` (producer id and epoch, timeout, state, the partitions and
groups of the ongoing transaction).  When a transaction ends (EndTxn, a timeout, or an
InitProducerId that fences an ongoing one) it queues :class:`Markers`, the COMMIT or
ABORT markers Kafka's ``TransactionMarkerChannelManager`` sends as WriteTxnMarkers to
the partitions' leaders; :meth:`~TransactionCoordinator.drain_markers` hands them to
the caller, which writes them into the partition logs and the group offsets, then
:meth:`~TransactionCoordinator.complete` moves the transaction to
``CompleteCommit`` / ``CompleteAbort``.

The rules are Kafka's (``core/.../coordinator/transaction/TransactionCoordinator.scala``:
``handleInitProducerId``, ``prepareInitProducerIdTransit``,
``handleAddPartitionsToTransaction``, ``handleVerifyPartitionsInTransaction``,
``endTransactionWithTV1`` and, for transaction version 2 (KIP-890: a client that sends
EndTxn v5+), ``endTransaction`` with its table of retries and epoch bumps;
``abortTimedOutTransactions``; ``TransactionMetadata.scala``), with
``transaction.max.timeout.ms`` 15 minutes.  Errors are Kafka's current ones
(``PRODUCER_FENCED``); :mod:`kclient.emulator.rules` turns them into what older
request versions and releases answer.  What it leaves out: ``transactional.id.
expiration.ms`` (ids never expire), the ``__transaction_state`` log, coordinator
epochs other than 0, two-phase commit (KIP-939); a timed-out transaction is aborted
at its deadline (Kafka looks every 10 s) with one epoch bump.
"""

from __future__ import annotations

import enum
from collections.abc import Iterable

import attrs

from kclient.protocol.constants import ErrorCode

__all__ = [
    "FIRST_PRODUCER_ID",
    "MAX_EPOCH",
    "InitResult",
    "Markers",
    "TransactionCoordinator",
    "TransactionMetadata",
    "TransactionSettings",
    "TxnState",
]

#: The highest producer epoch (Kafka's ``Short.MaxValue``); one below it is "exhausted".
MAX_EPOCH = 32767
#: The first producer id the emulator hands out.
FIRST_PRODUCER_ID = 1000
#: A partition of a transaction: ``(topic, partition)``.
TopicPartition = tuple[str, int]


class TxnState(enum.Enum):
    """A transaction's state, with Kafka's names (DescribeTransactions shows them)."""

    EMPTY = "Empty"
    ONGOING = "Ongoing"
    PREPARE_COMMIT = "PrepareCommit"
    PREPARE_ABORT = "PrepareAbort"
    COMPLETE_COMMIT = "CompleteCommit"
    COMPLETE_ABORT = "CompleteAbort"


@attrs.frozen
class TransactionSettings:
    """The broker settings of the transaction coordinator (Kafka's names)."""

    #: ``transaction.max.timeout.ms``: the longest transaction timeout a producer may ask.
    max_timeout_ms: int = 900_000
    #: The most transactional ids one emulated cluster keeps (an emulator bound).
    max_transactional_ids: int = 100_000


@attrs.define(eq=False)
class TransactionMetadata:
    """What the coordinator knows of one transactional id (Kafka's ``TransactionMetadata``)."""

    transactional_id: str
    producer_id: int
    timeout_ms: int
    producer_epoch: int = -1
    last_producer_epoch: int = -1
    previous_producer_id: int = -1
    state: TxnState = TxnState.EMPTY
    partitions: set[TopicPartition] = attrs.Factory(set)
    groups: set[str] = attrs.Factory(set)
    #: When the ongoing transaction started (``now`` seconds; None: none ongoing).
    started: float | None = None
    #: 2 when the ongoing or last transaction is of transaction version 2 (KIP-890).
    client_version: int = 0
    #: Whether the coordinator that began the transaction aborts it on timeout with an
    #: epoch bump that fences the producer (Kafka 1.0+; 0.11 aborted without one).
    fence_on_timeout: bool = True

    @property
    def deadline(self) -> float | None:
        """When the ongoing transaction times out (None: nothing ongoing)."""
        if self.state is not TxnState.ONGOING or self.started is None:
            return None
        return self.started + self.timeout_ms / 1000


@attrs.frozen
class InitResult:
    """InitProducerId's answer: an error, or a producer id and epoch."""

    error: int
    producer_id: int = -1
    producer_epoch: int = -1


@attrs.frozen
class Markers:
    """The markers that end one transaction: COMMIT or ABORT, for its partitions and groups."""

    transactional_id: str
    producer_id: int
    producer_epoch: int
    commit: bool
    partitions: frozenset[TopicPartition]
    groups: frozenset[str]
    coordinator_epoch: int = 0


def _epoch_exhausted(epoch: int) -> bool:
    return epoch >= MAX_EPOCH - 1


class TransactionCoordinator:
    """Producer ids and transactions of one emulated cluster (see the module text)."""

    def __init__(self, settings: TransactionSettings | None = None) -> None:
        self.settings = settings or TransactionSettings()
        self.transactions: dict[str, TransactionMetadata] = {}
        self._next_producer_id = FIRST_PRODUCER_ID
        self._markers: list[Markers] = []

    # -- producer ids ----------------------------------------------------------------------
    def new_producer_id(self) -> int:
        """A producer id never handed out before (Kafka's ``ProducerIdManager``)."""
        pid = self._next_producer_id
        self._next_producer_id += 1
        return pid

    # -- InitProducerId ----------------------------------------------------------------------
    def init_producer_id(self, now: float, transactional_id: str | None, timeout_ms: int,
                         expected: tuple[int, int] | None = None) -> InitResult:
        """InitProducerId: a new id for an idempotent producer; for a transactional id the
        same id with the next epoch, fencing the previous producer (an ongoing transaction
        is aborted and the caller told CONCURRENT_TRANSACTIONS, to retry).

        ``expected`` is the ``(producer id, epoch)`` the request carries (v3+, KIP-360),
        None when it carries none.
        """
        if transactional_id is None:
            return InitResult(ErrorCode.NONE, self.new_producer_id(), 0)
        if not transactional_id:
            return InitResult(ErrorCode.INVALID_REQUEST)
        if not 0 < timeout_ms <= self.settings.max_timeout_ms:
            return InitResult(ErrorCode.INVALID_TRANSACTION_TIMEOUT)
        txn = self.transactions.get(transactional_id)
        if txn is None:
            if len(self.transactions) >= self.settings.max_transactional_ids:
                return InitResult(ErrorCode.COORDINATOR_NOT_AVAILABLE)
            txn = TransactionMetadata(transactional_id, self.new_producer_id(), timeout_ms)
            self.transactions[transactional_id] = txn
        if expected is not None and not (
                txn.producer_epoch == -1 or expected[0] == txn.producer_id
                or (expected[0] == txn.previous_producer_id and _epoch_exhausted(expected[1]))):
            return InitResult(ErrorCode.PRODUCER_FENCED)
        if txn.state in (TxnState.PREPARE_COMMIT, TxnState.PREPARE_ABORT):
            return InitResult(ErrorCode.CONCURRENT_TRANSACTIONS)
        if txn.state is TxnState.ONGOING:
            # Fence the current producer, abort its transaction; the client retries.
            self._fence_and_abort(txn)
            return InitResult(ErrorCode.CONCURRENT_TRANSACTIONS)
        if _epoch_exhausted(txn.producer_epoch) and (
                expected is None or expected[1] == txn.producer_epoch):
            txn.previous_producer_id = txn.producer_id if expected is not None else -1
            txn.producer_id = self.new_producer_id()
            txn.producer_epoch, txn.last_producer_epoch = 0, -1
        elif expected is None:  # a new producer: bump, forget the last epoch
            txn.producer_epoch, txn.last_producer_epoch = txn.producer_epoch + 1, -1
        elif txn.producer_epoch == -1 or expected[1] == txn.producer_epoch:
            # The producer goes on after an error (KIP-360): bump, remember the epoch.
            txn.producer_epoch, txn.last_producer_epoch = (txn.producer_epoch + 1,
                                                           txn.producer_epoch)
        elif expected[1] != txn.last_producer_epoch:
            return InitResult(ErrorCode.PRODUCER_FENCED)
        # else: a retry of a call whose answer the producer never got: the same epoch.
        txn.timeout_ms = timeout_ms
        txn.state = TxnState.EMPTY
        txn.partitions.clear()
        txn.groups.clear()
        txn.started = None
        return InitResult(ErrorCode.NONE, txn.producer_id, txn.producer_epoch)

    # -- AddPartitionsToTxn / AddOffsetsToTxn -----------------------------------------------------
    def _check(self, transactional_id: str | None, producer_id: int,
               producer_epoch: int) -> tuple[int, TransactionMetadata | None]:
        if not transactional_id:
            return ErrorCode.INVALID_REQUEST, None
        txn = self.transactions.get(transactional_id)
        if txn is None or txn.producer_id != producer_id:
            return ErrorCode.INVALID_PRODUCER_ID_MAPPING, None
        if txn.producer_epoch != producer_epoch:
            return ErrorCode.PRODUCER_FENCED, None
        if txn.state in (TxnState.PREPARE_COMMIT, TxnState.PREPARE_ABORT):
            return ErrorCode.CONCURRENT_TRANSACTIONS, None
        return ErrorCode.NONE, txn

    def _begin(self, now: float, txn: TransactionMetadata, client_version: int,
               fence_on_timeout: bool | None = None) -> None:
        if txn.state is not TxnState.ONGOING:
            txn.state = TxnState.ONGOING
            txn.started = now
            txn.partitions.clear()
            txn.groups.clear()
            txn.client_version = client_version
            if fence_on_timeout is not None:
                txn.fence_on_timeout = fence_on_timeout

    def add_partitions(self, now: float, transactional_id: str | None, producer_id: int,
                       producer_epoch: int, partitions: Iterable[TopicPartition] = (),
                       client_version: int = 0, fence_on_timeout: bool | None = None, *,
                       groups: Iterable[str] = ()) -> int:
        """AddPartitionsToTxn (and the partitions a v2 transaction adds by producing) and
        AddOffsetsToTxn (``groups``: their offsets partitions): the error, NONE once they
        are in the ongoing transaction.

        ``fence_on_timeout`` says how the coordinating broker's release aborts the
        transaction when it times out (see :attr:`TransactionMetadata.fence_on_timeout`)."""
        code, txn = self._check(transactional_id, producer_id, producer_epoch)
        if txn is None:
            return code
        self._begin(now, txn, client_version, fence_on_timeout)
        txn.partitions.update(partitions)
        txn.groups.update(groups)
        return ErrorCode.NONE

    def verify(self, transactional_id: str | None, producer_id: int, producer_epoch: int,
               partition: TopicPartition | None = None, *, group: str | None = None) -> int:
        """Whether ``partition`` (or ``group``'s offsets) is in the producer's ongoing
        transaction (KIP-890 part 1: the check a leader makes before a transactional append,
        a group coordinator before a TxnOffsetCommit below v5): NONE, or Kafka's coordinator
        error (TRANSACTION_ABORTABLE: not in the transaction)."""
        code, txn = self._check(transactional_id, producer_id, producer_epoch)
        if txn is None:
            return code
        if txn.state is TxnState.ONGOING and (partition in txn.partitions
                                              if group is None else group in txn.groups):
            return ErrorCode.NONE
        return ErrorCode.TRANSACTION_ABORTABLE

    # -- EndTxn ----------------------------------------------------------------------------------
    def end_txn(self, now: float, transactional_id: str | None, producer_id: int,
                producer_epoch: int, commit: bool, client_version: int = 0,
                ) -> tuple[int, int, int]:
        """EndTxn: ``(error, producer id, epoch)``; the id and epoch are those the producer
        goes on with under transaction version 2 (EndTxn v5+: each transaction ends with an
        epoch bump), else -1."""
        if not transactional_id:
            return ErrorCode.INVALID_REQUEST, -1, -1
        txn = self.transactions.get(transactional_id)
        if client_version >= 2:
            return self._end_v2(now, txn, producer_id, producer_epoch, commit)
        if txn is None or txn.producer_id != producer_id:
            return ErrorCode.INVALID_PRODUCER_ID_MAPPING, -1, -1
        if producer_epoch != txn.producer_epoch:
            return ErrorCode.PRODUCER_FENCED, -1, -1
        state = txn.state
        if state is TxnState.ONGOING:
            self._prepare(txn, commit, bump=False)
            return ErrorCode.NONE, -1, -1
        if (state, commit) in ((TxnState.COMPLETE_COMMIT, True), (TxnState.COMPLETE_ABORT, False)):
            return ErrorCode.NONE, -1, -1
        if (state, commit) in ((TxnState.PREPARE_COMMIT, True), (TxnState.PREPARE_ABORT, False)):
            return ErrorCode.CONCURRENT_TRANSACTIONS, -1, -1
        return ErrorCode.INVALID_TXN_STATE, -1, -1

    def _end_v2(self, now: float, txn: TransactionMetadata | None, producer_id: int,
                producer_epoch: int, commit: bool) -> tuple[int, int, int]:
        if txn is None:
            return ErrorCode.INVALID_PRODUCER_ID_MAPPING, -1, -1
        retry_on_overflow = (txn.previous_producer_id == producer_id
                             and producer_epoch == MAX_EPOCH - 1 and txn.producer_epoch == 0)
        if txn.producer_id != producer_id and not retry_on_overflow:
            return ErrorCode.INVALID_PRODUCER_ID_MAPPING, -1, -1
        retry = retry_on_overflow or txn.producer_epoch == producer_epoch + 1
        state = txn.state
        if state in (TxnState.ONGOING, TxnState.EMPTY):
            valid = producer_epoch == txn.producer_epoch
        elif state in (TxnState.PREPARE_COMMIT, TxnState.PREPARE_ABORT):
            valid = retry
        else:
            valid = retry or producer_epoch == txn.producer_epoch
        if not valid:
            return ErrorCode.PRODUCER_FENCED, -1, -1
        if state is TxnState.ONGOING:
            self._prepare(txn, commit, bump=True)
        elif state in (TxnState.EMPTY, TxnState.COMPLETE_COMMIT, TxnState.COMPLETE_ABORT):
            if retry:  # the same end again: done, unless it asks the other outcome
                if commit != (state is TxnState.COMPLETE_COMMIT):
                    return ErrorCode.INVALID_TXN_STATE, -1, -1
            elif commit:
                return ErrorCode.INVALID_TXN_STATE, -1, -1
            else:  # an abort with nothing added: an epoch bump alone
                self._begin(now, txn, 2)
                self._prepare(txn, False, bump=True)
        elif commit == (state is TxnState.PREPARE_COMMIT):
            return ErrorCode.CONCURRENT_TRANSACTIONS, -1, -1
        else:
            return ErrorCode.INVALID_TXN_STATE, -1, -1
        return ErrorCode.NONE, txn.producer_id, txn.producer_epoch

    def _prepare(self, txn: TransactionMetadata, commit: bool, *, bump: bool) -> None:
        """Move ``txn`` to PrepareCommit / PrepareAbort and queue its markers."""
        if bump:
            txn.last_producer_epoch = txn.producer_epoch
            if _epoch_exhausted(txn.producer_epoch):
                txn.previous_producer_id = txn.producer_id
                markers_epoch = txn.producer_epoch + 1
                self._queue(txn, commit, markers_epoch)
                txn.producer_id, txn.producer_epoch = self.new_producer_id(), 0
                txn.state = TxnState.PREPARE_COMMIT if commit else TxnState.PREPARE_ABORT
                return
            txn.producer_epoch += 1
        txn.state = TxnState.PREPARE_COMMIT if commit else TxnState.PREPARE_ABORT
        self._queue(txn, commit, txn.producer_epoch)

    def _queue(self, txn: TransactionMetadata, commit: bool, epoch: int) -> None:
        self._markers.append(Markers(txn.transactional_id, txn.producer_id, epoch, commit,
                                     frozenset(txn.partitions), frozenset(txn.groups)))

    def _fence_and_abort(self, txn: TransactionMetadata, fence: bool = True) -> None:
        """Bump the epoch (fencing the producer) and abort the ongoing transaction."""
        if fence:
            txn.last_producer_epoch = -1
            if txn.producer_epoch < MAX_EPOCH:
                txn.producer_epoch += 1
        self._prepare(txn, False, bump=False)

    # -- markers ----------------------------------------------------------------------------------
    def drain_markers(self) -> list[Markers]:
        """The markers queued since the last call, to be written by the caller."""
        out, self._markers = self._markers, []
        return out

    def complete(self, markers: Markers) -> None:
        """The markers were written: the transaction is complete."""
        txn = self.transactions.get(markers.transactional_id)
        if txn is None or txn.state not in (TxnState.PREPARE_COMMIT, TxnState.PREPARE_ABORT):
            return
        txn.state = TxnState.COMPLETE_COMMIT if markers.commit else TxnState.COMPLETE_ABORT
        txn.partitions.clear()
        txn.groups.clear()
        txn.started = None

    # -- timeouts ----------------------------------------------------------------------------------
    def next_deadline(self) -> float | None:
        """When the earliest ongoing transaction times out (None: none ongoing)."""
        return min((d for t in self.transactions.values() if (d := t.deadline) is not None),
                   default=None)

    def tick(self, now: float) -> None:
        """Abort every transaction whose timeout has passed, fencing its producer (Kafka's
        ``abortTimedOutTransactions``; Kafka 0.11 aborted without fencing)."""
        for txn in list(self.transactions.values()):
            deadline = txn.deadline
            if deadline is not None and deadline <= now:
                self._fence_and_abort(txn, txn.fence_on_timeout)
