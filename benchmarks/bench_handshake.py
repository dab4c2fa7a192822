"""Handshake benchmark: wall time to a complete cluster view with 1, 10 and 100 brokers.

The emulated brokers run in a separate process (``python -m kclient.emulator``),
so the client's event loop measures only its own work plus the network. Each
size is measured ``--repeat`` times after one warm-up; the median is reported
with the ratio to the one-broker time (goal: 100 brokers within 3x of one,
which needs the brokers negotiated concurrently, not one after the other).

On loopback a handshake costs about a millisecond, so the client's own CPU time
per broker dominates and no ratio near 1 is possible on two cores.  Real
brokers answer after a network round trip; ``--latency SECONDS`` makes every
emulated broker wait that long before each answer, which is the setting where
concurrency shows.  By default both are run: loopback and 5 ms.
"""

from __future__ import annotations

import argparse
import asyncio
import statistics
import subprocess
import sys
import time
from collections.abc import Sequence

from kclient.net import Client

__all__ = ["main", "measure"]


def _start_emulator(count: int, release: str) -> tuple[subprocess.Popen[str], str]:
    process = subprocess.Popen(
        [sys.executable, "-m", "kclient.emulator", "--count", str(count), "--release", release],
        stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
    assert process.stdout is not None
    line = process.stdout.readline().strip()
    if not line.startswith("READY "):
        process.kill()
        process.wait(10)
        raise RuntimeError(f"the emulator did not start: {line!r}")
    return process, line.removeprefix("READY ").split(",")[0]


def _stop_emulator(process: subprocess.Popen[str]) -> None:
    assert process.stdin is not None
    process.stdin.close()
    try:
        process.wait(10)
    except subprocess.TimeoutExpired:
        process.kill()
        process.wait(10)


async def _one_view(bootstrap: str, expected: int) -> float:
    started = time.perf_counter()
    async with Client(bootstrap, metadata_refresh_interval=None, max_concurrency=128) as client:
        elapsed = time.perf_counter() - started
        live = len(client.view.live_brokers)
        if live != expected:
            raise RuntimeError(f"only {live} of {expected} brokers negotiated: "
                               f"{[b.error for b in client.view.failed_brokers][:3]}")
    return elapsed


def measure(count: int, repeat: int = 5, release: str = "3.9") -> list[float]:
    """Seconds to a complete view of ``count`` emulated brokers, ``repeat`` times."""
    process, bootstrap = _start_emulator(count, release)
    try:
        asyncio.run(_one_view(bootstrap, count))  # warm-up: imports, caches
        return [asyncio.run(_one_view(bootstrap, count)) for _ in range(repeat)]
    finally:
        _stop_emulator(process)


def main(argv: Sequence[str] | None = None) -> None:
    """Print the median time per cluster size and its ratio to one broker."""
    parser = argparse.ArgumentParser(prog="bench_handshake")
    parser.add_argument("--sizes", default="1,10,100", help="comma-separated broker counts")
    parser.add_argument("--repeat", type=int, default=5)
    parser.add_argument("--release", default="3.9")
    parser.add_argument("--latency", type=float, action="append",
                        help="seconds each broker waits before answering (repeatable; "
                             "default: 0 and 0.005)")
    args = parser.parse_args(list(argv) if argv is not None else [])
    sizes = [int(s) for s in args.sizes.split(",") if s.strip()]
    for latency in args.latency or [0.0, 0.005]:
        release = args.release if not latency else f"{args.release}:slow:{latency:g}"
        print(f"broker latency {latency * 1000:g} ms")
        base: float | None = None
        print(f"{'brokers':>8} {'median ms':>10} {'min ms':>8} {'max ms':>8} {'x one':>6}")
        for size in sizes:
            times = measure(size, args.repeat, release)
            median = statistics.median(times)
            if base is None:
                base = median
            print(f"{size:>8} {median * 1000:>10.1f} {min(times) * 1000:>8.1f} "
                  f"{max(times) * 1000:>8.1f} {median / base:>6.2f}", flush=True)


if __name__ == "__main__":
    main(sys.argv[1:])
