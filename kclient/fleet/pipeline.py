"""The ``fleet report`` pipeline: snapshot records in, Parquet tables and a report out.

Tables written under the output directory (Parquet, one directory each):

``cluster_api_versions``
    per cluster (and day with history) and API: verdict state (available,
    unavailable, unknown), application range, cluster range, usable range and
    version to use (when available), blocking brokers, brokers that never
    answered, stale brokers, reason.
``feature_availability``
    per cluster and feature: state, available (state is available), versions
    to use, blocking brokers, brokers that never answered (unknown features),
    stale brokers, reasons (the core's texts), brokers with which the feature
    works alone.
``broker_releases``
    per broker: its state (answered, stale, unknown), the source and error of
    its latest record, when the answer used was received, the guessed release.
``bad_records``
    input lines that were skipped: file, line, reason.

Only small aggregates reach the driver, for :mod:`kclient.fleet.report`: a
row per view shape (how many clusters have it, the first of them by name),
from which the driver sums the counts per feature, the first blocking
clusters of each feature and the largest groups of clusters in the same
states; and a few hundred rows of the written tables (release counts, broker
totals, the first bad lines).
"""

from __future__ import annotations

import contextlib
import math
import time
from collections.abc import Callable, Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypeVar

from kclient.errors import FleetError
from kclient.fleet import negotiate, releases, shapes
from kclient.fleet.reader import find_inputs, read_records
from kclient.fleet.report import (
    HEATMAP_ROWS,
    BadLine,
    BlockedCluster,
    ClusterPattern,
    FeatureCount,
    ReleaseCount,
    ReportData,
    prepare_out,
    window_text,
    write_report,
)
from kclient.fleet.session import spark_errors, spark_failure
from kclient.negotiation.featurefile import load_features
from kclient.negotiation.features import FeatureSet
from kclient.negotiation.model import ApplicationVersions
from kclient.negotiation.releases import ReleaseGuess
from kclient.negotiation.verdict import BrokerState, Verdict

if TYPE_CHECKING:
    from pyspark.sql import Column, DataFrame, Row, SparkSession

__all__ = ["TABLES", "FleetTables", "compute_tables", "run_report"]

_T = TypeVar("_T")

TABLES = ("cluster_api_versions", "feature_availability", "broker_releases", "bad_records")
#: How many blocking clusters per feature, and bad lines, the report lists.
REPORT_LIMIT = 25


def _unpersist_all(release: Sequence[Callable[..., object]]) -> None:
    for unpersist in release:
        with contextlib.suppress(Exception):  # a dead JVM has no cache to free
            unpersist()


class FleetTables:
    """The DataFrames of one pipeline run (lazy until written)."""

    def __init__(self, brokers: DataFrame, cluster_api_versions: DataFrame,
                 feature_availability: DataFrame, broker_releases: DataFrame,
                 bad_records: DataFrame, release: Sequence[Callable[..., object]] = (), *,
                 views: DataFrame | None = None,
                 shape_features: Mapping[str, Sequence[tuple[Any, ...]]] | None = None
                 ) -> None:
        self.brokers = brokers
        #: One row per view with its shape (:func:`kclient.fleet.negotiate.views_of`),
        #: and each shape's feature rows (:func:`kclient.fleet.shapes.verdict_tables`).
        self.views = views
        self.shape_features = shape_features
        self._release = tuple(release)
        self.cluster_api_versions = cluster_api_versions
        self.feature_availability = feature_availability
        self.broker_releases = broker_releases
        self.bad_records = bad_records

    def release(self) -> None:
        """Unpersist what this run cached of its own (the caller's cache is never touched).

        The tables stay usable: Spark computes them again from the input if asked.
        """
        _unpersist_all(self._release)

    def table(self, name: str) -> DataFrame:
        """One output table by its directory name (one of :data:`TABLES`)."""
        if name not in TABLES:
            raise KeyError(name)
        frame: DataFrame = getattr(self, name)
        return frame


def compute_tables(spark: SparkSession, snapshots: str, *,
                   features: FeatureSet | None = None, history: bool = False,
                   application: ApplicationVersions | None = None) -> FleetTables:
    """Build (lazily) every output table for the snapshot records at ``snapshots``."""
    from pyspark import StorageLevel

    app = application or ApplicationVersions.from_catalog()
    if app.avoid:
        raise FleetError("the fleet pipeline evaluates the application's version ranges "
                         "without avoided versions; drop avoid_versions")
    feature_set = features if features is not None else load_features()
    inputs = find_inputs(snapshots)
    records = read_records(spark, inputs, history=history)
    # The one shuffle of broker rows, by view (its partition count is this
    # job's own; the session's setting is left alone).  Brokers and views are
    # cached, not checkpointed: a cache keeps the rows' partitioning by view,
    # so grouping them into views moves nothing, and the one job that
    # collects the shapes fills both caches, which every table then reads.
    brokers = negotiate.latest_brokers(records.good, shuffle_partitions(
        inputs.work_bytes(), spark.sparkContext.defaultParallelism)).persist(
        StorageLevel.MEMORY_AND_DISK)
    sigs = records.signatures
    views = negotiate.views_of(brokers).persist(StorageLevel.MEMORY_AND_DISK)
    release = (records.release, views.unpersist, brokers.unpersist)
    try:
        found = shapes.collect_shapes(views)
        # That job filled the checked lines' cache, which the bad records read:
        # the parsed lines (the API ranges of every record) are done with.
        records.drop_parsed()
        # The core judges each shape once, on the driver (small tables out).
        per_shape, api_rows, feature_rows, shape_features = shapes.verdict_tables(
            spark, found, feature_set, sigs, app)
    except BaseException:
        _unpersist_all(release)  # the caller's session keeps none of this run's caches
        raise
    cav = negotiate.cluster_api_versions(views, per_shape, api_rows)
    fav = negotiate.feature_availability(views, per_shape, feature_rows)
    rel = releases.broker_releases(brokers, sigs)
    bad = records.bad
    return FleetTables(brokers, cav, fav, rel, bad, release=release, views=views,
                       shape_features=shape_features)


#: Input bytes per partition of the pipeline's one shuffle of broker rows.
_BYTES_PER_PARTITION = 32 << 20
#: The most partitions that shuffle gets.
_MAX_PARTITIONS = 400


def shuffle_partitions(size: int | None, cores: int) -> int | None:
    """Partitions for the shuffle of broker rows by view, from the input's size.

    A fleet of 100,000 brokers is a few hundred MB of JSON: a dozen
    partitions of 32 MB, not Spark's default of 200 tiny ones.  The count is
    set on that one shuffle (``repartition``), never in the session's
    settings; ``None`` (unknown size) leaves it to Spark.
    """
    if size is None:
        return None
    return max(cores, min(_MAX_PARTITIONS, math.ceil(size / _BYTES_PER_PARTITION)))


def _write(frame: DataFrame, path: Path) -> None:
    frame.write.mode("overwrite").parquet(str(path))


AVAILABLE = Verdict.AVAILABLE.value
UNAVAILABLE = Verdict.UNAVAILABLE.value
UNKNOWN = Verdict.UNKNOWN.value


def _state_counts() -> list[Column]:
    """Aggregates counting feature rows per verdict state, named after the states."""
    from pyspark.sql import functions as F

    return [F.sum((F.col("state") == state).cast("int")).alias(state)
            for state in (AVAILABLE, UNAVAILABLE, UNKNOWN)]


#: Summary queries in flight at once.  Each is a few small jobs (a handful of
#: tasks over the written tables) whose time goes mostly to planning and
#: scheduling, so they overlap well even on two cores.
_SUMMARY_THREADS = 4

_STATE_COLUMN = {AVAILABLE: 0, UNAVAILABLE: 1, UNKNOWN: 2}


def _view_summaries(views: DataFrame, shape_features: Mapping[str, Sequence[tuple[Any, ...]]],
                    features: FeatureSet, history: bool
                    ) -> tuple[list[FeatureCount], list[BlockedCluster], list[ClusterPattern],
                               int, int]:
    """Feature counts, the first blocked clusters and the largest patterns, from one small job.

    A view's feature rows are its shape's (only a flagged row's sentence about
    silent brokers is the view's own), so Spark counts the views (with
    history, each cluster's last day) per shape, with the first
    :data:`REPORT_LIMIT` clusters of each by name and their sentences: one
    row per shape reaches the driver, where the sums are made.  Returns the
    feature counts, the blocked clusters, the :data:`HEATMAP_ROWS` largest
    groups of clusters with the same state per feature, the number of groups
    and of clusters in them.
    """
    from pyspark.sql import functions as F

    now = _last_day(views) if history else views
    first = F.slice(F.array_sort(F.collect_list(F.struct("cluster", "unknown_reason"))),
                    1, REPORT_LIMIT)
    groups = now.groupBy("shape").agg(F.count(F.lit(1)).alias("n"), first.alias("first"))
    names = features.names()
    counts = {name: [0, 0, 0] for name in names}
    blocked: dict[str, list[BlockedCluster]] = {}
    patterns: dict[tuple[str, ...], tuple[int, str]] = {}
    for group in groups.collect():
        rows = shape_features[group["shape"]]
        if not rows:
            continue
        n = int(group["n"])
        views_first = [(str(v["cluster"]), v["unknown_reason"]) for v in group["first"]]
        states: dict[int, str] = {}
        for row in rows:
            index, name, state, flagged = int(row[0]), str(row[1]), str(row[2]), bool(row[14])
            states[index] = state
            if name in counts:
                counts[name][_STATE_COLUMN[state]] += n
            if state == UNAVAILABLE:
                blocking = tuple(int(b) for b in row[5])
                unknown = tuple(int(b) for b in row[6])
                blocked.setdefault(name, []).extend(
                    BlockedCluster(name, cluster, blocking,
                                   str((silent if flagged else row[9]) or ""), state, unknown)
                    for cluster, silent in views_first)
        key = tuple(states.get(i, "") for i in range(len(names)))
        size, example = patterns.get(key, (0, views_first[0][0]))
        patterns[key] = (size + n, min(example, views_first[0][0]))
    listed = [b for found in blocked.values()
              for b in sorted(found, key=lambda b: b.cluster)[:REPORT_LIMIT]]
    listed.sort(key=lambda b: (b.feature, b.state, b.cluster))
    top = sorted((ClusterPattern(key, size, example)
                  for key, (size, example) in patterns.items()),
                 key=lambda p: (-p.clusters, p.example))[:HEATMAP_ROWS]
    return ([FeatureCount(name, *counts[name]) for name in names], listed, top,
            len(patterns), sum(size for size, _ in patterns.values()))


def _history_rows(fav: DataFrame) -> list[tuple[str, str, int, int, int]]:
    return sorted(
        (str(r["day"]), r["feature"], int(r[AVAILABLE]), int(r[UNAVAILABLE]), int(r[UNKNOWN]))
        for r in fav.groupBy("day", "feature").agg(*_state_counts()).collect())


def _release_counts(rel_now: DataFrame) -> list[ReleaseCount]:
    """Release guesses of the brokers whose ranges count, in release order."""
    from pyspark.sql import functions as F

    guess = ("guess_kind", "guess_low", "guess_high", "guess_mode")
    counts = [
        ReleaseCount(ReleaseGuess(r["guess_kind"], r["guess_low"], r["guess_high"],
                                  r["guess_mode"]), int(r["n"]))
        for r in rel_now.where(negotiate.known_state()).groupBy(*guess)
        .agg(F.count(F.lit(1)).alias("n")).collect()]
    counts.sort(key=lambda r: r.guess.order)
    return counts


def _broker_totals(rel_now: DataFrame) -> tuple[Row, list[str], list[str]]:
    """Broker and cluster totals, the first clusters whose brokers differ in release, and
    the first clusters with a broker that never answered.

    Per cluster first (brokers by state, distinct guesses of the known ones),
    then every total in one pass over those rows.
    """
    from pyspark.sql import functions as F

    known = negotiate.known_state()
    per_cluster = rel_now.groupBy("cluster").agg(
        F.count(F.lit(1)).alias("brokers"),
        F.sum((F.col("state") == BrokerState.STALE.value).cast("int")).alias("stale"),
        F.sum((~known).cast("int")).alias("unknown"),
        F.sum(F.col("fallback_release").isNotNull().cast("int")).alias("fallback"),
        F.count_distinct(F.when(known, F.col("release_guess"))).alias("guesses"))
    upgrading = F.col("guesses") > 1
    silent = F.col("unknown") > 0
    totals = per_cluster.agg(
        F.sum("brokers").alias("brokers"), F.sum("stale").alias("stale"),
        F.sum("unknown").alias("unknown"), F.sum("fallback").alias("fallback"),
        F.count(F.lit(1)).alias("clusters"),
        F.sum(upgrading.cast("int")).alias("upgrading"),
        F.sum(silent.cast("int")).alias("silent")).collect()[0]
    names = [r["cluster"] for r in per_cluster.where(upgrading).orderBy("cluster")
             .limit(REPORT_LIMIT).collect()] if totals["upgrading"] else []
    silent_names = [r["cluster"] for r in per_cluster.where(silent).orderBy("cluster")
                    .limit(REPORT_LIMIT).collect()] if totals["silent"] else []
    return totals, names, silent_names


def _window(rel: DataFrame) -> tuple[str, str]:
    """The earliest and latest time of the records the views use (``observed_at`` of each
    broker's latest record, ``answered_at`` of a stale broker's answer)."""
    from pyspark.sql import functions as F

    def seconds(column: str) -> Column:
        return F.unix_seconds(F.try_to_timestamp(F.col(column)))

    row = rel.agg(F.least(F.min(seconds("observed_at")), F.min(seconds("answered_at")))
                  .alias("first"),
                  F.greatest(F.max(seconds("observed_at")), F.max(seconds("answered_at")))
                  .alias("last")).collect()[0]
    if row["first"] is None:
        return "", ""
    return window_text(int(row["first"])), window_text(int(row["last"]))


def _bad_lines(bad: DataFrame) -> tuple[int, list[BadLine]]:
    count = bad.count()
    lines = [BadLine(r["file"], int(r["line"]), r["reason"]) for r in
             bad.orderBy("file", "line").limit(REPORT_LIMIT).collect()] if count else []
    return count, lines


def _last_day(table: DataFrame) -> DataFrame:
    """The rows of ``table`` (with history) from each cluster's last day.

    The last days are a small table (a row per cluster, from two columns)
    joined back by broadcast, so the wide rows of the other days are dropped
    where they are read, not shuffled to find the last day.
    """
    from pyspark.sql import functions as F

    last = table.groupBy("cluster").agg(F.max("day").alias("day"))
    return table.join(F.broadcast(last), ["cluster", "day"], "left_semi")


def _gather(spark: SparkSession, target: Path, history: bool, snapshots: str,
            features: FeatureSet, elapsed: float, tables: FleetTables) -> ReportData:
    """Small aggregates for the report: of the views per shape (:func:`_view_summaries`,
    while ``tables`` still has them cached) and of the written tables, read back.

    The tables' schemas are the frames' just written, which spares Spark a job
    per table to read them from the files.  The independent queries run at
    once (:data:`_SUMMARY_THREADS`).
    """
    schemas = {name: tables.table(name).schema for name in TABLES}

    def read(name: str) -> DataFrame:
        schema = (schemas or {}).get(name)
        reader = spark.read if schema is None else spark.read.schema(schema)
        return reader.parquet(str(target / name))

    if tables.views is None or tables.shape_features is None:
        raise ValueError("the report's summaries need the tables' views and shapes")
    fav, rel, bad = read("feature_availability"), read("broker_releases"), read("bad_records")
    rel_now = _last_day(rel) if history else rel
    with ThreadPoolExecutor(_SUMMARY_THREADS, thread_name_prefix="kclient-summary") as pool:
        per_shape = pool.submit(_view_summaries, tables.views, tables.shape_features, features,
                                history)
        totals = pool.submit(_broker_totals, rel_now)
        window = pool.submit(_window, rel)
        releases = pool.submit(_release_counts, rel_now)
        bad_lines = pool.submit(_bad_lines, bad)
        history_rows = pool.submit(_history_rows, fav) if history else None
        counts, blocked, top, pattern_total, pattern_clusters = per_shape.result()
        sums, upgrading_names, silent_names = totals.result()
        observed_from, observed_to = window.result()
        bad_count, first_bad = bad_lines.result()
        return ReportData(
            snapshots=snapshots,
            history=history,
            clusters=int(sums["clusters"] or 0),
            brokers=int(sums["brokers"] or 0),
            stale_brokers=int(sums["stale"] or 0),
            unknown_brokers=int(sums["unknown"] or 0),
            fallback_brokers=int(sums["fallback"] or 0),
            features=tuple(counts),
            blocked=tuple(blocked),
            releases=tuple(releases.result()),
            upgrading=int(sums["upgrading"] or 0),
            upgrading_names=tuple(upgrading_names),
            bad_records=bad_count,
            bad_lines=tuple(first_bad),
            history_rows=tuple(history_rows.result()) if history_rows else (),
            elapsed=elapsed,
            patterns=tuple(top),
            pattern_total=pattern_total,
            pattern_clusters=pattern_clusters,
            observed_from=observed_from,
            observed_to=observed_to,
            silent_clusters=int(sums["silent"] or 0),
            silent_names=tuple(silent_names),
        )


def run_report(spark: SparkSession, snapshots: str, out: str, *,
               features: FeatureSet | None = None, history: bool = False,
               log: Callable[[str], None] | None = None) -> ReportData:
    """Run the whole pipeline: write the tables and ``report.md``/``report.html``/chart."""
    say = log or (lambda _text: None)
    started = time.perf_counter()
    feature_set = features if features is not None else load_features()
    target = prepare_out(out)
    say(f"reading snapshot records from {snapshots}")
    doing = f"reading {snapshots}"
    try:
        result = compute_tables(spark, snapshots, features=feature_set, history=history)
        try:
            for name in TABLES:
                say(f"writing {name}")
                doing = f"writing {target / name}"
                _write(result.table(name), target / name)
            say("summarising")
            doing = f"summarising the tables in {target}"
            data = _gather(spark, target, history, snapshots, feature_set,
                           time.perf_counter() - started, result)
        finally:
            result.release()
    except spark_errors() as exc:
        raise spark_failure(exc, doing) from None
    write_report(data, target)
    say(f"report written to {target / 'report.md'} and {target / 'report.html'}")
    if data.clusters == 0:
        first = "; ".join(f"{b.file}:{b.line}: {b.reason}" for b in data.bad_lines[:3])
        raise FleetError(f"{snapshots}: no valid snapshot record ({data.bad_records} bad "
                         f"record(s){'; first: ' + first if first else ''}); the report in "
                         f"{target} is empty: check the input")
    return data
