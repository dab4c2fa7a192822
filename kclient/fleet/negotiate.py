"""The fleet's views and their verdicts as Spark DataFrame operations.

* :func:`latest_brokers` -- the broker records that
  :func:`kclient.negotiation.brokers_by_cluster` keeps: the latest record of
  each broker (greatest ``observed_at``, later input on a tie), per cluster
  or, with history, per cluster and UTC day; a broker whose latest record is
  an error keeps its latest answer of the same view (*stale*), one with no
  answer in the view is *unknown*;
* :func:`views_of` -- one row per view, with its *shape*
  (:mod:`kclient.fleet.shapes`) and the core's sentence about its brokers that
  never answered;
* :func:`cluster_api_versions` and :func:`feature_availability` -- the core's
  verdicts per shape (:func:`kclient.fleet.judge.judge_shape`, on the driver)
  spread over the views by a broadcast join.

There are no Python UDFs, and no rule of the core is restated: the verdicts
are the core's, computed once per distinct input.  Brokers carry a signature
id (:mod:`kclient.fleet.reader`), not their ranges.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from kclient.negotiation.releases import FALLBACK_PREFIX
from kclient.negotiation.verdict import (
    BROKER_LABEL,
    NO_ATTEMPT,
    UNKNOWN_ENTRY,
    UNKNOWN_NOUNS,
    UNKNOWN_SENTENCE,
    UNKNOWN_SEPARATOR,
    BrokerState,
)

if TYPE_CHECKING:
    from pyspark.sql import Column, DataFrame

__all__ = [
    "cluster_api_versions",
    "fallback_release",
    "feature_availability",
    "known_state",
    "latest_brokers",
    "views_of",
]

_ANSWERED = BrokerState.ANSWERED.value
_STALE = BrokerState.STALE.value
_UNKNOWN = BrokerState.UNKNOWN.value
# The fields a stale broker takes from its last answer (what went_stale keeps).
_ANSWER_FIELDS = ("host", "port", "source", "sig_id", "finalized_features",
                  "supported_features", "finalized_features_epoch", "software")
# Separates cluster and day inside the internal ``view`` key.
_SEP = "\u0001"


def _s(column: Column) -> Column:
    return column.cast("string")


def known_state(state: str = "state") -> Column:
    """True for brokers whose ranges count: answered now or stale."""
    from pyspark.sql import functions as F

    return F.col(state) != _UNKNOWN


def fallback_release(source: str = "source") -> Column:
    """The release a ``fallback:<release>`` source names, else null: the core's
    :func:`~kclient.negotiation.releases.fallback_release` as a column."""
    from pyspark.sql import functions as F

    return F.when(F.col(source).startswith(FALLBACK_PREFIX),
                  F.regexp_replace(source, "^" + FALLBACK_PREFIX, ""))


def latest_brokers(good: DataFrame, partitions: int | None = None) -> DataFrame:
    """The broker the core keeps for each broker id of each view.

    Adds ``view`` (cluster, plus the day with history) and keeps, per view and
    broker id, the record with the greatest time (the later one in the input on
    a tie).  When that record is an error and the view holds an earlier answer
    of the broker, the broker is stale: the latest answer's host, port, source,
    ranges, feature levels and software replace the error record's, ``error``
    stays the latest error.  ``state`` is ``answered``, ``stale`` or
    ``unknown``; ``answered_at`` is the time of the answer used (``observed_at``
    stays the time of the latest record), ``answered_ts`` that time parsed.

    The records are shuffled once, by view (into ``partitions`` partitions when
    given): every later step groups by view first, so no further step moves
    broker rows between tasks.
    """
    from pyspark.sql import Window
    from pyspark.sql import functions as F

    keyed = good.withColumn("view", F.concat_ws(_SEP, F.col("cluster"), _s(F.col("day"))))
    keyed = (keyed.repartition(partitions, "view") if partitions
             else keyed.repartition("view"))
    order = Window.partitionBy("view", "broker_id").orderBy(
        F.col("ts").desc(), F.col("file").desc(), F.col("block").desc(), F.col("seq").desc())
    whole = order.rowsBetween(Window.unboundedPreceding, Window.unboundedFollowing)
    kept = F.struct(*(F.col(c) for c in _ANSWER_FIELDS), F.col("observed_at").alias("at"),
                    F.col("ts").alias("at_ts"))
    answer = F.first(F.when(F.col("error").isNull(), kept), ignorenulls=True).over(whole)
    latest = (keyed.withColumn("_rank", F.row_number().over(order))
              .withColumn("_answer", answer)
              .where(F.col("_rank") == 1).drop("_rank"))
    stale = F.col("error").isNotNull() & F.col("_answer").isNotNull()
    state = (F.when(F.col("error").isNull(), F.lit(_ANSWERED))
             .when(F.col("_answer").isNotNull(), F.lit(_STALE)).otherwise(F.lit(_UNKNOWN)))
    # One projection (each withColumn is analysed anew on the driver).
    replaced = {name: F.when(stale, F.col("_answer")[name]).otherwise(F.col(name))
                for name in _ANSWER_FIELDS}
    return latest.withColumns({**replaced, "state": state,
                               "answered_at": F.col("_answer")["at"],
                               "answered_ts": F.col("_answer")["at_ts"]}).drop("_answer")


def views_of(brokers: DataFrame) -> DataFrame:
    """One row per view: its brokers counted by state, its shape, its silent brokers' sentence.

    Columns: ``view, cluster, day, brokers, fallback_brokers`` (whose answer
    is a ``fallback:<release>`` record), ``first_seen`` and ``last_seen``
    (Unix seconds: the earliest and latest time of the records the view
    uses), ``live_brokers`` (answered now),
    ``known_brokers`` (answered or stale: the brokers whose ranges count),
    ``stale_brokers`` and ``unknown_brokers`` (sorted ids), ``shape`` (JSON:
    the known brokers' ids, signatures, finalized levels and stale flags, and
    the unknown brokers' ids; read by :func:`kclient.fleet.shapes.shape_from_text`)
    and ``unknown_reason`` (the core's
    :func:`~kclient.negotiation.verdict.unknown_text` over the unknown brokers,
    null when there are none).
    """
    from pyspark.sql import functions as F

    state = F.col("state")
    address = F.when(F.col("host").contains(":"),
                     F.format_string("[%s]:%d", F.col("host"), F.col("port"))).otherwise(
        F.format_string("%s:%d", F.col("host"), F.col("port")))
    label = F.format_string(BROKER_LABEL, F.col("broker_id"), address)
    entry = F.format_string(UNKNOWN_ENTRY, label, F.coalesce(F.col("error"), F.lit(NO_ATTEMPT)))
    # The times of the records the view uses: each broker's latest (``ts``),
    # and a stale broker's last answer (``answered_ts``).
    answered = F.unix_seconds(F.col("answered_ts"))
    observed = F.unix_seconds(F.col("ts"))
    views = brokers.groupBy("view", "cluster", "day").agg(
        F.count(F.lit(1)).alias("brokers"),
        F.sum(fallback_release().isNotNull().cast("long")).alias("fallback_brokers"),
        F.least(F.min(observed), F.min(answered)).alias("first_seen"),
        F.greatest(F.max(observed), F.max(answered)).alias("last_seen"),
        F.sum((state == _ANSWERED).cast("long")).alias("live_brokers"),
        F.sum(known_state().cast("long")).alias("known_brokers"),
        F.array_sort(F.collect_list(F.when(known_state(), F.struct(
            F.col("broker_id").alias("broker_id"), F.col("sig_id").alias("sig_id"),
            F.array_sort(F.map_entries("finalized_features")).alias("levels"),
            (state == _STALE).alias("stale"))))).alias("known"),
        F.array_sort(F.collect_list(F.when(state == _STALE, F.col("broker_id")))).alias(
            "stale_brokers"),
        F.array_sort(F.collect_list(F.when(state == _UNKNOWN, F.struct(
            F.col("broker_id").alias("broker_id"), entry.alias("entry"))))).alias("_silent"))
    silent = F.size("_silent")
    noun = F.when(silent == 1, F.lit(UNKNOWN_NOUNS[0])).otherwise(F.lit(UNKNOWN_NOUNS[1]))
    reason = F.format_string(UNKNOWN_SENTENCE, silent, noun, F.array_join(
        F.transform("_silent", lambda e: e["entry"]), UNKNOWN_SEPARATOR))
    unknown = F.transform("_silent", lambda e: e["broker_id"])
    shape = F.to_json(F.struct(F.col("known").alias("known"),
                               unknown.alias("unknown_brokers")))
    return views.withColumns({
        "unknown_brokers": unknown,
        "unknown_reason": F.when(silent > 0, reason),
        "shape": shape}).drop("_silent", "known")


def _spread(views: DataFrame, per_shape: DataFrame, ids: str, rows: DataFrame, key: str
            ) -> DataFrame:
    """Each view's rows (by id, from its shape) with the rows' columns."""
    from pyspark.sql import functions as F

    return (views.select("cluster", "day", "shape", "unknown_reason")
            .join(F.broadcast(per_shape.select("shape", ids)), "shape")
            .select("cluster", "day", "unknown_reason", F.explode(ids).alias(key))
            .join(F.broadcast(rows), key))


def cluster_api_versions(views: DataFrame, per_shape: DataFrame, api_rows: DataFrame
                         ) -> DataFrame:
    """The cluster-wide range of every API, as :meth:`ClusterView.api_support` says.

    One row per view and API key the application or a broker whose ranges
    count knows: the core's row for the view's shape
    (:func:`kclient.fleet.shapes.verdict_tables`), its reason the view's own
    sentence about its silent brokers where the core gave that sentence.
    """
    from pyspark.sql import functions as F

    rows = _spread(views, per_shape, "api_rows", api_rows, "api_row")
    reason = F.when(F.col("flagged"), F.col("unknown_reason")).otherwise(F.col("reason"))
    return rows.select(
        "cluster", "day", "api_key", "api_name", "state", "app_min", "app_max",
        "cluster_min", "cluster_max", "usable_min", "usable_max", "version", "brokers",
        "brokers_with_api", "blocking", "unknown_brokers", "stale_brokers",
        reason.alias("reason"))


def feature_availability(views: DataFrame, per_shape: DataFrame, feature_rows: DataFrame
                         ) -> DataFrame:
    """Every feature in every view, as :func:`kclient.negotiation.evaluate_features` says.

    One row per view and feature: the core's row for the view's shape, its
    reasons the view's own sentence about its silent brokers where the core
    gave that sentence.
    """
    from pyspark.sql import functions as F

    rows = _spread(views, per_shape, "feature_rows", feature_rows, "feature_row")
    flagged = F.col("flagged")
    return rows.select(
        "cluster", "day", "feature_index", "feature", "state", "available", "versions",
        "blocking", "unknown_brokers", "stale_brokers",
        F.when(flagged, F.array(F.col("unknown_reason"))).otherwise(F.col("reasons"))
        .alias("reasons"),
        F.when(flagged, F.col("unknown_reason")).otherwise(F.col("reason")).alias("reason"),
        "brokers", "live_brokers", "known_brokers", "usable_on")
