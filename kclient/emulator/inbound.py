"""Requests coming in on one emulated broker's connection, bounded like a Kafka listener.

:class:`Inbound` reads a client connection and splits it into request frames, with
the bounds a Kafka broker's socket server keeps (:class:`ServerLimits`):

* ``socket.request.max.bytes`` (100 MiB, Kafka's default): a frame announcing more
  closes the connection before anything of it is buffered, as Kafka's
  ``NetworkReceive`` refuses it;
* ``queued.max.request.bytes``: the bytes of requests read but not yet answered, over
  every connection of the cluster (:class:`QueuedBytes`).  A frame's size is taken
  from the pool when its four-byte prefix arrives, before its bytes are buffered, and
  given back once it is answered; while the pool is short the connection is not read
  (muted, as Kafka's memory pool mutes channels), so clients sending large frames wait
  instead of growing the process.  Kafka's default is unbounded; the emulator's is
  128 MiB (at least one largest frame, as Kafka requires);
* a connection that stalls the broker for ``stall_timeout`` seconds -- holding a
  partial frame without sending a byte, or not reading an answer -- is closed and its
  share of the pool freed (an emulator bound, in the place of Kafka's
  ``connections.max.idle.ms``, 10 minutes).

While a request is being answered the connection is still read, so a client that
goes away is noticed at once: :meth:`Inbound.unless_gone` cancels the answer (a
JoinGroup parked for a rebalance, a Fetch waiting for data) and the connection
closes, as Kafka closes a channel whose peer disconnected.
"""

from __future__ import annotations

import asyncio
import collections
import contextlib
from collections.abc import Awaitable
from typing import TypeVar

import attrs

from kclient.protocol.constants import DEFAULT_MAX_FRAME_SIZE
from kclient.protocol.framing import FrameDecoder

__all__ = ["ClientGone", "Inbound", "QueuedBytes", "RequestLog", "ServerLimits"]

T = TypeVar("T")

_READ_SIZE = 65536


@attrs.frozen
class ServerLimits:
    """The socket server's bounds (see the module text); Kafka's names in the comments."""

    #: ``socket.request.max.bytes``: the largest request frame.
    max_request_bytes: int = DEFAULT_MAX_FRAME_SIZE
    #: ``queued.max.request.bytes``: request bytes read but not answered, cluster-wide.
    queued_request_bytes: int = 128 * 1024 * 1024
    #: Seconds a connection may stall the broker (a partial frame, an answer unread).
    stall_timeout: float = 30.0
    #: Requests a broker's request log keeps, the newest (an emulator bound).
    request_log: int = 100_000
    #: Connections whose request lists a broker keeps, the newest, and requests per list.
    logged_connections: int = 1_000
    requests_per_connection: int = 1_000
    #: Decoded requests kept when capturing (``capture=True``), the newest.
    captured_requests: int = 10_000
    #: Distinct client software (KIP-511 name and version) a broker keeps counts for
    #: (Kafka keeps a gauge per software, at most 100 per network processor).
    client_software: int = 1_000


class ClientGone(Exception):
    """The client closed its side while its request was being answered."""


class QueuedBytes:
    """The cluster's pool for ``queued.max.request.bytes`` (see the module text)."""

    def __init__(self, capacity: int) -> None:
        self.capacity = capacity
        self.used = 0
        self._freed = asyncio.Condition()

    async def take(self, count: int) -> None:
        """Wait until ``count`` bytes fit, then take them (at most the capacity)."""
        count = min(count, self.capacity)
        async with self._freed:
            await self._freed.wait_for(lambda: self.used + count <= self.capacity)
            self.used += count

    def give_back(self, count: int) -> None:
        """Return ``count`` bytes taken earlier."""
        self.used -= min(count, self.capacity)

        async def notify() -> None:
            async with self._freed:
                self._freed.notify_all()

        # Wake waiters from a task: give_back runs in cleanup paths that must not wait.
        asyncio.get_running_loop().create_task(notify())


class RequestLog(list[T]):
    """A list that keeps its newest ``limit`` entries (the oldest half goes past it)."""

    def __init__(self, limit: int) -> None:
        super().__init__()
        self.limit = max(limit, 2)

    def append(self, item: T) -> None:
        if len(self) >= self.limit:
            del self[: self.limit // 2]
        super().append(item)


class Inbound:
    """The request frames of one connection (see the module text)."""

    def __init__(self, reader: asyncio.StreamReader, limits: ServerLimits,
                 pool: QueuedBytes) -> None:
        self._reader = reader
        self._limits = limits
        self._pool = pool
        self._decoder = FrameDecoder(limits.max_request_bytes, limit_option=None)
        self._frames: collections.deque[bytes] = collections.deque()
        self._partial = 0  # bytes taken from the pool for the frame being read
        self._ready = asyncio.Event()
        self._gone = asyncio.Event()

    async def run(self) -> None:
        """Read until the client closes; raise the decoder's error on a bad frame."""
        try:
            while True:
                timeout = self._limits.stall_timeout if self._partial else None
                try:
                    async with asyncio.timeout(timeout):
                        data = await self._reader.read(_READ_SIZE)
                except TimeoutError:
                    return  # a partial frame left idle: treated as a client gone
                if not data:
                    return
                self._decoder.feed(data)
                await self._split()
        finally:
            self._gone.set()
            self._ready.set()

    async def _split(self) -> None:
        while True:
            size = self._decoder.next_size()
            if size is None:
                return
            if not self._partial:
                if size < 0 or size > self._limits.max_request_bytes:
                    next(self._decoder)  # raises the decoder's error for this frame
                await self._pool.take(size + 4)
                self._partial = size + 4
            try:
                payload = next(self._decoder)
            except StopIteration:
                return
            self._frames.append(payload)
            self._partial = 0
            self._ready.set()

    async def next_frame(self, reading: asyncio.Future[None]) -> bytes | None:
        """The next whole request (None once the client has closed and none is left)."""
        while not self._frames:
            if reading.done():
                reading.result()  # a bad frame: raise its error
                return None
            self._ready.clear()
            await self._ready.wait()
        return self._frames.popleft()

    async def unless_gone(self, work: Awaitable[T]) -> T:
        """``work``'s result, or :class:`ClientGone` (``work`` cancelled) if the client
        closes first: for answers that wait (a parked request, a Fetch waiting for data)."""
        task = asyncio.ensure_future(work)
        gone = asyncio.ensure_future(self._gone.wait())
        try:
            await asyncio.wait({task, gone}, return_when=asyncio.FIRST_COMPLETED)
        finally:
            gone.cancel()
            if not task.done():
                task.cancel()
                with contextlib.suppress(asyncio.CancelledError, Exception):
                    await task
        if task.cancelled():
            raise ClientGone
        return task.result()

    def release(self, request: bytes) -> None:
        """Give back the pool share of an answered (or dropped) request."""
        self._pool.give_back(len(request) + 4)

    def close(self) -> None:
        """Give back what the connection still holds (unanswered and partial frames)."""
        held = sum(len(f) + 4 for f in self._frames) + self._partial
        self._frames.clear()
        self._partial = 0
        if held:
            self._pool.give_back(held)
