"""Per-broker release guesses in Spark, the algorithm of :func:`kclient.negotiation.guess_release`.

A guess depends only on a broker's (API key, max version) pairs, and a fleet
has few distinct sets of them, so the work is done once per distinct set (a
*signature*) and joined back to the brokers:

1. per signature and release profile, compare the maximums of the keys the
   core considers: ``over`` (a key the release lacks, or a higher max) and
   ``under`` (a lower max, or a key of the release the broker lacks);
2. per lineage (ZooKeeper, KRaft), walking from the newest release, the first
   one the broker is not under is where the core stops: ``exact`` when not
   over either (ties between releases with the same maximums broken by the
   ignored keys' score, newest first), else ``at least`` the lineage's newest
   release, ``between`` it and the next newer one, or ``unknown/custom`` when
   the next newer one is both over and under;
3. of the lineages' guesses the better wins: exact, between, at least,
   unknown; then the higher score, the newer release, KRaft;
4. a broker with no considered key is ``unknown/custom``.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from kclient.fleet.tables import LINEAGES, ReleaseTables
from kclient.negotiation.releases import MODE_LABELS, guess_ignored_keys

if TYPE_CHECKING:
    from pyspark.sql import Column, DataFrame

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


def _mode_of(lineage: Column) -> Column:
    from pyspark.sql import functions as F

    return F.when(lineage == 0, F.lit(LINEAGES[0])).otherwise(F.lit(LINEAGES[1]))


def guess_signatures(signatures: DataFrame, tables: ReleaseTables) -> DataFrame:
    """``sig, guess_kind, guess_low, guess_high, guess_mode, release_guess`` per distinct ``sig``.

    ``signatures`` has ``sig`` and ``sig_pairs`` and one row per distinct ``sig``.
    """
    from pyspark.sql import Window
    from pyspark.sql import functions as F

    ignored = sorted(guess_ignored_keys())
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
    status = compared.join(releases.select("rel", "lineage", "pos"), "rel").select(
        "sig", "lineage", "pos", (F.col("over") == 1).alias("over"),
        ((F.col("below") == 1) | (F.col("matched") < F.col("considered"))).alias("under"))
    stops = (status.where(~F.col("under")).groupBy("sig", "lineage")
             .agg(F.max("pos").alias("stop")))
    at_stop = (stops.join(status.withColumnRenamed("pos", "stop"), ["sig", "lineage", "stop"])
               .select("sig", "lineage", "stop", F.col("over").alias("stop_over")))
    newer = status.select("sig", "lineage", (F.col("pos") - 1).alias("stop"),
                          F.col("over").alias("newer_over"))
    names = releases.select("lineage", "pos", "release", "run_start", "order")
    decided = (at_stop.join(newer, ["sig", "lineage", "stop"], "left")
               .join(names.withColumnRenamed("pos", "stop"), ["lineage", "stop"])
               .join(names.select("lineage", (F.col("pos") - 1).alias("stop"),
                                  F.col("release").alias("newer_release")),
                     ["lineage", "stop"], "left"))

    # Exact matches: the newest best-scoring release of the run of equals.  The
    # score counts +1 per ignored key the broker and the release advertise with
    # the same max and -1 per other ignored key either of them advertises.
    exact = decided.where(~F.col("stop_over")).select("sig", "lineage", "stop", "run_start")
    candidates = (exact.join(releases.select("rel", "lineage", "pos", "release"), "lineage")
                  .where((F.col("pos") >= F.col("run_start")) & (F.col("pos") <= F.col("stop")))
                  .select("sig", "lineage", "rel", "pos", "release"))
    profile_side = (candidates.select("sig", "rel").join(ignored_profile, "rel")
                    .join(extra, ["sig", "api_key"], "left")
                    .select("sig", "rel", F.when(F.col("vmax") == F.col("pmax"), 1)
                            .otherwise(-1).alias("point")))
    broker_side = (candidates.select("sig", "rel").join(extra, "sig")
                   .join(ignored_profile, ["rel", "api_key"], "left_anti")
                   .select("sig", "rel", F.lit(-1).alias("point")))
    scores = (profile_side.unionByName(broker_side).groupBy("sig", "rel")
              .agg(F.sum("point").alias("score")))
    best = Window.partitionBy("sig", "lineage").orderBy(F.col("score").desc(),
                                                        F.col("pos").desc())
    exact_release = (candidates.join(scores, ["sig", "rel"], "left")
                     .withColumn("score", F.coalesce("score", F.lit(0)))
                     .withColumn("_rank", F.row_number().over(best))
                     .where(F.col("_rank") == 1)
                     .select("sig", "lineage", F.col("release").alias("exact_release"),
                             "score"))

    newest = F.when(F.col("lineage") == 0, F.lit(tables.newest[0])).otherwise(
        F.lit(tables.newest[1]))
    kind = (F.when(~F.col("stop_over"), F.lit("exact"))
            .when(F.col("stop") == newest, F.lit("at_least"))
            .when(F.col("newer_over"), F.lit("unknown"))
            .otherwise(F.lit("between")))
    kind_rank = (F.when(F.col("guess_kind") == "exact", 3)
                 .when(F.col("guess_kind") == "between", 2)
                 .when(F.col("guess_kind") == "at_least", 1).otherwise(0))
    per_lineage = (decided.join(exact_release, ["sig", "lineage"], "left")
                   .withColumn("guess_kind", kind)
                   .select(
                       "sig", "lineage", "guess_kind",
                       F.when(F.col("guess_kind") == "exact", F.col("exact_release"))
                       .when(F.col("guess_kind") != "unknown", F.col("release"))
                       .alias("guess_low"),
                       F.when(F.col("guess_kind") == "between", F.col("newer_release"))
                       .alias("guess_high"),
                       F.when(F.col("guess_kind") == "exact", F.col("score")).otherwise(0)
                       .alias("score"),
                       F.when(F.col("guess_kind") == "unknown", F.lit(-1))
                       .otherwise(F.col("order")).alias("order")))
    pick = Window.partitionBy("sig").orderBy(kind_rank.desc(), F.col("score").desc(),
                                             F.col("order").desc(), F.col("lineage").desc())
    guessed = (per_lineage.withColumn("_rank", F.row_number().over(pick))
               .where(F.col("_rank") == 1)
               .select("sig", "guess_kind", "guess_low", "guess_high",
                       F.when(F.col("guess_kind") != "unknown", _mode_of(F.col("lineage")))
                       .alias("guess_mode")))

    # Text: release numbers, and the mode where a release involved had both.
    low = releases.select(F.col("release").alias("guess_low"),
                          F.col("number").alias("low_number"),
                          F.col("named_mode").alias("low_named"))
    high = releases.select(F.col("release").alias("guess_high"),
                           F.col("number").alias("high_number"),
                           F.col("named_mode").alias("high_named"))
    labelled = guessed.join(low, "guess_low", "left").join(high, "guess_high", "left")
    suffix = F.when(F.coalesce("low_named", F.lit(False)) | F.coalesce("high_named", F.lit(False)),
                    F.concat(F.lit(" ("), F.when(F.col("guess_mode") == LINEAGES[0],
                                                 F.lit(MODE_LABELS[LINEAGES[0]]))
                             .otherwise(F.lit(MODE_LABELS[LINEAGES[1]])), F.lit(")"))
                    ).otherwise(F.lit(""))
    text = (F.when(F.col("guess_kind") == "exact", F.concat(F.col("low_number"), suffix))
            .when(F.col("guess_kind") == "at_least",
                  F.concat(F.lit("at least "), F.col("low_number"), suffix))
            .when(F.col("guess_kind") == "between",
                  F.concat(F.lit("between "), F.col("low_number"), F.lit(" and "),
                           F.col("high_number"), suffix))
            .otherwise(F.lit(UNKNOWN_TEXT)))
    return labelled.select("sig", "guess_kind", "guess_low", "guess_high", "guess_mode",
                           text.alias("release_guess"))


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
        "guess_low", "guess_high", "guess_mode")
