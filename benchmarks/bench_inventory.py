"""Upgrade readiness from a client inventory: a 20-cluster fleet, end to end.

A synthetic fleet of 20 clusters (5 brokers each, :func:`kclient.fleet.synth.write_fleet`)
and its client inventory (broker metrics as the JMX exporter writes them, a
``kafka_cluster`` label per series, :mod:`kclient.fleet.synth_inventory`), written
once.  Every path runs the console script in a fresh process (process start
included, GC on), ``--repeat`` times (default 5), the paths taking turns so that the
machine's drift falls on every path alike:

* ``report`` -- ``kclient fleet report --engine local`` on the snapshots alone: the
  named peer;
* ``readiness`` -- the same report with ``--inventory ... --target 4.0
  --cluster-label kafka_cluster``: the upgrade readiness section and table added;
* ``compat`` -- ``kclient compat --inventory ... --release 4.0 --cluster-label
  kafka_cluster``: the verdicts alone, as a table.

Printed per path: the median wall time with its spread, the median CPU time of
the process tree (user + system: what the wall time is on an idle machine, the
commands being single-threaded) and the peak memory; then the goal: the
20-cluster inventory report ends within 1.5 s end to end, and what the inventory
adds to the report (the ratio to the peer, same input, same run).  The
machine's load average is printed before and after: the wall times are only
comparable within one run.

Usage: ``python -m benchmarks inventory -- [--repeat 5] [--clusters 20] [--keep DIR]``.
"""

from __future__ import annotations

import argparse
import atexit
import resource
import shutil
import statistics
import sys
import tempfile
from pathlib import Path
from typing import Any

from benchmarks.bench_fleet import _load, _run_child

#: The goal: the 20-cluster inventory report, end to end, in seconds.
GOAL_SECONDS = 1.5

_CHILD = """
import json, subprocess, sys, time
t0 = time.perf_counter()
done = subprocess.run([sys.executable, "-m", "kclient.cli", *sys.argv[1:]],
                      capture_output=True, text=True)
t1 = time.perf_counter()
if done.returncode not in (0, 1, 3):
    raise SystemExit(done.stderr)
print(json.dumps({"start": 0.0, "pipeline": t1 - t0, "code": done.returncode}))
"""


def _children_cpu() -> float:
    """User + system seconds of every finished child process (and theirs) so far."""
    used = resource.getrusage(resource.RUSAGE_CHILDREN)
    return used.ru_utime + used.ru_stime


def paths(work: Path, fleet: str, inventory: str) -> list[tuple[str, list[str]]]:
    """The command lines measured (see the module text), by label."""
    report = ["fleet", "report", "--snapshots", fleet, "--engine", "local"]
    labelled = ["--inventory", inventory, "--cluster-label", "kafka_cluster"]
    return [
        ("report", [*report, "--out", str(work / "out-report")]),
        ("readiness", [*report, "--out", str(work / "out-readiness"), *labelled,
                       "--target", "4.0"]),
        ("compat", ["compat", *labelled, "--release", "4.0"]),
    ]


def main(argv: list[str] | None = None) -> None:
    """Run the benchmark (see the module doc)."""
    parser = argparse.ArgumentParser(prog="bench_inventory")
    parser.add_argument("--repeat", type=int, default=5, metavar="N",
                        help="runs per path (default 5); the median is printed with the spread")
    parser.add_argument("--clusters", type=int, default=20, metavar="N",
                        help="clusters of the fleet and its inventory (default 20)")
    parser.add_argument("--keep", metavar="DIR", help="keep inputs and outputs in DIR")
    args = parser.parse_args(argv)

    from kclient.fleet.synth import write_fleet
    from kclient.fleet.synth_inventory import write_inventory

    if args.keep:
        work = Path(args.keep)
        work.mkdir(parents=True, exist_ok=True)
    else:
        work = Path(tempfile.mkdtemp(prefix="bench-inventory-"))
        atexit.register(shutil.rmtree, work, ignore_errors=True)
    fleet = write_fleet(work / "fleet.jsonl", args.clusters, seed=20, brokers_per_cluster=5)
    series = write_inventory(work / "metrics.prom", args.clusters, seed=20)
    print(f"{_load()}; {fleet.clusters} clusters, {fleet.brokers} brokers, {series} inventory "
          f"series; runs per path: {args.repeat}")
    measured = paths(work, fleet.path, str(work / "metrics.prom"))
    runs: dict[str, list[tuple[dict[str, Any], float, int]]] = {label: [] for label, _ in
                                                                   measured}
    cpu: dict[str, list[float]] = {label: [] for label, _ in measured}
    for _ in range(max(1, args.repeat)):
        for label, command in measured:
            before = _children_cpu()
            runs[label].append(_run_child(_CHILD, command))
            cpu[label].append(_children_cpu() - before)
    print(f"{'path':<10} {'wall s':>7} {'spread':>11} {'cpu s':>6} {'peak MiB':>9} {'exit':>5}")
    walls, cpus = {}, {}
    for label, _command in measured:
        times = [wall for _, wall, _ in runs[label]]
        walls[label] = statistics.median(times)
        cpus[label] = statistics.median(cpu[label])
        peak = max(p for _, _, p in runs[label])
        print(f"{label:<10} {walls[label]:>7.2f} {min(times):>5.2f}-{max(times):<5.2f} "
              f"{cpus[label]:>6.2f} {peak / 2**20:>9.0f} {runs[label][0][0]['code']:>5}")
    print(f"{args.clusters}-cluster inventory report: {walls['readiness']:.2f} s end to end, "
          f"{cpus['readiness']:.2f} s of CPU (goal <= {GOAL_SECONDS} s); "
          f"{walls['readiness'] / walls['report']:.2f}x the wall and "
          f"{cpus['readiness'] / cpus['report']:.2f}x the CPU of the same report without the "
          f"inventory ({walls['report']:.2f} s, {cpus['report']:.2f} s)")
    print(f"after: {_load()}")


if __name__ == "__main__":
    main(sys.argv[1:])
