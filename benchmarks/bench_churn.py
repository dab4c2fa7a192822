"""Churn: threads on one SyncClient while brokers restart; every call must return.

Several threads share one :class:`~kclient.SyncClient` and call ``refresh``,
``request`` and the view queries in a loop while a restarter thread restarts a
random emulated broker every ``--restart-every`` seconds.  At the end the main
thread closes the client while calls are still in flight.  The run fails when
a call takes longer than its documented bound, a thread goes longer than that
without finishing a call, a call raises anything but a
:class:`~kclient.errors.KClientError`, a thread is still blocked after
``close()``, a file descriptor of the client is left open, or asyncio logs a
write onto a lost connection ("socket.send() raised exception").

Usage: ``python -m benchmarks churn [-- --seconds 60 --threads 8 --restart-every 0.5]``.
The test suite runs the same harness for a few seconds (tests/benchmarks).
"""

from __future__ import annotations

import argparse
import contextlib
import logging
import os
import random
import threading
import time
from collections import Counter
from collections.abc import Callable
from typing import Any

import attrs

from kclient import SyncClient
from kclient.emulator import EmulatedCluster, ThreadedEmulator
from kclient.errors import ClientClosedError, KClientError
from kclient.net.defaults import CLOSE_WAIT

#: The client's timeouts in the harness: short, so a bound is a few seconds.
REQUEST_TIMEOUT = 2.0
STARTUP_WAIT = 2.0
#: The longest any one call may take: a refresh waits for Metadata (one request
#: timeout, connect included) and then for every broker (startup_wait); margin
#: for a loaded machine on top.
CALL_BOUND = REQUEST_TIMEOUT * 2 + STARTUP_WAIT + 3.0
#: The longest close() may take, and the threads after it.
CLOSE_BOUND = 4 * CLOSE_WAIT
#: What asyncio logs for each write onto a transport already lost (plain, TLS).
LOST_WRITE_LINES = ("socket.send() raised exception", "SSL connection is closed")


class _LostWrites(logging.Handler):
    """Counts asyncio's log lines about writes onto lost transports."""

    def __init__(self) -> None:
        super().__init__(logging.WARNING)
        self.count = 0

    def emit(self, record: logging.LogRecord) -> None:
        if record.getMessage().startswith(LOST_WRITE_LINES):
            self.count += 1


@attrs.define
class ChurnResult:
    """What one churn run saw."""

    seconds: float
    threads: int
    restarts: int = 0
    outcomes: Counter[str] = attrs.field(factory=Counter)
    untyped: list[str] = attrs.field(factory=list)
    slowest_call: float = 0.0
    longest_gap: float = 0.0
    close_took: float = 0.0
    stuck_threads: int = 0
    leaked_fds: int = 0
    lost_writes: int = 0

    @property
    def operations(self) -> int:
        return sum(self.outcomes.values())

    def problems(self) -> list[str]:
        """Every way the run broke the contract (empty when it held)."""
        found = []
        if self.untyped:
            found.append(f"{len(self.untyped)} untyped errors, e.g. {self.untyped[0]}")
        if self.slowest_call > CALL_BOUND:
            found.append(f"a call took {self.slowest_call:.2f}s (bound {CALL_BOUND:g}s)")
        if self.longest_gap > CALL_BOUND:
            found.append(f"a thread went {self.longest_gap:.2f}s without finishing a call")
        if self.close_took > CLOSE_BOUND:
            found.append(f"close() took {self.close_took:.2f}s (bound {CLOSE_BOUND:g}s)")
        if self.stuck_threads:
            found.append(f"{self.stuck_threads} threads still blocked after close()")
        if self.leaked_fds:
            found.append(f"{self.leaked_fds} client sockets left open after close()")
        if self.lost_writes:
            found.append(f"{self.lost_writes} writes onto lost connections logged by asyncio "
                         "(socket.send() raised exception)")
        if not self.outcomes["ok"]:
            found.append("no call succeeded")
        return found

    def line(self) -> str:
        kinds = ", ".join(f"{name} {count}" for name, count in sorted(self.outcomes.items()))
        return (f"{self.threads} threads, {self.seconds:g}s, {self.restarts} restarts: "
                f"{self.operations} calls ({kinds}); slowest {self.slowest_call:.2f}s, "
                f"longest gap {self.longest_gap:.2f}s; close {self.close_took:.2f}s, "
                f"{self.stuck_threads} stuck, {self.leaked_fds} sockets left, "
                f"{self.lost_writes} lost writes logged")


def _sockets_to(ports: set[int]) -> list[str]:
    """This process's TCP sockets whose far end is one of ``ports`` (the emulated brokers):
    the client's own connections, whatever else the process has open."""
    inodes = set()
    for fd in os.listdir("/proc/self/fd"):
        with contextlib.suppress(OSError):
            target = os.readlink(f"/proc/self/fd/{fd}")
            if target.startswith("socket:["):
                inodes.add(target[8:-1])
    found = []
    for table in ("/proc/net/tcp", "/proc/net/tcp6"):
        with contextlib.suppress(OSError), open(table) as rows:
            for row in list(rows)[1:]:
                fields = row.split()
                remote_port = int(fields[2].rsplit(":", 1)[1], 16)
                if fields[9] in inodes and remote_port in ports:
                    found.append(f"{fields[1]} -> {fields[2]} (inode {fields[9]})")
    return found


def _operations(client: SyncClient) -> list[Callable[[], Any]]:
    return [
        client.refresh,
        lambda: client.request("Metadata", {"topics": []}),
        lambda: client.request("ApiVersions", {}, broker=random.choice((1, 2, 3))),
        lambda: client.version_for("Metadata"),
        lambda: client.supports("ZSTD"),
    ]


def run_churn(seconds: float, threads: int = 8, restart_every: float = 0.5,
              seed: int | None = None) -> ChurnResult:
    """Run the harness for ``seconds`` (see the module doc) and return what it saw."""
    rng = random.Random(seed)
    result = ChurnResult(seconds=seconds, threads=threads)
    lock = threading.Lock()
    lost_writes = _LostWrites()
    asyncio_log = logging.getLogger("asyncio")
    asyncio_log.addHandler(lost_writes)
    try:
        _churn(result, rng, lock, restart_every)
    finally:
        asyncio_log.removeHandler(lost_writes)
    result.lost_writes = lost_writes.count
    return result


def _churn(result: ChurnResult, rng: random.Random, lock: threading.Lock,
           restart_every: float) -> None:
    seconds, threads = result.seconds, result.threads
    with ThreadedEmulator(EmulatedCluster(["3.9", "3.9", "3.9"])) as emulator:
        ports = {int(address.rsplit(":", 1)[1])
                 for address in emulator.bootstrap_servers.split(",")}
        client = SyncClient(emulator.bootstrap_servers, metadata_refresh_interval=None,
                            request_timeout=REQUEST_TIMEOUT, startup_wait=STARTUP_WAIT,
                            reconnect_backoff=0.01, reconnect_backoff_max=0.2)
        client.start()
        operations = _operations(client)
        stop = threading.Event()
        closed = threading.Event()

        def worker(index: int) -> None:
            local = random.Random(rng.random())
            last = time.monotonic()
            # Bounded; in practice ends when close() makes a call raise ClientClosedError.
            for _ in range(1_000_000):
                operation = local.choice(operations)
                started = time.monotonic()
                try:
                    operation()
                    outcome = "ok"
                except ClientClosedError:
                    outcome = "closed"
                except KClientError as exc:
                    outcome = type(exc).__name__
                except Exception as exc:  # the contract broken: recorded, reported
                    outcome = "untyped"
                    with lock:
                        result.untyped.append(f"{type(exc).__name__}: {exc}")
                finished = time.monotonic()
                with lock:
                    result.outcomes[outcome] += 1
                    result.slowest_call = max(result.slowest_call, finished - started)
                    if not closed.is_set():
                        result.longest_gap = max(result.longest_gap, finished - last)
                last = finished
                if outcome == "closed":
                    return
                if outcome != "ok":
                    closed.wait(0.01)  # pace retries as an application would

        def restarter() -> None:
            for _ in range(1_000_000):  # bounded; ends at the deadline
                if stop.wait(restart_every):
                    return
                emulator.restart(rng.choice((1, 2, 3)))
                result.restarts += 1

        pool = [threading.Thread(target=worker, args=(i,), name=f"churn-{i}", daemon=True)
                for i in range(threads)]
        restarts = threading.Thread(target=restarter, name="churn-restarts", daemon=True)
        for thread in pool:
            thread.start()
        restarts.start()
        stop.wait(seconds)
        restarts_stop = time.monotonic()
        stop.set()
        restarts.join(CALL_BOUND)
        # Close while the workers' last calls are still running.
        closed.set()
        started = time.monotonic()
        client.close()
        result.close_took = time.monotonic() - started
        for thread in pool:
            thread.join(max(0.0, CLOSE_BOUND - (time.monotonic() - restarts_stop)))
        result.stuck_threads = sum(thread.is_alive() for thread in pool)
        # The client's sockets close as close() returns; give the kernel a moment.
        deadline = time.monotonic() + 5
        while time.monotonic() < deadline and _sockets_to(ports):
            time.sleep(0.05)
        left = _sockets_to(ports)
        result.leaked_fds = len(left)
        if left and os.environ.get("KCLIENT_CHURN_DEBUG"):
            for entry in left:
                print("left open:", entry)


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(prog="python -m benchmarks churn")
    parser.add_argument("--seconds", type=float, default=60.0)
    parser.add_argument("--threads", type=int, default=8)
    parser.add_argument("--restart-every", type=float, default=0.5)
    args = parser.parse_args(argv)
    result = run_churn(args.seconds, args.threads, args.restart_every)
    print(result.line())
    problems = result.problems()
    for problem in problems:
        print("FAIL:", problem)
    return 1 if problems else 0
