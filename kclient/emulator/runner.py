"""Run an emulated cluster from synchronous code: in a background thread, or until stopped.

:class:`ThreadedEmulator` owns an event loop in a daemon thread::

    with ThreadedEmulator(EmulatedCluster(["2.8", "3.9"])) as emu:
        print(emu.bootstrap_servers)        # give this to any Kafka client
        emu.restart(1, release="4.1")        # rolling upgrade from sync code

:func:`serve` runs a cluster in the current thread until a stop event (or
SIGINT/SIGTERM in :func:`main`-style use) and reports the address when ready.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import threading
from collections.abc import Awaitable, Callable, Coroutine
from concurrent.futures import Future
from typing import Any, TypeVar

from kclient.emulator.cluster import EmulatedCluster
from kclient.errors import EmulatorError

__all__ = ["ThreadedEmulator", "serve"]

T = TypeVar("T")


class ThreadedEmulator:
    """An :class:`EmulatedCluster` served by an event loop in a background thread."""

    def __init__(self, cluster: EmulatedCluster, start_timeout: float = 10.0) -> None:
        self.cluster = cluster
        self.start_timeout = start_timeout
        self._loop: asyncio.AbstractEventLoop | None = None
        self._thread: threading.Thread | None = None

    @property
    def bootstrap_servers(self) -> str:
        """The brokers' ``host:port`` list."""
        return self.cluster.bootstrap_servers

    def start(self) -> ThreadedEmulator:
        """Start the loop thread and the brokers; return once they listen."""
        if self._thread is not None:
            return self
        loop = asyncio.new_event_loop()
        ready = threading.Event()

        def run() -> None:
            asyncio.set_event_loop(loop)
            loop.call_soon(ready.set)
            loop.run_forever()
            loop.run_until_complete(loop.shutdown_asyncgens())
            loop.close()

        self._loop = loop
        self._thread = threading.Thread(target=run, name="kclient-emulator", daemon=True)
        self._thread.start()
        ready.wait(self.start_timeout)
        try:
            self.call(self.cluster.start())
        except BaseException:
            self.stop()
            raise
        return self

    def call(self, coro: Coroutine[Any, Any, T], timeout: float | None = None) -> T:
        """Run ``coro`` on the emulator's loop and return its result.

        Raises :class:`~kclient.errors.EmulatorError` when the emulator is not running
        or the call does not end within ``timeout`` seconds (default: ``start_timeout``;
        the call is then cancelled).
        """
        if self._loop is None:
            coro.close()
            raise EmulatorError("the emulator is not running; call start() first")
        limit = self.start_timeout if timeout is None else timeout
        name = getattr(coro, "__qualname__", "a call")
        future: Future[T] = asyncio.run_coroutine_threadsafe(coro, self._loop)
        try:
            return future.result(limit)
        except concurrent.futures.TimeoutError:
            future.cancel()
            raise EmulatorError(f"the emulator did not finish {name} within "
                                f"{limit:g} s; its event loop may be blocked (raise "
                                "start_timeout for slow machines)") from None

    def restart(self, node_id: int, release: str | None = None,
                behaviour: str | None = None) -> None:
        """Restart one broker (optionally on another release/behaviour)."""
        self.call(self.cluster.restart(node_id, release, behaviour))

    def stop(self) -> None:
        """Stop the brokers, the loop and the thread.

        Raises :class:`~kclient.errors.EmulatorError` when the brokers or the loop
        thread do not stop within ``start_timeout`` seconds (the thread is a daemon:
        it cannot keep the process alive).
        """
        loop, thread = self._loop, self._thread
        if loop is None or thread is None:
            return
        try:
            if self.cluster.running:
                self.call(self.cluster.stop())
        finally:
            loop.call_soon_threadsafe(loop.stop)
            thread.join(self.start_timeout)
            self._loop = None
            self._thread = None
        if thread.is_alive():
            raise EmulatorError(f"the emulator's loop thread did not stop within "
                                f"{self.start_timeout:g} s; its event loop is blocked")

    def __enter__(self) -> ThreadedEmulator:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()


async def serve(cluster: EmulatedCluster, stop: asyncio.Event | None = None,
                on_ready: Callable[[EmulatedCluster], Awaitable[None] | None] | None = None
                ) -> None:
    """Run ``cluster`` until ``stop`` is set (forever without one), then stop it.

    ``on_ready`` is called once every broker listens (e.g. to print the address).
    """
    async with cluster:
        if on_ready is not None:
            result = on_ready(cluster)
            if result is not None:
                await result
        if stop is None:
            stop = asyncio.Event()
        await stop.wait()
