"""The asyncio carrier of the pure coordinators (kclient.emulator.runtime): parked requests
get the answers released for them, the one timer follows the earliest deadline, and a
request abandoned by its connection leaves nothing behind."""

from __future__ import annotations

import asyncio
from collections.abc import Hashable
from typing import Any

import pytest

from kclient.emulator.runtime import Coordination

pytestmark = pytest.mark.timeout(10)


class Echo:
    """A machine that parks every call and answers each one at its own deadline."""

    def __init__(self) -> None:
        self.due: dict[Hashable, tuple[float, dict[str, Any]]] = {}
        self.out: list[tuple[Hashable, dict[str, Any]]] = []
        self.ticks = 0

    def call(self, now: float, ref: Hashable, delay: float, value: int) -> dict[str, Any] | None:
        if delay <= 0:
            return {"value": value}
        self.due[ref] = (now + delay, {"value": value})
        return None

    def drain(self) -> list[tuple[Hashable, dict[str, Any]]]:
        out, self.out = self.out, []
        return out

    def next_deadline(self) -> float | None:
        return min((at for at, _ in self.due.values()), default=None)

    def tick(self, now: float) -> None:
        self.ticks += 1
        for ref, (at, body) in list(self.due.items()):
            if at <= now:
                del self.due[ref]
                self.out.append((ref, body))


async def test_parked_calls_get_their_answers_in_deadline_order() -> None:
    echo = Echo()
    coordination = Coordination([echo])
    finished: list[int] = []

    async def call(delay: float, value: int) -> None:
        body = await coordination.park(lambda now, ref: echo.call(now, ref, delay, value))
        finished.append(body["value"])

    await asyncio.gather(call(0.15, 3), call(0.05, 1), call(0.0, 0), call(0.1, 2))
    assert finished == [0, 1, 2, 3]
    assert coordination.waiting == 0 and echo.ticks <= 4


async def test_a_cancelled_wait_leaves_nothing_and_its_answer_is_dropped() -> None:
    echo = Echo()
    coordination = Coordination([echo])
    task = asyncio.ensure_future(coordination.park(
        lambda now, ref: echo.call(now, ref, 0.05, 7)))
    await asyncio.sleep(0)
    assert coordination.waiting == 1
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task
    assert coordination.waiting == 0
    await coordination.park(lambda now, ref: echo.call(now, ref, 0.1, 8))  # still works
    assert echo.due == {}


async def test_close_cancels_parked_calls_and_the_timer() -> None:
    echo = Echo()
    coordination = Coordination([echo])
    task = asyncio.ensure_future(coordination.park(
        lambda now, ref: echo.call(now, ref, 60, 1)))
    await asyncio.sleep(0)
    coordination.close()
    with pytest.raises(asyncio.CancelledError):
        await task
    assert coordination.waiting == 0


def test_a_call_outside_the_loop_sets_no_timer() -> None:
    echo = Echo()
    coordination = Coordination([echo])
    assert coordination.run(lambda now: echo.call(now, "r", 5, 1)) is None
    assert coordination.waiting == 0  # sync set-up code never parks
