"""A whole emulated cluster in one process: several brokers, each on its own port.

Every broker has its own release profile and behaviour; Metadata and
DescribeCluster on any of them list all running brokers, so a client bootstraps
from one and finds the rest.  Brokers can be added, removed and restarted on
another release while clients are connected (rolling upgrades in tests).
"""

from __future__ import annotations

import asyncio
import json
import os
import ssl
from collections.abc import Iterable, Mapping, Sequence
from typing import TYPE_CHECKING

import attrs

from kclient.emulator.behaviour import Behaviour
from kclient.emulator.broker import BrokerInfo, EmulatedBroker
from kclient.emulator.inbound import QueuedBytes, ServerLimits
from kclient.emulator.log import DEFAULT_PARTITIONS
from kclient.emulator.state import ClusterState
from kclient.errors import ConfigError
from kclient.negotiation.inventory import InventoryBuilder, SoftwareUse, inventory_record
from kclient.negotiation.releases import known_releases, resolve_release

if TYPE_CHECKING:
    from kclient.emulator.sasl import SaslServerConfig

__all__ = ["BrokerSpec", "EmulatedCluster", "parse_broker_spec"]


def _behaviour(value: Behaviour | str | Sequence[str] | None) -> Behaviour:
    return Behaviour.parse(value)


def _levels(value: Mapping[str, tuple[int, int]] | None) -> dict[str, tuple[int, int]]:
    return {str(k): (int(v[0]), int(v[1])) for k, v in sorted((value or {}).items())}


@attrs.frozen
class BrokerSpec:
    """One broker of an emulated cluster: its release, behaviour and optional id/rack/port."""

    release: str = "3.9"
    behaviour: Behaviour = attrs.field(default=None, converter=_behaviour)
    node_id: int | None = None
    rack: str | None = None
    port: int = 0
    #: KIP-584 levels that differ from those of a freshly formatted cluster (an upgraded
    #: cluster keeps its old levels): ``{"group.version": (0, 0)}``.
    finalized_features: Mapping[str, tuple[int, int]] = attrs.field(
        factory=dict, converter=_levels, hash=False)
    #: Supported ranges that differ from those of the release's brokers.
    supported_features: Mapping[str, tuple[int, int]] = attrs.field(
        factory=dict, converter=_levels, hash=False)
    #: The KIP-584 epoch of the finalized features (-1: 1 when any is finalized).
    finalized_features_epoch: int = -1
    #: An API table (key to ``(min, max)``) to advertise instead of the release's.
    apis: Mapping[int, tuple[int, int]] | None = attrs.field(default=None, hash=False)
    #: Keep every decoded request (see :attr:`EmulatedBroker.captured`).
    capture: bool = False


def parse_broker_spec(text: str) -> BrokerSpec:
    """Parse ``RELEASE[:BEHAVIOUR[,BEHAVIOUR...]]``, e.g. ``"2.8"`` or ``"3.9:slow:0.5,hang"``.

    ``"0.9.0:legacy"`` makes a broker that closes on ApiVersions.
    """
    release, _, behaviour = text.strip().partition(":")
    if not release:
        raise ConfigError(f"broker spec {text!r} has no release; write e.g. '3.9' or "
                          "'2.8:pre-kip511'")
    return BrokerSpec(release, Behaviour.parse(behaviour or None))


class EmulatedCluster:
    """Emulated brokers on loopback that list one another in Metadata.

    ``brokers`` are release names, ``"RELEASE:BEHAVIOUR"`` strings or
    :class:`BrokerSpec` values; node ids count from ``first_node_id`` unless a
    spec gives one.  ``ssl`` (a server :class:`ssl.SSLContext`) and ``sasl`` apply
    to every broker.  The brokers share one :attr:`state` (topics, groups,
    producer ids); ``auto_create_topics`` (Kafka's ``auto.create.topics.enable``)
    and ``default_partitions`` (``num.partitions``) set how topics appear;
    ``limits`` holds the socket server's bounds
    (:class:`~kclient.emulator.inbound.ServerLimits`: request size, queued request
    bytes shared by every broker, stall timeout, request logs).  The
    cluster finalizes the KIP-584 feature levels a cluster freshly formatted with
    its oldest broker's release finalizes (a mixed cluster is one being upgraded,
    which keeps its old levels), changed by each :class:`BrokerSpec`'s
    ``finalized_features``.  Use ``async with`` or :meth:`start` / :meth:`stop`.
    """

    def __init__(
        self,
        brokers: Iterable[str | BrokerSpec] = ("3.9",),
        *,
        host: str = "127.0.0.1",
        cluster_id: str = "kclient-emulated",
        first_node_id: int = 1,
        ssl: ssl.SSLContext | None = None,
        sasl: SaslServerConfig | None = None,
        auto_create_topics: bool = True,
        default_partitions: int = DEFAULT_PARTITIONS,
        limits: ServerLimits | None = None,
    ) -> None:
        self.host = host
        #: The socket server's bounds, and the queued-request-bytes pool every broker shares.
        self.limits = limits or ServerLimits()
        self.pool = QueuedBytes(self.limits.queued_request_bytes)
        #: Topics, groups and producer ids, shared by every broker of the cluster.
        self.state = ClusterState(auto_create_topics=auto_create_topics,
                                  default_partitions=default_partitions)
        self.cluster_id = cluster_id
        self.ssl = ssl
        self.sasl = sasl
        self._next_id = first_node_id
        self._brokers: dict[int, EmulatedBroker] = {}
        specs = [parse_broker_spec(b) if isinstance(b, str) else b for b in brokers]
        order = known_releases()
        #: The release whose fresh-cluster feature levels the cluster starts with.
        self.formatted_with = min((resolve_release(s.release) for s in specs),
                                  key=order.index, default=None)
        for item in specs:
            self._make(item)
        if not self._brokers:
            raise ConfigError("an emulated cluster needs at least one broker")
        self._started = False

    def _make(self, item: str | BrokerSpec) -> EmulatedBroker:
        spec = parse_broker_spec(item) if isinstance(item, str) else item
        node_id = spec.node_id if spec.node_id is not None else self._next_id
        if node_id in self._brokers:
            raise ConfigError(f"emulated cluster: broker id {node_id} is used twice")
        self._next_id = max(self._next_id, node_id + 1)
        broker = EmulatedBroker(
            node_id, spec.release, host=self.host, port=spec.port, behaviour=spec.behaviour,
            rack=spec.rack, cluster_id=self.cluster_id, controller_id=self._controller(node_id),
            peers=self.listed, supported_features=spec.supported_features,
            finalized_features=spec.finalized_features,
            finalized_features_epoch=spec.finalized_features_epoch, ssl=self.ssl, sasl=self.sasl,
            apis=spec.apis, capture=spec.capture, state=self.state, limits=self.limits,
            pool=self.pool, formatted_with=self.formatted_with)
        self._brokers[node_id] = broker
        return broker

    def _controller(self, default: int) -> int:
        return min(self._brokers, default=default)

    # -- views -------------------------------------------------------------------------
    @property
    def brokers(self) -> list[EmulatedBroker]:
        """The brokers, by node id."""
        return [self._brokers[k] for k in sorted(self._brokers)]

    def broker(self, node_id: int) -> EmulatedBroker:
        """The broker with ``node_id``."""
        try:
            return self._brokers[node_id]
        except KeyError:
            raise ConfigError(f"emulated cluster has no broker {node_id} (brokers: "
                              f"{', '.join(map(str, sorted(self._brokers)))})") from None

    def listed(self) -> list[BrokerInfo]:
        """What Metadata lists: every running broker."""
        return [b.info for b in self.brokers if b.running]

    @property
    def bootstrap_servers(self) -> str:
        """``host:port,host:port,...`` of the running brokers (after :meth:`start`)."""
        return ",".join(b.address for b in self.brokers if b.running)

    @property
    def running(self) -> bool:
        """True between :meth:`start` and :meth:`stop`."""
        return self._started

    def __repr__(self) -> str:
        inner = ", ".join(f"{b.node_id}={b.release}" for b in self.brokers)
        return f"<EmulatedCluster {self.cluster_id} [{inner}]>"

    # -- lifecycle -------------------------------------------------------------------------
    async def start(self) -> None:
        """Start every broker (concurrently)."""
        await asyncio.gather(*(b.start() for b in self.brokers))
        self._started = True

    async def stop(self) -> None:
        """Stop every broker and close every client connection."""
        self._started = False
        await asyncio.gather(*(b.stop() for b in self.brokers), return_exceptions=True)
        self.state.coordination.close()

    async def __aenter__(self) -> EmulatedCluster:
        try:
            await self.start()
        except BaseException:
            await self.stop()
            raise
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.stop()

    async def add_broker(self, spec: str | BrokerSpec) -> EmulatedBroker:
        """Add a broker (started when the cluster runs) and return it."""
        broker = self._make(spec)
        if self._started:
            await broker.start()
        return broker

    async def remove_broker(self, node_id: int) -> None:
        """Stop a broker and drop it from the cluster."""
        broker = self.broker(node_id)
        await broker.stop()
        del self._brokers[node_id]

    async def restart(self, node_id: int, release: str | None = None,
                      behaviour: Behaviour | str | Sequence[str] | None = None) -> None:
        """Restart one broker, optionally on another release or behaviour (same port)."""
        await self.broker(node_id).restart(release, behaviour)

    # -- client inventory ----------------------------------------------------------------
    def inventory(self, cluster: str | None = None) -> tuple[SoftwareUse, ...]:
        """The client software of every connection its brokers served, as an inventory.

        One :class:`~kclient.negotiation.inventory.SoftwareUse` per client software
        (KIP-511 name and version; ``unknown`` for connections that sent none),
        adding up every broker: the connections that named it since the brokers
        were created, and every request it sent per API and version (``complete``).
        ``cluster`` names the cluster (default: its cluster id).  Call it once the
        cluster stopped, or from its event loop.
        """
        name = cluster or self.cluster_id
        builder = InventoryBuilder()
        for broker in self.brokers:
            for software, seen in broker.software.seen.items():
                builder.connections(name, software, seen.connections)
                for (key, version), count in seen.requests.items():
                    builder.requests(name, software, key, version, count,
                                     seen_in="kclient's emulator", complete=True)
        found = builder.build().cluster(name)
        return () if found is None else found.software

    def write_inventory(self, path: str | os.PathLike[str], cluster: str | None = None) -> int:
        """Write :meth:`inventory` to ``path`` as inventory records (JSON Lines, contract
        ``kclient.inventory-record/1``); returns how many."""
        found = self.inventory(cluster)
        text = "".join(json.dumps(inventory_record(use)) + "\n" for use in found)
        try:
            with open(path, "w", encoding="utf-8") as handle:
                handle.write(text)
        except OSError as exc:
            raise ConfigError(f"cannot write the inventory to {os.fspath(path)}: "
                              f"{exc.strerror or exc}; choose another path") from None
        return len(found)

    async def rolling_restart(self, release: str, pause: float = 0.0) -> None:
        """Restart every broker on ``release``, one after the other."""
        for broker in self.brokers:
            await broker.restart(release)
            if pause:
                await asyncio.sleep(pause)
