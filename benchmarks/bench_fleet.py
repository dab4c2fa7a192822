"""``fleet report`` end to end on synthetic fleets, against the pure-Python core.

For each size (brokers; 5 per cluster, synthetic fleet from the release
profiles) the benchmark writes the fleet once as JSON Lines and once as
Parquet, then runs in a fresh child process each: (a) the Spark pipeline in
local mode (session start + report) on the JSON Lines file, (b) the same on
the Parquet file, (c) the pure-Python core (read the records, latest per
broker, every cluster's API ranges, features and release guesses), (d) a
plain single-threaded script (:func:`reference_ranges`: ``json`` and dicts,
latest record per broker and each cluster's KIP-35 ranges, nothing else),
(e) the Spark floor (:func:`floor_ranges`): the reference's work alone as one
plain Spark job, with the class archive unless ``--skip-archive``; its
counts must match the reference's.  A Spark report parses the same input
with the same reader and does much more, so it cannot be faster: the floor's
ratio to the reference says what Spark allows on the machine.
A sampler adds up the resident memory of the child and all its descendants
(the Spark JVM) every 100 ms.  ``--repeat N`` runs every path N times and
prints the median with the spread (min-max).

Printed per size and path: wall time, pipeline time (without the JVM start),
input API rows per second, microseconds per row, peak memory.  Then, per
size, the ratios the fleet issue sets as goals: Spark wall / reference wall
(goal <= 1.5 at 100,000 brokers) and core wall / Spark wall (goal >= 2);
and the cost-per-row ratio from 10,000 to 100,000 brokers (goal: within 1.5x).

Unless ``--skip-archive``, the benchmark first builds a class archive for the
driver JVM in its work dir (as ``kclient fleet prepare`` does, timed once) and
runs both Spark paths a second time with it (``spark+cds``, ``spark-pq+cds``);
the plain Spark paths run with an empty kclient cache.

``--history DAYS`` adds, per size, a history fleet of the same brokers with
one record per broker and UTC day for DAYS days (``fleet synth --history``),
reported by the Spark path with ``--history`` (``spark-hist``, and
``spark-hist-pq`` on Parquet); its cost per record is compared with the plain
Spark path of the same size (goal: within 1.5x; 100,000 brokers x 10 days is
the issue's 1,000,000-record case).  ``--history-only`` leaves out the plain
paths except the Spark one the ratio needs.

Usage: ``python -m benchmarks fleet -- [--sizes 1000,10000,100000] [--repeat 3]
[--keep DIR] [--skip-archive] [--history 10 [--history-only]]``.
"""

from __future__ import annotations

import argparse
import atexit
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path
from typing import Any

DEFAULT_SIZES = (1_000, 10_000, 100_000)
BROKERS_PER_CLUSTER = 5

_SPARK_CHILD = """
import json, sys, time
t0 = time.perf_counter()
from kclient.fleet.session import build_session
from kclient.fleet.pipeline import run_report
from kclient.fleet.reader import find_inputs
# As `kclient fleet report`: the input's size tunes the driver JVM.
spark = build_session(sys.argv[3], extra_conf={"spark.driver.memory": sys.argv[4]},
                      input_bytes=find_inputs(sys.argv[1]).work_bytes())
t1 = time.perf_counter()
data = run_report(spark, sys.argv[1], sys.argv[2], history=sys.argv[5:] == ["history"])
t2 = time.perf_counter()
spark.stop()
print(json.dumps({"start": t1 - t0, "pipeline": t2 - t1, "clusters": data.clusters,
                  "brokers": data.brokers}))
"""

_CORE_CHILD = """
import json, sys, time
t0 = time.perf_counter()
from kclient.negotiation import (ClusterView, brokers_by_cluster, guess_release,
                                 load_features, read_snapshots)
features = load_features()
t1 = time.perf_counter()
clusters = brokers_by_cluster(read_snapshots(sys.argv[1]))
available = 0
brokers = 0
for name, members in clusters.items():
    view = ClusterView(members, name=name)
    view.api_ranges()
    available += len(view.evaluate(features).available_names())
    for broker in members:
        guess_release(broker.apis)
        brokers += 1
t2 = time.perf_counter()
print(json.dumps({"start": t1 - t0, "pipeline": t2 - t1, "clusters": len(clusters),
                  "brokers": brokers}))
"""


def reference_ranges(path: str) -> dict[str, dict[int, tuple[int, int]]]:
    """Each cluster's KIP-35 ranges from a JSON Lines fleet: plain Python, one thread.

    The yardstick for the Spark pipeline: the latest record of each broker (the
    later line on equal times); a broker whose latest record is an error keeps
    its latest answer; per cluster, the API keys every such broker has, with
    the max of the mins and the min of the maxes (empty ranges left out).
    """
    latest: dict[tuple[str, int], dict[str, Any]] = {}
    answer: dict[tuple[str, int], dict[str, Any]] = {}
    with open(path, encoding="utf-8") as lines:
        for line in lines:
            if not line.strip():
                continue
            record = json.loads(line)
            broker = (record["cluster"], record["broker_id"])
            for seen in (latest, answer) if record["error"] is None else (latest,):
                old = seen.get(broker)
                if old is None or record["observed_at"] >= old["observed_at"]:
                    seen[broker] = record
    ranges: dict[str, dict[int, tuple[int, int]] | None] = {}
    for broker, record in latest.items():
        used = record if record["error"] is None else answer.get(broker)
        common = ranges.setdefault(broker[0], None)
        if used is None:
            continue
        mine = {a["api_key"]: (a["min_version"], a["max_version"])
                for a in used["api_versions"]}
        ranges[broker[0]] = mine if common is None else {
            k: (max(lo, mine[k][0]), min(hi, mine[k][1]))
            for k, (lo, hi) in common.items() if k in mine}
    return {c: {k: r for k, r in (found or {}).items() if r[0] <= r[1]}
            for c, found in ranges.items()}


def floor_ranges(spark: Any, path: str, out: str) -> Any:
    """:func:`reference_ranges` as one plain Spark job, written as Parquet to ``out``.

    The least a Spark report of the fleet must do: parse the records, find
    each broker's latest answer and intersect the ranges per cluster, then
    write them.  Only the fields that takes are parsed; no validation, no
    features, no other table.  Returns the written ranges, read back lazily
    (``cluster, api_key, lo, hi``; a cluster without any range has one row
    with null ``api_key``).
    """
    from pyspark.sql import Window
    from pyspark.sql import functions as F

    fields = ("cluster string, broker_id bigint, observed_at string, error string, "
              "api_versions array<struct<api_key:bigint,min_version:bigint,max_version:bigint>>")
    records = spark.read.schema(fields).json(path).withColumn(
        "seq", F.monotonically_increasing_id())  # input order: the later line wins a tie
    latest = Window.partitionBy("cluster", "broker_id").orderBy(
        F.desc("observed_at"), F.desc("seq"))
    answers = (records.where(F.col("error").isNull())
               .withColumn("nth", F.row_number().over(latest)).where("nth = 1")
               .withColumn("answering", F.count(F.lit(1)).over(Window.partitionBy("cluster"))))
    common = (answers.select("cluster", "answering", F.explode("api_versions").alias("a"))
              .groupBy("cluster", F.col("a.api_key").alias("api_key"))
              .agg(F.max("a.min_version").alias("lo"), F.min("a.max_version").alias("hi"),
                   F.count(F.lit(1)).alias("brokers"), F.first("answering").alias("answering"))
              .where("brokers = answering AND lo <= hi").drop("brokers", "answering"))
    clusters = records.select("cluster").distinct()
    ranges = clusters.join(common, "cluster", "left")
    ranges.write.mode("overwrite").parquet(out)
    return spark.read.parquet(out)


_FLOOR_CHILD = """
import json, sys, time
t0 = time.perf_counter()
from kclient.fleet.session import build_session
from kclient.fleet.reader import find_inputs
from kclient.fleet.pipeline import _size_shuffles, _size_splits
from benchmarks.bench_fleet import floor_ranges
inputs = find_inputs(sys.argv[1])
spark = build_session(sys.argv[3], extra_conf={"spark.driver.memory": sys.argv[4]},
                      input_bytes=inputs.work_bytes())
# A plain job, with Spark's whole-stage code generation, and kclient's sizing
# of input splits and shuffles (at 100,000 brokers 1 to 1.5 s faster than
# Spark's 200 shuffle partitions coalesced).
spark.conf.set("spark.sql.codegen.wholeStage", "true")
_size_shuffles(spark, inputs.work_bytes())
_size_splits(spark, inputs)
t1 = time.perf_counter()
floor_ranges(spark, sys.argv[1], sys.argv[2])
t2 = time.perf_counter()
spark.stop()
# The benchmark counts the written ranges (floor_counts): not part of the floor.
print(json.dumps({"start": t1 - t0, "pipeline": t2 - t1}))
"""


def floor_counts(out: str) -> dict[str, int]:
    """The clusters and ranges :func:`floor_ranges` wrote to ``out`` (read with pyarrow)."""
    import pyarrow.parquet as pq

    table = pq.read_table(out, columns=["cluster", "api_key"])
    return {"clusters": len(set(table.column("cluster").to_pylist())),
            "ranges": len(table) - table.column("api_key").null_count}


_REFERENCE_CHILD = """
import json, sys, time
t0 = time.perf_counter()
from benchmarks.bench_fleet import reference_ranges
t1 = time.perf_counter()
ranges = reference_ranges(sys.argv[1])
t2 = time.perf_counter()
print(json.dumps({"start": t1 - t0, "pipeline": t2 - t1, "clusters": len(ranges),
                  "ranges": sum(map(len, ranges.values()))}))
"""


def _tree_rss(root: int) -> int:
    """Resident bytes of ``root`` and every descendant (Linux /proc)."""
    children: dict[int, list[int]] = {}
    rss: dict[int, int] = {}
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            with open(f"/proc/{entry}/stat", encoding="ascii") as handle:
                fields = handle.read().rsplit(")", 1)[1].split()
        except OSError:
            continue
        pid, parent = int(entry), int(fields[1])
        children.setdefault(parent, []).append(pid)
        rss[pid] = int(fields[21]) * os.sysconf("SC_PAGE_SIZE")
    total, stack = 0, [root]
    while stack:
        pid = stack.pop()
        total += rss.get(pid, 0)
        stack.extend(children.get(pid, []))
    return total


def _run_child(code: str, args: list[str], cache: Path) -> tuple[dict[str, Any], float, int]:
    """Run one path in a fresh process; ``cache`` is its kclient cache (class archive or not)."""
    from kclient.fleet.classarchive import CACHE_ENV

    started = time.perf_counter()
    child = subprocess.Popen([sys.executable, "-c", code, *args], stdout=subprocess.PIPE,
                             stderr=subprocess.PIPE, text=True,
                             env={**os.environ, CACHE_ENV: str(cache)})
    peak = 0
    done = threading.Event()

    def sample() -> None:
        nonlocal peak
        while not done.is_set():
            peak = max(peak, _tree_rss(child.pid))
            done.wait(0.1)

    sampler = threading.Thread(target=sample, daemon=True)
    sampler.start()
    try:
        out, err = child.communicate(timeout=3600)
    finally:
        done.set()
        sampler.join(timeout=5)
        if child.poll() is None:
            child.kill()
            child.wait(timeout=30)
    wall = time.perf_counter() - started
    if child.returncode != 0:
        # JVM stack frames bury the message: keep the other lines.
        said = "\n".join(line for line in err.splitlines() if not line.lstrip().startswith("at "))
        raise RuntimeError(f"benchmark child failed ({child.returncode}): {said[-3000:]}")
    return json.loads(out.strip().splitlines()[-1]), wall, peak


def main(argv: list[str] | None = None) -> None:
    """Run the benchmark (see the module doc)."""
    parser = argparse.ArgumentParser(prog="bench_fleet")
    parser.add_argument("--sizes", default=",".join(map(str, DEFAULT_SIZES)),
                        help="broker counts, comma-separated (default 1000,10000,100000)")
    parser.add_argument("--master", default="local[*]")
    parser.add_argument("--driver-memory", default="2g")
    parser.add_argument("--keep", metavar="DIR", help="keep inputs and outputs in DIR")
    parser.add_argument("--skip-core", action="store_true",
                        help="leave out the pure-Python core (slow at 100,000 brokers)")
    parser.add_argument("--skip-parquet", action="store_true", help="JSON Lines input only")
    parser.add_argument("--skip-archive", action="store_true",
                        help="leave out the Spark paths with a class archive (fleet prepare)")
    parser.add_argument("--repeat", type=int, default=1, metavar="N",
                        help="runs per path; the median is printed with the spread")
    parser.add_argument("--history", type=int, metavar="DAYS",
                        help="also a history fleet (one record per broker and day for DAYS "
                        "days) reported with --history")
    parser.add_argument("--history-only", action="store_true",
                        help="with --history: of the plain paths run only Spark on JSON "
                        "Lines (the cost-per-record yardstick)")
    args = parser.parse_args(argv)
    if args.history is not None and args.history < 1:
        parser.error("--history must be 1 day or more")
    if args.history_only and args.history is None:
        parser.error("--history-only needs --history DAYS")
    sizes = [int(s) for s in args.sizes.split(",") if s.strip()]

    from kclient.fleet.classarchive import build_archive
    from kclient.fleet.synth import write_fleet

    if args.keep:
        work = Path(args.keep)
        work.mkdir(parents=True, exist_ok=True)
    else:
        # Inputs, outputs and the class archive: about 600 MiB at 100,000 brokers.
        work = Path(tempfile.mkdtemp(prefix="bench-fleet-"))
        atexit.register(shutil.rmtree, work, ignore_errors=True)
    print(f"cpus: {os.cpu_count()}, master: {args.master}, driver memory: "
          f"{args.driver_memory}, runs per path: {args.repeat}, work dir: {work}"
          f"{'' if args.keep else ' (removed at exit; --keep DIR keeps it)'}")
    # Plain paths run with an empty cache (a class archive the user built stays
    # out); the "+cds" paths with one built here, as `kclient fleet prepare` does.
    no_cache, archived = work / "cache-empty", work / "cache-archive"
    if not args.skip_archive:
        built = build_archive(archived)
        print(f"class archive: {built.size / 2**20:.0f} MiB, built in {built.seconds:.1f} s "
              "(once; `kclient fleet prepare`)")
    print(f"{'brokers':>8} {'path':<13} {'records':>8} {'api rows':>9} {'wall s':>8} "
          f"{'spread':>11} {'pipe s':>8} {'rows/s':>10} {'us/row':>8} {'us/rec':>8} "
          f"{'peak MiB':>9}")
    results: dict[tuple[int, str], tuple[float, float, int]] = {}
    per_record: dict[tuple[int, str], tuple[float, float]] = {}
    answers: dict[tuple[int, str], dict[str, Any]] = {}
    for size in sizes:
        clusters = max(1, size // BROKERS_PER_CLUSTER)
        fleet = work / f"fleet-{size}.jsonl"
        summary = write_fleet(fleet, clusters, seed=size,
                              brokers_per_cluster=BROKERS_PER_CLUSTER)
        spark_args = [str(work / f"out-{size}"), args.master, args.driver_memory]
        paths = [("spark", summary, _SPARK_CHILD, [str(fleet), *spark_args])]
        if not args.skip_archive and not args.history_only:
            paths.append(("spark+cds", summary, _SPARK_CHILD, [str(fleet), *spark_args]))
        if not args.skip_parquet and not args.history_only:
            table = work / f"fleet-{size}.parquet"
            write_fleet(table, clusters, seed=size, brokers_per_cluster=BROKERS_PER_CLUSTER)
            paths.append(("spark-pq", summary, _SPARK_CHILD, [str(table), *spark_args]))
            if not args.skip_archive:
                paths.append(("spark-pq+cds", summary, _SPARK_CHILD, [str(table), *spark_args]))
        if not args.history_only:
            paths.append(("reference", summary, _REFERENCE_CHILD, [str(fleet)]))
            paths.append(("floor" if args.skip_archive else "floor+cds", summary, _FLOOR_CHILD,
                          [str(fleet), str(work / f"floor-{size}"), *spark_args[1:]]))
        if not args.skip_core and not args.history_only:
            paths.append(("core", summary, _CORE_CHILD, [str(fleet)]))
        if args.history is not None:
            days = args.history
            hist_args = [str(work / f"out-{size}-h{days}"), args.master, args.driver_memory,
                         "history"]
            suffixes = [("spark-hist", ".jsonl")]
            if not args.skip_parquet:
                suffixes.append(("spark-hist-pq", ".parquet"))
            for label, suffix in suffixes:
                history = write_fleet(work / f"fleet-{size}-h{days}{suffix}", clusters,
                                      seed=size, brokers_per_cluster=BROKERS_PER_CLUSTER,
                                      history=days)
                paths.append((label, history, _SPARK_CHILD, [history.path, *hist_args]))
        for label, summary, code, child_args in paths:
            cache = archived if label.endswith("+cds") else no_cache
            runs = [_run_child(code, child_args, cache) for _ in range(max(1, args.repeat))]
            answers[size, label] = runs[0][0]
            if label.startswith("floor"):
                answers[size, label].update(floor_counts(child_args[1]))
            walls = [wall for _, wall, _ in runs]
            wall = statistics.median(walls)
            pipe = statistics.median(float(info["pipeline"]) for info, _, _ in runs)
            peak = max(p for _, _, p in runs)
            results[size, label] = (wall, pipe, peak)
            rows = summary.api_rows
            spread = f"{min(walls):.1f}-{max(walls):.1f}"
            per_record[size, label] = (wall / summary.records, pipe / summary.records)
            print(f"{summary.brokers:>8} {label:<13} {summary.records:>8} {rows:>9} "
                  f"{wall:>8.1f} {spread:>11} {pipe:>8.1f} {rows / wall:>10,.0f} "
                  f"{1e6 * wall / rows:>8.2f} {1e6 * wall / summary.records:>8.2f} "
                  f"{peak / 2**20:>9.0f}", flush=True)
        _check_floor(size, answers)
        _print_ratios(size, results)
        _print_history_ratios(size, per_record)
    spark_sizes = sorted(s for s, label in results if label == "spark")
    if 10_000 in spark_sizes and 100_000 in spark_sizes:
        small, large = results[10_000, "spark"], results[100_000, "spark"]
        ratio_wall = (large[0] / 100_000) / (small[0] / 10_000)
        ratio_pipe = (large[1] / 100_000) / (small[1] / 10_000)
        print(f"spark cost per row, 100k vs 10k brokers: {ratio_wall:.2f}x (wall), "
              f"{ratio_pipe:.2f}x (pipeline only); goal <= 1.5x")
        print(f"spark peak memory, 100k vs 10k brokers: {large[2] / 2**20:.0f} MiB vs "
              f"{small[2] / 2**20:.0f} MiB")


def _print_history_ratios(size: int, per_record: dict[tuple[int, str], tuple[float, float]]
                          ) -> None:
    """Cost per record of the history fleet against the plain fleet of the same size."""
    plain = per_record.get((size, "spark"))
    for label in ("spark-hist", "spark-hist-pq"):
        mine = per_record.get((size, label))
        if plain is None or mine is None:
            continue
        print(f"{size:>8} {label}: cost per record {1e6 * mine[0]:.2f} us (wall), "
              f"{1e6 * mine[1]:.2f} us (pipeline) = {mine[0] / plain[0]:.2f}x / "
              f"{mine[1] / plain[1]:.2f}x the plain spark path's; goal <= 1.5x", flush=True)


def _check_floor(size: int, answers: dict[tuple[int, str], dict[str, Any]]) -> None:
    """Fail unless the Spark floor found the reference's clusters and ranges."""
    reference = answers.get((size, "reference"))
    for label in ("floor", "floor+cds"):
        floor = answers.get((size, label))
        if reference is None or floor is None:
            continue
        found = (floor["clusters"], floor["ranges"])
        if found != (reference["clusters"], reference["ranges"]):
            raise RuntimeError(f"{label} at {size} brokers found {found[0]} clusters and "
                               f"{found[1]} ranges, the reference {reference['clusters']} "
                               f"and {reference['ranges']}: it is not the same work")


def _print_ratios(size: int, results: dict[tuple[int, str], tuple[float, float, int]]
                  ) -> None:
    """The issue's goals for one size, from median wall times."""
    reference = results.get((size, "reference"))
    core = results.get((size, "core"))
    for label in ("spark", "spark+cds", "spark-pq", "spark-pq+cds"):
        mine = results.get((size, label))
        if mine is None:
            continue
        parts = []
        if reference is not None:
            parts.append(f"{mine[0] / reference[0]:.2f}x the reference's wall (goal <= 1.5)")
        if core is not None:
            parts.append(f"{core[0] / mine[0]:.2f}x faster than the core (goal >= 2)")
        if parts:
            print(f"{size:>8} {label}: " + "; ".join(parts), flush=True)
    for label in ("floor", "floor+cds"):
        floor = results.get((size, label))
        if floor is not None and reference is not None:
            print(f"{size:>8} {label}: {floor[0] / reference[0]:.2f}x the reference's wall: "
                  "the reference's work alone as a plain Spark job, which a Spark "
                  "report cannot beat", flush=True)


if __name__ == "__main__":
    main(sys.argv[1:])
