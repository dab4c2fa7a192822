"""What the pure-Python negotiation core says about snapshot records, in table form.

The fleet tests compare both engines' tables with these rows, built with
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


def _rows(table: Any) -> list[dict[str, Any]]:
    """Rows as dicts: an Arrow table (the local engine) or a Spark DataFrame."""
    if hasattr(table, "to_pylist"):
        return list(table.to_pylist())
    return [row.asDict() for row in table.collect()]


def _items(value: Any) -> tuple[tuple[str, int], ...]:
    pairs = value.items() if isinstance(value, dict) else value
    return tuple(sorted(pairs))


def spark_tables(tables: Any) -> tuple[set[ApiRow], set[FeatureRow], set[ReleaseRow]]:
    """The same rows from either engine's tables (:func:`kclient.fleet.pipeline.compute_tables`,
    :func:`kclient.fleet.local.compute_local`)."""
    apis = {
        (r["cluster"], r["api_key"], r["api_name"], r["state"], r["app_min"], r["app_max"],
         r["cluster_min"], r["cluster_max"], r["usable_min"], r["usable_max"], r["version"],
         tuple(r["blocking"]), tuple(r["unknown_brokers"]), tuple(r["stale_brokers"]),
         r["reason"], r["brokers"], r["brokers_with_api"])
        for r in _rows(tables.cluster_api_versions)
    }
    feats = {
        (r["cluster"], r["feature"], r["state"], r["available"],
         _items(r["versions"]), tuple(r["blocking"]),
         tuple(r["unknown_brokers"]), tuple(r["stale_brokers"]), tuple(r["reasons"]),
         tuple(r["usable_on"]))
        for r in _rows(tables.feature_availability)
    }
    releases = {(r["cluster"], r["broker_id"], r["host"], r["port"], r["state"],
                 r["release_guess"], r["guess_mode"])
                for r in _rows(tables.broker_releases)}
    return apis, feats, releases


def _cell(value: Any) -> Any:
    if isinstance(value, dict):
        return _items(value)
    if isinstance(value, list):
        return _items(value) if value and isinstance(value[0], tuple) else tuple(value)
    return value


def whole_rows(table: Any) -> set[tuple[Any, ...]]:
    """Every column of every row of either engine's table, comparable as a set."""
    return {tuple((key, _cell(value)) for key, value in sorted(row.items()))
            for row in _rows(table)}
