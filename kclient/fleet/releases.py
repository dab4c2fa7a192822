"""Per-broker release guesses: the core's :func:`~kclient.negotiation.guess_release` per signature.

A guess depends only on what a broker advertises (its API ranges), and a
fleet has few distinct sets of them (a few dozen for the synthetic fleets,
one per release, mode and custom build in real ones).  So the distinct sets
(*signatures*) are collected to the driver, each is guessed there by the
core itself, and the guesses go back to Spark as a small broadcast table
joined to the brokers.  The rule has one home (the core), and the Spark plan
is one aggregation plus one broadcast join instead of a re-statement of the
algorithm as a few dozen joins.
"""

from __future__ import annotations

import json
from typing import TYPE_CHECKING

from kclient.errors import FleetError
from kclient.fleet.tables import local_table
from kclient.negotiation.ranges import VersionRange
from kclient.negotiation.releases import FALLBACK_PREFIX, guess_release

if TYPE_CHECKING:
    from pyspark.sql import Column, DataFrame

__all__ = ["MAX_SIGNATURES", "broker_releases", "guess_table", "signature"]

#: Distinct API sets a fleet may hold before the guesses would crowd the driver.
MAX_SIGNATURES = 100_000
_GUESS_SCHEMA = ("sig string, guess_kind string, guess_low string, guess_high string, "
                 "guess_mode string, release_guess string")


def signature(api_versions: Column) -> Column:
    """The API ranges as one JSON text, sorted by key (``[[key, min, max], ...]``)."""
    from pyspark.sql import functions as F

    triples = F.transform(F.array_sort(api_versions), lambda a: F.array(
        a["api_key"], a["min_version"], a["max_version"]))
    return F.to_json(triples)


def guess_table(signed: DataFrame) -> DataFrame:
    """``sig`` and the core's guess for every distinct ``sig`` of ``signed`` brokers."""
    signatures = [str(row["sig"]) for row in
                  signed.select("sig").distinct().limit(MAX_SIGNATURES + 1).collect()]
    if len(signatures) > MAX_SIGNATURES:
        raise FleetError(f"the snapshots hold more than {MAX_SIGNATURES:,} distinct sets of "
                         "API versions; release guesses would not fit the driver: split the "
                         "fleet into several reports")
    rows = []
    for sig in signatures:
        apis = {int(key): VersionRange(int(low), int(high))
                for key, low, high in json.loads(sig)}
        guess = guess_release(apis)
        rows.append((sig, guess.kind, guess.low, guess.high, guess.mode, guess.text))
    return local_table(signed.sparkSession, rows, _GUESS_SCHEMA)


def broker_releases(brokers: DataFrame) -> DataFrame:
    """One row per broker of each view with its release guess.

    Every broker has a signature (an error record's is the empty list, which
    the core guesses as unknown), so the join keeps every broker.
    """
    from pyspark.sql import functions as F

    signed = brokers.withColumn("sig", signature(F.col("api_versions")))
    joined = signed.join(F.broadcast(guess_table(signed)), "sig", "left")
    fallback = F.when(F.col("source").startswith(FALLBACK_PREFIX),
                      F.regexp_replace("source", "^" + FALLBACK_PREFIX, ""))
    return joined.select(
        "cluster", "day", "broker_id", "host", "port", "observed_at", "state", "answered_at",
        "source", fallback.alias("fallback_release"), "error",
        F.size("api_versions").alias("api_count"),
        F.col("software.name").alias("software_name"),
        F.col("software.version").alias("software_version"),
        "release_guess", "guess_kind", "guess_low", "guess_high", "guess_mode")
