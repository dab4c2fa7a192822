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
* :attr:`~ClusterState.consumer` -- the KIP-848 consumer group coordinator
  (:mod:`kclient.emulator.consumer_groups`);
* :attr:`~ClusterState.share` and :attr:`~ClusterState.share_partitions` -- the
  KIP-932 share group coordinator and the share partitions with their record locks
  (:mod:`kclient.emulator.share_groups`, :mod:`kclient.emulator.share_partitions`);
* :attr:`~ClusterState.streams` -- the KIP-1071 streams group coordinator
  (:mod:`kclient.emulator.streams_groups`);
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

from kclient.emulator.classic_groups import (
    EMPTY,
    ClassicGroup,
    ClassicGroupCoordinator,
    GroupSettings,
)
from kclient.emulator.consumer_groups import ConsumerGroupCoordinator, ConsumerGroupSettings
from kclient.emulator.log import (
    DEFAULT_MAX_STORED_BYTES,
    DEFAULT_PARTITIONS,
    Topic,
    TopicStore,
)
from kclient.emulator.modern_groups import CLASSIC, CONSUMER, SHARE, STREAMS
from kclient.emulator.offsets import OffsetStore
from kclient.emulator.runtime import Coordination
from kclient.emulator.share_groups import ShareGroupCoordinator
from kclient.emulator.share_partitions import SharePartitionManager, ShareSettings
from kclient.emulator.streams_groups import StreamsGroupCoordinator, StreamsSettings
from kclient.emulator.transactions import (
    Markers,
    TransactionCoordinator,
    TransactionSettings,
)
from kclient.protocol.constants import ErrorCode

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
    ``group_settings`` holds the classic group coordinator's broker settings,
    ``consumer_settings`` the consumer group coordinator's, ``share_settings`` and
    ``streams_settings`` those of share and streams groups.
    """

    def __init__(self, *, auto_create_topics: bool = True,
                 default_partitions: int = DEFAULT_PARTITIONS,
                 max_stored_bytes: int = DEFAULT_MAX_STORED_BYTES,
                 group_settings: GroupSettings | None = None,
                 transaction_settings: TransactionSettings | None = None,
                 consumer_settings: ConsumerGroupSettings | None = None,
                 share_settings: ShareSettings | None = None,
                 streams_settings: StreamsSettings | None = None) -> None:
        self.auto_create_topics = auto_create_topics
        #: The partition logs and their topics.
        self.logs = TopicStore(default_partitions=default_partitions,
                               max_stored_bytes=max_stored_bytes)
        #: Committed offsets of every group.
        self.offsets = OffsetStore()
        #: The classic group coordinator (JoinGroup, SyncGroup, Heartbeat, LeaveGroup).
        self.classic = ClassicGroupCoordinator(group_settings, group_ids=self)
        #: The KIP-848 consumer group coordinator (ConsumerGroupHeartbeat, ...Describe).
        self.consumer = ConsumerGroupCoordinator(self.logs, consumer_settings, group_ids=self)
        #: Share partitions: record locks, delivery counts and share sessions (KIP-932).
        self.share_partitions = SharePartitionManager(self.logs, share_settings)
        #: The KIP-932 share group coordinator (ShareGroupHeartbeat, ...Describe, offsets).
        self.share = ShareGroupCoordinator(self.logs, self.share_partitions, group_ids=self)
        #: The KIP-1071 streams group coordinator (StreamsGroupHeartbeat, ...Describe).
        self.streams = StreamsGroupCoordinator(self.logs, streams_settings, group_ids=self)
        #: The transaction coordinator (InitProducerId, AddPartitionsToTxn, EndTxn, ...).
        self.transactions = TransactionCoordinator(transaction_settings)
        #: Parked requests and timers of the coordinators.
        self.coordination = Coordination([self.classic, self.consumer, self.share,
                                          self.share_partitions, self.streams,
                                          _MarkerWriter(self)])
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
        """Delete topic ``name``, the offsets committed for it and its share partitions;
        False when there is none."""
        topic = self.logs.by_name.get(name)
        deleted = self.logs.delete(name)
        if deleted:
            self.offsets.delete_topic(name)
        if topic is not None:
            self.share_partitions.forget_topic(topic.topic_id)
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

    def holder(self, group_id: str) -> str | None:
        """The type of the group holding ``group_id`` (``"classic"``, ``"consumer"``, ...;
        None: no group holds it).  Kafka keeps every type of group in one map."""
        if group_id in self.classic.groups:
            return CLASSIC
        if group_id in self.consumer.groups:
            return CONSUMER
        if group_id in self.share.groups:
            return SHARE
        if group_id in self.streams.groups:
            return STREAMS
        return None

    def claim(self, group_id: str, kind: str) -> bool:
        """May a new group of type ``kind`` take ``group_id``?  Kafka replaces an empty
        classic group by a consumer group (``maybeDeleteEmptyClassicGroup``) and an
        empty consumer group by a classic one (``maybeDeleteEmptyConsumerGroup``); any
        other group of another type keeps its id."""
        held = self.holder(group_id)
        if held is None or held == kind:
            return True
        if held == CLASSIC and kind in (CONSUMER, STREAMS):
            group = self.classic.groups[group_id]
            if group.state == EMPTY and not group.members and not group.pending:
                del self.classic.groups[group_id]
                return True
        if held == CONSUMER and kind == CLASSIC and self.consumer.is_empty(group_id):
            del self.consumer.groups[group_id]
            return True
        return False

    def listed_groups(self) -> list[tuple[str, str, str, str]]:
        """Every group as ListGroups lists it: (group id, protocol type, state, type); a
        group that only has committed offsets is an empty classic group, as in Kafka."""
        listed = [(g.group_id, g.protocol_type or "", g.state, CLASSIC)
                  for g in self.classic.groups.values()]
        listed += [(g.group_id, CONSUMER, g.state, CONSUMER) for g in self.consumer.groups.values()]
        listed += [(g.group_id, SHARE, g.state, SHARE) for g in self.share.groups.values()]
        listed += [(g.group_id, STREAMS, g.state, STREAMS) for g in self.streams.groups.values()]
        known = {group_id for group_id, *_ in listed}
        listed += [(group_id, "", EMPTY, CLASSIC) for group_id in self.offsets.group_ids()
                   if group_id not in known]
        return listed

    def commit_error(self, now: float, group_id: str, member_id: str,
                     instance_id: str | None, epoch: int, version: int, *,
                     transactional: bool = False) -> int:
        """The error of an OffsetCommit (or, ``transactional``, a TxnOffsetCommit) to
        ``group_id`` by the group's own rules: a classic generation, or a consumer or
        streams group member's epoch."""
        held = self.holder(group_id)
        if held == CONSUMER:
            return self.consumer.commit_error(group_id, member_id, instance_id, epoch, version,
                                              transactional=transactional)
        if held == STREAMS:
            return self.streams.commit_error(group_id, member_id, epoch, version,
                                             transactional=transactional)
        if held == SHARE:  # no committed offsets in share groups (validateOffsetCommit)
            return ErrorCode.GROUP_ID_NOT_FOUND
        return self.classic.commit_error(now, group_id, member_id, instance_id, epoch,
                                         transactional=transactional)

    def fetch_error(self, group_id: str, member_id: str | None, member_epoch: int) -> int:
        """The error of an OffsetFetch v9+ that names a member of ``group_id``."""
        held = self.holder(group_id)
        if held == CONSUMER:
            return self.consumer.fetch_error(group_id, member_id, member_epoch)
        if held == STREAMS:
            return self.streams.fetch_error(group_id, member_id, member_epoch)
        if held == SHARE:
            return ErrorCode.GROUP_ID_NOT_FOUND
        return ErrorCode.NONE

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
