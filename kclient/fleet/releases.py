"""The distinct API sets of a fleet (*signatures*) and the core's release guess for each.

What a broker advertises (its API ranges) is all a release guess and all the
KIP-35 arithmetic look at, and a fleet has few distinct sets of them (a few
dozen for the synthetic fleets, one per release, mode and custom build in real
ones).  So the distinct sets are collected to the driver once and numbered
(``sig_id``): :func:`kclient.negotiation.guess_release` guesses each there (the
rule keeps one home, the core), and :mod:`kclient.fleet.negotiate` does its
range arithmetic per view and signature instead of per broker.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import attrs

from kclient.errors import FleetError
from kclient.fleet.tables import local_table
from kclient.negotiation.ranges import VersionRange
from kclient.negotiation.releases import FALLBACK_PREFIX, guess_release

if TYPE_CHECKING:
    from pyspark.sql import DataFrame

__all__ = ["MAX_SIGNATURES", "Signatures", "broker_releases", "collect_signatures",
           "guess_table", "offer_table", "with_signature"]

#: Distinct API sets a fleet may hold before the guesses would crowd the driver.
MAX_SIGNATURES = 100_000
_GUESS_SCHEMA = ("sig_id int, guess_kind string, guess_low string, guess_high string, "
                 "guess_mode string, release_guess string")


@attrs.frozen
class Signatures:
    """The distinct ``api_versions`` arrays of a fleet; a signature's id is its index."""

    ranges: tuple[tuple[tuple[int, int, int], ...], ...]

    def apis(self, sig_id: int) -> dict[int, VersionRange]:
        """The API ranges of one signature, as the core holds them."""
        return {key: VersionRange(low, high) for key, low, high in self.ranges[sig_id]}


def collect_signatures(brokers: DataFrame) -> Signatures:
    """Number the distinct ``api_versions`` of ``brokers`` (one small job)."""
    rows = (brokers.select("api_versions").distinct().limit(MAX_SIGNATURES + 1).collect())
    if len(rows) > MAX_SIGNATURES:
        raise FleetError(f"the snapshots hold more than {MAX_SIGNATURES:,} distinct sets of "
                         "API versions; release guesses would not fit the driver: split the "
                         "fleet into several reports")
    ranges = sorted(tuple((int(a["api_key"]), int(a["min_version"]), int(a["max_version"]))
                          for a in row["api_versions"]) for row in rows)
    return Signatures(tuple(ranges))


def with_signature(brokers: DataFrame, signatures: Signatures) -> DataFrame:
    """``brokers`` plus ``sig_id``, the number of their ``api_versions`` (a broadcast join).

    The join is on the array itself (exact equality, no hash), and keeps the
    brokers' partitioning.
    """
    from pyspark.sql import functions as F
    from pyspark.sql import types as T

    entry = T.StructType([T.StructField("api_key", T.IntegerType()),
                          T.StructField("min_version", T.IntegerType()),
                          T.StructField("max_version", T.IntegerType())])
    schema = T.StructType([T.StructField("api_versions", T.ArrayType(entry)),
                           T.StructField("sig_id", T.IntegerType())])
    spark = brokers.sparkSession
    numbered = spark.createDataFrame(
        [([(k, lo, hi) for k, lo, hi in sig], index)
         for index, sig in enumerate(signatures.ranges)], schema)
    return brokers.join(F.broadcast(numbered), "api_versions")


def offer_table(brokers: DataFrame, signatures: Signatures) -> DataFrame:
    """``sig_id, api_key, bmin, bmax``: every API range of every signature."""
    rows = [(index, key, low, high) for index, sig in enumerate(signatures.ranges)
            for key, low, high in sig]
    return local_table(brokers.sparkSession, rows,
                       "sig_id int, api_key int, bmin int, bmax int")


def guess_table(brokers: DataFrame, signatures: Signatures) -> DataFrame:
    """``sig_id`` and the core's release guess for every signature."""
    rows = []
    for index in range(len(signatures.ranges)):
        guess = guess_release(signatures.apis(index))
        rows.append((index, guess.kind, guess.low, guess.high, guess.mode, guess.text))
    return local_table(brokers.sparkSession, rows, _GUESS_SCHEMA)


def broker_releases(brokers: DataFrame, signatures: Signatures) -> DataFrame:
    """One row per broker of each view with its release guess.

    Every broker has a signature (an error record's is the empty list, which
    the core guesses as unknown), so the join keeps every broker.
    """
    from pyspark.sql import functions as F

    joined = brokers.join(F.broadcast(guess_table(brokers, signatures)), "sig_id", "left")
    fallback = F.when(F.col("source").startswith(FALLBACK_PREFIX),
                      F.regexp_replace("source", "^" + FALLBACK_PREFIX, ""))
    return joined.select(
        "cluster", "day", "broker_id", "host", "port", "observed_at", "state", "answered_at",
        "source", fallback.alias("fallback_release"), "error",
        F.size("api_versions").alias("api_count"),
        F.col("software.name").alias("software_name"),
        F.col("software.version").alias("software_version"),
        "release_guess", "guess_kind", "guess_low", "guess_high", "guess_mode")
