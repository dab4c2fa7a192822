"""One broker's new answer: what the cluster view and its diff cost, by cluster size.

The client's view changes with every broker answer: ``view.with_broker(b)``
makes the next view and ``diff_views(old, new, features)`` the diff that goes to
``on_change``.  Here a rolling upgrade runs on a view of N brokers (half on 3.9,
half on 4.1): broker after broker goes stale (its restart begins) and answers
again on the other release, each answer applied as the client applies it.  The
answers' ``BrokerVersions`` are made beforehand (the connection layer makes
them, at a cost that does not depend on N).

Printed per size: the mean and median CPU time of one answer (view and diff:
the thread's own time, which other processes on a shared machine do not
inflate; the run with the least of ``--repeat``) and its longest wall time, the
mean against the first size's, and the named peer on the same answers in the
same run: a full rebuild (a ``ClusterView`` of every broker and the diff of two
such views, the work per answer before views changed incrementally).  Then
what a callback adds when it reads the new view: the features by state (what
``kclient watch`` and the metrics read), every feature's result (its reasons
name every broker in the way), every API's support (``api_ranges()``, the
same).  Goal (issue #49): at most 1 ms per
answer at 1,000 brokers and within 2x of the 3-broker figure at every size;
the run exits 1 when it is missed.  GC stays on, as in an application.

Usage: ``python -m benchmarks view [-- --sizes 3,100,1000,10000 --answers 400 --rebuilds 6
--repeat 3]``.
"""

from __future__ import annotations

import argparse
import statistics
import time
from collections.abc import Iterator
from datetime import UTC, datetime

from kclient.negotiation import (
    BrokerVersions,
    ClusterView,
    FeatureSet,
    Verdict,
    default_features,
    diff_views,
    release_profile,
)

#: The releases of the upgrade, and the goal's bounds.
RELEASES = ("3.9", "4.1")
GOAL_MS_AT_1000 = 1.0
GOAL_RATIO = 2.0
_AT = datetime(2026, 1, 1, tzinfo=UTC)


def _broker(node: int, release: str) -> BrokerVersions:
    return BrokerVersions(node, f"b{node}", 9092, release_profile(release), answered_at=_AT)


def _first_view(size: int) -> ClusterView:
    return ClusterView([_broker(n, RELEASES[n % 2]) for n in range(1, size + 1)],
                       name=f"bench-{size}")


def _answers(size: int, count: int) -> Iterator[BrokerVersions]:
    """A rolling upgrade's answers: each broker in turn goes stale, then answers on the
    other release (made here, outside the timing, as the connection makes them)."""
    releases = {n: RELEASES[n % 2] for n in range(1, size + 1)}
    for step in range(count):
        node = step // 2 % size + 1
        if step % 2 == 0:
            yield _broker(node, releases[node]).went_stale("connection closed by the broker")
        else:
            releases[node] = RELEASES[1 - RELEASES.index(releases[node])]
            yield _broker(node, releases[node])


def _incremental(size: int, count: int, features: FeatureSet, repeat: int
                 ) -> tuple[list[float], list[float]]:
    """CPU and wall seconds per answer, of the run with the least CPU of ``repeat``."""
    best: tuple[list[float], list[float]] = ([], [])
    for _ in range(repeat):
        view = _first_view(size)
        diff_views(view, view.with_broker(view.brokers[0]), features)  # verdicts in place
        answers = list(_answers(size, count))
        cpu, wall = [], []
        for answer in answers:
            started, used = time.perf_counter(), time.thread_time()
            new = view.with_broker(answer)
            diff_views(view, new, features)
            cpu.append(time.thread_time() - used)
            wall.append(time.perf_counter() - started)
            view = new
        if not best[0] or sum(cpu) < sum(best[0]):
            best = (cpu, wall)
    return best


def _rebuild(size: int, count: int, features: FeatureSet) -> list[float]:
    members = {b.node_id: b for b in _first_view(size).brokers}
    view = ClusterView(tuple(members.values()), name=f"bench-{size}")
    times = []
    for answer in _answers(size, count):
        started = time.perf_counter()
        members[answer.node_id] = answer
        new = ClusterView(tuple(members[n] for n in sorted(members)), name=view.name)
        diff_views(view, new, features)
        times.append(time.perf_counter() - started)
        view = new
    return times


def _readers(size: int, count: int, features: FeatureSet) -> tuple[float, float, float]:
    """Mean seconds a callback adds per new view reading the features' verdicts by state
    (as ``kclient watch`` and the metrics do), every feature's result (reasons and all),
    and every API's support (``api_ranges()``)."""
    view = _first_view(size)
    view.evaluate(features).available_names()  # judged once, as the client does at start
    names, results, ranges = [], [], []
    for answer in _answers(size, count):
        view = view.with_broker(answer)
        started = time.perf_counter()
        report = view.evaluate(features)
        for state in Verdict:
            report.names_in(state)
        names.append(time.perf_counter() - started)
        started = time.perf_counter()
        list(report)
        results.append(time.perf_counter() - started)
        started = time.perf_counter()
        view.api_ranges()
        ranges.append(time.perf_counter() - started)
    return statistics.mean(names), statistics.mean(results), statistics.mean(ranges)


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(prog="python -m benchmarks view")
    parser.add_argument("--sizes", default="3,100,1000,10000")
    parser.add_argument("--answers", type=int, default=400,
                        help="answers timed per size (a stale entry and a new answer each "
                        "count)")
    parser.add_argument("--rebuilds", type=int, default=6,
                        help="answers timed for the full-rebuild peer")
    parser.add_argument("--repeat", type=int, default=3,
                        help="runs per size; the quietest counts")
    args = parser.parse_args(argv)
    sizes = [int(s) for s in args.sizes.split(",")]
    features = default_features()
    print("one answer: view.with_broker + diff_views, CPU us (mean, median) and wall us "
          "(longest); peer: full rebuild (ms);\nthen what a callback adds reading the new "
          "view (us)")
    print(f"{'brokers':>8}  {'mean':>6}  {'median':>6}  {'longest':>7}  {'vs first':>8}  "
          f"{'rebuild':>8}  {'x faster':>8}  {'+by state':>9}  {'+results':>9}  "
          f"{'+api_ranges':>11}")
    first: float | None = None
    missed = []
    for size in sizes:
        times, wall = _incremental(size, args.answers, features, args.repeat)
        mean = statistics.mean(times)
        rebuild = statistics.median(_rebuild(size, args.rebuilds, features))
        names, results, ranges = _readers(size, min(args.answers, 20), features)
        first = first or mean
        print(f"{size:>8}  {mean * 1e6:>6.0f}  {statistics.median(times) * 1e6:>6.0f}  "
              f"{max(wall) * 1e6:>7.0f}  {mean / first:>7.2f}x  {rebuild * 1e3:>8.1f}  "
              f"{rebuild / mean:>7.0f}x  {names * 1e6:>9.0f}  {results * 1e6:>9.0f}  "
              f"{ranges * 1e6:>11.0f}", flush=True)
        if mean / first > GOAL_RATIO:
            missed.append(f"{size} brokers: {mean / first:.2f}x the first size")
        if size == 1000 and mean * 1e3 > GOAL_MS_AT_1000:
            missed.append(f"1000 brokers: {mean * 1e3:.2f} ms per answer")
    if missed:
        print("goal missed: " + "; ".join(missed))
        return 1
    print(f"goal met: one answer costs at most {GOAL_RATIO:g}x the first size's figure"
          + (f" and under {GOAL_MS_AT_1000:g} ms at 1,000 brokers" if 1000 in sizes else ""))
    return 0
