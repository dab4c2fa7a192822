"""KIP-35 negotiation and feature evaluation as Spark DataFrame operations.

Each function gives a piece of :mod:`kclient.negotiation` row for row, with
the same texts, so the tables equal what the core computes cluster by cluster:

* :func:`latest_brokers` -- :func:`kclient.negotiation.brokers_by_cluster`:
  the latest record of each broker (greatest ``observed_at``, later input on a
  tie), per cluster or, with history, per cluster and UTC day; a broker whose
  latest record is an error keeps its latest answer of the same view (*stale*),
  one with no answer in the view is *unknown*;
* :func:`cluster_api_versions` -- :meth:`ClusterView.api_ranges` of a strict
  view (the core's default), taken from the core itself once per signature set
  (:mod:`kclient.fleet.signatures`) and spread over the views: their real
  brokers named, *unknown* when the known brokers allow an API but some broker
  never answered;
* :func:`feature_availability` -- :func:`kclient.negotiation.evaluate_features`
  on the same strict view, taken from the core itself once per distinct set of
  answering brokers (:mod:`kclient.fleet.shapes`) and spread over the views:
  available, unavailable or unknown.

There are no Python UDFs: per-row logic is Spark SQL expressions, and the
rules themselves run in the core on the driver, once per distinct input.
Brokers carry a signature id (:mod:`kclient.fleet.reader`), not their ranges.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from kclient.negotiation.verdict import (
    APP_LACKS,
    APP_SPEAKS,
    BROKER_LABEL,
    BROKER_NAME,
    LACKS,
    NO_ATTEMPT,
    NO_BROKER,
    OFFERS,
    UNKNOWN_ENTRY,
    UNKNOWN_NOUNS,
    UNKNOWN_SENTENCE,
    UNKNOWN_SEPARATOR,
    BrokerState,
    Verdict,
)

if TYPE_CHECKING:
    from pyspark.sql import Column, DataFrame

__all__ = [
    "cluster_api_versions",
    "feature_availability",
    "known_api_versions",
    "known_state",
    "latest_brokers",
    "range_text",
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


def range_text(low: Column, high: Column) -> Column:
    """``3`` or ``0-11``: :class:`VersionRange` as the core prints it."""
    from pyspark.sql import functions as F

    return F.when(low == high, _s(low)).otherwise(F.concat(_s(low), F.lit("-"), _s(high)))


def _name(broker_id: Column) -> Column:
    """``broker 2``, as :data:`~kclient.negotiation.verdict.BROKER_NAME` fills it."""
    from pyspark.sql import functions as F

    return F.format_string(BROKER_NAME, broker_id)


def _offer(broker_id: Column, low: Column, high: Column) -> Column:
    from pyspark.sql import functions as F

    return F.when(low.isNull(), F.concat(_name(broker_id), F.lit(LACKS))
                  ).otherwise(F.concat(_name(broker_id), F.lit(OFFERS),
                                       range_text(low, high)))


def known_state(state: str = "state") -> Column:
    """True for brokers whose ranges count: answered now or stale."""
    from pyspark.sql import functions as F

    return F.col(state) != _UNKNOWN


def latest_brokers(good: DataFrame, partitions: int | None = None) -> DataFrame:
    """The broker the core keeps for each broker id of each view.

    Adds ``view`` (cluster, plus the day with history) and keeps, per view and
    broker id, the record with the greatest time (the later one in the input on
    a tie).  When that record is an error and the view holds an earlier answer
    of the broker, the broker is stale: the latest answer's host, port, source,
    ranges, feature levels and software replace the error record's, ``error``
    stays the latest error.  ``state`` is ``answered``, ``stale`` or
    ``unknown``; ``answered_at`` is the time of the answer used (``observed_at``
    stays the time of the latest record).

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
    kept = F.struct(*(F.col(c) for c in _ANSWER_FIELDS), F.col("observed_at").alias("at"))
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
                               "answered_at": F.col("_answer")["at"]}).drop("_answer")


def views_of(brokers: DataFrame) -> DataFrame:
    """One row per view: its brokers counted by state and why nothing can be promised.

    Columns: ``view, cluster, day, brokers, live_brokers`` (answered now),
    ``known_brokers`` (answered or stale: the brokers whose ranges count),
    ``known`` (``broker_id, sig_id`` of each, sorted by id), ``sigset`` (their
    distinct signatures, sorted) and ``shape`` (those brokers with their
    finalized feature levels, as JSON: views of equal shape get equal feature
    verdicts, :mod:`kclient.fleet.shapes`),
    ``stale_brokers`` and ``unknown_brokers`` (sorted ids) and
    ``unknown_reason`` (the core's :func:`~kclient.negotiation.verdict.unknown_text`
    over the unknown brokers, null when there are none).
    """
    from pyspark.sql import functions as F

    state = F.col("state")
    label = F.format_string(BROKER_LABEL, F.col("broker_id"), F.col("host"), F.col("port"))
    entry = F.format_string(UNKNOWN_ENTRY, label, F.coalesce(F.col("error"), F.lit(NO_ATTEMPT)))
    views = brokers.groupBy("view", "cluster", "day").agg(
        F.count(F.lit(1)).alias("brokers"),
        F.sum((state == _ANSWERED).cast("long")).alias("live_brokers"),
        F.sum(known_state().cast("long")).alias("known_brokers"),
        F.array_sort(F.collect_list(F.when(known_state(), F.struct("broker_id", "sig_id")))).alias(
            "known"),
        F.array_sort(F.collect_list(F.when(known_state(), F.struct(
            F.col("broker_id").alias("broker_id"),
            F.array_sort(F.map_entries("finalized_features")).alias("levels"))))).alias(
            "_levels"),
        F.array_sort(F.collect_list(F.when(state == _STALE, F.col("broker_id")))).alias(
            "stale_brokers"),
        F.array_sort(F.collect_list(F.when(state == _UNKNOWN, F.struct(
            F.col("broker_id").alias("broker_id"), entry.alias("entry"))))).alias("_silent"))
    silent = F.size("_silent")
    noun = F.when(silent == 1, F.lit(UNKNOWN_NOUNS[0])).otherwise(F.lit(UNKNOWN_NOUNS[1]))
    reason = F.format_string(UNKNOWN_SENTENCE, silent, noun, F.array_join(
        F.transform("_silent", lambda e: e["entry"]), UNKNOWN_SEPARATOR))
    sigset = F.array_sort(F.array_distinct(F.transform("known", lambda k: k["sig_id"])))
    shape = F.to_json(F.struct(F.col("known").alias("known"), F.col("_levels").alias("levels")))
    return views.withColumns({
        "unknown_brokers": F.transform("_silent", lambda e: e["broker_id"]),
        "unknown_reason": F.when(silent > 0, reason),
        "sigset": sigset, "shape": shape}).drop("_silent", "_levels")


def known_api_versions(knowns: DataFrame, api_table: DataFrame) -> DataFrame:
    """What :func:`cluster_api_versions` says of each list of known brokers, before the views.

    ``knowns`` holds the distinct ``known`` lists of the views (broker id and
    signature of the brokers whose ranges count) and their ``sigset``
    (:func:`kclient.fleet.shapes.known_table`); ``api_table`` the core's
    verdicts per signature set (:func:`kclient.fleet.signatures.api_table`).
    Everything that depends on no more than those brokers is computed here,
    once per list and API rather than once per view and API (a fleet has far
    fewer lists than views): the core's state and ranges, how many of the
    brokers have the API, the brokers in the way and the reason naming them.
    ``fixed_reason`` is the reason whenever it does not depend on brokers that
    never answered (the application lacks the API, or the known brokers rule
    it out), else null; ``blocking`` is empty unless they rule it out.
    """
    from pyspark.sql import functions as F

    rows = knowns.join(F.broadcast(api_table), "sigset")
    core = F.col("core_state")
    # Unavailable with the application speaking the API: the known brokers rule
    # it out, and the brokers with a blocking signature are named.
    explain = (core == Verdict.UNAVAILABLE.value) & F.col("app_min").isNotNull()
    blockers = F.filter("known", lambda k: F.array_contains(F.col("blockers"), k["sig_id"]))

    def offer_of(known: Column) -> Column:
        found = F.try_element_at(F.col("offers"), known["sig_id"])
        return _offer(known["broker_id"], found["bmin"], found["bmax"])

    explanation = F.concat(F.col("api_name"), F.lit(APP_SPEAKS),
                           range_text(F.col("app_min"), F.col("app_max")), F.lit("; "),
                           F.array_join(F.transform(blockers, offer_of), "; "))
    fixed_reason = (F.when(F.col("app_min").isNull(),
                           F.concat(F.lit(APP_LACKS), F.col("api_name")))
                    .when(explain, explanation))
    blocking = F.when(explain, F.transform(blockers, lambda k: k["broker_id"])).otherwise(
        F.array().cast("array<bigint>"))
    # Counted broker by broker only when some signature of the list lacks the API.
    with_api = F.when(F.size("having") == F.size("sigset"), F.size("known")).otherwise(
        F.size(F.filter("known", lambda k: F.array_contains(F.col("having"), k["sig_id"]))))
    return rows.select(
        "known", "api_key", "api_name", "core_state", "app_min", "app_max",
        "cluster_min", "cluster_max", "usable_min", "usable_max", "version",
        with_api.alias("brokers_with_api"), blocking.alias("blocking"),
        fixed_reason.alias("fixed_reason"))


def cluster_api_versions(views: DataFrame, known_apis: DataFrame) -> DataFrame:
    """The cluster-wide range of every API, as :meth:`ClusterView.api_support`.

    One row per view and API key the application or a broker whose ranges
    count knows.  The verdict for the view's known brokers
    (:func:`known_api_versions`) is spread over the view: an available API
    becomes unknown while a broker of the view never answered, whose sentence
    is then the reason.  ``state`` is available, unavailable or unknown; the
    usable range and the version are set only when available.
    """
    from pyspark.sql import functions as F

    rows = views.join(F.broadcast(known_apis), "known")
    silent = F.size("unknown_brokers") > 0
    core = F.col("core_state")
    state = F.when((core == Verdict.AVAILABLE.value) & silent,
                   F.lit(Verdict.UNKNOWN.value)).otherwise(core)
    available = F.col("state") == Verdict.AVAILABLE.value
    reason = F.coalesce(F.col("fixed_reason"),
                        F.when(F.col("known_brokers") == 0,
                               F.coalesce(F.col("unknown_reason"), F.lit(NO_BROKER)))
                        .when(silent, F.col("unknown_reason")))
    return rows.withColumn("state", state).select(
        "cluster", "day", "api_key", "api_name", "state", "app_min", "app_max",
        "cluster_min", "cluster_max",
        F.when(available, F.col("usable_min")).alias("usable_min"),
        F.when(available, F.col("usable_max")).alias("usable_max"),
        F.when(available, F.col("version")).alias("version"),
        F.col("known_brokers").alias("brokers"), "brokers_with_api",
        "blocking", "unknown_brokers", "stale_brokers", reason.alias("reason"))


def feature_availability(views: DataFrame, shape_results: DataFrame,
                         results: DataFrame) -> DataFrame:
    """Every feature in every view, as :func:`kclient.negotiation.evaluate_features`.

    One row per view and feature.  The core's verdict from the view's brokers
    whose ranges count comes from its shape (``shape_results`` and ``results``,
    :func:`kclient.fleet.shapes.verdict_tables`); the view's brokers that never
    answered are then applied as the core applies them: a feature those brokers
    allow is unknown while some broker never answered (so is every feature of a
    view where no broker's ranges count), the reason the core's sentence naming
    them.  ``unknown_brokers`` is set for unknown features only, ``blocking``
    for unavailable ones, ``stale_brokers`` always (as ``FeatureResult``).
    """
    from pyspark.sql import functions as F

    empty = F.array().cast("array<bigint>")
    per_view = views.join(F.broadcast(shape_results), "shape").select(
        "*", F.explode("results").alias("result_id")).drop("results")
    result = per_view.join(F.broadcast(results), "result_id")
    has_unknown = F.col("unknown_reason").isNotNull()
    state = (F.when(F.col("holds") & has_unknown, F.lit(Verdict.UNKNOWN.value))
             .when(F.col("holds"), F.lit(Verdict.AVAILABLE.value))
             .when((F.col("known_brokers") == 0) & has_unknown, F.lit(Verdict.UNKNOWN.value))
             .otherwise(F.lit(Verdict.UNAVAILABLE.value)))
    result = result.withColumn("state", state)
    is_unknown = F.col("state") == Verdict.UNKNOWN.value
    reasons = F.when(is_unknown, F.array(F.col("unknown_reason"))).otherwise(F.col("reasons"))
    available = F.col("state") == Verdict.AVAILABLE.value
    return result.select(
        "cluster", "day", "feature_index", "feature", "state", available.alias("available"),
        F.when(available, F.col("versions")).otherwise(
            F.create_map().cast("map<string,int>")).alias("versions"),
        F.when(F.col("state") == Verdict.UNAVAILABLE.value, F.col("blocking"))
        .otherwise(empty).alias("blocking"),
        F.when(is_unknown, F.col("unknown_brokers")).otherwise(empty).alias("unknown_brokers"),
        "stale_brokers", reasons.alias("reasons"),
        F.when(~available, F.array_join(reasons, "; ")).alias("reason"),
        "brokers", "live_brokers", "known_brokers", "usable_on")
