"""A Prometheus exporter of a client's cluster view (needs the ``metrics`` extra).

::

    from prometheus_client import start_http_server
    from kclient.metrics import ClusterMetrics

    client = SyncClient("broker:9092").start()
    ClusterMetrics(client)          # registers on prometheus_client's default registry
    start_http_server(9308)

Every sample carries a ``cluster`` label (``cluster=``, else the client's
``cluster_name`` or the cluster id its brokers reported), so one registry serves
several clients: each :class:`ClusterMetrics` on a registry joins that
registry's single kclient collector (one per registry and prefix), which writes
one metric family per name with a series per cluster. A second
:class:`ClusterMetrics` with a cluster name already exported on the same
registry raises :class:`~kclient.errors.ConfigError`;
:meth:`ClusterMetrics.close` withdraws a cluster's series.

Metrics (the prefix defaults to ``kclient``):

- ``kclient_brokers{cluster,state}``: brokers answered / stale / unknown;
- ``kclient_features{cluster,verdict}``: features available / unavailable / unknown;
- ``kclient_feature_verdict{cluster,feature,verdict}``: 1 for each feature's
  current verdict, 0 for the others;
- ``kclient_api_usable_version{cluster,api}``: the version of each API kclient
  sends cluster-wide, ``-1`` when no version can be promised (a broker lacks it,
  the brokers share none, or a broker has not answered);
- ``kclient_broker_info{cluster,broker,address,state,release_guess}``: 1 per
  broker (``release_guess`` from its answer, its last one while unreachable;
  empty when it never answered);
- ``kclient_broker_answers_total{cluster}``: counter of brokers that answered
  anew (a reconnect after a restart or an upgrade, a broker that joined).

They are computed at scrape time from the view the client's ``on_change``
callbacks delivered last, so scraping never touches the network.
prometheus-client is imported only by this module.
"""

from __future__ import annotations

import threading
import weakref
from collections.abc import Iterator
from typing import TYPE_CHECKING, Any

from kclient._version import install_hint
from kclient.address import format_address
from kclient.errors import ConfigError
from kclient.negotiation.releases import last_release_guess
from kclient.negotiation.verdict import BrokerState, Verdict

if TYPE_CHECKING:
    from kclient.negotiation.diff import ViewDiff
    from kclient.negotiation.evaluation import FeatureReport
    from kclient.negotiation.model import ClusterView

__all__ = ["ClusterMetrics"]

#: ``kclient_api_usable_version`` of an API for which no version can be promised.
NO_VERSION = -1

# One collector per (registry, prefix); the registry holds it, this map only finds it.
_COLLECTORS: weakref.WeakKeyDictionary[Any, dict[str, _Collector]] = (
    weakref.WeakKeyDictionary())
_COLLECTORS_LOCK = threading.Lock()


class _Collector:
    """Every :class:`ClusterMetrics` of one registry and prefix, as one collector."""

    def __init__(self, prefix: str) -> None:
        self.prefix = prefix
        self.members: dict[str, ClusterMetrics] = {}
        self.lock = threading.Lock()

    def describe(self) -> list[Any]:
        return []  # names are checked by _Collector itself; nothing else uses the prefix

    def collect(self) -> Iterator[Any]:
        from prometheus_client.core import CounterMetricFamily, GaugeMetricFamily

        p = self.prefix
        brokers = GaugeMetricFamily(f"{p}_brokers", "Brokers by state", labels=[
            "cluster", "state"])
        features = GaugeMetricFamily(f"{p}_features", "Features by verdict", labels=[
            "cluster", "verdict"])
        verdicts = GaugeMetricFamily(f"{p}_feature_verdict",
                                     "1 for the current verdict of each feature",
                                     labels=["cluster", "feature", "verdict"])
        usable = GaugeMetricFamily(f"{p}_api_usable_version",
                                   f"Version of each API sent cluster-wide ({NO_VERSION}: none)",
                                   labels=["cluster", "api"])
        info = GaugeMetricFamily(f"{p}_broker_info",
                                 "1 per broker: its state and guessed release",
                                 labels=["cluster", "broker", "address", "state",
                                         "release_guess"])
        answers = CounterMetricFamily(f"{p}_broker_answers",
                                      "Brokers that answered ApiVersions anew",
                                      labels=["cluster"])
        with self.lock:
            members = sorted(self.members.items())
        for cluster, member in members:
            view, report, answered = member.snapshot()
            for state in BrokerState:
                brokers.add_metric([cluster, str(state)],
                                   sum(1 for b in view.brokers if b.state is state))
            for verdict in Verdict:
                features.add_metric([cluster, str(verdict)], len(report.names_in(verdict)))
            for result in report:
                for verdict in Verdict:
                    verdicts.add_metric([cluster, result.name, str(verdict)],
                                        1 if result.state is verdict else 0)
            for support in view.api_ranges().values():
                usable.add_metric([cluster, support.name],
                                  NO_VERSION if support.version is None else support.version)
            for broker in view.brokers:
                info.add_metric([cluster, str(broker.node_id),
                                 format_address(broker.host, broker.port), str(broker.state),
                                 last_release_guess(broker) or ""], 1)
            answers.add_metric([cluster], answered)
        yield from (brokers, features, verdicts, usable, info, answers)


def _cluster_name(client: Any) -> str:
    """The client's cluster as its snapshots name it: cluster_name, cluster id, "unnamed"."""
    inner = getattr(client, "client", client)  # a SyncClient's asyncio Client
    return (getattr(inner, "cluster_name", None) or getattr(inner, "cluster_id", None)
            or client.view.name or "unnamed")


class ClusterMetrics:
    """Prometheus metrics of one :class:`~kclient.Client` or :class:`~kclient.SyncClient`.

    ``registry`` is a ``prometheus_client.CollectorRegistry`` (default: the
    global one); ``prefix`` starts every metric name; ``cluster`` is the value
    of the ``cluster`` label (default: the client's ``cluster_name``, else the
    cluster id the brokers reported, as its snapshot records name the cluster).  Several
    instances may share a registry when their ``cluster`` differs.
    """

    def __init__(self, client: Any, registry: Any = None, prefix: str = "kclient",
                 cluster: str | None = None) -> None:
        try:
            import prometheus_client as prom
        except ImportError:
            raise ConfigError("kclient.metrics needs prometheus-client: "
                              f"{install_hint('metrics')}") from None
        target = registry if registry is not None else prom.REGISTRY
        self._client = client
        self._lock = threading.Lock()
        self._answered = 0
        self._state: tuple[ClusterView, FeatureReport] = (client.view, client.report())
        self.cluster: str = cluster or _cluster_name(client)
        with _COLLECTORS_LOCK:
            by_prefix = _COLLECTORS.setdefault(target, {})
            collector = by_prefix.get(prefix)
            if collector is None:
                collector = _Collector(prefix)
                target.register(collector)
                by_prefix[prefix] = collector
        with collector.lock:
            if self.cluster in collector.members:
                raise ConfigError(
                    f"ClusterMetrics: cluster {self.cluster!r} is already exported on this "
                    f"registry with prefix {prefix!r}; pass cluster= a distinct name (or "
                    "close() the other first)")
            collector.members[self.cluster] = self
        self._collector = collector
        client.on_change(self._on_change)

    def snapshot(self) -> tuple[ClusterView, FeatureReport, int]:
        """The view, the feature report and the count of new answers, as of now."""
        with self._lock:
            view, report = self._state
            return view, report, self._answered

    def update(self, view: ClusterView, report: FeatureReport) -> None:
        """Export ``view`` and ``report`` from now on (the next scrape shows them)."""
        with self._lock:
            self._state = (view, report)

    def close(self) -> None:
        """Withdraw this cluster's series from the registry (later changes are ignored)."""
        with self._collector.lock:
            if self._collector.members.get(self.cluster) is self:
                del self._collector.members[self.cluster]

    def _on_change(self, diff: ViewDiff, view: ClusterView) -> None:
        answered = [n for n in (*diff.brokers_added, *diff.brokers_changed)
                    if view.broker(n).state is BrokerState.ANSWERED]
        report = self._client.report()
        with self._lock:
            self._answered += len(answered)
            self._state = (view, report)
