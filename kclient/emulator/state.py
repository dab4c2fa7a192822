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
* producer ids (InitProducerId), here;

and :attr:`~ClusterState.coordination`, which carries the coordinators' parked
requests and timers on the event loop (:mod:`kclient.emulator.runtime`).  The
request handlers (:mod:`kclient.emulator.apis`) only translate requests to calls on
these parts.  No replication, quotas or log compaction; see the API reference for
what each API models.
"""

from __future__ import annotations

import asyncio
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

__all__ = ["ClusterState"]


class ClusterState:
    """Topics, groups, offsets and producer ids of one emulated cluster (see the module text).

    ``auto_create_topics`` is Kafka's ``auto.create.topics.enable`` (on by
    default, as in Kafka): Metadata for an unknown topic creates it with
    ``default_partitions`` partitions when the client allows it.
    ``max_stored_bytes`` bounds the stored batches (the oldest are deleted past it);
    ``group_settings`` holds the group coordinators' broker settings.
    """

    def __init__(self, *, auto_create_topics: bool = True,
                 default_partitions: int = DEFAULT_PARTITIONS,
                 max_stored_bytes: int = DEFAULT_MAX_STORED_BYTES,
                 group_settings: GroupSettings | None = None) -> None:
        self.auto_create_topics = auto_create_topics
        #: The partition logs and their topics.
        self.logs = TopicStore(default_partitions=default_partitions,
                               max_stored_bytes=max_stored_bytes)
        #: Committed offsets of every group.
        self.offsets = OffsetStore()
        #: The classic group coordinator (JoinGroup, SyncGroup, Heartbeat, LeaveGroup).
        self.classic = ClassicGroupCoordinator(group_settings)
        #: Parked requests and timers of the coordinators.
        self.coordination = Coordination([self.classic])
        self._next_producer_id = 1000
        self._transactional: dict[str, tuple[int, int]] = {}
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

    # -- producers ------------------------------------------------------------------------
    def init_producer_id(self, transactional_id: str | None, producer_id: int = -1,
                         epoch: int = -1) -> tuple[int, int]:
        """A producer id and epoch: a new id for an idempotent producer (or the same id with
        the next epoch when it gives its current one), a stable id with a bumped epoch
        for a transactional id."""
        if transactional_id:
            known = self._transactional.get(transactional_id)
            pid, next_epoch = (known[0], known[1] + 1) if known else (self._new_pid(), 0)
            self._transactional[transactional_id] = (pid, next_epoch)
            return pid, next_epoch
        if producer_id >= 0 and epoch >= 0:
            return producer_id, epoch + 1
        return self._new_pid(), 0

    def _new_pid(self) -> int:
        pid = self._next_producer_id
        self._next_producer_id += 1
        return pid
