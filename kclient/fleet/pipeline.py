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

Only small aggregates reach the driver: a row per view shape (how many
clusters have it, the first of them by name, their brokers that answered
through a fallback) and per day and shape (how many views, their first and
last record times), from which :func:`kclient.fleet.summary.summarise` makes
the report's figures, as for the in-process engine; and the first bad lines.
"""

from __future__ import annotations

import contextlib
import math
import time
from collections.abc import Callable, Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import TYPE_CHECKING

import attrs

from kclient._outputfile import remove_entry
from kclient.errors import FleetError
from kclient.fleet import negotiate, releases, shapes
from kclient.fleet.judge import Shape, ShapeVerdicts
from kclient.fleet.reader import find_inputs, read_records
from kclient.fleet.readiness import JudgedInventory, spark_readiness
from kclient.fleet.report import (
    READINESS_TABLE,
    TABLES,
    BadLine,
    ReportData,
    prepare_out,
    publish_report,
    window_text,
)
from kclient.fleet.session import spark_errors, spark_failure
from kclient.fleet.summary import REPORT_LIMIT, ShapeGroup, summarise
from kclient.negotiation.featurefile import load_features
from kclient.negotiation.features import FeatureSet
from kclient.negotiation.model import ApplicationVersions
from kclient.negotiation.releases import ReleaseGuess

if TYPE_CHECKING:
    from pyspark.sql import DataFrame, SparkSession

__all__ = ["TABLES", "FleetTables", "compute_tables", "run_report"]




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
                 shapes: Mapping[str, tuple[Shape, ShapeVerdicts]] | None = None,
                 shape_ids: DataFrame | None = None,
                 guesses: Sequence[ReleaseGuess] = ()) -> None:
        self.brokers = brokers
        #: One row per view with its shape (:func:`kclient.fleet.negotiate.views_of`),
        #: each shape's value and verdicts by its text
        #: (:func:`kclient.fleet.shapes.verdict_tables`) and its number in that
        #: mapping's order (``shape, shape_id``), each signature's release guess.
        self.views = views
        self.shapes = shapes
        self.shape_ids = shape_ids
        self.guesses = tuple(guesses)
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
        per_shape, api_rows, feature_rows, by_shape = shapes.verdict_tables(
            spark, found, feature_set, sigs, app)
        guessed = releases.guesses(sigs)
    except BaseException:
        _unpersist_all(release)  # the caller's session keeps none of this run's caches
        raise
    cav = negotiate.cluster_api_versions(views, per_shape, api_rows)
    fav = negotiate.feature_availability(views, per_shape, feature_rows)
    rel = releases.broker_releases(brokers, sigs, guessed)
    bad = records.bad
    return FleetTables(brokers, cav, fav, rel, bad, release=release, views=views,
                       shapes=by_shape, shape_ids=per_shape.select("shape", "shape_id"),
                       guesses=guessed)


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


#: Summary queries in flight at once: each is one small job (a handful of
#: tasks over the cached views or a small table) whose time goes mostly to
#: planning and scheduling, so they overlap well even on two cores.
_SUMMARY_THREADS = 3


def _shape_groups(views: DataFrame, by_shape: Mapping[str, tuple[Shape, ShapeVerdicts]],
                  history: bool) -> list[ShapeGroup]:
    """The views (with history, each cluster's last day) grouped by shape, in one small job.

    Per shape: how many clusters, the first :data:`REPORT_LIMIT` by name with
    their sentence about silent brokers, how many of their brokers answered
    through a fallback record.  One row per shape reaches the driver.
    """
    from pyspark.sql import Window
    from pyspark.sql import functions as F

    now = _last_day(views) if history else views
    # Ranked within the shape first, so no task holds a list of every cluster
    # of a shape (a fleet of a million clusters alike would make one).
    rank = F.row_number().over(Window.partitionBy("shape").orderBy("cluster"))
    first = F.array_sort(F.collect_list(F.when(F.col("rank") <= REPORT_LIMIT,
                                               F.struct("cluster", "unknown_reason"))))
    rows = now.withColumn("rank", rank).groupBy("shape").agg(
        F.count(F.lit(1)).alias("n"), first.alias("first"),
        F.sum("fallback_brokers").alias("fallback")).collect()
    groups = []
    for row in rows:
        shape, verdicts = by_shape[row["shape"]]
        groups.append(ShapeGroup(
            shape, verdicts, int(row["n"]),
            tuple((str(v["cluster"]), v["unknown_reason"]) for v in row["first"]),
            int(row["fallback"] or 0)))
    return groups


def _days(views: DataFrame, shape_ids: DataFrame,
          by_shape: Mapping[str, tuple[Shape, ShapeVerdicts]]
          ) -> tuple[list[tuple[str, ShapeVerdicts, int]], tuple[str, str]]:
    """The views counted per day and shape (history chart) and the observation window.

    One small job over every view (every day): the window bounds the times
    of the records all views use.  Shapes are counted by number
    (``shape_ids``), not by their text: a long history has a row per day and
    shape.
    """
    from pyspark.sql import functions as F

    rows = views.join(F.broadcast(shape_ids), "shape").groupBy("day", "shape_id").agg(
        F.count(F.lit(1)).alias("n"), F.min("first_seen").alias("first"),
        F.max("last_seen").alias("last")).collect()
    verdicts = [judged for _shape, judged in by_shape.values()]
    days = [(str(r["day"]), verdicts[r["shape_id"]], int(r["n"])) for r in rows]
    firsts = [int(r["first"]) for r in rows if r["first"] is not None]
    lasts = [int(r["last"]) for r in rows if r["last"] is not None]
    if not firsts:
        return days, ("", "")
    return days, (window_text(min(firsts)), window_text(max(lasts)))


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
    """The report's data (:func:`kclient.fleet.summary.summarise`) from the views per shape.

    Two small jobs over the views, still cached (:func:`_shape_groups`,
    :func:`_days`), and the bad lines read back from their written table
    (its schema is the frame's just written, which spares Spark a job to
    read it from the files); the three run at once (:data:`_SUMMARY_THREADS`).
    """
    if tables.views is None or tables.shapes is None or tables.shape_ids is None:
        raise ValueError("the report's summaries need the tables' views and shapes")
    bad = spark.read.schema(tables.bad_records.schema).parquet(str(target / "bad_records"))
    with ThreadPoolExecutor(_SUMMARY_THREADS, thread_name_prefix="kclient-summary") as pool:
        groups = pool.submit(_shape_groups, tables.views, tables.shapes, history)
        days = pool.submit(_days, tables.views, tables.shape_ids, tables.shapes)
        bad_lines = pool.submit(_bad_lines, bad)
        per_day, window = days.result()
        bad_count, first_bad = bad_lines.result()
        return summarise(groups.result(), features, tables.guesses, snapshots=snapshots,
                         history=history, window=window, bad_records=bad_count,
                         bad_lines=first_bad, days=per_day, elapsed=elapsed)


def run_report(spark: SparkSession, snapshots: str, out: str, *,
               features: FeatureSet | None = None, history: bool = False,
               log: Callable[[str], None] | None = None,
               readiness: JudgedInventory | None = None) -> ReportData:
    """Run the whole pipeline: write the tables and ``report.md``/``report.html``/chart.

    ``readiness`` (a judged client inventory) adds the ``upgrade_readiness`` table,
    its clusters matched with the snapshots' in Spark, and the report's section.
    """
    say = log or (lambda _text: None)
    started = time.perf_counter()
    feature_set = features if features is not None else load_features()
    target = prepare_out(out)
    if readiness is None:  # a previous run's readiness table is not this run's
        remove_entry(target / READINESS_TABLE)
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
            if readiness is not None and result.views is not None:
                say(f"writing {READINESS_TABLE}")
                doing = f"writing {target / READINESS_TABLE}"
                frame, section = spark_readiness(spark, readiness, result.views)
                _write(frame, target / READINESS_TABLE)
                data = attrs.evolve(data, readiness=section)
        finally:
            result.release()
    except spark_errors() as exc:
        raise spark_failure(exc, doing) from None
    publish_report(data, target, snapshots, say)
    return data
