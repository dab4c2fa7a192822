"""One connection's requests and answers, sans I/O: correlation ids, order, size caps.

An :class:`Exchange` is what a Kafka connection knows apart from its socket:
which requests are in flight (by correlation id, oldest first), how large an
answer may be (a few KiB while negotiating, then ``max_frame_size``, or less
for a request that set its own cap), and whether frames without a Kafka header
(SASL v0 tokens) are expected.  Give it the bytes a socket produced
(:meth:`Exchange.receive`) and it says what they are; it never touches a socket,
a clock or an event loop, so it is tested with bytes alone.

Its phases and their legal changes are one table, :data:`TRANSITIONS` (as the
client's life is in :mod:`kclient.net.lifecycle`); a step the table does not
list raises a :class:`~kclient.errors.ProtocolError` naming both.
"""

from __future__ import annotations

import enum
import struct
from collections.abc import Callable
from typing import Any

import attrs

from kclient.errors import FrameTooLargeError, ProtocolError
from kclient.options import Text
from kclient.protocol.catalog import default_catalog
from kclient.protocol.constants import DEFAULT_MAX_FRAME_SIZE
from kclient.protocol.framing import FrameDecoder

__all__ = ["TRANSITIONS", "Answer", "Broken", "EmptyAnswer", "Exchange", "Incoming", "Pending",
           "Phase", "RawFrame", "Step"]

_CID = struct.Struct(">i")


class Phase(enum.Enum):
    """Where a connection is."""

    CLOSED = "closed"          #: no transport
    HANDSHAKE = "handshake"    #: transport open; ApiVersions and SASL answers only
    RAW = "raw"                #: SASL v0: tokens travel in frames without a Kafka header
    READY = "ready"            #: negotiated: answers may be as large as allowed

    def __str__(self) -> str:
        return self.value


class Step(enum.Enum):
    """What happens to a connection."""

    OPEN = "transport opened"
    RAW = "raw SASL frames begin"
    NEGOTIATED = "negotiated"
    CLOSE = "transport closed"

    def __str__(self) -> str:
        return self.value


P, S = Phase, Step
#: Every legal ``(phase, step)`` and the phase that follows.
TRANSITIONS: dict[tuple[Phase, Step], Phase] = {
    (P.CLOSED, S.OPEN): P.HANDSHAKE,
    (P.HANDSHAKE, S.RAW): P.RAW,
    (P.RAW, S.RAW): P.RAW,             # another token of the same exchange
    (P.HANDSHAKE, S.NEGOTIATED): P.READY,
    (P.RAW, S.NEGOTIATED): P.READY,    # authenticated: Kafka frames only from here
    (P.HANDSHAKE, S.CLOSE): P.CLOSED,
    (P.RAW, S.CLOSE): P.CLOSED,
    (P.READY, S.CLOSE): P.CLOSED,
    (P.CLOSED, S.CLOSE): P.CLOSED,     # closing twice is harmless
}
del P, S


@attrs.define(eq=False)
class Pending:
    """One request in flight.

    ``token`` is the caller's (the asyncio shell keeps the future there);
    ``decode`` turns the answer frame (correlation id first) into the value the
    caller gets; ``limit`` is the largest answer accepted for it, ``limit_reason``
    what a refusal quotes.
    """

    correlation_id: int
    api_key: int
    version: int
    token: Any
    decode: Callable[[int, int, bytes], Any]
    limit: int | None = None
    limit_reason: str = ""


@attrs.frozen
class Answer:
    """The answer frame of ``request`` (decode it with ``request.decode``)."""

    request: Pending
    payload: bytes


@attrs.frozen
class EmptyAnswer:
    """A zero-length frame: the broker does not support ``request`` (KIP-35's alternative)."""

    request: Pending


@attrs.frozen
class Broken:
    """Bytes the connection cannot go on from: ``error`` says why (close it).

    Always the last of what :meth:`Exchange.receive` returns; what came before
    it was complete and is to be delivered.
    """

    error: ProtocolError


@attrs.frozen
class RawFrame:
    """A frame without a Kafka header, while raw SASL tokens are expected."""

    payload: bytes


#: What :meth:`Exchange.receive` finds in the bytes.
Incoming = Answer | EmptyAnswer | RawFrame | Broken


class Exchange:
    """The request/answer state of one connection (see the module doc).

    ``handshake_limit`` bounds answers until :meth:`negotiated` (a peer that is
    not a Kafka broker may not make the client buffer more); ``max_frame_size``
    after.  ``limit_option`` and ``tls_option`` are the options (parameter names)
    frame errors point to; the errors keep them as :mod:`kclient.options` markers.
    """

    def __init__(self, *, max_frame_size: int = DEFAULT_MAX_FRAME_SIZE,
                 handshake_limit: int = 1 << 20, limit_option: str | None = "max_frame_size",
                 tls_option: str = "tls") -> None:
        self.max_frame_size = max_frame_size
        self.handshake_limit = handshake_limit
        self.limit_option = limit_option
        self.tls_option = tls_option
        self.phase = Phase.CLOSED
        self._pending: dict[int, Pending] = {}
        self._next_id = 0
        self._decoder = self._new_decoder()

    def __repr__(self) -> str:
        return f"Exchange({self.phase}, {len(self._pending)} in flight)"

    def _new_decoder(self) -> FrameDecoder:
        return FrameDecoder(max_frame_size=min(self.handshake_limit, self.max_frame_size),
                            limit_option=None, tls_option=self.tls_option)

    def _step(self, step: Step) -> None:
        after = TRANSITIONS.get((self.phase, step))
        if after is None:
            raise ProtocolError(f"{step} is not possible while the connection is {self.phase}")
        self.phase = after

    # -- phases ---------------------------------------------------------------------------
    def open(self) -> None:
        """A transport is open: answers are read from its first byte, handshake-sized."""
        self._step(Step.OPEN)
        self._decoder = self._new_decoder()

    def raw(self) -> None:
        """Frames without a Kafka header (SASL v0 tokens) are expected from now on."""
        self._step(Step.RAW)

    def negotiated(self) -> None:
        """Negotiation (and authentication) done: answers up to ``max_frame_size``."""
        self._step(Step.NEGOTIATED)
        self._decoder.max_frame_size = self.max_frame_size
        self._decoder.limit_option = self.limit_option

    def close(self) -> list[Pending]:
        """The transport closed: every request still in flight, oldest first, to fail."""
        self._step(Step.CLOSE)
        pending, self._pending = list(self._pending.values()), {}
        return pending

    # -- requests -------------------------------------------------------------------------
    def request(self, api_key: int, version: int, token: Any,
                decode: Callable[[int, int, bytes], Any], limit: int | None = None,
                limit_reason: str = "", *, answered: bool = True) -> Pending:
        """Register a request about to be written; its correlation id is on the result.

        ``answered=False`` for a request the broker never answers (Produce with
        ``acks=0``): it gets a correlation id but nothing waits for it.
        """
        if self.phase is Phase.CLOSED:
            raise ProtocolError("no request can be sent: the connection is closed")
        cid = self._next_id
        self._next_id = (self._next_id + 1) & 0x7FFFFFFF
        item = Pending(cid, api_key, version, token, decode, limit, limit_reason)
        if answered:
            self._pending[cid] = item
        return item

    def forget(self, correlation_id: int) -> Pending | None:
        """Drop a request whose write failed (its answer will never be waited for)."""
        return self._pending.pop(correlation_id, None)

    @property
    def in_flight(self) -> list[Pending]:
        """The requests still waiting for an answer, oldest first."""
        return list(self._pending.values())

    # -- bytes in ---------------------------------------------------------------------------
    def receive(self, data: bytes) -> list[Incoming]:
        """What ``data`` (the next bytes from the socket) completes, in order.

        Every frame is judged by its first bytes before the rest is buffered:
        the size prefix and the correlation id after it name the request it
        answers, and a frame larger than that request's cap, an answer to a
        correlation id nobody waits for (a Produce with ``acks=0`` included)
        and a frame when nothing was asked are refused from those bytes alone.
        Such a frame, or bytes that break the framing, end the list with a
        :class:`Broken` carrying the :class:`~kclient.errors.ProtocolError`
        (the connection must then close); the answers completed before it
        come first, so they are still delivered.
        """
        found: list[Incoming] = []
        try:
            self._decoder.feed(data)
            while True:
                self._check_next()
                payload = next(self._decoder, None)
                if payload is None:
                    return found
                found.append(self._classify(payload))
        except ProtocolError as exc:
            found.append(Broken(exc))
            return found

    def _check_next(self) -> None:
        """Refuse the next frame from its size prefix and correlation id, before its body.

        A frame's cap is the one of the request its correlation id names (Kafka
        answers in order, but a peer may not).  Sizes the decoder refuses itself
        (negative, or over the connection's bound) are left to it unless they
        answer a capped request: its diagnosis tells a peer that does not speak
        Kafka at all (HTTP, TLS).
        """
        size = self._decoder.next_size()
        if size is None or size < 0:
            return
        oversize = size > self._decoder.max_frame_size
        if not self._pending:
            if self.phase is Phase.RAW or oversize:
                return
            raise ProtocolError(f"a frame of {size} bytes arrived that nobody asked for; it "
                                "is refused before it is read", self._decoder.offset)
        head = self._decoder.next_head(_CID.size)
        if head is None:
            return  # an empty or too short frame (judged whole, it is tiny), or bytes to come
        (cid,) = _CID.unpack(head)
        item = self._pending.get(cid)
        if item is None:
            if oversize:
                return
            raise ProtocolError(f"an answer to correlation id {cid} arrived, which no request "
                                "in flight has", self._decoder.offset)
        if item.limit is not None and size > item.limit:
            raise FrameTooLargeError(Text(
                f"the answer to {_name(item)} announces {size} bytes, more than the "
                f"{item.limit} bytes allowed for it (", item.limit_reason, "); it is "
                "refused before it is read"), self._decoder.offset)

    def _classify(self, payload: bytes) -> Incoming:
        """A whole frame that :meth:`_check_next` let through."""
        if not self._pending:
            return RawFrame(payload)  # nothing is asked while raw SASL tokens travel
        if not payload:
            # A size-0 frame answers the oldest request: Kafka answers in order.
            oldest = next(iter(self._pending))
            return EmptyAnswer(self._pending.pop(oldest))
        if len(payload) < 4:
            raise ProtocolError(f"a {len(payload)}-byte frame is too short for a correlation "
                                "id", 0)
        (cid,) = _CID.unpack_from(payload)
        return Answer(self._pending.pop(cid), payload)


def _name(item: Pending) -> str:
    return f"{default_catalog().name_of(item.api_key)} v{item.version}"

