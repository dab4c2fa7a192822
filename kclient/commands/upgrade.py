"""``kclient emulate --upgrade-to RELEASE``: a rolling upgrade followed from the shell.

After the start, the emulated brokers restart one at a time, in id order, on RELEASE
(same ports), each ``--every`` seconds after the previous one; Enter in the emulator's
terminal restarts the next one at once.  Each restart is printed, so one terminal runs
the upgrade while another follows it with ``kclient watch``.
"""

from __future__ import annotations

import argparse
import os
import sys
from typing import TYPE_CHECKING, NamedTuple

from kclient.commands.common import positive_seconds
from kclient.errors import ConfigError

if TYPE_CHECKING:
    import asyncio

    from kclient.emulator import EmulatedCluster

__all__ = ["UPGRADE_EVERY", "RollingUpgrade", "UpgradePlan", "add_upgrade_arguments",
           "upgrade_plan"]

#: Seconds before each restart of a ``--upgrade-to`` rolling upgrade (default).
UPGRADE_EVERY = 10.0


def add_upgrade_arguments(parser: argparse.ArgumentParser) -> None:
    """Add ``--upgrade-to`` and ``--every`` to ``kclient emulate``."""
    parser.add_argument(
        "--upgrade-to", metavar="RELEASE", default=None,
        help="a rolling upgrade: restart the brokers one at a time, by id, on RELEASE (same "
        "ports), each --every seconds after the previous one; Enter restarts the next at once. "
        "RELEASE is written as for --release",
    )
    parser.add_argument(
        "--every", type=positive_seconds, default=None, metavar="SECONDS",
        help=f"the pause before each restart of --upgrade-to, the first included (default "
        f"{UPGRADE_EVERY:g})",
    )


class UpgradePlan(NamedTuple):
    """A rolling upgrade to ``release``, one broker every ``every`` seconds."""

    release: str
    every: float

    def start(self, cluster: EmulatedCluster, stop: asyncio.Event) -> RollingUpgrade:
        """Announce the upgrade and run it on ``cluster`` (a failed restart sets ``stop``)."""
        return RollingUpgrade(self, cluster, stop)


def upgrade_plan(args: argparse.Namespace) -> UpgradePlan | None:
    """``--upgrade-to`` / ``--every`` as a plan, or ``None`` without ``--upgrade-to``."""
    from kclient.negotiation.releases import resolve_release

    if args.upgrade_to is None:
        if args.every is not None:
            raise ConfigError("--every needs --upgrade-to RELEASE (the release the brokers "
                              "are restarted on)")
        return None
    try:
        release = resolve_release(args.upgrade_to)
    except ConfigError as exc:
        raise ConfigError(f"--upgrade-to: {exc}") from None
    return UpgradePlan(release, UPGRADE_EVERY if args.every is None else args.every)


class _Enter:
    """Enter pressed on stdin (a line typed in the terminal, or written to a pipe).

    Read through the event loop (no thread left blocked on stdin at exit); at end of
    input the reader is removed, so a closed stdin costs nothing.  A command started
    in the background (``&``) leaves its terminal alone: reading it would stop the
    process (SIGTTIN).
    """

    def __init__(self, loop: asyncio.AbstractEventLoop) -> None:
        import asyncio

        self.pressed = asyncio.Event()
        self._loop = loop
        self._fd: int | None = None
        try:
            fd = sys.stdin.fileno()
            if os.isatty(fd) and os.tcgetpgrp(fd) != os.getpgrp():
                return
            loop.add_reader(fd, self._read)
        except (AttributeError, OSError, ValueError):
            return  # no stdin, or one the loop cannot poll (a regular file, /dev/null)
        self._fd = fd

    @property
    def listening(self) -> bool:
        """Whether Enter can be read (stdin is open and can be polled)."""
        return self._fd is not None

    def _read(self) -> None:
        assert self._fd is not None
        try:
            data = os.read(self._fd, 4096)
        except OSError:
            data = b""
        if not data:
            self.close()
        elif b"\n" in data:
            self.pressed.set()

    def close(self) -> None:
        if self._fd is not None:
            self._loop.remove_reader(self._fd)
            self._fd = None


class RollingUpgrade:
    """A running :class:`UpgradePlan`: one task restarting the brokers in turn."""

    def __init__(self, plan: UpgradePlan, cluster: EmulatedCluster, stop: asyncio.Event
                 ) -> None:
        import asyncio

        self._enter = _Enter(asyncio.get_running_loop())
        now = " (Enter restarts the next one now)" if self._enter.listening else ""
        print(f"rolling upgrade to Kafka {plan.release}: broker by broker, one every "
              f"{plan.every:g} s{now}")
        self._task = asyncio.create_task(self._run(plan, cluster))
        self._task.add_done_callback(lambda task: self._ended(task, stop))

    @staticmethod
    def _ended(task: asyncio.Task[None], stop: asyncio.Event) -> None:
        if not task.cancelled() and task.exception() is not None:
            stop.set()  # a failed restart ends the command, which reports it

    async def _run(self, plan: UpgradePlan, cluster: EmulatedCluster) -> None:
        import asyncio
        import contextlib

        brokers = cluster.brokers
        for done, broker in enumerate(brokers, start=1):
            self._enter.pressed.clear()
            with contextlib.suppress(TimeoutError):
                async with asyncio.timeout(plan.every):
                    await self._enter.pressed.wait()
            was = broker.release
            await cluster.restart(broker.node_id, plan.release)
            print(f"broker {broker.node_id} restarted: Kafka {was} -> {broker.release} "
                  f"({done} of {len(brokers)})", flush=True)
        print(f"rolling upgrade to Kafka {plan.release} done", flush=True)

    def raise_failure(self) -> None:
        """Raise what made a restart fail, if one did."""
        if self._task.done() and not self._task.cancelled():
            self._task.result()

    async def close(self) -> None:
        """Stop the upgrade where it is and stop reading stdin."""
        import asyncio

        self._task.cancel()
        await asyncio.gather(self._task, return_exceptions=True)
        self._enter.close()
