"""KIP-35 negotiation and feature evaluation as Spark DataFrame operations.

Each function mirrors a piece of :mod:`kclient.negotiation` row for row, with
the same texts, so the tables equal what the core computes cluster by cluster:

* :func:`latest_brokers` -- :func:`kclient.negotiation.brokers_by_cluster`:
  the latest record of each broker (greatest ``observed_at``, later input on a
  tie), per cluster or, with history, per cluster and UTC day;
* :func:`cluster_api_versions` -- :meth:`ClusterView.api_ranges`: an API counts
  only when every live broker has it; max of the mins, min of the maxes;
  blocking brokers and the reason otherwise;
* :func:`feature_availability` -- :func:`kclient.negotiation.evaluate_features`
  (lenient mode: brokers whose negotiation failed are left out).

There are no Python UDFs: per-row logic is Spark SQL expressions, including
higher-order functions over the few checks of one feature.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from pyspark.sql import Column, DataFrame

__all__ = [
    "NO_BROKER",
    "broker_apis",
    "cluster_api_versions",
    "feature_availability",
    "latest_brokers",
    "range_text",
    "views_of",
]

#: The core's reason when no broker of a cluster answered.
NO_BROKER = "no broker answered ApiVersions"
# Separates cluster and day inside the internal ``view`` key.
_SEP = "\u0001"


def _s(column: Column) -> Column:
    return column.cast("string")


def range_text(low: Column, high: Column) -> Column:
    """``3`` or ``0-11``: :class:`VersionRange` as the core prints it."""
    from pyspark.sql import functions as F

    return F.when(low == high, _s(low)).otherwise(F.concat(_s(low), F.lit("-"), _s(high)))


def _offer(broker_id: Column, low: Column, high: Column) -> Column:
    from pyspark.sql import functions as F

    return F.when(low.isNull(), F.concat(F.lit("broker "), _s(broker_id), F.lit(" lacks it"))
                  ).otherwise(F.concat(F.lit("broker "), _s(broker_id), F.lit(" offers "),
                                       range_text(low, high)))


def latest_brokers(good: DataFrame) -> DataFrame:
    """The record the core keeps for each broker of each view.

    Adds ``view`` (cluster, plus the day with history) and keeps, per view and
    broker id, the record with the greatest time, the later one in the input on
    a tie.
    """
    from pyspark.sql import Window
    from pyspark.sql import functions as F

    order = Window.partitionBy("cluster", "day", "broker_id").orderBy(
        F.col("ts").desc(), F.col("file").desc(), F.col("block").desc(), F.col("seq").desc())
    return (good.withColumn("_rank", F.row_number().over(order))
            .where(F.col("_rank") == 1).drop("_rank")
            .withColumn("view", F.concat_ws(_SEP, F.col("cluster"), _s(F.col("day")))))


def views_of(brokers: DataFrame) -> DataFrame:
    """One row per view: ``view, cluster, day, brokers, live_brokers, failed_brokers``."""
    from pyspark.sql import functions as F

    failed = F.col("error").isNotNull()
    return brokers.groupBy("view", "cluster", "day").agg(
        F.count(F.lit(1)).alias("brokers"),
        F.sum(F.when(failed, 0).otherwise(1)).cast("long").alias("live_brokers"),
        F.array_sort(F.collect_list(F.when(failed, F.col("broker_id")))).alias(
            "failed_brokers"),
    )


def broker_apis(brokers: DataFrame) -> DataFrame:
    """``view, broker_id, api_key, bmin, bmax`` for every live broker's API."""
    from pyspark.sql import functions as F

    return (brokers.where(F.col("error").isNull())
            .select("view", "broker_id", F.explode("api_versions").alias("a"))
            .select("view", "broker_id", F.col("a.api_key").alias("api_key"),
                    F.col("a.min_version").alias("bmin"), F.col("a.max_version").alias("bmax")))


def cluster_api_versions(brokers: DataFrame, views: DataFrame, apis: DataFrame,
                         application: DataFrame) -> DataFrame:
    """The cluster-wide range of every API, as :meth:`ClusterView.api_support`.

    One row per view and API key the application or a live broker knows.
    """
    from pyspark.sql import Window
    from pyspark.sql import functions as F

    app = F.broadcast(application)
    per_key = apis.groupBy("view", "api_key").agg(
        F.count(F.lit(1)).alias("brokers_with_api"),
        F.max("bmin").alias("lo"), F.min("bmax").alias("hi"))
    keys = (views.select("view").crossJoin(app.select("api_key"))
            .unionByName(per_key.select("view", "api_key")).distinct())
    rows = (keys.join(views, "view").join(per_key, ["view", "api_key"], "left")
            .join(app, "api_key", "left")
            .withColumn("brokers_with_api", F.coalesce("brokers_with_api", F.lit(0)))
            .withColumn("api_name", F.coalesce(
                "api_name", F.concat(F.lit("UNKNOWN("), _s(F.col("api_key")), F.lit(")")))))
    whole = (F.col("brokers_with_api") == F.col("live_brokers")) & (F.col("lo") <= F.col("hi"))
    rows = (rows.withColumn("cluster_min", F.when(whole, F.col("lo")))
            .withColumn("cluster_max", F.when(whole, F.col("hi"))))
    low = F.greatest("cluster_min", "app_min")
    high = F.least("cluster_max", "app_max")
    fits = F.col("cluster_min").isNotNull() & F.col("app_min").isNotNull() & (low <= high)
    rows = (rows.withColumn("usable_min", F.when(fits, low))
            .withColumn("usable_max", F.when(fits, high))
            .withColumn("version", F.col("usable_max")))
    explain = ((F.col("live_brokers") > 0) & F.col("app_min").isNotNull()
               & F.col("version").isNull())

    # Blocking brokers of unusable APIs: those without an overlap with the
    # application, else those at the extremes of a disjoint set of ranges.
    failing = rows.where(explain).select("view", "api_key", "app_min", "app_max")
    live = brokers.where(F.col("error").isNull()).select("view", "broker_id")
    each = (failing.join(live, "view")
            .join(apis, ["view", "broker_id", "api_key"], "left"))
    blocks = (F.col("bmin").isNull() | (F.col("bmax") < F.col("app_min"))
              | (F.col("bmin") > F.col("app_max")))
    group = Window.partitionBy("view", "api_key")
    each = (each.withColumn("blocks", blocks)
            .withColumn("any_blocks", F.max(blocks.cast("int")).over(group))
            .withColumn("low_max", F.min("bmax").over(group))
            .withColumn("high_min", F.max("bmin").over(group)))
    chosen = F.when(F.col("any_blocks") == 1, F.col("blocks")).otherwise(
        (F.col("bmax") == F.col("low_max")) | (F.col("bmin") == F.col("high_min")))
    blamed = (each.where(chosen).groupBy("view", "api_key").agg(F.array_sort(F.collect_list(
        F.struct("broker_id", _offer(F.col("broker_id"), F.col("bmin"), F.col("bmax"))
                 .alias("offer")))).alias("parts")))
    rows = rows.join(blamed, ["view", "api_key"], "left")
    explanation = F.concat(F.col("api_name"), F.lit(": application speaks "),
                           range_text(F.col("app_min"), F.col("app_max")), F.lit("; "),
                           F.array_join(F.transform("parts", lambda p: p["offer"]), "; "))
    reason = (F.when(F.col("live_brokers") == 0, F.lit(NO_BROKER))
              .when(F.col("app_min").isNull(),
                    F.concat(F.lit("the application does not speak "), F.col("api_name")))
              .when(explain, explanation))
    blocking = F.when(explain, F.transform("parts", lambda p: p["broker_id"])).otherwise(
        F.array().cast("array<bigint>"))
    return rows.select(
        "cluster", "day", "api_key", "api_name", "app_min", "app_max",
        "cluster_min", "cluster_max", "usable_min", "usable_max", "version",
        F.col("live_brokers").alias("brokers"), "brokers_with_api",
        blocking.alias("blocking"), reason.alias("reason"))


def _requirement_checks(brokers: DataFrame, apis: DataFrame, requirements: DataFrame
                        ) -> DataFrame:
    """Every live broker against every requirement: ``ok`` and the words for it."""
    from pyspark.sql import functions as F

    live = brokers.where(F.col("error").isNull()).select("view", "broker_id",
                                                        "finalized_features")
    pairs = (live.crossJoin(F.broadcast(requirements))
             .join(apis, ["view", "broker_id", "api_key"], "left"))
    is_level = F.col("kind") == "level"
    level = F.when(is_level, F.try_element_at(
        F.try_element_at(F.col("finalized_features"), F.col("level_feature")), F.lit(2)))
    api_ok = (F.col("want_min").isNotNull() & F.col("bmin").isNotNull()
              & (F.col("bmin") <= F.col("want_max")) & (F.col("bmax") >= F.col("want_min")))
    level_ok = (F.col("level").isNotNull() & (F.col("level") >= F.col("level_min"))
                & (F.col("level_max").isNull() | (F.col("level") <= F.col("level_max"))))
    bid = _s(F.col("broker_id"))
    level_text = F.when(F.col("level").isNull(),
                        F.concat(F.lit("broker "), bid, F.lit(" has not finalized it"))
                        ).otherwise(F.concat(F.lit("broker "), bid, F.lit(" has it at level "),
                                             _s(F.col("level"))))
    return (pairs.withColumn("level", level)
            .withColumn("ok", F.when(is_level, level_ok).otherwise(api_ok))
            .withColumn("text", F.when(is_level, level_text).otherwise(
                _offer(F.col("broker_id"), F.col("bmin"), F.col("bmax")))))


def _per_broker(checks: DataFrame) -> DataFrame:
    """``view, feature_index, usable_on``: brokers with which the feature works alone."""
    from pyspark.sql import functions as F

    groups = checks.groupBy("view", "broker_id", "feature_index", "grp").agg(
        F.min(F.col("ok").cast("int")).alias("group_ok"))
    required = F.when(F.col("grp") < 0, F.col("group_ok"))
    alternative = F.when(F.col("grp") >= 0, F.col("group_ok"))
    per_feature = groups.groupBy("view", "broker_id", "feature_index").agg(
        (F.coalesce(F.min(required), F.lit(1)) == 1).alias("req_ok"),
        (F.coalesce(F.max(alternative), F.lit(1)) == 1).alias("alt_ok"))
    return per_feature.groupBy("view", "feature_index").agg(F.array_sort(F.collect_list(
        F.when(F.col("req_ok") & F.col("alt_ok"), F.col("broker_id")))).alias("usable_on"))


_CLUSTER_CHECK_KEYS = ("view", "feature_index", "ordinal", "grp", "kind", "describe",
                       "api_name", "want_min", "want_max", "static_reason")

# The verdict on one feature from its sorted checks, as the core's _evaluate_on.
_CHOSEN = ("CASE WHEN alternatives > 0 THEN array_min(filter(sequence(0, alternatives - 1), "
           "g -> forall(filter(checks, c -> c.grp = g), c -> c.ok))) END")
_ALT_FAILED = "(alternatives > 0 AND chosen IS NULL)"
_REASONS = (
    "concat(transform(filter(checks, c -> c.grp < 0 AND NOT c.ok), c -> c.reason), "
    f"CASE WHEN {_ALT_FAILED} THEN array(concat('no alternative holds: ', array_join("
    "transform(sequence(0, alternatives - 1), g -> concat('(', array_join(transform("
    "filter(checks, c -> c.grp = g AND NOT c.ok), c -> c.reason), '; '), ')')), ' or '))) "
    "ELSE array() END)"
)
_BLOCKING = (
    "array_sort(array_distinct(flatten(transform(filter(checks, c -> NOT c.ok AND "
    f"(c.grp < 0 OR {_ALT_FAILED})), c -> c.blocking))))"
)
_SELECTED = ("filter(checks, c -> available AND c.ok AND c.kind = 'api' AND c.version IS NOT "
             "NULL AND (c.grp < 0 OR c.grp = chosen))")
_VERSIONS = (
    "map_from_entries(transform(filter(selected, e -> NOT exists(selected, o -> "
    "o.api_name = e.api_name AND o.ordinal > e.ordinal)), e -> struct(e.api_name, e.version)))"
)


def feature_availability(brokers: DataFrame, views: DataFrame, apis: DataFrame,
                         requirements: DataFrame, features: DataFrame) -> DataFrame:
    """Every feature in every view, as :func:`kclient.negotiation.evaluate_features`."""
    from pyspark.sql import functions as F

    checks = _requirement_checks(brokers, apis, requirements).persist()
    grouped = checks.groupBy(*_CLUSTER_CHECK_KEYS).agg(
        F.count(F.lit(1)).alias("n"),
        F.count("bmin").alias("n_has"),
        F.max("bmin").alias("lo"), F.min("bmax").alias("hi"),
        F.min(F.col("ok").cast("int")).alias("all_ok"),
        F.array_sort(F.collect_list(F.struct("broker_id", "ok", "text"))).alias("parts"))
    is_static = (F.col("kind") == "api") & F.col("want_min").isNull()
    top = F.least("want_max", "hi")
    api_ok = ((F.col("n_has") == F.col("n")) & (F.greatest("want_min", "lo") <= top))
    ok = (F.when(F.col("kind") == "level", F.col("all_ok") == 1)
          .when(is_static, F.lit(False)).otherwise(api_ok))
    blamed = F.filter("parts", lambda p: ~p["ok"])
    api_all = F.size(blamed) == 0
    api_text = F.when(api_all, F.concat(
        F.lit("the brokers share no version: "),
        F.array_join(F.transform("parts", lambda p: p["text"]), ", "),
    )).otherwise(F.array_join(F.transform(blamed, lambda p: p["text"]), "; "))
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
        ).alias("check"))
    per_feature = (verdicts.groupBy("view", "feature_index")
                   .agg(F.array_sort(F.collect_list("check")).alias("checks"))
                   .join(F.broadcast(features), "feature_index")
                   .withColumn("chosen", F.expr(_CHOSEN))
                   .withColumn("reasons", F.expr(_REASONS))
                   .withColumn("available", F.size("reasons") == 0)
                   .withColumn("blocking", F.expr(_BLOCKING))
                   .withColumn("selected", F.expr(_SELECTED))
                   .withColumn("versions", F.expr(_VERSIONS)))
    answered = (per_feature.join(_per_broker(checks), ["view", "feature_index"], "left")
                .select("view", "feature_index", "feature", "available", "versions",
                        "blocking", "reasons", "usable_on"))
    silent = (views.where(F.col("live_brokers") == 0).select("view")
              .crossJoin(F.broadcast(features)).select(
                  "view", "feature_index", "feature", F.lit(False).alias("available"),
                  F.create_map().cast("map<string,int>").alias("versions"),
                  empty.alias("blocking"), F.array(F.lit(NO_BROKER)).alias("reasons"),
                  empty.alias("usable_on")))
    result = answered.unionByName(silent).join(views, "view")
    return result.select(
        "cluster", "day", "feature_index", "feature", "available",
        "versions", "blocking", "reasons",
        F.when(~F.col("available"), F.array_join("reasons", "; ")).alias("reason"),
        "brokers", "live_brokers", F.coalesce("usable_on", empty).alias("usable_on"))
