"""Waiting for a condition with a deadline: how tests synchronise, never fixed sleeps."""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable

__all__ = ["until", "wait_until"]


async def until(predicate: Callable[[], object], what: str = "the condition",
                timeout: float = 10.0) -> None:
    """Wait until ``predicate()`` is true, polling every 10 ms, failing after ``timeout`` s."""
    loop = asyncio.get_running_loop()
    deadline = loop.time() + timeout
    while not predicate():
        assert loop.time() < deadline, f"{what}: not reached within {timeout:g}s"
        await asyncio.sleep(0.01)


def wait_until(predicate: Callable[[], object], what: str = "the condition",
               timeout: float = 10.0) -> None:
    """:func:`until` for threads: polls every 10 ms, fails after ``timeout`` s."""
    deadline = time.monotonic() + timeout
    while not predicate():
        assert time.monotonic() < deadline, f"{what}: not reached within {timeout:g}s"
        time.sleep(0.01)
