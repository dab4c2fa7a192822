"""``fleet report`` end to end on synthetic fleets, against the pure-Python core.

For each size (brokers; 5 per cluster, synthetic fleet from the release
profiles) the benchmark writes the fleet once, then runs in a fresh child
process each: (a) the Spark pipeline in local mode (session start + report),
(b) the pure-Python core (read the records, latest per broker, every cluster's
API ranges, features and release guesses).  A sampler adds up the resident
memory of the child and all its descendants (the Spark JVM) every 100 ms.

Printed per size and path: wall time, pipeline time (without the JVM start),
input API rows per second, microseconds per row, peak memory.  Then the
cost-per-row ratio from 10,000 to 100,000 brokers (goal: within 1.5x) and the
size where Spark overtakes the core on this machine.

Usage: ``python -m benchmarks fleet -- [--sizes 1000,10000,100000] [--keep DIR]``.
"""

from __future__ import annotations

import argparse
import json
import os
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
spark = build_session(sys.argv[3], extra_conf={"spark.driver.memory": sys.argv[4]})
t1 = time.perf_counter()
data = run_report(spark, sys.argv[1], sys.argv[2])
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
        raise RuntimeError(f"benchmark child failed ({child.returncode}): {err[-2000:]}")
    return json.loads(out.strip().splitlines()[-1]), wall, peak


def main(argv: list[str] | None = None) -> None:
    """Run the benchmark (see the module doc)."""
    parser = argparse.ArgumentParser(prog="bench_fleet")
    parser.add_argument("--sizes", default=",".join(map(str, DEFAULT_SIZES)),
                        help="broker counts, comma-separated (default 1000,10000,100000)")
    parser.add_argument("--master", default="local[*]")
    parser.add_argument("--driver-memory", default="2g")
    parser.add_argument("--keep", metavar="DIR", help="keep inputs and outputs in DIR")
    parser.add_argument("--skip-core", action="store_true", help="Spark path only")
    args = parser.parse_args(argv)
    sizes = [int(s) for s in args.sizes.split(",") if s.strip()]

    from kclient.fleet.synth import write_fleet

    work = Path(args.keep) if args.keep else Path(tempfile.mkdtemp(prefix="bench-fleet-"))
    work.mkdir(parents=True, exist_ok=True)
    print(f"cpus: {os.cpu_count()}, master: {args.master}, driver memory: "
          f"{args.driver_memory}, work dir: {work}")
    print(f"{'brokers':>8} {'path':<6} {'records':>8} {'api rows':>9} {'wall s':>8} "
          f"{'pipe s':>8} {'rows/s':>10} {'us/row':>8} {'peak MiB':>9}")
    results: dict[tuple[int, str], tuple[float, float, int]] = {}
    for size in sizes:
        clusters = max(1, size // BROKERS_PER_CLUSTER)
        fleet = work / f"fleet-{size}.jsonl"
        summary = write_fleet(fleet, clusters, seed=size,
                              brokers_per_cluster=BROKERS_PER_CLUSTER)
        paths = [("spark", _SPARK_CHILD, [str(fleet), str(work / f"out-{size}"),
                                          args.master, args.driver_memory])]
        if not args.skip_core:
            paths.append(("core", _CORE_CHILD, [str(fleet)]))
        for label, code, child_args in paths:
            info, wall, peak = _run_child(code, child_args)
            pipe = float(info["pipeline"])
            results[size, label] = (wall, pipe, peak)
            rows = summary.api_rows
            print(f"{summary.brokers:>8} {label:<6} {summary.records:>8} {rows:>9} "
                  f"{wall:>8.1f} {pipe:>8.1f} {rows / wall:>10,.0f} "
                  f"{1e6 * wall / rows:>8.2f} {peak / 2**20:>9.0f}", flush=True)
    spark_sizes = sorted(s for s, label in results if label == "spark")
    if 10_000 in spark_sizes and 100_000 in spark_sizes:
        small, large = results[10_000, "spark"], results[100_000, "spark"]
        ratio_wall = (large[0] / 100_000) / (small[0] / 10_000)
        ratio_pipe = (large[1] / 100_000) / (small[1] / 10_000)
        print(f"spark cost per row, 100k vs 10k brokers: {ratio_wall:.2f}x (wall), "
              f"{ratio_pipe:.2f}x (pipeline only); goal <= 1.5x")
        print(f"spark peak memory, 100k vs 10k brokers: {large[2] / 2**20:.0f} MiB vs "
              f"{small[2] / 2**20:.0f} MiB")
    overtaken = [s for s in spark_sizes if (s, "core") in results
                 and results[s, "spark"][0] < results[s, "core"][0]]
    if overtaken:
        print(f"Spark (wall, {args.master}) is faster than the pure-Python core from "
              f"{min(overtaken):,} brokers on")
    elif any(label == "core" for _, label in results):
        print("the pure-Python core was faster at every size measured")


if __name__ == "__main__":
    main(sys.argv[1:])
