"""A rolling upgrade of many emulated brokers, seen by one Client: the event loop's pauses.

An :class:`~kclient.emulator.EmulatedCluster` of ``--brokers`` brokers on
127.0.0.1 (default 1,000, on 3.9) runs in a child process (so that its work
never holds this process's interpreter lock), and a :class:`~kclient.Client`
with an ``on_change`` callback connects to every one of them.  Then
``--restarts`` brokers, spread over the cluster, restart one after the other
on 4.1: the first steps of a rolling upgrade.  Each restart brings the client
two changes (the broker goes stale when its connection closes, then answers
anew) and waits until the callback has seen the new answer.

A ticker task on the client's loop sleeps 1 ms at a time and records how late
it wakes (the loop's pauses, whatever caused them) and the CPU time the loop's
thread used meanwhile (the work that blocked it; a shared machine's other
processes add wall time, not this).  Printed: how long the client took to
start, the longest pause while nothing happens, and per restart the longest
pause from the restart until the callback saw the new answer (the median and
the worst over the restarts), in wall and in CPU time.  Restarting every broker of a
1,000-broker cluster would take long before views changed incrementally (each
answer rebuilt and re-judged the whole view), so a spread subset restarts;
each pause is that of one answer at the cluster's full size.  Wall times: a
shared machine adds its own pauses.

Usage: ``python -m benchmarks rolling [-- --brokers 1000 --restarts 40]``.
"""

from __future__ import annotations

import argparse
import asyncio
import multiprocessing
import statistics
import time
from multiprocessing.connection import Connection
from typing import Any

from kclient.emulator import EmulatedCluster
from kclient.negotiation import BrokerState, ClusterView, ViewDiff
from kclient.net import Client

FROM, TO = "3.9", "4.1"
#: Bounds of every wait (seconds): the cluster's start, the client's, one restart.
START_BOUND = 300.0
RESTART_BOUND = 120.0
TICK = 0.001


def _serve(control: Connection, size: int) -> None:
    """The child process: the emulated cluster, restarting brokers on request."""
    async def main() -> None:
        async with EmulatedCluster([FROM] * size) as cluster:
            control.send([b.address for b in cluster.brokers[:3]])
            loop = asyncio.get_running_loop()
            while (command := await loop.run_in_executor(None, control.recv)) is not None:
                node, release = command
                await cluster.restart(node, release)
                control.send(node)

    asyncio.run(main())


async def _ticker(samples: list[tuple[float, float, float]]) -> None:
    """Wake every ``TICK``; record (when, how late, the loop thread's CPU meanwhile)."""
    while True:
        started, used = time.perf_counter(), time.thread_time()
        await asyncio.sleep(TICK)
        woke = time.perf_counter()
        samples.append((woke, woke - started - TICK, time.thread_time() - used))


def _longest(samples: list[tuple[float, float, float]], since: float, until: float
             ) -> tuple[float, float]:
    """The longest pause (wall) and the most CPU the loop spent between two ticks."""
    window = [(late, cpu) for at, late, cpu in samples if since <= at <= until]
    return (max((late for late, _ in window), default=0.0),
            max((cpu for _, cpu in window), default=0.0))


async def _receive(control: Connection, bound: float) -> Any:
    loop = asyncio.get_running_loop()
    ready = await loop.run_in_executor(None, control.poll, bound)
    if not ready:
        raise TimeoutError(f"the emulated cluster did not answer within {bound:g} s")
    return control.recv()


async def run_rolling(size: int, restarts: int) -> dict[str, Any]:
    """Start ``size`` brokers and a client, restart ``restarts`` of them; the figures."""
    context = multiprocessing.get_context("spawn")
    control, child_end = context.Pipe()
    child = context.Process(target=_serve, args=(child_end, size), daemon=True)
    child.start()
    answered: dict[int, asyncio.Event] = {}

    def on_change(diff: ViewDiff, view: ClusterView) -> None:
        for node in diff.brokers_changed:
            if node in answered and view.broker(node).state is BrokerState.ANSWERED:
                answered[node].set()

    samples: list[tuple[float, float, float]] = []
    try:
        bootstrap = await _receive(control, START_BOUND)
        started = time.perf_counter()
        client = Client(bootstrap, on_change=on_change, metadata_refresh_interval=None,
                        startup_wait=START_BOUND, reconnect_backoff=0.01,
                        reconnect_backoff_max=0.05, max_brokers=max(size, 1))
        async with client:
            start_took = time.perf_counter() - started
            known = sum(1 for b in client.brokers if b.state is BrokerState.ANSWERED)
            ticker = asyncio.create_task(_ticker(samples))
            await asyncio.sleep(1.0)
            idle = _longest(samples, 0.0, time.perf_counter())
            pauses = []
            step = max(size // max(restarts, 1), 1)
            for node in list(range(1, size + 1, step))[:restarts]:
                answered[node] = asyncio.Event()
                since = time.perf_counter()
                control.send((node, TO))
                await _receive(control, RESTART_BOUND)
                await asyncio.wait_for(answered[node].wait(), RESTART_BOUND)
                await asyncio.sleep(0.02)  # the ticker's sample after the last change
                pauses.append(_longest(samples, since, time.perf_counter()))
            ticker.cancel()
        walls, cpus = [p[0] for p in pauses], [p[1] for p in pauses]
        return {"brokers": size, "answered_at_start": known, "start_s": start_took,
                "idle_ms": idle[0] * 1e3, "idle_cpu_ms": idle[1] * 1e3,
                "restarts": len(pauses),
                "median_ms": statistics.median(walls) * 1e3 if walls else 0.0,
                "worst_ms": max(walls, default=0.0) * 1e3,
                "median_cpu_ms": statistics.median(cpus) * 1e3 if cpus else 0.0,
                "worst_cpu_ms": max(cpus, default=0.0) * 1e3}
    finally:
        control.send(None)
        child.join(10)
        if child.is_alive():
            child.kill()
            child.join(10)


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(prog="python -m benchmarks rolling")
    parser.add_argument("--brokers", type=int, default=1000)
    parser.add_argument("--restarts", type=int, default=40)
    args = parser.parse_args(argv)
    found = asyncio.run(run_rolling(args.brokers, args.restarts))
    print(f"{found['brokers']} emulated brokers ({found['answered_at_start']} answered at "
          f"start, in {found['start_s']:.1f} s); {found['restarts']} restart(s) {FROM} -> {TO}")
    print(f"event loop while idle: longest pause {found['idle_ms']:.1f} ms (loop CPU "
          f"{found['idle_cpu_ms']:.1f} ms)")
    print(f"per restart (a stale entry and a new answer): longest pause median "
          f"{found['median_ms']:.1f} ms, worst {found['worst_ms']:.1f} ms; loop CPU between "
          f"two ticks median {found['median_cpu_ms']:.1f} ms, worst "
          f"{found['worst_cpu_ms']:.1f} ms")
    return 0
