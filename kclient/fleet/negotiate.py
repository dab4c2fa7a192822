"""KIP-35 negotiation and feature evaluation as Spark DataFrame operations.

Each function mirrors a piece of :mod:`kclient.negotiation` row for row, with
the same texts, so the tables equal what the core computes cluster by cluster:

* :func:`latest_brokers` -- :func:`kclient.negotiation.brokers_by_cluster`:
  the latest record of each broker (greatest ``observed_at``, later input on a
  tie), per cluster or, with history, per cluster and UTC day; a broker whose
  latest record is an error keeps its latest answer of the same view (*stale*),
  one with no answer in the view is *unknown*;
* :func:`cluster_api_versions` -- :meth:`ClusterView.api_ranges` of a strict
  view (the core's default): an API counts only when every broker whose answer
  counts (answered or stale) has it; max of the mins, min of the maxes;
  blocking brokers and the reason when those brokers rule it out, *unknown*
  when they allow it but some broker never answered;
* :func:`feature_availability` -- :func:`kclient.negotiation.evaluate_features`
  on the same strict view: available, unavailable or unknown.

There are no Python UDFs: per-row logic is Spark SQL expressions, including
higher-order functions over the few checks of one feature.
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
    ``known_ids`` (their sorted ids), ``known`` (``broker_id, sig_id`` of
    each, sorted by id) and ``sigset`` (their distinct signatures, sorted),
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
        F.array_sort(F.collect_list(F.when(_known(), F.col("broker_id")))).alias("known_ids"),
        F.array_sort(F.collect_list(F.when(_known(), F.struct("broker_id", "sig_id")))).alias(
            "known"),
        F.array_sort(F.collect_list(F.when(state == _STALE, F.col("broker_id")))).alias(
            "stale_brokers"),
        F.array_sort(F.collect_list(F.when(state == _UNKNOWN, F.struct(
            F.col("broker_id").alias("broker_id"), entry.alias("entry"))))).alias("_silent"))
    silent = F.size("_silent")
    noun = F.when(silent == 1, F.lit(UNKNOWN_NOUNS[0])).otherwise(F.lit(UNKNOWN_NOUNS[1]))
    reason = F.format_string(UNKNOWN_SENTENCE, silent, noun, F.array_join(
        F.transform("_silent", lambda e: e["entry"]), UNKNOWN_SEPARATOR))
    sigset = F.array_sort(F.array_distinct(F.transform("known", lambda k: k["sig_id"])))
    return (views.withColumn("unknown_brokers", F.transform("_silent", lambda e: e["broker_id"]))
            .withColumn("unknown_reason", F.when(silent > 0, reason)).drop("_silent")
            .withColumn("sigset", sigset))


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


def _requirement_checks(brokers: DataFrame, requirements: DataFrame, offers: DataFrame
                        ) -> DataFrame:
    """Every requirement against every group of like brokers of a view: ``ok`` and ``ids``.

    Brokers whose ranges count and that share a signature and finalized feature
    levels pass or fail a requirement alike, so each such group (``ids``, sorted)
    is checked once; the per-broker words are written when the checks are
    gathered.
    """
    from pyspark.sql import functions as F

    levels = F.array_sort(F.map_entries("finalized_features"))
    groups = (brokers.where(_known())
              .groupBy("view", "sig_id", levels.alias("levels"))
              .agg(F.array_sort(F.collect_list("broker_id")).alias("ids")))
    # The group's range of the requirement's API, from the signature's offers
    # (a broadcast join on two small keys).
    pairs = (groups.crossJoin(F.broadcast(requirements.select(
        "feature_index", "ordinal", "kind", "api_key", "want_min", "want_max",
        "level_feature", "level_min", "level_max")))
        .join(F.broadcast(offers), ["sig_id", "api_key"], "left"))
    is_level = F.col("kind") == "level"
    level = F.when(is_level, F.try_element_at(F.try_element_at(
        F.map_from_entries("levels"), F.col("level_feature")), F.lit(2)))
    api_ok = (F.col("want_min").isNotNull() & F.col("bmin").isNotNull()
              & (F.col("bmin") <= F.col("want_max")) & (F.col("bmax") >= F.col("want_min")))
    level_ok = (F.col("level").isNotNull() & (F.col("level") >= F.col("level_min"))
                & (F.col("level_max").isNull() | (F.col("level") <= F.col("level_max"))))
    return (pairs.withColumn("level", level)
            .select("view", "ids", "feature_index", "ordinal", "kind", "bmin", "bmax",
                    "level", F.when(is_level, level_ok).otherwise(api_ok).alias("ok")))


def _check_parts(checks: DataFrame) -> Column:
    """Per broker of a group: ``broker_id, ok, text, bmin``, the words as the core writes them."""
    from pyspark.sql import functions as F

    def part(broker_id: Column) -> Column:
        bid = _name(broker_id)
        level_text = F.when(F.col("level").isNull(), F.concat(bid, F.lit(NOT_FINALIZED))
                            ).otherwise(F.concat(bid, F.lit(AT_LEVEL), _s(F.col("level"))))
        text = F.when(F.col("kind") == "level", level_text).otherwise(
            _offer(broker_id, F.col("bmin"), F.col("bmax")))
        return F.struct(broker_id.alias("broker_id"), F.col("ok").alias("ok"),
                        text.alias("text"), F.col("bmin").alias("bmin"))

    return F.transform("ids", part)


_CHECK_COLUMNS = ("feature_index", "ordinal", "grp", "kind", "describe", "api_name",
                  "want_min", "want_max", "static_reason", "removal_note")

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


def feature_availability(brokers: DataFrame, views: DataFrame, requirements: DataFrame,
                         features: DataFrame, offers: DataFrame) -> DataFrame:
    """Every feature in every view, as :func:`kclient.negotiation.evaluate_features`.

    The brokers whose ranges count decide whether the feature holds; when it
    holds but the view has unknown brokers (or no broker's ranges count), the
    state is unknown and the reason the core's sentence naming those brokers.
    ``unknown_brokers`` is set for unknown features only, ``blocking`` for
    unavailable ones, ``stale_brokers`` always (as ``FeatureResult``).
    """
    from pyspark.sql import functions as F

    checks = _requirement_checks(brokers, requirements, offers)
    size = F.size("ids")
    grouped = checks.groupBy("view", "feature_index", "ordinal").agg(
        F.sum(size).alias("n"),
        F.sum(F.when(F.col("bmin").isNotNull(), size).otherwise(0)).alias("n_has"),
        F.max("bmin").alias("lo"), F.min("bmax").alias("hi"),
        F.min(F.col("ok").cast("int")).alias("all_ok"),
        F.array_sort(F.flatten(F.collect_list(_check_parts(checks)))).alias(
            "parts")).join(F.broadcast(requirements.select(*_CHECK_COLUMNS)),
                           ["feature_index", "ordinal"])
    is_static = (F.col("kind") == "api") & F.col("want_min").isNull()
    top = F.least("want_max", "hi")
    api_ok = ((F.col("n_has") == F.col("n")) & (F.greatest("want_min", "lo") <= top))
    ok = (F.when(F.col("kind") == "level", F.col("all_ok") == 1)
          .when(is_static, F.lit(False)).otherwise(api_ok))
    blamed = F.filter("parts", lambda p: ~p["ok"])
    api_all = F.size(blamed) == 0
    api_text = F.when(api_all, F.concat(
        F.lit(NO_SHARED_VERSION),
        F.array_join(F.transform("parts", lambda p: p["text"]), ", "),
    )).otherwise(F.array_join(F.transform(blamed, lambda p: p["text"]), "; "))
    # As the core's removal_note: a blocking broker above the requirement's maximum
    # gets the release that removed that version named.
    in_the_way = F.when(api_all, F.col("parts")).otherwise(blamed)
    too_new = F.exists(in_the_way, lambda p: p["bmin"] > F.col("want_max"))
    api_text = F.when(too_new & F.col("removal_note").isNotNull(),
                      F.concat(api_text, F.lit("; "), F.col("removal_note"))).otherwise(api_text)
    api_blocking = F.when(api_all, F.transform("parts", lambda p: p["broker_id"])).otherwise(
        F.transform(blamed, lambda p: p["broker_id"]))
    text = F.when(F.col("kind") == "level",
                  F.array_join(F.transform(blamed, lambda p: p["text"]), "; ")).otherwise(api_text)
    empty = F.array().cast("array<bigint>")
    verdicts = grouped.select(
        "view", "feature_index",
        F.struct(
            F.col("ordinal"), F.col("grp"), ok.alias("ok"), F.col("kind"), F.col("api_name"),
            F.when(ok & (F.col("kind") == "api"), top).alias("version"),
            F.when(ok, F.lit(None).cast("string")).when(is_static, F.col("static_reason"))
            .otherwise(F.concat(F.col("describe"), F.lit("; "), text)).alias("reason"),
            F.when(ok | is_static, empty).when(F.col("kind") == "level", F.transform(
                blamed, lambda p: p["broker_id"])).otherwise(api_blocking).alias("blocking"),
            F.transform("parts", lambda p: p["broker_id"]).alias("ids"),
            F.transform(blamed, lambda p: p["broker_id"]).alias("failed"),
        ).alias("check"))
    per_feature = (verdicts.groupBy("view", "feature_index")
                   .agg(F.array_sort(F.collect_list("check")).alias("checks"))
                   .join(F.broadcast(features), "feature_index")
                   .withColumn("chosen", F.expr(_CHOSEN))
                   .withColumn("reasons", F.expr(_REASONS))
                   .withColumn("holds", F.size("reasons") == 0)
                   .withColumn("blocking", F.expr(_BLOCKING))
                   .withColumn("selected", F.expr(_SELECTED))
                   .withColumn("versions", F.expr(_VERSIONS))
                   .withColumn("usable_on", F.expr(_USABLE_ON)))
    answered = (per_feature
                .select("view", "feature_index", "feature", "holds", "versions",
                        "blocking", "reasons", "usable_on"))
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
