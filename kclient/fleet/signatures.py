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
from kclient.fleet.tables import local_table
from kclient.negotiation.model import ApplicationVersions, BrokerVersions, ClusterView
from kclient.negotiation.ranges import VersionRange

if TYPE_CHECKING:
    from pyspark.sql import DataFrame

__all__ = [
    "MAX_SIGNATURES",
    "Signatures",
    "api_table",
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


def too_many(what: str, limit: int = MAX_SIGNATURES) -> FleetError:
    """The error for more than ``limit`` distinct ``what`` in one fleet."""
    return FleetError(f"the snapshots hold more than {limit:,} distinct {what}; "
                      "the per-set work would not fit the driver: split the fleet into "
                      "several reports")


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
