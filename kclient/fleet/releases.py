"""Per-broker release guesses in Spark, the algorithm of :func:`kclient.negotiation.guess_release`.

A guess depends only on a broker's (API key, max version) pairs, and a fleet
has few distinct sets of them, so the work is done once per distinct set (a
*signature*) and joined back to the brokers:

1. per signature and release, compare the maximums of the keys the core
   considers: ``over`` (a key the release lacks, or a higher max) and
   ``under`` (a lower max, or a key of the release the broker lacks);
2. walking from the newest release, the first one the broker is not under is
   where the core stops: ``exact`` when not over either (ties between
   releases with the same maximums broken by the ignored keys, newest first),
   else ``at least`` the newest release, ``between`` it and the next newer one,
   or ``unknown/custom`` when the next newer one is both over and under;
3. a broker with no considered key is ``unknown/custom``.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from kclient.fleet.tables import ReleaseTables
from kclient.negotiation.releases import GUESS_IGNORED_KEYS

if TYPE_CHECKING:
    from pyspark.sql import DataFrame

__all__ = ["broker_releases", "guess_signatures", "with_signature"]

UNKNOWN_TEXT = "unknown/custom"


def with_signature(brokers: DataFrame) -> DataFrame:
    """Add ``sig_pairs`` (sorted key/max pairs) and ``sig`` (the same as text)."""
    from pyspark.sql import functions as F

    pairs = F.array_sort(F.transform("api_versions", lambda a: F.struct(
        a["api_key"].alias("api_key"), a["max_version"].alias("vmax"))))
    text = F.array_join(F.transform("sig_pairs", lambda p: F.concat(
        p["api_key"].cast("string"), F.lit(":"), p["vmax"].cast("string"))), ",")
    return brokers.withColumn("sig_pairs", pairs).withColumn("sig", text)


def guess_signatures(signatures: DataFrame, tables: ReleaseTables) -> DataFrame:
    """``sig, guess_kind, guess_low, guess_high, release_guess`` per distinct signature.

    ``signatures`` has ``sig`` and ``sig_pairs`` and one row per distinct ``sig``.
    """
    from pyspark.sql import Window
    from pyspark.sql import functions as F

    ignored = sorted(GUESS_IGNORED_KEYS)
    releases = F.broadcast(tables.releases)
    considered_profile = F.broadcast(tables.profiles.where(~F.col("ignored")).drop("ignored"))
    ignored_profile = F.broadcast(tables.profiles.where(F.col("ignored")).drop("ignored"))
    pairs = signatures.select("sig", F.explode("sig_pairs").alias("p")).select(
        "sig", F.col("p.api_key").alias("api_key"), F.col("p.vmax").alias("vmax"))
    own = pairs.where(~F.col("api_key").isin(ignored))
    extra = pairs.where(F.col("api_key").isin(ignored))

    compared = (own.crossJoin(releases.select("rel", "considered"))
                .join(considered_profile, ["rel", "api_key"], "left")
                .groupBy("sig", "rel", "considered").agg(
                    F.max((F.col("pmax").isNull() | (F.col("vmax") > F.col("pmax")))
                          .cast("int")).alias("over"),
                    F.max((F.col("vmax") < F.col("pmax")).cast("int")).alias("below"),
                    F.count("pmax").alias("matched")))
    status = compared.select(
        "sig", "rel", (F.col("over") == 1).alias("over"),
        ((F.col("below") == 1) | (F.col("matched") < F.col("considered"))).alias("under"))
    stops = status.where(~F.col("under")).groupBy("sig").agg(F.max("rel").alias("stop"))
    at_stop = (stops.join(status.withColumnRenamed("rel", "stop"), ["sig", "stop"])
               .select("sig", "stop", F.col("over").alias("stop_over")))
    newer = status.select("sig", (F.col("rel") - 1).alias("stop"),
                          F.col("over").alias("newer_over"))
    names = releases.select("rel", "release", "run_start")
    decided = (at_stop.join(newer, ["sig", "stop"], "left")
               .join(names.withColumnRenamed("rel", "stop"), "stop")
               .join(names.select((F.col("rel") - 1).alias("stop"),
                                  F.col("release").alias("newer_release")), "stop", "left"))

    # Exact matches: the newest best-scoring release of the run of equals.
    exact = decided.where(~F.col("stop_over")).select("sig", "stop", "run_start")
    candidates = exact.join(releases.select("rel", "release"),
                            (F.col("rel") >= F.col("run_start")) & (F.col("rel") <= F.col("stop"))
                            ).select("sig", "rel", "release")
    scores = (extra.join(candidates.select("sig", "rel"), "sig")
              .join(ignored_profile, ["rel", "api_key"])
              .groupBy("sig", "rel").agg(F.sum(F.when(F.col("vmax") == F.col("pmax"), 1)
                                               .otherwise(-1)).alias("score")))
    best = Window.partitionBy("sig").orderBy(F.col("score").desc(), F.col("rel").desc())
    exact_release = (candidates.join(scores, ["sig", "rel"], "left")
                     .withColumn("score", F.coalesce("score", F.lit(0)))
                     .withColumn("_rank", F.row_number().over(best))
                     .where(F.col("_rank") == 1)
                     .select("sig", F.col("release").alias("exact_release")))

    kind = (F.when(~F.col("stop_over"), F.lit("exact"))
            .when(F.col("stop") == tables.newest, F.lit("at_least"))
            .when(F.col("newer_over"), F.lit("unknown"))
            .otherwise(F.lit("between")))
    guessed = (decided.join(exact_release, "sig", "left").withColumn("guess_kind", kind)
               .select(
                   "sig", "guess_kind",
                   F.when(F.col("guess_kind") == "exact", F.col("exact_release"))
                   .when(F.col("guess_kind") != "unknown", F.col("release")).alias("guess_low"),
                   F.when(F.col("guess_kind") == "between", F.col("newer_release"))
                   .alias("guess_high")))
    text = (F.when(F.col("guess_kind") == "exact", F.col("guess_low"))
            .when(F.col("guess_kind") == "at_least", F.concat(F.lit("at least "),
                                                              F.col("guess_low")))
            .when(F.col("guess_kind") == "between",
                  F.concat(F.lit("between "), F.col("guess_low"), F.lit(" and "),
                           F.col("guess_high")))
            .otherwise(F.lit(UNKNOWN_TEXT)))
    return guessed.withColumn("release_guess", text)


def broker_releases(brokers: DataFrame, tables: ReleaseTables) -> DataFrame:
    """One row per broker of each view with its release guess."""
    from pyspark.sql import functions as F

    signed = with_signature(brokers)
    distinct = signed.select("sig", "sig_pairs").dropDuplicates(["sig"])
    guesses = guess_signatures(distinct, tables)
    joined = signed.join(guesses, "sig", "left")
    fallback = F.when(F.col("source").startswith("fallback:"),
                      F.regexp_replace("source", "^fallback:", ""))
    return joined.select(
        "cluster", "day", "broker_id", "host", "port", "observed_at", "state", "answered_at",
        "source", fallback.alias("fallback_release"), "error",
        F.size("api_versions").alias("api_count"),
        F.col("software.name").alias("software_name"),
        F.col("software.version").alias("software_version"),
        F.coalesce("release_guess", F.lit(UNKNOWN_TEXT)).alias("release_guess"),
        F.coalesce("guess_kind", F.lit("unknown")).alias("guess_kind"),
        "guess_low", "guess_high")
