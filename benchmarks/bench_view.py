"""Cluster-view cost per broker: building a view, api_ranges() and evaluate().

A view over N brokers of mixed releases (a rolling upgrade: half 3.9, half 4.1,
one silent broker so the unknown-verdict path runs too) is built and queried at
N = 100, 1,000 and 10,000.  The goal is a flat cost per broker: the printed
"vs 100" ratio of microseconds per broker should stay near 1 (it was quadratic:
0.43 s at 500 brokers, 26 s at 4,000).  GC stays on, as in an application.

Usage: ``python -m benchmarks view [-- --sizes 100,1000,10000 --repeat 3]``.
"""

from __future__ import annotations

import argparse
import functools
import statistics
import time
from collections.abc import Callable

from kclient.negotiation import BrokerVersions, ClusterView, default_features, release_profile


def _view(size: int) -> ClusterView:
    new, old = release_profile("4.1"), release_profile("3.9")
    brokers = [BrokerVersions(n, f"b{n}", 9092, new if n % 2 else old) for n in range(1, size)]
    brokers.append(BrokerVersions(size, "silent", 9092, error="connection refused"))
    return ClusterView(brokers, name=f"bench-{size}")


def _best(action: Callable[[], object], repeat: int) -> float:
    times = []
    for _ in range(repeat):
        started = time.perf_counter()
        action()
        times.append(time.perf_counter() - started)
    return min(times) if repeat < 3 else statistics.median(times)


def main(argv: list[str]) -> None:
    parser = argparse.ArgumentParser(prog="python -m benchmarks view")
    parser.add_argument("--sizes", default="100,1000,10000")
    parser.add_argument("--repeat", type=int, default=3)
    args = parser.parse_args(argv)
    sizes = [int(s) for s in args.sizes.split(",")]
    features = default_features()
    print(f"{'brokers':>8}  {'build ms':>9}  {'api_ranges ms':>13}  {'evaluate ms':>11}  "
          f"{'us/broker':>9}  {'vs first':>8}")
    first: float | None = None
    for size in sizes:
        build = _best(functools.partial(_view, size), args.repeat)
        view = _view(size)
        ranges = _best(view.api_ranges, args.repeat)
        evaluate = _best(functools.partial(view.evaluate, features), args.repeat)
        per_broker = (build + ranges + evaluate) / size * 1e6
        first = first or per_broker
        print(f"{size:>8}  {build * 1e3:>9.1f}  {ranges * 1e3:>13.1f}  {evaluate * 1e3:>11.1f}  "
              f"{per_broker:>9.1f}  {per_broker / first:>7.2f}x", flush=True)
