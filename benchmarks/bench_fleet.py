"""``fleet report`` on synthetic fleets: both engines, each against its yardstick.

For each size (brokers; 5 per cluster, a synthetic fleet from the release
profiles, written once as JSON Lines) every path runs in a fresh child process
(GC on), ``--repeat`` times (default 3; the median is printed with the
spread, min-max), the paths of one size taking turns (so that the machine's
drift between minutes, up to a third here, falls on every path alike):

* ``local`` -- the in-process engine (:func:`kclient.fleet.local.run_local_report`:
  every table, the report and its charts);
* ``reference`` -- a plain single-threaded script (:func:`reference_ranges`:
  ``json`` and dicts, the latest record per broker and each cluster's KIP-35
  ranges, nothing else: strictly less work than a report);
* ``spark`` -- the Spark engine in local mode (session start + report), at the
  sizes of ``--spark-sizes`` (default 100,000);
* ``floor`` -- the reference's work alone as one plain Spark job
  (:func:`floor_ranges`), at the same sizes; its counts must match the
  reference's.  A Spark report parses the same input with the same reader and
  does much more, so the floor is what Spark allows on the machine;
* ``cli`` -- ``kclient fleet report`` on a 100-broker fleet, end to end
  (process start included).

A sampler adds up the resident memory of the child and all its descendants
(the Spark JVM) every 100 ms.  Printed per size and path: wall time, pipeline
time (without imports and Spark's start), microseconds per input API row,
peak memory; then the issue's goals: local <= 1.5x the reference's wall at
10,000 and 100,000 brokers with a lower peak, spark <= 1.5x the floor, the
100-broker CLI run <= 1.5 s.  The machine's load average is printed before
and after: the figures are only comparable within one run.

``--history DAYS`` adds a history fleet (one record per broker and UTC day)
reported by the Spark engine with ``--history`` at the Spark sizes, once,
with Spark's default driver heap (``--driver-memory`` is not passed).

Usage: ``python -m benchmarks fleet -- [--sizes 1000,10000,100000]
[--spark-sizes 100000] [--repeat 3] [--keep DIR] [--history DAYS]``.
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
spark = build_session(sys.argv[3], driver_memory=sys.argv[4] or None)  # "": Spark's default
t1 = time.perf_counter()
data = run_report(spark, sys.argv[1], sys.argv[2], history=sys.argv[5:] == ["history"])
t2 = time.perf_counter()
spark.stop()
print(json.dumps({"start": t1 - t0, "pipeline": t2 - t1, "clusters": data.clusters,
                  "brokers": data.brokers}))
"""

_LOCAL_CHILD = """
import json, sys, time
t0 = time.perf_counter()
from kclient.fleet.local import run_local_report
t1 = time.perf_counter()
data = run_local_report(sys.argv[1], sys.argv[2], history=sys.argv[3:] == ["history"])
t2 = time.perf_counter()
print(json.dumps({"start": t1 - t0, "pipeline": t2 - t1, "clusters": data.clusters,
                  "brokers": data.brokers}))
"""

_CLI_CHILD = """
import json, subprocess, sys, time
t0 = time.perf_counter()
done = subprocess.run([sys.executable, "-m", "kclient.cli", "fleet", "report", "--snapshots",
                       sys.argv[1], "--out", sys.argv[2]], capture_output=True, text=True)
t1 = time.perf_counter()
if done.returncode:
    raise SystemExit(done.stderr)
print(json.dumps({"start": 0.0, "pipeline": t1 - t0}))
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
from benchmarks.bench_fleet import floor_ranges
# A plain job on the same minimal session as the report's.
spark = build_session(sys.argv[3], driver_memory=sys.argv[4])
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


def _run_child(code: str, args: list[str]) -> tuple[dict[str, Any], float, int]:
    """Run one path in a fresh process."""
    started = time.perf_counter()
    child = subprocess.Popen([sys.executable, "-c", code, *args], stdout=subprocess.PIPE,
                             stderr=subprocess.PIPE, text=True)
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


def _load() -> str:
    one, five, fifteen = os.getloadavg()
    return f"load average {one:.2f} {five:.2f} {fifteen:.2f} on {os.cpu_count()} cpus"


def _measure(label: str, summary: Any, code: str, child_args: list[str], repeat: int,
             results: dict[tuple[int, str], tuple[float, float, int]],
             answers: dict[tuple[int, str], dict[str, Any]]) -> None:
    runs = [_run_child(code, child_args) for _ in range(max(1, repeat))]
    _record(label, summary, child_args, runs, results, answers)


def _measure_together(summary: Any, paths: list[tuple[str, str, list[str]]], repeat: int,
                      results: dict[tuple[int, str], tuple[float, float, int]],
                      answers: dict[tuple[int, str], dict[str, Any]]) -> None:
    """Run every path ``repeat`` times, in turns: a drift of the machine's speed
    between minutes falls on every path alike, not on whichever ran last."""
    runs: dict[str, list[tuple[dict[str, Any], float, int]]] = {label: [] for label, *_ in paths}
    for _ in range(max(1, repeat)):
        for label, code, child_args in paths:
            runs[label].append(_run_child(code, child_args))
    for label, _code, child_args in paths:
        _record(label, summary, child_args, runs[label], results, answers)


def _record(label: str, summary: Any, child_args: list[str],
            runs: list[tuple[dict[str, Any], float, int]],
            results: dict[tuple[int, str], tuple[float, float, int]],
            answers: dict[tuple[int, str], dict[str, Any]]) -> None:
    size = summary.brokers
    answers[size, label] = runs[0][0]
    if label == "floor":
        answers[size, label].update(floor_counts(child_args[1]))
    walls = [wall for _, wall, _ in runs]
    wall = statistics.median(walls)
    pipe = statistics.median(float(info["pipeline"]) for info, _, _ in runs)
    peak = max(p for _, _, p in runs)
    results[size, label] = (wall, pipe, peak)
    rows = summary.api_rows
    spread = f"{min(walls):.2f}-{max(walls):.2f}"
    print(f"{summary.brokers:>8} {label:<11} {summary.records:>8} {rows:>9} {wall:>8.2f} "
          f"{spread:>13} {pipe:>8.2f} {1e6 * wall / rows:>8.2f} {peak / 2**20:>9.0f}",
          flush=True)


def main(argv: list[str] | None = None) -> None:
    """Run the benchmark (see the module doc)."""
    parser = argparse.ArgumentParser(prog="bench_fleet")
    parser.add_argument("--sizes", default=",".join(map(str, DEFAULT_SIZES)),
                        help="broker counts, comma-separated (default 1000,10000,100000)")
    parser.add_argument("--spark-sizes", default="100000",
                        help="broker counts for the Spark engine and its floor (default "
                        "100000; 'none' for none)")
    parser.add_argument("--master", default="local[*]")
    parser.add_argument("--driver-memory", default="2g")
    parser.add_argument("--keep", metavar="DIR", help="keep inputs and outputs in DIR")
    parser.add_argument("--with-core", action="store_true",
                        help="also the pure-Python core, cluster by cluster (slow)")
    parser.add_argument("--repeat", type=int, default=3, metavar="N",
                        help="runs per path (default 3); the median is printed with the spread")
    parser.add_argument("--history", type=int, metavar="DAYS",
                        help="also a history fleet (one record per broker and day for DAYS "
                        "days) reported by the Spark engine with --history")
    args = parser.parse_args(argv)
    if args.history is not None and args.history < 1:
        parser.error("--history must be 1 day or more")
    sizes = [int(s) for s in args.sizes.split(",") if s.strip()]
    spark_sizes = [] if args.spark_sizes == "none" else [
        int(s) for s in args.spark_sizes.split(",") if s.strip()]

    from kclient.fleet.synth import write_fleet

    if args.keep:
        work = Path(args.keep)
        work.mkdir(parents=True, exist_ok=True)
    else:
        # Inputs and outputs: about 600 MiB at 100,000 brokers.
        work = Path(tempfile.mkdtemp(prefix="bench-fleet-"))
        atexit.register(shutil.rmtree, work, ignore_errors=True)
    print(f"{_load()}; master: {args.master}, driver memory: {args.driver_memory}, runs per "
          f"path: {args.repeat}, work dir: {work}"
          f"{'' if args.keep else ' (removed at exit; --keep DIR keeps it)'}")
    print(f"{'brokers':>8} {'path':<11} {'records':>8} {'api rows':>9} {'wall s':>8} "
          f"{'spread':>13} {'pipe s':>8} {'us/row':>8} {'peak MiB':>9}")
    results: dict[tuple[int, str], tuple[float, float, int]] = {}
    answers: dict[tuple[int, str], dict[str, Any]] = {}
    small = write_fleet(work / "fleet-100.jsonl", 20, seed=100, brokers_per_cluster=5)
    _measure("cli", small, _CLI_CHILD, [small.path, str(work / "out-cli")], args.repeat,
             results, answers)
    for size in sorted(set(sizes) | set(spark_sizes)):
        clusters = max(1, size // BROKERS_PER_CLUSTER)
        fleet = work / f"fleet-{size}.jsonl"
        summary = write_fleet(fleet, clusters, seed=size,
                              brokers_per_cluster=BROKERS_PER_CLUSTER)
        paths = []
        if size in sizes:
            paths.append(("local", _LOCAL_CHILD, [str(fleet), str(work / f"local-{size}")]))
        paths.append(("reference", _REFERENCE_CHILD, [str(fleet)]))
        if size in spark_sizes:
            spark_args = [str(work / f"out-{size}"), args.master, args.driver_memory]
            paths.append(("spark", _SPARK_CHILD, [str(fleet), *spark_args]))
            paths.append(("floor", _FLOOR_CHILD,
                          [str(fleet), str(work / f"floor-{size}"), *spark_args[1:]]))
        if args.with_core and size in sizes:
            paths.append(("core", _CORE_CHILD, [str(fleet)]))
        _measure_together(summary, paths, args.repeat, results, answers)
        if args.history is not None and size in spark_sizes:
            history = write_fleet(work / f"fleet-{size}-h{args.history}.jsonl", clusters,
                                  seed=size, brokers_per_cluster=BROKERS_PER_CLUSTER,
                                  history=args.history)
            _measure("spark-hist", history, _SPARK_CHILD,
                     [history.path, str(work / f"out-{size}-h"), args.master,
                      "", "history"], 1, results, answers)
        _check_floor(size, answers)
        _print_ratios(size, results)
    cli = results.get((small.brokers, "cli"))
    if cli is not None:
        print(f"     100 cli: {cli[0]:.2f} s end to end (goal <= 1.5 s)")
    print(_load())


def _check_floor(size: int, answers: dict[tuple[int, str], dict[str, Any]]) -> None:
    """Fail unless the Spark floor found the reference's clusters and ranges."""
    reference = answers.get((size, "reference"))
    for label in ("floor",):
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
    """The issue's goals for one size, from median wall times and peak memory."""
    reference = results.get((size, "reference"))
    local = results.get((size, "local"))
    spark = results.get((size, "spark"))
    floor = results.get((size, "floor"))
    if local is not None and reference is not None:
        print(f"{size:>8} local: {local[0] / reference[0]:.2f}x the reference's wall (goal <= "
              f"1.5), peak {local[2] / 2**20:.0f} MiB vs the reference's "
              f"{reference[2] / 2**20:.0f} MiB (goal: below)", flush=True)
    if spark is not None and floor is not None:
        print(f"{size:>8} spark: {spark[0] / floor[0]:.2f}x the floor's wall (goal <= 1.5); "
              "the floor is the reference's work alone as a plain Spark job", flush=True)
    if floor is not None and reference is not None:
        print(f"{size:>8} floor: {floor[0] / reference[0]:.2f}x the reference's wall "
              "(what Spark's start, reader and one shuffle cost here)", flush=True)


if __name__ == "__main__":
    main(sys.argv[1:])
