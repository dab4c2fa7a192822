"""Per-broker supervision: one task per broker keeps one negotiated connection.

A :class:`Supervisor` owns a :class:`BrokerSlot` per broker that Metadata lists
and one task per slot.  The task connects and negotiates (at most
``max_concurrency`` at once); while the connection lives it waits for it to
close or for a forced refresh (:meth:`Supervisor.renegotiate_all`); when it closes or
negotiation fails it reconnects after the pause its
:class:`~kclient.net.settings.Backoff` gives (doubling with jitter; longer after
refused credentials).  Every outcome goes to ``report`` as an event:
:class:`Answered` (the broker's fresh answer) or :class:`Failed` (why
negotiation failed).

The supervisor knows nothing of views, Metadata, notifications or what a
broker said before: the :class:`~kclient.net.client.Client` owns the one store
of broker answers, decides which brokers to supervise and what an event means
for the cluster (a failure keeps the broker's last answer, marked stale).
Waiting uses one future and callbacks per broker, no helper tasks, so large
clusters stay cheap.
"""

from __future__ import annotations

import asyncio
import functools
import logging
from collections.abc import Callable
from datetime import UTC, datetime

import attrs

from kclient.errors import AuthenticationError, BrokerConnectionError, KClientError
from kclient.negotiation.model import BrokerVersions
from kclient.net.connection import Connection
from kclient.net.defaults import CLOSE_WAIT
from kclient.net.settings import Backoff

__all__ = ["PENDING", "Answered", "BrokerEvent", "BrokerSlot", "Failed", "Supervisor"]

log = logging.getLogger("kclient.net")

#: The error of a broker that has not been negotiated with yet.
PENDING = "not negotiated yet (connecting)"


def resolve(future: asyncio.Future[None] | None, *_: object) -> None:
    """Complete ``future`` unless it is missing or done (usable as a callback)."""
    if future is not None and not future.done():
        future.set_result(None)


@attrs.frozen
class Answered:
    """A broker negotiated: ``versions`` is its fresh answer (``answered_at`` set)."""

    versions: BrokerVersions


@attrs.frozen
class Failed:
    """Negotiating with the broker of ``slot`` failed; ``reason`` says why.

    ``answer`` is set when the broker did answer ApiVersions before the failure
    (refused credentials): that answer is fresh, the failure is the error.
    """

    slot: BrokerSlot
    reason: str
    answer: BrokerVersions | None = None


#: What the supervisor reports about one broker.
BrokerEvent = Answered | Failed


@attrs.define(eq=False)
class BrokerSlot:
    """One supervised broker: its address, live connection, task and waiters."""

    node_id: int
    host: str
    port: int
    rack: str | None
    conn: Connection | None = None
    task: asyncio.Task[None] | None = None
    # Set by a forced refresh; ``signal`` is what the supervisor awaits meanwhile.
    woken: bool = False
    signal: asyncio.Future[None] | None = None
    # Done after the first negotiation attempt (whatever its outcome).
    first_done: asyncio.Future[None] = attrs.field(
        factory=lambda: asyncio.get_running_loop().create_future())
    waiters: list[asyncio.Future[None]] = attrs.field(factory=list)
    failures: int = 0

    def wake(self) -> None:
        """Ask the supervisor to reconnect and negotiate again now."""
        self.woken = True
        resolve(self.signal)

    def release_waiters(self) -> None:
        """Complete every future waiting for this broker's next answer."""
        waiters, self.waiters = self.waiters, []
        for waiter in waiters:
            resolve(waiter)

    @property
    def live(self) -> Connection | None:
        """The connection requests may use now, or ``None``."""
        conn = self.conn
        return conn if conn is not None and not conn.closed else None


class Supervisor:
    """Keeps a negotiated connection to every broker it is given (see the module doc).

    ``connect(slot)`` makes an unconnected :class:`Connection` for a slot;
    ``report(event)`` receives every outcome as a :data:`BrokerEvent`;
    ``alive()`` says whether supervision should go on.
    """

    def __init__(self, *, connect: Callable[[BrokerSlot], Connection],
                 report: Callable[[BrokerEvent], None], alive: Callable[[], bool],
                 max_concurrency: int, request_timeout: float, backoff: Backoff) -> None:
        self._connect = connect
        self._report = report
        self._alive = alive
        self.max_concurrency = max_concurrency
        self.request_timeout = request_timeout
        self.backoff = backoff
        self.slots: dict[int, BrokerSlot] = {}
        self._sem: asyncio.Semaphore | None = None
        # Connections being retired (closed once idle), by the task closing each.
        self._retiring: dict[asyncio.Task[None], Connection] = {}

    def begin(self) -> None:
        """Prepare for a new start (a fresh concurrency limit on the running loop)."""
        self._sem = asyncio.Semaphore(self.max_concurrency)

    def add(self, slot: BrokerSlot) -> None:
        """Track ``slot`` without supervising it (an address that cannot be connected to)."""
        self.slots[slot.node_id] = slot

    def supervise(self, slot: BrokerSlot, initial: Connection | None) -> None:
        """Track ``slot`` and start its task (``initial``: a connection already negotiated)."""
        self.slots[slot.node_id] = slot
        slot.task = asyncio.create_task(self._supervise(slot, initial),
                                        name=f"kclient-broker-{slot.node_id}")

    async def drop(self, node_id: int) -> None:
        """Stop supervising ``node_id``: cancel its task, close its connection (bounded)."""
        slot = self.slots.pop(node_id)
        tasks = [slot.task] if slot.task is not None else []
        await self._stop_slots([slot], tasks, None)
        slot.release_waiters()

    async def stop(self, reason: KClientError | None = None) -> None:
        """Cancel every task (supervisors and retiring connections), close every connection.

        Requests in flight fail with ``reason`` (the connection's own "closed by
        the client" when ``None``).  Returns within about :data:`CLOSE_WAIT`
        seconds whatever the tasks do.  Waiters are cancelled and the slots
        forgotten, so a later start supervises every broker afresh (the client's
        view keeps the brokers' last entries).
        """
        slots = list(self.slots.values())
        self.slots.clear()
        tasks = [s.task for s in slots if s.task is not None]
        retiring = dict(self._retiring)
        tasks.extend(retiring)
        for conn in retiring.values():
            # A retiring task cancelled before it first runs never closes its
            # connection: close it here.
            conn.abort(reason)
        for slot in slots:
            for waiter in slot.waiters:
                if not waiter.done():
                    waiter.cancel()
            slot.waiters = []
        await self._stop_slots(slots, tasks, reason)
        for conn in retiring.values():
            await conn.close()

    @staticmethod
    async def _stop_slots(slots: list[BrokerSlot], tasks: list[asyncio.Task[None]],
                          reason: KClientError | None) -> None:
        # Sockets first and without awaiting: an interrupted stop leaves none open.
        for task in tasks:
            task.cancel()
        for slot in slots:
            if slot.conn is not None:
                slot.conn.abort(reason)
            slot.task = None
        running = [task for task in tasks if not task.done()]
        if running:
            _, late = await asyncio.wait(running, timeout=CLOSE_WAIT)
            for task in late:
                log.warning("%s did not stop within %gs of being cancelled; left behind",
                            task.get_name(), CLOSE_WAIT)
        for slot in slots:
            if slot.conn is not None:
                await slot.conn.close()

    def live_connections(self) -> list[Connection]:
        """Every open connection, in slot order."""
        return [conn for slot in self.slots.values() if (conn := slot.live) is not None]

    async def wait_first(self, timeout: float) -> None:
        """Wait (at most ``timeout`` s) until every slot had its first negotiation attempt."""
        # Plain futures, no task per broker: startup cost stays small for big clusters.
        waits = [s.first_done for s in self.slots.values() if not s.first_done.done()]
        if waits:
            await asyncio.wait(waits, timeout=timeout)

    async def renegotiate_all(self, timeout: float) -> None:
        """Make every supervised broker reconnect and negotiate again; wait (bounded)."""
        loop = asyncio.get_running_loop()
        waits = []
        for slot in list(self.slots.values()):
            if slot.task is None:
                continue  # an address that cannot be connected to: nothing to re-ask
            future: asyncio.Future[None] = loop.create_future()
            slot.waiters.append(future)
            slot.wake()
            waits.append(future)
        if waits:
            await asyncio.wait(waits, timeout=timeout)

    # -- one broker ------------------------------------------------------------------------
    async def _negotiate(self, slot: BrokerSlot
                         ) -> tuple[BrokerEvent, Connection | None, bool]:
        """Connect and negotiate; returns (event, live connection or None, auth failed)."""
        conn = self._connect(slot)
        assert self._sem is not None
        try:
            async with self._sem:
                versions = await conn.connect()
        except AuthenticationError as exc:
            message = f"authentication failed: {exc}"
            answer = None
            if conn.negotiated:
                # The broker answered ApiVersions before refusing the credentials.
                answer = attrs.evolve(conn.versions, answered_at=datetime.now(UTC))
            return Failed(slot, message, answer), None, True
        except KClientError as exc:
            reason = exc.reason if isinstance(exc, BrokerConnectionError) else str(exc)
            return Failed(slot, reason), None, False
        except Exception as exc:
            log.debug("node %d: unexpected error while negotiating", slot.node_id,
                      exc_info=True)
            await conn.close()
            return Failed(slot, f"unexpected {type(exc).__name__} while connecting: {exc}"), \
                None, False
        return Answered(attrs.evolve(versions, answered_at=datetime.now(UTC))), conn, False

    async def _supervise(self, slot: BrokerSlot, initial: Connection | None) -> None:
        live: Connection | None = None  # the connection requests are using
        try:
            while self._alive():
                auth_failed = False
                event: BrokerEvent
                if initial is not None and not initial.closed:
                    conn: Connection | None = initial
                    event = Answered(attrs.evolve(initial.versions,
                                                  answered_at=datetime.now(UTC)))
                    initial = None
                else:
                    slot.woken = False
                    # On a forced refresh ``live`` keeps serving requests until the
                    # new connection is ready; then it closes once they are answered.
                    event, conn, auth_failed = await self._negotiate(slot)
                    if live is not None:
                        self._retire(live)
                live = conn
                slot.conn = conn
                self._report(event)
                resolve(slot.first_done)
                slot.release_waiters()
                if conn is not None:
                    slot.failures = 0
                    if await self._wait(slot, conn, None):
                        continue  # forced refresh: negotiate again now
                    live = None
                    log.debug("%s: connection closed (%s); reconnecting", conn.broker_label,
                              conn.close_reason)
                    delay = self.backoff.delay(0)
                else:
                    slot.failures += 1
                    delay = self.backoff.delay(slot.failures, auth_failed=auth_failed)
                    log.debug("node %d: negotiation failed (%s); retrying in %.2fs",
                              slot.node_id, event.reason if isinstance(event, Failed) else
                              None, delay)
                await self._wait(slot, None, delay)
        finally:
            if slot.conn is not None:
                await slot.conn.close()

    def _retire(self, conn: Connection) -> None:
        """Close ``conn`` once the requests in flight on it are answered (bounded)."""
        task = asyncio.create_task(conn.close_when_idle(self.request_timeout),
                                   name=f"kclient-retire-{conn.node_id}")
        self._retiring[task] = conn
        task.add_done_callback(self._forget_retired)

    def _forget_retired(self, task: asyncio.Task[None]) -> None:
        self._retiring.pop(task, None)

    async def _wait(self, slot: BrokerSlot, conn: Connection | None,
                    delay: float | None) -> bool:
        """Wait until ``conn`` closes, ``delay`` seconds pass or the slot is woken.

        Returns True when woken (a forced refresh).  One future and callbacks, no
        helper tasks: every supervised broker waits here.
        """
        if slot.woken:
            return True
        loop = asyncio.get_running_loop()
        signal: asyncio.Future[None] = loop.create_future()
        fire = functools.partial(resolve, signal)
        closed = conn.when_closed() if conn is not None else None
        if closed is not None:
            closed.add_done_callback(fire)
        timer = loop.call_later(delay, fire) if delay is not None else None
        slot.signal = signal
        try:
            await signal
        finally:
            slot.signal = None
            if timer is not None:
                timer.cancel()
            if closed is not None:
                closed.remove_done_callback(fire)
                closed.cancel()
        return slot.woken

