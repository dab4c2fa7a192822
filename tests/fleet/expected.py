"""What the pure-Python negotiation core says about snapshot records, in table form.

The fleet tests compare the Spark tables with these rows, built with
:mod:`kclient.negotiation` only (``brokers_by_cluster``, ``ClusterView`` with
its default, strict, verdicts, ``evaluate_features``, ``guess_release``).
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from kclient.negotiation import (
    ClusterView,
    FeatureSet,
    SnapshotRecord,
    brokers_by_cluster,
    guess_release,
    load_features,
)

ApiRow = tuple[Any, ...]
FeatureRow = tuple[Any, ...]
ReleaseRow = tuple[str, int, str, int, str, str, str | None]


def core_tables(records: Iterable[SnapshotRecord], features: FeatureSet | None = None
                ) -> tuple[set[ApiRow], set[FeatureRow], set[ReleaseRow]]:
    """(cluster_api_versions, feature_availability, broker_releases) rows per the core."""
    feature_set = features if features is not None else load_features()
    apis: set[ApiRow] = set()
    feats: set[FeatureRow] = set()
    releases: set[ReleaseRow] = set()
    for cluster, brokers in brokers_by_cluster(records).items():
        view = ClusterView(brokers, name=cluster)
        assert view.strict, "the fleet applies the core's default: strict verdicts"
        for key, support in view.api_ranges().items():
            app = support.application
            apis.add((
                cluster, key, support.name, support.state.value,
                None if app is None else app.min, None if app is None else app.max,
                None if support.cluster is None else support.cluster.min,
                None if support.cluster is None else support.cluster.max,
                None if support.usable is None else support.usable.min,
                None if support.usable is None else support.usable.max,
                support.version, tuple(support.blocking), tuple(support.unknown),
                tuple(support.stale), support.reason, len(support.brokers),
                sum(1 for rng in support.brokers.values() if rng is not None),
            ))
        for result in view.evaluate(feature_set):
            feats.add((
                cluster, result.name, result.state.value, result.available,
                tuple(sorted(result.versions.items())), tuple(result.blocking),
                tuple(result.unknown), tuple(result.stale), tuple(result.reasons),
                tuple(sorted(n for n, ok in result.brokers.items() if ok)),
            ))
        for broker in brokers:
            guess = guess_release(broker.apis)
            releases.add((cluster, broker.node_id, broker.host, broker.port, broker.state.value,
                          guess.text, guess.mode))
    return apis, feats, releases


def spark_tables(tables: Any) -> tuple[set[ApiRow], set[FeatureRow], set[ReleaseRow]]:
    """The same rows from the Spark tables of :func:`kclient.fleet.pipeline.compute_tables`."""
    apis = {
        (r["cluster"], r["api_key"], r["api_name"], r["state"], r["app_min"], r["app_max"],
         r["cluster_min"], r["cluster_max"], r["usable_min"], r["usable_max"], r["version"],
         tuple(r["blocking"]), tuple(r["unknown_brokers"]), tuple(r["stale_brokers"]),
         r["reason"], r["brokers"], r["brokers_with_api"])
        for r in tables.cluster_api_versions.collect()
    }
    feats = {
        (r["cluster"], r["feature"], r["state"], r["available"],
         tuple(sorted(r["versions"].items())), tuple(r["blocking"]),
         tuple(r["unknown_brokers"]), tuple(r["stale_brokers"]), tuple(r["reasons"]),
         tuple(r["usable_on"]))
        for r in tables.feature_availability.collect()
    }
    releases = {(r["cluster"], r["broker_id"], r["host"], r["port"], r["state"],
                 r["release_guess"], r["guess_mode"])
                for r in tables.broker_releases.collect()}
    return apis, feats, releases
