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
  on the same strict view: available, unavailable or unknown.

There are no Python UDFs: per-row logic is Spark SQL expressions, including
higher-order functions over the few brokers of a view and checks of a feature.
Brokers carry a signature id (:mod:`kclient.fleet.reader`), not their ranges.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from kclient.negotiation.verdict import (
    APP_LACKS,
    APP_SPEAKS,
    AT_LEVEL,
    BROKER_LABEL,
    BROKER_NAME,
    LACKS,
    NO_ALTERNATIVE,
    NO_ATTEMPT,
    NO_BROKER,
    NO_SHARED_VERSION,
    NOT_FINALIZED,
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


def _known(state: str = "state") -> Column:
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
    for name in _ANSWER_FIELDS:
        latest = latest.withColumn(name, F.when(stale, F.col("_answer")[name])
                                   .otherwise(F.col(name)))
    state = (F.when(F.col("error").isNull(), F.lit(_ANSWERED))
             .when(F.col("_answer").isNotNull(), F.lit(_STALE)).otherwise(F.lit(_UNKNOWN)))
    return (latest.withColumn("state", state)
            .withColumn("answered_at", F.col("_answer")["at"]).drop("_answer"))


def views_of(brokers: DataFrame) -> DataFrame:
    """One row per view: its brokers counted by state and why nothing can be promised.

    Columns: ``view, cluster, day, brokers, live_brokers`` (answered now),
    ``known_brokers`` (answered or stale: the brokers whose ranges count),
    ``known`` (``broker_id, sig_id`` of each, sorted by id), ``known_levels``
    (their finalized feature levels by id), ``sigset`` (their distinct
    signatures, sorted) and ``shape`` (all of that as one comparable value:
    views of equal shape get equal verdicts),
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
        F.sum(_known().cast("long")).alias("known_brokers"),
        F.array_sort(F.collect_list(F.when(_known(), F.struct("broker_id", "sig_id")))).alias(
            "known"),
        F.map_from_entries(F.collect_list(F.when(_known(), F.struct(
            "broker_id", "finalized_features")))).alias("known_levels"),
        F.array_sort(F.collect_list(F.when(state == _STALE, F.col("broker_id")))).alias(
            "stale_brokers"),
        F.array_sort(F.collect_list(F.when(state == _UNKNOWN, F.struct(
            F.col("broker_id").alias("broker_id"), entry.alias("entry"))))).alias("_silent"))
    silent = F.size("_silent")
    noun = F.when(silent == 1, F.lit(UNKNOWN_NOUNS[0])).otherwise(F.lit(UNKNOWN_NOUNS[1]))
    reason = F.format_string(UNKNOWN_SENTENCE, silent, noun, F.array_join(
        F.transform("_silent", lambda e: e["entry"]), UNKNOWN_SEPARATOR))
    sigset = F.array_sort(F.array_distinct(F.transform("known", lambda k: k["sig_id"])))
    levels = F.array_sort(F.transform(F.map_entries("known_levels"), lambda e: F.struct(
        e["key"].alias("broker_id"), F.array_sort(F.map_entries(e["value"])).alias("levels"))))
    return (views.withColumn("unknown_brokers", F.transform("_silent", lambda e: e["broker_id"]))
            .withColumn("unknown_reason", F.when(silent > 0, reason)).drop("_silent")
            .withColumn("sigset", sigset)
            .withColumn("shape", F.struct(F.col("known").alias("known"), levels.alias("levels"))))


def cluster_api_versions(views: DataFrame, api_table: DataFrame) -> DataFrame:
    """The cluster-wide range of every API, as :meth:`ClusterView.api_support`.

    One row per view and API key the application or a broker whose ranges
    count knows.  The core's verdict for the view's signature set
    (:func:`kclient.fleet.signatures.api_table`) is spread over the view: an
    available API becomes unknown while a broker of the view never answered;
    the brokers in the way are the view's brokers with a blocking signature.
    ``state`` is available, unavailable or unknown; the usable range and the
    version are set only when available.
    """
    from pyspark.sql import functions as F

    rows = views.join(F.broadcast(api_table), "sigset")
    silent = F.size("unknown_brokers") > 0
    core = F.col("core_state")
    state = F.when((core == Verdict.AVAILABLE.value) & silent,
                   F.lit(Verdict.UNKNOWN.value)).otherwise(core)
    available = F.col("state") == Verdict.AVAILABLE.value
    # Unavailable with the application speaking the API: the known brokers rule
    # it out, and the view's brokers with a blocking signature are named.
    explain = (core == Verdict.UNAVAILABLE.value) & F.col("app_min").isNotNull()
    blockers = F.filter("known", lambda k: F.array_contains(F.col("blockers"), k["sig_id"]))

    def offer_of(known: Column) -> Column:
        found = F.try_element_at(F.col("offers"), known["sig_id"])
        return _offer(known["broker_id"], found["bmin"], found["bmax"])

    explanation = F.concat(F.col("api_name"), F.lit(APP_SPEAKS),
                           range_text(F.col("app_min"), F.col("app_max")), F.lit("; "),
                           F.array_join(F.transform(blockers, offer_of), "; "))
    reason = (F.when(F.col("app_min").isNull(),
                     F.concat(F.lit(APP_LACKS), F.col("api_name")))
              .when(F.col("known_brokers") == 0,
                    F.coalesce(F.col("unknown_reason"), F.lit(NO_BROKER)))
              .when(explain, explanation)
              .when(silent, F.col("unknown_reason")))
    blocking = F.when(explain, F.transform(blockers, lambda k: k["broker_id"])).otherwise(
        F.array().cast("array<bigint>"))
    # Counted broker by broker only when some signature of the view lacks the API.
    with_api = F.when(F.size("having") == F.size("sigset"), F.col("known_brokers")).otherwise(
        F.size(F.filter("known", lambda k: F.array_contains(F.col("having"), k["sig_id"]))))
    return rows.withColumn("state", state).select(
        "cluster", "day", "api_key", "api_name", "state", "app_min", "app_max",
        "cluster_min", "cluster_max",
        F.when(available, F.col("usable_min")).alias("usable_min"),
        F.when(available, F.col("usable_max")).alias("usable_max"),
        F.when(available, F.col("version")).alias("version"),
        F.col("known_brokers").alias("brokers"), with_api.alias("brokers_with_api"),
        blocking.alias("blocking"), "unknown_brokers", "stale_brokers", reason.alias("reason"))


def _brokers_on(req: Column) -> Column:
    """``req`` with ``each``: every known broker of the view against it (``ok``, range, level).

    Computed once per requirement, so that the check's many uses of it read a
    field instead of evaluating it again.  A signature's range of the API is at
    index ``sig_id`` of ``req.offers`` (one lookup, no search).
    """
    from pyspark.sql import functions as F

    is_level = req["kind"] == "level"

    def seen(known: Column) -> Column:
        found = F.try_element_at(req["offers"], known["sig_id"] + 1)
        level = F.when(is_level, F.try_element_at(F.try_element_at(F.try_element_at(
            F.col("known_levels"), known["broker_id"]), req["level_feature"]), F.lit(2)))
        api_ok = (req["want_min"].isNotNull() & found.isNotNull()
                  & (found["bmin"] <= req["want_max"]) & (found["bmax"] >= req["want_min"]))
        level_ok = (level.isNotNull() & (level >= req["level_min"])
                    & (req["level_max"].isNull() | (level <= req["level_max"])))
        return F.struct(known["broker_id"].alias("broker_id"),
                        F.when(is_level, level_ok).otherwise(api_ok).alias("ok"),
                        found["bmin"].alias("bmin"), found["bmax"].alias("bmax"),
                        level.alias("level"))

    return F.struct(req.alias("req"), F.transform("known", seen).alias("each"))


def _judge(pre: Column) -> Column:
    """``pre`` (:func:`_brokers_on`) with the check's outcome: ``ok``, ``top``, ``each_ok``.

    A separate step so that the outcome is a stored field for :func:`_check`:
    Spark evaluates higher-order functions without common subexpressions, so
    an expression written once and used five times runs five times per row.
    ``each_ok`` is true when every broker passes on its own (for an API check
    that fails, no version is common to all of them).
    """
    from pyspark.sql import functions as F

    req, each = pre["req"], pre["each"]
    is_level = req["kind"] == "level"
    is_static = (req["kind"] == "api") & req["want_min"].isNull()
    lo = F.array_max(F.transform(each, lambda e: e["bmin"]))
    hi = F.array_min(F.transform(each, lambda e: e["bmax"]))
    top = F.least(req["want_max"], hi)
    api_ok = (F.forall(each, lambda e: e["bmin"].isNotNull())
              & (F.greatest(req["want_min"], lo) <= top))
    each_ok = F.forall(each, lambda e: e["ok"])
    ok = F.when(is_level, each_ok).when(is_static, F.lit(False)).otherwise(api_ok)
    return F.struct(req.alias("req"), each.alias("each"), ok.alias("ok"), top.alias("top"),
                    each_ok.alias("each_ok"))


def _check(judged: Column) -> Column:
    """One requirement of a feature against the brokers of the view in the same row.

    ``judged`` is a requirement of the feature's ``reqs`` (:func:`kclient.fleet.
    signatures.feature_table`) with every known broker of the view checked
    against it (:func:`_brokers_on`) and the outcome (:func:`_judge`).
    The struct has the fields the feature-level expressions read, as the core's
    ``_evaluate_on`` checks: ``ok``, the version, the reason (the core's words,
    naming each broker in the way), the blocking brokers, every broker's id
    and those the check fails on.  The words are only written for a failing check.
    """
    from pyspark.sql import functions as F

    req, each, ok = judged["req"], judged["each"], judged["ok"]
    is_level = req["kind"] == "level"
    is_static = (req["kind"] == "api") & req["want_min"].isNull()
    # Every broker passing on its own an API check that fails: no version is
    # common to all of them, and the core names every broker's offer.
    api_all = judged["each_ok"]
    blamed = F.filter(each, lambda e: ~e["ok"])
    in_the_way = F.when(api_all, each).otherwise(blamed)

    def level_text(e: Column) -> Column:
        bid = _name(e["broker_id"])
        return F.when(e["level"].isNull(), F.concat(bid, F.lit(NOT_FINALIZED))
                      ).otherwise(F.concat(bid, F.lit(AT_LEVEL), _s(e["level"])))

    def offer_text(e: Column) -> Column:
        return _offer(e["broker_id"], e["bmin"], e["bmax"])

    offers = F.transform(in_the_way, offer_text)
    api_text = F.when(api_all, F.concat(F.lit(NO_SHARED_VERSION), F.array_join(offers, ", "))
                      ).otherwise(F.array_join(offers, "; "))
    # As the core's removal_note: a blocking broker above the requirement's maximum
    # gets the release that removed that version named.
    too_new = F.exists(in_the_way, lambda e: e["bmin"] > req["want_max"])
    api_text = F.when(too_new & req["removal_note"].isNotNull(),
                      F.concat(api_text, F.lit("; "), req["removal_note"])).otherwise(api_text)
    text = F.when(is_level, F.array_join(F.transform(blamed, level_text), "; ")
                  ).otherwise(api_text)
    ids = F.transform(each, lambda e: e["broker_id"])
    failed = F.transform(blamed, lambda e: e["broker_id"])
    empty = F.array().cast("array<bigint>")
    return F.struct(
        req["ordinal"].alias("ordinal"), req["grp"].alias("grp"), ok.alias("ok"),
        req["kind"].alias("kind"), req["api_name"].alias("api_name"),
        F.when(ok & (req["kind"] == "api"), judged["top"]).alias("version"),
        F.when(ok, F.lit(None).cast("string")).when(is_static, req["static_reason"])
        .otherwise(F.concat(req["describe"], F.lit("; "), text)).alias("reason"),
        F.when(ok | is_static, empty).when(is_level, failed)
        .otherwise(F.when(api_all, ids).otherwise(failed)).alias("blocking"),
        ids.alias("ids"),
        F.when(ok, empty).otherwise(failed).alias("failed"),
    )


# The verdict on one feature from its sorted checks, as the core's _evaluate_on.
_CHOSEN = ("CASE WHEN alternatives > 0 THEN array_min(filter(sequence(0, alternatives - 1), "
           "g -> forall(filter(checks, c -> c.grp = g), c -> c.ok))) END")
_ALT_FAILED = "(alternatives > 0 AND chosen IS NULL)"
_REASONS = (
    "concat(transform(filter(checks, c -> c.grp < 0 AND NOT c.ok), c -> c.reason), "
    f"CASE WHEN {_ALT_FAILED} THEN array(concat('{NO_ALTERNATIVE}', array_join("
    "transform(sequence(0, alternatives - 1), g -> concat('(', array_join(transform("
    "filter(checks, c -> c.grp = g AND NOT c.ok), c -> c.reason), '; '), ')')), ' or '))) "
    "ELSE array() END)"
)
_BLOCKING = (
    "array_sort(array_distinct(flatten(transform(filter(checks, c -> NOT c.ok AND "
    f"(c.grp < 0 OR {_ALT_FAILED})), c -> c.blocking))))"
)
_SELECTED = ("filter(checks, c -> holds AND c.ok AND c.kind = 'api' AND c.version IS NOT "
             "NULL AND (c.grp < 0 OR c.grp = chosen))")
# The brokers with which the feature works alone: every required check and
# every check of one alternative pass on that broker (``ids`` lists the known
# brokers of the view, ``failed`` those a check fails on).
_USABLE_ON = (
    "filter(checks[0].ids, b -> NOT exists(checks, c -> c.grp < 0 AND array_contains("
    "c.failed, b)) AND (alternatives = 0 OR exists(sequence(0, alternatives - 1), g -> "
    "forall(filter(checks, c -> c.grp = g), c -> NOT array_contains(c.failed, b)))))"
)
_VERSIONS = (
    "map_from_entries(transform(filter(selected, e -> NOT exists(selected, o -> "
    "o.api_name = e.api_name AND o.ordinal > e.ordinal)), e -> struct(e.api_name, e.version)))"
)


def feature_availability(views: DataFrame, features: DataFrame) -> DataFrame:
    """Every feature in every view, as :func:`kclient.negotiation.evaluate_features`.

    One row per view and feature, with no aggregation: the feature's
    requirements (``features``, :func:`kclient.fleet.signatures.feature_table`)
    are checked against the view's brokers in the same row.  The brokers whose
    ranges count decide whether the feature holds; when it holds but the view
    has unknown brokers (or no broker's ranges count), the state is unknown and
    the reason the core's sentence naming those brokers.  ``unknown_brokers``
    is set for unknown features only, ``blocking`` for unavailable ones,
    ``stale_brokers`` always (as ``FeatureResult``).
    """
    from pyspark.sql import functions as F

    empty = F.array().cast("array<bigint>")
    # Views whose brokers that count are alike (same ids, signatures and levels)
    # get the same verdicts: each such set of brokers is evaluated once.
    answering = views.where(F.col("known_brokers") > 0)
    shapes = answering.select("shape", "known", "known_levels").dropDuplicates(["shape"])
    per_feature = (shapes.crossJoin(F.broadcast(features))
                   .withColumn("_pre", F.transform("reqs", _brokers_on))
                   .withColumn("_judged", F.transform("_pre", _judge))
                   .withColumn("checks", F.transform("_judged", _check))
                   .withColumn("chosen", F.expr(_CHOSEN))
                   .withColumn("reasons", F.expr(_REASONS))
                   .withColumn("holds", F.size("reasons") == 0)
                   .withColumn("blocking", F.expr(_BLOCKING))
                   .withColumn("selected", F.expr(_SELECTED))
                   .withColumn("versions", F.expr(_VERSIONS))
                   .withColumn("usable_on", F.expr(_USABLE_ON)))
    answered = answering.select("view", "shape").join(per_feature.select(
        "shape", "feature_index", "feature", "holds", "versions", "blocking", "reasons",
        "usable_on"), "shape").drop("shape")
    # Views where no broker's ranges count: nothing holds, nobody blocks.
    silent = (views.where(F.col("known_brokers") == 0).select("view")
              .crossJoin(F.broadcast(features)).select(
                  "view", "feature_index", "feature", F.lit(None).cast("boolean").alias("holds"),
                  F.create_map().cast("map<string,int>").alias("versions"),
                  empty.alias("blocking"), F.array().cast("array<string>").alias("reasons"),
                  empty.alias("usable_on")))
    result = answered.unionByName(silent).join(views, "view")
    has_unknown = F.col("unknown_reason").isNotNull()
    state = (F.when(F.col("holds") & has_unknown, F.lit(Verdict.UNKNOWN.value))
             .when(F.col("holds"), F.lit(Verdict.AVAILABLE.value))
             .when(F.col("holds").isNull() & has_unknown, F.lit(Verdict.UNKNOWN.value))
             .otherwise(F.lit(Verdict.UNAVAILABLE.value)))
    result = result.withColumn("state", state)
    is_unknown = F.col("state") == Verdict.UNKNOWN.value
    reasons = (F.when(is_unknown, F.array(F.col("unknown_reason")))
               .when(F.col("holds").isNull(), F.array(F.lit(NO_BROKER)))
               .otherwise(F.col("reasons")))
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
        "brokers", "live_brokers", "known_brokers",
        F.coalesce("usable_on", empty).alias("usable_on"))
