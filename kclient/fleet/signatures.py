"""A fleet's distinct API sets (*signatures*), and the core's verdicts per set of them.

What a broker advertises (its API ranges) is all that KIP-35 arithmetic and a
release guess look at, and a fleet has few distinct sets of ranges: a few
dozen in the synthetic fleets, one per release, mode and custom build in real
ones).  So the reader (:mod:`kclient.fleet.reader`) brings the distinct
``api_versions`` lists to the driver once and numbers them (``sig_id``),
and each view is described by the sorted
distinct signatures of its brokers whose ranges count (its *signature set*).

Every view with the same signature set has the same cluster-wide ranges: the
core's :meth:`~kclient.negotiation.ClusterView.api_ranges` runs on the driver
once per signature set, over one stand-in broker per signature (node id =
signature id), and :func:`kclient.fleet.negotiate.cluster_api_versions`
spreads the verdicts back over the views and their real brokers.  The
KIP-35 rules keep one home, the core; the Spark plan is a broadcast join.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import attrs

from kclient.errors import FleetError
from kclient.fleet.tables import local_table, requirement_rows
from kclient.negotiation.features import FeatureSet
from kclient.negotiation.model import ApplicationVersions, BrokerVersions, ClusterView
from kclient.negotiation.ranges import VersionRange

if TYPE_CHECKING:
    from pyspark.sql import DataFrame

__all__ = [
    "MAX_SIGNATURES",
    "Signatures",
    "api_table",
    "collect_signature_sets",
    "feature_table",
    "too_many",
]

#: Distinct API sets (and distinct sets of them) a fleet may hold before the
#: work per set would crowd the driver.
MAX_SIGNATURES = 100_000


@attrs.frozen
class Signatures:
    """The distinct ``api_versions`` arrays of a fleet; a signature's id is its index."""

    ranges: tuple[tuple[tuple[int, int, int], ...], ...]

    def apis(self, sig_id: int) -> dict[int, VersionRange]:
        """The API ranges of one signature, as the core holds them."""
        return {key: VersionRange(low, high) for key, low, high in self.ranges[sig_id]}


def too_many(what: str) -> FleetError:
    """The error for more than :data:`MAX_SIGNATURES` distinct ``what`` in one fleet."""
    return FleetError(f"the snapshots hold more than {MAX_SIGNATURES:,} distinct {what}; "
                      "the per-set work would not fit the driver: split the fleet into "
                      "several reports")


def collect_signature_sets(views: DataFrame) -> list[tuple[int, ...]]:
    """The distinct ``sigset`` values of ``views`` (one small job), sorted."""
    rows = views.select("sigset").distinct().limit(MAX_SIGNATURES + 1).collect()
    if len(rows) > MAX_SIGNATURES:
        raise too_many("sets of broker signatures in one cluster")
    return sorted(tuple(int(s) for s in row["sigset"]) for row in rows)


_API_TABLE_COLUMNS = (
    ("sigset", "array<int>"), ("api_key", "int"), ("api_name", "string"),
    ("core_state", "string"), ("app_min", "int"), ("app_max", "int"),
    ("cluster_min", "int"), ("cluster_max", "int"), ("usable_min", "int"),
    ("usable_max", "int"), ("version", "int"), ("having", "array<int>"),
    ("blockers", "array<int>"),
    ("offers", "array<struct<key:int,value:struct<bmin:int,bmax:int>>>"),
)


def _bounds(rng: VersionRange | None) -> tuple[int | None, int | None]:
    return (None, None) if rng is None else (rng.min, rng.max)


def _span(rng: VersionRange) -> dict[str, int]:
    return {"bmin": rng.min, "bmax": rng.max}


def api_table(views: DataFrame, sets: list[tuple[int, ...]], signatures: Signatures,
              application: ApplicationVersions) -> DataFrame:
    """The core's verdict on every API for every signature set, as a small table.

    Per set and API key: ``core_state`` and the ranges of
    :class:`~kclient.negotiation.ApiSupport` for a view of one stand-in broker
    per signature (no broker unknown: the views' own unknown brokers are
    applied by the caller), ``having`` (the signatures with the API),
    ``blockers`` (the signatures in the way) and ``offers`` (their ranges of
    the API, for the explanation).
    """
    from pyspark.sql import functions as F

    rows: list[tuple[Any, ...]] = []
    for sigset in sets:
        stand_ins = [BrokerVersions(node_id=sig, host="signature", port=1,
                                    apis=signatures.apis(sig)) for sig in sigset]
        view = ClusterView(stand_ins, application=application)
        for key, support in view.api_ranges().items():
            having = [sig for sig, rng in support.brokers.items() if rng is not None]
            offers = [{"key": sig, "value": _span(rng)} for sig in support.blocking
                      if (rng := support.brokers.get(sig)) is not None]
            rows.append((list(sigset), key, support.name, support.state.value,
                         *_bounds(support.application), *_bounds(support.cluster),
                         *_bounds(support.usable), support.version, having,
                         list(support.blocking), offers))
    schema = ", ".join(f"{name} {kind}" for name, kind in _API_TABLE_COLUMNS)
    table = local_table(views.sparkSession, rows, schema)
    return table.withColumn("offers", F.map_from_entries("offers"))


_REQ_TYPE = (
    "struct<ordinal:int, grp:int, kind:string, describe:string, api_name:string, "
    "want_min:int, want_max:int, static_reason:string, level_feature:string, "
    "level_min:bigint, level_max:bigint, removal_note:string, "
    "offers:array<struct<bmin:int,bmax:int>>>"
)


def feature_table(views: DataFrame, features: FeatureSet, signatures: Signatures,
                  application: ApplicationVersions) -> DataFrame:
    """``feature_index, feature, alternatives, reqs``: one row per feature, for a broadcast.

    ``reqs`` holds the feature's requirements in the order the core checks
    them (:func:`kclient.fleet.tables.requirement_rows`), each with ``offers``:
    the range of its API in every signature, by signature id (null where the
    signature lacks the API).
    """
    by_sig = [signatures.apis(index) for index in range(len(signatures.ranges))]
    reqs: dict[int, list[dict[str, Any]]] = {index: [] for index in range(len(features))}
    for row in requirement_rows(features, application):
        offers: list[dict[str, int] | None] = []
        if row.kind == "api" and row.api_key is not None:
            offers = [None if (rng := apis.get(row.api_key)) is None else _span(rng)
                      for apis in by_sig]
        # from_json reads the fields _REQ_TYPE names and skips the others.
        reqs[row.feature_index].append({**attrs.asdict(row), "offers": offers})
    rows = [(index, feature.name, len(feature.any_of), reqs[index])
            for index, feature in enumerate(features)]
    return local_table(views.sparkSession, rows,
                       f"feature_index int, feature string, alternatives int, "
                       f"reqs array<{_REQ_TYPE}>")
