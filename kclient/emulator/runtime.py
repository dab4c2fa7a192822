"""The asyncio side of the emulator's pure coordinators: parked requests and timers.

The coordinators (:mod:`kclient.emulator.classic_groups` and the others) are state
machines that take the time as an argument and never wait.  :class:`Coordination`
carries what they cannot: it gives every call the current time, parks a request
that a coordinator answers later on a future of its own, delivers the answers the
coordinators release (:meth:`drain`), and keeps one timer on the event loop for the
earliest deadline any of them has (:meth:`next_deadline` / :meth:`tick`).  When the
request's connection goes away its handler task is cancelled and the parked future
simply disappears: the coordinator's later answer for it is dropped, as Kafka drops a
response for a closed connection.
"""

from __future__ import annotations

import asyncio
import itertools
import time
from collections.abc import Callable, Hashable, Sequence
from typing import Any, Protocol

__all__ = ["Coordination", "Machine"]

Body = dict[str, Any]


class Machine(Protocol):
    """What :class:`Coordination` needs of a pure coordinator."""

    def drain(self) -> list[tuple[Hashable, Body]]: ...
    def next_deadline(self) -> float | None: ...
    def tick(self, now: float) -> None: ...


class Coordination:
    """Parked requests and the one timer of a cluster's coordinators (see the module text)."""

    def __init__(self, machines: Sequence[Machine] = (),
                 clock: Callable[[], float] = time.monotonic) -> None:
        self.machines: list[Machine] = list(machines)
        self.clock = clock
        self._refs = itertools.count(1)
        self._waiting: dict[Hashable, asyncio.Future[Body]] = {}
        self._timer: asyncio.TimerHandle | None = None
        self._timer_at: float | None = None

    @property
    def waiting(self) -> int:
        """How many requests are parked now."""
        return len(self._waiting)

    def now(self) -> float:
        """The time the coordinators are given."""
        return self.clock()

    def run(self, call: Callable[[float], Any]) -> Any:
        """Run a call that answers at once (``call(now)``), then deliver what it released."""
        try:
            return call(self.clock())
        finally:
            self.flush()

    async def park(self, call: Callable[[float, Hashable], Body | None]) -> Body:
        """Run ``call(now, ref)``; its answer, or the one delivered later under ``ref``."""
        ref = next(self._refs)
        try:
            answer = call(self.clock(), ref)
        except BaseException:
            self.flush()
            raise
        if answer is not None:
            self.flush()
            return answer
        future: asyncio.Future[Body] = asyncio.get_running_loop().create_future()
        self._waiting[ref] = future
        self.flush()
        try:
            return await future
        finally:
            self._waiting.pop(ref, None)

    def flush(self) -> None:
        """Deliver released answers and set the timer for the earliest deadline."""
        for machine in self.machines:
            for ref, body in machine.drain():
                future = self._waiting.pop(ref, None)
                if future is not None and not future.done():
                    future.set_result(body)
        deadline = min((d for m in self.machines if (d := m.next_deadline()) is not None),
                       default=None)
        if deadline == self._timer_at:
            return
        if self._timer is not None:
            self._timer.cancel()
            self._timer = self._timer_at = None
        if deadline is None:
            return
        try:
            loop = asyncio.get_running_loop()
        except RuntimeError:
            return  # outside the loop (set-up from sync code): the next call sets it
        delay = max(deadline - self.clock(), 0.0)
        self._timer = loop.call_later(delay, self._fire)
        self._timer_at = deadline

    def _fire(self) -> None:
        self._timer = self._timer_at = None
        now = self.clock()
        for machine in self.machines:
            machine.tick(now)
        self.flush()

    def close(self) -> None:
        """Stop the timer and cancel every parked request (the cluster stops)."""
        if self._timer is not None:
            self._timer.cancel()
        self._timer = self._timer_at = None
        for future in self._waiting.values():
            if not future.done():
                future.cancel()
        self._waiting.clear()
