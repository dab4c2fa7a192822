"""A Prometheus exporter of a client's cluster view (needs the ``metrics`` extra).

::

    from prometheus_client import start_http_server
    from kclient.metrics import ClusterMetrics

    client = SyncClient("broker:9092").start()
    ClusterMetrics(client)          # registers on prometheus_client's default registry
    start_http_server(9308)

Gauges (the prefix defaults to ``kclient``):

- ``kclient_brokers{state}``: brokers answered / stale / unknown;
- ``kclient_features{verdict}``: features available / unavailable / unknown;
- ``kclient_feature_verdict{feature,verdict}``: 1 for each feature's current verdict;
- ``kclient_broker_answers_total``: counter of brokers that answered anew (a
  reconnect after a restart or an upgrade, a broker that joined).

They are updated from the client's ``on_change`` callbacks, so scraping never
touches the network.  prometheus-client is imported only by this module.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from kclient._version import install_hint
from kclient.errors import ConfigError
from kclient.negotiation.verdict import BrokerState, Verdict

if TYPE_CHECKING:
    from kclient.negotiation.diff import ViewDiff
    from kclient.negotiation.evaluation import FeatureReport
    from kclient.negotiation.model import ClusterView

__all__ = ["ClusterMetrics"]


class ClusterMetrics:
    """Prometheus metrics of one :class:`~kclient.Client` or :class:`~kclient.SyncClient`.

    ``registry`` is a ``prometheus_client.CollectorRegistry`` (default: the
    global one); ``prefix`` starts every metric name.
    """

    def __init__(self, client: Any, registry: Any = None, prefix: str = "kclient") -> None:
        try:
            import prometheus_client as prom
        except ImportError:
            raise ConfigError("kclient.metrics needs prometheus-client: "
                              f"{install_hint('metrics')}") from None
        target = registry if registry is not None else prom.REGISTRY
        self._client = client
        self.brokers = prom.Gauge(f"{prefix}_brokers", "Brokers by state", ["state"],
                                  registry=target)
        self.features = prom.Gauge(f"{prefix}_features", "Features by verdict", ["verdict"],
                                   registry=target)
        self.feature_verdict = prom.Gauge(f"{prefix}_feature_verdict",
                                          "1 for the current verdict of each feature",
                                          ["feature", "verdict"], registry=target)
        self.broker_answers = prom.Counter(f"{prefix}_broker_answers",
                                           "Brokers that answered ApiVersions anew",
                                           registry=target)
        client.on_change(self._on_change)
        self.update(client.view, client.report())

    def update(self, view: ClusterView, report: FeatureReport) -> None:
        """Set every gauge from ``view`` and ``report``."""
        for state in BrokerState:
            self.brokers.labels(state=str(state)).set(
                sum(1 for b in view.brokers if b.state is state))
        for verdict in Verdict:
            self.features.labels(verdict=str(verdict)).set(len(report.names_in(verdict)))
        for result in report:
            for verdict in Verdict:
                self.feature_verdict.labels(feature=result.name, verdict=str(verdict)).set(
                    1 if result.state is verdict else 0)

    def _on_change(self, diff: ViewDiff, view: ClusterView) -> None:
        answered = [n for n in (*diff.brokers_added, *diff.brokers_changed)
                    if any(b.node_id == n and b.state is BrokerState.ANSWERED
                           for b in view.brokers)]
        if answered:
            self.broker_answers.inc(len(answered))
        self.update(view, self._client.report())
