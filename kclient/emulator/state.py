"""What an emulated cluster remembers, in Kafka's parts.

One :class:`ClusterState` is shared by every broker of an
:class:`~kclient.emulator.EmulatedCluster` (a lone
:class:`~kclient.emulator.EmulatedBroker` has its own), so a client that produces
through one broker fetches through another and commits through the group's
coordinator as against a real cluster.  It holds Kafka's parts, each a pure module
with its own tests:

* :attr:`~ClusterState.logs` -- the partition logs and topic configs
  (:mod:`kclient.emulator.log`);
* :attr:`~ClusterState.offsets` -- committed offsets of every group
  (:mod:`kclient.emulator.offsets`);
* :attr:`~ClusterState.classic` -- the classic group coordinator
  (:mod:`kclient.emulator.classic_groups`);
* :attr:`~ClusterState.transactions` -- the transaction coordinator and the producer
  ids it hands out (:mod:`kclient.emulator.transactions`); the markers it queues are
  written here (:meth:`~ClusterState.write_markers`) into the partition logs and the
  groups' offsets, as Kafka's WriteTxnMarkers does;

and :attr:`~ClusterState.coordination`, which carries the coordinators' parked
requests and timers on the event loop (:mod:`kclient.emulator.runtime`).  The
request handlers (:mod:`kclient.emulator.apis`) only translate requests to calls on
these parts.  No replication, quotas or log compaction; see the API reference for
what each API models.
"""

from __future__ import annotations

import asyncio
import time
import uuid
from collections.abc import Mapping, Sequence

from kclient.emulator.classic_groups import ClassicGroup, ClassicGroupCoordinator, GroupSettings
from kclient.emulator.log import (
    DEFAULT_MAX_STORED_BYTES,
    DEFAULT_PARTITIONS,
    Topic,
    TopicStore,
)
from kclient.emulator.offsets import OffsetStore
from kclient.emulator.runtime import Coordination
from kclient.emulator.transactions import (
    Markers,
    TransactionCoordinator,
    TransactionSettings,
)

__all__ = ["ClusterState"]


class _MarkerWriter:
    """The transaction coordinator as :class:`~kclient.emulator.runtime.Coordination` drives
    it: its timeouts on the one timer, and the markers it queued written after every call."""

    def __init__(self, state: ClusterState) -> None:
        self._state = state

    def drain(self) -> list[tuple[object, dict[str, object]]]:
        self._state.write_markers()
        return []

    def next_deadline(self) -> float | None:
        return self._state.transactions.next_deadline()

    def tick(self, now: float) -> None:
        self._state.transactions.tick(now)


class ClusterState:
    """Topics, groups, offsets and transactions of one emulated cluster (see the module text).

    ``auto_create_topics`` is Kafka's ``auto.create.topics.enable`` (on by
    default, as in Kafka): Metadata for an unknown topic creates it with
    ``default_partitions`` partitions when the client allows it.
    ``max_stored_bytes`` bounds the stored batches (the oldest are deleted past it);
    ``group_settings`` holds the group coordinators' broker settings.
    """

    def __init__(self, *, auto_create_topics: bool = True,
                 default_partitions: int = DEFAULT_PARTITIONS,
                 max_stored_bytes: int = DEFAULT_MAX_STORED_BYTES,
                 group_settings: GroupSettings | None = None,
                 transaction_settings: TransactionSettings | None = None) -> None:
        self.auto_create_topics = auto_create_topics
        #: The partition logs and their topics.
        self.logs = TopicStore(default_partitions=default_partitions,
                               max_stored_bytes=max_stored_bytes)
        #: Committed offsets of every group.
        self.offsets = OffsetStore()
        #: The classic group coordinator (JoinGroup, SyncGroup, Heartbeat, LeaveGroup).
        self.classic = ClassicGroupCoordinator(group_settings)
        #: The transaction coordinator (InitProducerId, AddPartitionsToTxn, EndTxn, ...).
        self.transactions = TransactionCoordinator(transaction_settings)
        #: Parked requests and timers of the coordinators.
        self.coordination = Coordination([self.classic, _MarkerWriter(self)])
        self._appended: asyncio.Event | None = None

    # -- topics ---------------------------------------------------------------------
    @property
    def topics(self) -> Mapping[str, Topic]:
        """The topics by name."""
        return self.logs.by_name

    @property
    def topics_by_id(self) -> Mapping[uuid.UUID, Topic]:
        """The topics by topic id."""
        return self.logs.by_id

    @property
    def default_partitions(self) -> int:
        """Partitions of a topic created without a count (Kafka's ``num.partitions``)."""
        return self.logs.default_partitions

    def create_topic(self, name: str, partitions: int | None = None,
                     replication_factor: int = 1,
                     configs: Mapping[str, str | None] | None = None) -> Topic:
        """Create topic ``name`` (``partitions`` None: the default count); return it.

        Raises :class:`~kclient.emulator.log.TopicError` for a name or count Kafka
        refuses.
        """
        return self.logs.create(name, partitions, replication_factor, configs)

    def delete_topic(self, name: str) -> bool:
        """Delete topic ``name`` and the offsets committed for it; False when there is none."""
        deleted = self.logs.delete(name)
        if deleted:
            self.offsets.delete_topic(name)
        return deleted

    def appended(self) -> asyncio.Event:
        """An event set by the next append (fetches waiting for data wait on it)."""
        if self._appended is None:
            self._appended = asyncio.Event()
        return self._appended

    def notify_appended(self) -> None:
        """Wake fetches waiting for data."""
        if self._appended is not None:
            self._appended.set()
        self._appended = None

    @staticmethod
    def leader(topic: Topic, partition: int, node_ids: Sequence[int]) -> int:
        """The node leading ``partition`` of ``topic``: spread over ``node_ids``, which the
        caller gives in ascending order (-1 when there is none)."""
        if not node_ids:
            return -1
        return node_ids[(topic.index + partition) % len(node_ids)]

    # -- groups ---------------------------------------------------------------------------
    @property
    def groups(self) -> Mapping[str, ClassicGroup]:
        """The classic groups by id."""
        return self.classic.groups

    # -- transactions -------------------------------------------------------------------
    def write_markers(self) -> None:
        """Write the markers the transaction coordinator queued: a COMMIT or ABORT control
        batch at the end of each partition of the transaction, and the commit (or drop) of
        the offsets it holds for each group; then the transaction is complete."""
        written = False
        for markers in self.transactions.drain_markers():
            self._write(markers)
            self.transactions.complete(markers)
            written = True
        if written:
            self.notify_appended()

    def _write(self, markers: Markers) -> None:
        timestamp = int(time.time() * 1000)
        for topic_name, index in sorted(markers.partitions):
            topic = self.topics.get(topic_name)
            if topic is not None and 0 <= index < len(topic.partitions):
                topic.partitions[index].append_marker(
                    markers.producer_id, markers.producer_epoch, markers.commit,
                    markers.coordinator_epoch, timestamp)
        for group_id in sorted(markers.groups):
            self.offsets.end_transaction(group_id, markers.producer_id, markers.commit)
