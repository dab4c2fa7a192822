"""One asyncio connection to one broker: handshake, requests, TLS, SASL.

A :class:`Connection` connects (with a timeout, optionally over TLS), asks the
broker which versions it speaks (ApiVersions, following the ladder of
:mod:`kclient.negotiation.ladder`), authenticates when SASL is configured, and
then sends requests at the highest version both sides speak.  A background
reader task matches responses to requests by correlation id, so several
requests may be in flight.  Supported versions belong to the connection: a new
connection asks again.
"""

from __future__ import annotations

import asyncio
import collections
import contextlib
import logging
import ssl
import time
from collections.abc import Callable, Collection, Mapping
from typing import TYPE_CHECKING, Any

import attrs

from kclient._version import __version__
from kclient.address import format_address
from kclient.errors import (
    BrokerConnectionError,
    ConfigError,
    HandshakeError,
    KClientError,
    ProtocolError,
    RequestTimeoutError,
    UnsupportedRequestError,
)
from kclient.events import emit
from kclient.negotiation import answer, ladder
from kclient.negotiation.answer import ApiVersionsAnswer
from kclient.negotiation.clientrules import topic_name_cap, with_client_values
from kclient.negotiation.model import (
    ApplicationVersions,
    BrokerVersions,
    api_key_of,
    fallback_broker,
)
from kclient.negotiation.releases import resolve_release
from kclient.negotiation.software import SOFTWARE_PATTERN
from kclient.net.defaults import (
    CLOSE_WAIT,
    DEFAULT_CLIENT_ID,
    DEFAULT_CONNECT_TIMEOUT,
    DEFAULT_REQUEST_TIMEOUT,
)
from kclient.net.sasl import authenticate
from kclient.net.settings import check_seconds
from kclient.net.tls import TlsOption, client_ssl_context
from kclient.options import Option, Text, joined
from kclient.protocol import decode_response, encode_request, frame
from kclient.protocol.constants import DEFAULT_MAX_FRAME_SIZE, ApiKey, ErrorCode
from kclient.protocol.exchange import (
    Answer,
    EmptyAnswer,
    Exchange,
    Pending,
    Phase,
    RawFrame,
)
from kclient.protocol.headers import Route, route
from kclient.protocol.schema import version_problem
from kclient.protocol.versioncheck import check_request
from kclient.values import count_problem, port_problem

if TYPE_CHECKING:
    from kclient.sasl import SaslConfig

__all__ = [
    "DEFAULT_MAX_FRAME_SIZE",
    "HANDSHAKE_FRAME_LIMIT",
    "Connection",
    "check_request_options",
    "validate_client_software",
]

log = logging.getLogger("kclient.net")

# A frame size is an int32; below a few bytes no Kafka answer fits at all.
_INT32_MAX = 2**31 - 1
_MIN_FRAME_LIMIT = 16
#: Answers larger than this (bytes) are decoded in a worker thread: decoding 10 MB
#: of small entries takes seconds of Python, which would stall the event loop.
DECODE_OFF_LOOP_ABOVE = 256 * 1024
#: The largest frame accepted before the handshake is done (ApiVersions and SASL
#: answers; a Kafka 4.x ApiVersions answer is about 1 KiB).
HANDSHAKE_FRAME_LIMIT = 1 << 20

def validate_client_software(value: str | tuple[str, str] | None) -> tuple[str, str]:
    """The (name, version) to send in ApiVersions v3+; :class:`ConfigError` if invalid.

    ``None`` means kclient's own (``"kclient"``, ``kclient.__version__``); a bare
    name gets kclient's version.  Both must match KIP-511's pattern, which the
    broker enforces (it rejects the connection otherwise).  This is kclient's one
    check of that rule; the message names the option (``client_software``).
    """
    if value is None:
        name, version = "kclient", __version__
    elif isinstance(value, str):
        name, version = value, __version__
    elif isinstance(value, tuple) and len(value) == 2:
        name, version = value
    else:
        raise ConfigError(Text(Option("client_software"), " must be a name or a (name, "
                               f"version) pair of text; got {value!r}"))
    for what, text in (("name", name), ("version", version)):
        if not isinstance(text, str) or SOFTWARE_PATTERN.fullmatch(text) is None:
            raise ConfigError(Text(
                f"client software {what} {text!r} is invalid: brokers accept only letters, "
                "digits, '-' and '.', starting and ending with a letter or digit (KIP-511); "
                "fix ", Option("client_software")))
    return name, version


def check_request_options(*, version: object = None, drop_unsupported: object = False,
                          broker: object = None, cluster_wide: object = False) -> None:
    """Refuse, typed, a request argument of the wrong kind (each naming its option).

    ``version`` an API version or ``None``; ``drop_unsupported`` True, False or
    field names; ``broker`` a node id or ``None``; ``cluster_wide`` True or False.
    """
    wrong: list[Text] = []
    if version is not None and (problem := version_problem(version)) is not None:
        wrong.append(Text(Option("version"), f" {problem}"))
    if not isinstance(drop_unsupported, bool) and (
            isinstance(drop_unsupported, str | bytes)
            or not isinstance(drop_unsupported, Collection)
            or not all(isinstance(name, str) for name in drop_unsupported)):
        wrong.append(Text(Option("drop_unsupported"), " must be True, False or a list of "
                          f"field names; got {drop_unsupported!r}"))
    if broker is not None and (isinstance(broker, bool) or not isinstance(broker, int)):
        wrong.append(Text(Option("broker"), f" must be a broker's node id (a whole number) or "
                          f"None; got {broker!r}"))
    if not isinstance(cluster_wide, bool):
        wrong.append(Text(Option("cluster_wide"), f" must be True or False; got "
                          f"{cluster_wide!r}"))
    if wrong:
        raise ConfigError(joined("; ", wrong))


def _decode_message(api_key: int, version: int, payload: bytes) -> Any:
    return decode_response(api_key, version, payload)[1]


def _routed_decoder(plan: Route) -> Callable[[int, int, bytes], Any]:
    """The decoder of the answers to ``plan``'s requests (the exchange hands it their
    key and version, which are the route's)."""
    return lambda _key, _version, payload: plan.decode_response(payload)[1]


#: What a TLS handshake that a listener ignores or drops means, and what to do.
_SPEAKS_PLAINTEXT = Text("the listener probably speaks plaintext: connect without TLS (leave "
                         "out ", Option("tls", "the tls argument"), ")")


class _Closed(Exception):
    """Internal: the transport closed before an answer (the ladder's Closed outcome)."""


def _with_broker(exc: ProtocolError, label: str) -> ProtocolError:
    """``exc`` with the broker named in front of its message (same type and offset)."""
    if exc.detail.startswith(label):
        return exc
    try:
        named = type(exc)(Text(label, ": ", exc.detail), exc.offset)
    except TypeError:  # a subclass with its own constructor: keep it as it is
        return exc
    named.__cause__ = exc.__cause__
    return named


class Connection:
    """A connection to one broker.

    Create it, then ``await conn.connect()`` (or use ``async with``).  After
    that :attr:`versions` holds what the broker advertised on this connection
    and :meth:`request` sends requests.  ``node_id`` is the broker's id as the
    cluster's Metadata lists it (``-1`` for a bootstrap server).
    """

    def __init__(
        self,
        host: str,
        port: int,
        *,
        node_id: int = -1,
        rack: str | None = None,
        client_id: str | None = DEFAULT_CLIENT_ID,
        client_software: str | tuple[str, str] | None = None,
        application: ApplicationVersions | None = None,
        api_version_fallback: str | None = None,
        tls: TlsOption = None,
        sasl: SaslConfig | None = None,
        connect_timeout: float = DEFAULT_CONNECT_TIMEOUT,
        request_timeout: float = DEFAULT_REQUEST_TIMEOUT,
        max_frame_size: int = DEFAULT_MAX_FRAME_SIZE,
    ) -> None:
        check_seconds("connect_timeout", connect_timeout)
        check_seconds("request_timeout", request_timeout)
        if isinstance(max_frame_size, bool) or not isinstance(max_frame_size, int) or not (
                _MIN_FRAME_LIMIT <= max_frame_size <= _INT32_MAX):
            raise ConfigError(Text(Option("max_frame_size"), " must be a whole number of "
                                   f"bytes from {_MIN_FRAME_LIMIT} to {_INT32_MAX}; got "
                                   f"{max_frame_size!r}"))
        if (problem := port_problem(port)) is not None:
            raise ConfigError(problem)
        wrong = [f"{name} must be {kind}, not {value!r}" for name, value, kind, ok in (
            ("host", host, "text", isinstance(host, str)),
            ("node_id", node_id, "a whole number",
             isinstance(node_id, int) and not isinstance(node_id, bool)),
            ("rack", rack, "text or None", rack is None or isinstance(rack, str)),
            ("client_id", client_id, "text or None",
             client_id is None or isinstance(client_id, str))) if not ok]
        if wrong:
            raise ConfigError("; ".join(wrong))
        self.host = host
        self.port = int(port)
        self.node_id = node_id
        self.rack = rack
        self.client_id = client_id
        self.software = validate_client_software(client_software)
        self.application = application or ApplicationVersions.from_catalog()
        if api_version_fallback is not None:
            resolve_release(api_version_fallback)  # a typo fails here, not at fallback time
        # Kept as the caller wrote it; the assumed broker's source names the release
        # as Kafka does (releases.fallback_source: "fallback:0.9.0").
        self.fallback = api_version_fallback.strip() if api_version_fallback else None
        self._ssl, self._server_name = client_ssl_context(tls)
        self.sasl = sasl
        self.connect_timeout = connect_timeout
        self.request_timeout = request_timeout
        self.max_frame_size = max_frame_size
        self._versions: BrokerVersions | None = None
        self._writer: asyncio.StreamWriter | None = None
        self._reader_task: asyncio.Task[None] | None = None
        # Requests in flight, answer order, size caps and the phase: the sans-I/O part.
        self._exchange = Exchange(max_frame_size=max_frame_size,
                                  handshake_limit=HANDSHAKE_FRAME_LIMIT)
        self._raw_frames: collections.deque[bytes] = collections.deque()
        self._raw_waiter: asyncio.Future[bytes] | None = None
        self._close_reason: KClientError | None = None
        self._closed_event = asyncio.Event()
        self._closed_event.set()
        self._close_watchers: list[asyncio.Future[None]] = []

    # -- identity ----------------------------------------------------------------
    @property
    def address(self) -> str:
        """``host:port`` (an IPv6 host in brackets: ``[::1]:9092``)."""
        return format_address(self.host, self.port)

    @property
    def broker_label(self) -> str:
        """How messages name this broker."""
        if self.node_id < 0:
            return f"bootstrap {self.address}"
        return f"node {self.node_id} ({self.address})"

    @property
    def ssl_context(self) -> ssl.SSLContext | None:
        """The TLS context this connection uses (``None``: plaintext); a client's
        connections all share one."""
        return self._ssl

    def __repr__(self) -> str:
        return f"<Connection {self.broker_label} {self._exchange.phase}>"

    # -- state ---------------------------------------------------------------------
    @property
    def versions(self) -> BrokerVersions:
        """What the broker advertised on this connection (after :meth:`connect`)."""
        if self._versions is None:
            raise BrokerConnectionError("not negotiated yet: call connect() first",
                                        self.broker_label)
        return self._versions

    @property
    def negotiated(self) -> bool:
        """True once the handshake produced :attr:`versions`."""
        return self._versions is not None

    @property
    def closed(self) -> bool:
        """True when the transport is not open."""
        return self._exchange.phase is Phase.CLOSED

    @property
    def close_reason(self) -> KClientError | None:
        """Why the connection closed (``None`` while open or after a clean close)."""
        return self._close_reason

    async def wait_closed(self) -> None:
        """Return once the connection has closed (for whatever reason)."""
        await self._closed_event.wait()

    def when_closed(self) -> asyncio.Future[None]:
        """A future done once the connection has closed (already done when it is).

        Unlike :meth:`wait_closed` it needs no task to be watched: add a done
        callback, or cancel it to stop watching.
        """
        future: asyncio.Future[None] = asyncio.get_running_loop().create_future()
        if self._closed_event.is_set():
            future.set_result(None)
        else:
            self._close_watchers = [f for f in self._close_watchers if not f.done()]
            self._close_watchers.append(future)
        return future

    def api_range(self, api_key: int) -> tuple[int, int] | None:
        """The broker's ``(min, max)`` for ``api_key`` on this connection, or ``None``."""
        rng = self._versions.apis.get(api_key) if self._versions is not None else None
        return None if rng is None else (rng.min, rng.max)

    def version_for(self, api: str | int) -> int:
        """The version of ``api`` to send to this broker: its own highest usable one.

        The rule is :meth:`ApplicationVersions.version_with`; raises
        :class:`~kclient.errors.UnsupportedVersionError` when there is none.
        """
        return self.application.require_version(api, self.versions)

    def adopt(self, node_id: int, rack: str | None = None) -> None:
        """Give a bootstrap connection the broker identity Metadata revealed."""
        self.node_id, self.rack = node_id, rack
        if self._versions is not None:
            self._versions = attrs.evolve(self._versions, node_id=node_id, rack=rack)

    # -- lifecycle -----------------------------------------------------------------
    async def __aenter__(self) -> Connection:
        await self.connect()
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.close()

    async def connect(self) -> BrokerVersions:
        """Connect, negotiate versions (handshake ladder) and authenticate if configured.

        Returns the broker's versions.  Raises :class:`BrokerConnectionError` when
        the broker cannot be reached, :class:`HandshakeError` when the ladder
        fails, :class:`RequestTimeoutError`, :class:`ProtocolError` on garbage and
        :class:`AuthenticationError` when SASL fails (:attr:`versions` then still
        holds the negotiated versions).
        """
        if self._exchange.phase is not Phase.CLOSED:
            raise BrokerConnectionError("already connected; close() first", self.broker_label)
        self._versions = None
        started = time.perf_counter()
        try:
            versions = await self._handshake()
            self._versions = versions
            emit("handshake.done", f"{self.broker_label}: negotiated ({versions.source})",
                 broker=self.broker_label, source=versions.source,
                 steps=list(versions.handshake),
                 duration_ms=round((time.perf_counter() - started) * 1000, 2))
            if self.sasl is not None:
                await authenticate(self, self.sasl)
        except BaseException as exc:
            await self.close()
            if self._versions is None and isinstance(exc, KClientError):
                emit("handshake.failed", f"{self.broker_label}: {exc}",
                     broker=self.broker_label, error=str(exc),
                     duration_ms=round((time.perf_counter() - started) * 1000, 2))
            raise
        if self._exchange.phase is not Phase.CLOSED:
            self._exchange.negotiated()  # answers may now be as large as allowed
        return versions

    async def close(self) -> None:
        """Close the connection; requests in flight fail with :class:`BrokerConnectionError`."""
        await self._shutdown(None)

    async def close_when_idle(self, timeout: float) -> None:
        """Close once the requests in flight now are answered, or after ``timeout`` seconds.

        For replacing a connection without failing the requests already sent on
        it (a forced refresh).  Requests still unanswered at the deadline fail as
        with :meth:`close`.
        """
        waiting = [item.token for item in self._exchange.in_flight]
        try:
            if waiting:
                await asyncio.wait(waiting, timeout=timeout)
        finally:
            await self.close()

    # -- transport -----------------------------------------------------------------
    async def _open_transport(self) -> None:
        log.debug("%s: connecting%s", self.broker_label, " (TLS)" if self._ssl else "")
        server_hostname = None
        if self._ssl is not None:
            server_hostname = self._server_name or self.host
        # TCP first, then TLS, so a silent TLS handshake is told apart from a silent port.
        tcp: asyncio.StreamWriter | None = None
        try:
            async with asyncio.timeout(self.connect_timeout):
                reader, writer = await asyncio.open_connection(self.host, self.port)
                tcp = writer
                if self._ssl is not None:
                    await writer.start_tls(self._ssl, server_hostname=server_hostname)
        except TimeoutError:
            if tcp is not None:
                tcp.close()
                raise BrokerConnectionError(Text(
                    f"TCP connected, but the TLS handshake got no answer within "
                    f"{self.connect_timeout:g}s: ", _SPEAKS_PLAINTEXT),
                    self.broker_label) from None
            raise BrokerConnectionError(Text(
                f"connect timed out after {self.connect_timeout:g}s; check the address and "
                "firewalls, or raise ", Option("connect_timeout")),
                self.broker_label) from None
        except ssl.SSLCertVerificationError as exc:
            if tcp is not None:
                tcp.close()
            why = exc.verify_message or exc.reason or str(exc)
            raise BrokerConnectionError(Text(
                f"TLS certificate verification failed: {why}; check the CA (",
                Option("TlsConfig.ca_file"), ") and that the certificate names this host"),
                self.broker_label) from None
        except ssl.SSLError as exc:
            if tcp is not None:
                tcp.close()
            raise BrokerConnectionError(
                f"TLS handshake failed: {exc.reason or exc}; check the CA, the certificate's "
                "host name (server_name) and that the listener speaks TLS",
                self.broker_label) from None
        except OSError as exc:
            if tcp is not None:
                tcp.close()
            reason = exc.strerror or str(exc) or type(exc).__name__
            if self._ssl is not None and (isinstance(exc, ConnectionResetError)
                                          or not (exc.strerror or str(exc))):
                raise BrokerConnectionError(Text(
                    f"the listener closed the connection during the TLS handshake "
                    f"({reason}): ", _SPEAKS_PLAINTEXT), self.broker_label) from None
            raise BrokerConnectionError(
                f"cannot connect: {reason}; check that the broker is running "
                "and the address is right", self.broker_label) from None
        self._writer = writer
        self._exchange.open()
        self._close_reason = None
        self._closed_event.clear()
        self._raw_frames.clear()
        task = asyncio.create_task(self._read_loop(reader), name=f"kclient-reader-{self.address}")
        self._reader_task = task
        task.add_done_callback(self._reader_done)

    def _reader_done(self, task: asyncio.Task[None]) -> None:
        if self._reader_task is task:
            self._reader_task = None

    def abort(self, reason: KClientError | None = None) -> None:
        """Close the socket now, without waiting; requests in flight fail with ``reason``.

        For shutting many connections at once (a client's close): nothing here
        awaits, so an interrupted caller leaves no socket open.  :meth:`close`
        does the same and then waits (bounded) for the socket to finish closing.
        """
        self._abort(reason)

    def _abort(self, reason: KClientError | None) -> asyncio.StreamWriter | None:
        """Close without awaiting; returns the writer whose closing is left to wait for."""
        task = self._reader_task
        if task is not None and task is not asyncio.current_task():
            task.cancel()  # the task forgets itself when done (see _open_transport)
        if self._exchange.phase is Phase.CLOSED and self._writer is None:
            return None
        in_flight = self._exchange.close()
        if reason is not None and self._close_reason is None:
            self._close_reason = reason
        failure: KClientError = reason or BrokerConnectionError(
            "connection closed by the client", self.broker_label)
        self._fail_pending(in_flight, failure)
        writer, self._writer = self._writer, None
        if writer is not None:
            writer.close()
        self._closed_event.set()
        watchers, self._close_watchers = self._close_watchers, []
        for watcher in watchers:
            if not watcher.done():
                watcher.set_result(None)
        return writer

    async def _shutdown(self, reason: KClientError | None) -> None:
        # The socket is closed before the first await, so a caller cancelled while
        # this waits leaves no descriptor behind; every wait is bounded.
        writer = self._abort(reason)
        task = self._reader_task
        if task is not None and task is not asyncio.current_task():
            await asyncio.wait([task], timeout=CLOSE_WAIT)
        if writer is not None:
            with contextlib.suppress(OSError, TimeoutError, ssl.SSLError):
                async with asyncio.timeout(CLOSE_WAIT):
                    await writer.wait_closed()

    def _fail_pending(self, in_flight: list[Pending], error: KClientError) -> None:
        for item in in_flight:
            if not item.token.done():
                item.token.set_exception(error)
        waiter, self._raw_waiter = self._raw_waiter, None
        if waiter is not None and not waiter.done():
            waiter.set_exception(error)

    async def _read_loop(self, reader: asyncio.StreamReader) -> None:
        reason: KClientError
        try:
            while True:
                data = await reader.read(65536)
                if not data:
                    reason = BrokerConnectionError("connection closed by the broker",
                                                   self.broker_label)
                    break
                # Answers complete before broken bytes are delivered, then it closes.
                for incoming in self._exchange.receive(data):
                    if isinstance(incoming, Answer):
                        await self._deliver(incoming.request, incoming.payload)
                    elif isinstance(incoming, EmptyAnswer):
                        self._deliver_empty(incoming.request)
                    elif isinstance(incoming, RawFrame):
                        self._deliver_raw(incoming.payload)
                    else:
                        raise incoming.error
        except ProtocolError as exc:
            log.debug("%s: protocol error, closing: %s", self.broker_label, exc)
            reason = _with_broker(exc, self.broker_label)
        except (OSError, ssl.SSLError) as exc:
            reason = BrokerConnectionError(
                f"connection reset: {getattr(exc, 'strerror', None) or exc}", self.broker_label)
        except asyncio.CancelledError:
            raise
        await self._shutdown(reason)

    def _deliver_empty(self, item: Pending) -> None:
        """KIP-35's rejected alternative: a size-0 frame answers an unknown request."""
        name = self.application.name_of(item.api_key)
        if not item.token.done():
            item.token.set_exception(UnsupportedRequestError(
                f"request not supported by server: {name} v{item.version} was answered "
                "with an empty frame", self.broker_label))

    async def _deliver(self, item: Pending, payload: bytes) -> None:
        """Decode an answer and hand it to its request; a large one off the event loop
        (decoding 10 MB of small entries takes seconds of Python), so every other
        broker's supervision and every SyncClient call keep running meanwhile."""
        try:
            if len(payload) > DECODE_OFF_LOOP_ABOVE:
                message = await asyncio.to_thread(item.decode, item.api_key, item.version,
                                                  payload)
            else:
                message = item.decode(item.api_key, item.version, payload)
        except ProtocolError as exc:
            if not item.token.done():
                item.token.set_exception(exc)
            raise
        if not item.token.done():
            item.token.set_result(message)

    def _deliver_raw(self, payload: bytes) -> None:
        waiter, self._raw_waiter = self._raw_waiter, None
        if waiter is not None and not waiter.done():
            waiter.set_result(payload)
        else:
            self._raw_frames.append(payload)

    # -- requests --------------------------------------------------------------------
    def _check_open(self) -> None:
        if self._exchange.phase is Phase.CLOSED or self._writer is None:
            raise self._close_reason or BrokerConnectionError(
                "not connected; call connect() first", self.broker_label)

    async def _send(self, api_key: int, version: int, body: Any,
                    decode: Callable[[int, int, bytes], Any] = _decode_message,
                    limit: tuple[int, str] | None = None, answered: bool = True,
                    plan: Route | None = None) -> asyncio.Future[Any]:
        self._check_open()
        future: asyncio.Future[Any] = asyncio.get_running_loop().create_future()
        item = self._exchange.request(api_key, version, future, decode, *(limit or (None, "")),
                                      answered=answered)
        try:
            payload = (encode_request(api_key, version, item.correlation_id, self.client_id, body)
                       if plan is None else
                       plan.encode_request(item.correlation_id, self.client_id, body))
        except BaseException:
            self._exchange.forget(item.correlation_id)
            raise
        try:
            await self._write(frame(payload))
        except BaseException as exc:
            # Nobody will await this request's future: forget it, and mark an
            # error it may already carry (the connection closed meanwhile) as seen.
            self._exchange.forget(item.correlation_id)
            if future.done():
                future.exception()
            else:
                future.cancel()
            if not isinstance(exc, OSError | ssl.SSLError):
                raise
            error = self._close_reason or BrokerConnectionError(
                f"send failed: {exc}", self.broker_label)
            await self._shutdown(error)
            raise error from None
        return future

    async def _write(self, data: bytes) -> None:
        """Write ``data`` and wait until the transport takes more.

        Never onto a transport that is lost or closing: asyncio drops such writes
        and logs "socket.send() raised exception" for each one, and until the
        reader task has closed this connection, every request in between would
        write there.  That is a lost connection (an :class:`OSError`), as a failed
        write is.
        """
        writer = self._writer
        assert writer is not None
        if writer.transport.is_closing():
            raise ConnectionResetError("the connection was lost")
        writer.write(data)
        await writer.drain()

    def _silent_listener(self) -> Text:
        """Why a listener says nothing to ApiVersions, most likely cause first.

        Brokers answer ApiVersions at once, before authentication, so silence is
        seldom a slow broker."""
        causes = " or a proxy" if self._ssl is not None else Text(
            ", a proxy or a TLS listener (connect with TLS: ", Option("tls", "tls=True"), ")")
        return Text(". Brokers answer ApiVersions at once, before authentication, so this is "
                    "most often a wrong port", causes, ", seldom a slow broker (raise ",
                    Option("request_timeout"), ")")

    async def _await(self, future: asyncio.Future[Any], what: str, timeout: float | None,
                     why_silent: Text | None = None) -> Any:
        """The answer of ``future``; after the timeout, the connection is closed and a
        :class:`RequestTimeoutError` says ``why_silent`` (default: a slow broker)."""
        limit = self.request_timeout if timeout is None else timeout
        # asyncio.timeout, not wait_for: on Python 3.11 wait_for drops a cancellation
        # that arrives together with the answer, and a cancelled supervisor then
        # carries on (close() and refresh() waited for it forever).
        try:
            async with asyncio.timeout(limit):
                return await future
        except TimeoutError:
            why = why_silent if why_silent is not None else Text(
                " (raise ", Option("request_timeout"), " for slow brokers)")
            error = RequestTimeoutError(Text(
                f"no answer to {what} within {limit:g}s; the connection is closed", why),
                self.broker_label)
            await self._shutdown(error)
            raise error from None

    async def request(self, api: str | int, body: Mapping[str, Any] | Any,
                      version: int | None = None, *, timeout: float | None = None,
                      drop_unsupported: bool | Collection[str] = False,
                      max_response_size: tuple[int, str] | None = None) -> Any:
        """Send a request and return the decoded response body (``None`` for a Produce
        with ``acks=0``, which brokers never answer: it returns once written).

        ``api`` is a name (``"Metadata"``) or key; ``version`` defaults to the
        highest version both sides speak (minus the application's avoided
        versions), capped at the newest version of kclient's spec for it.
        Raises :class:`UnsupportedVersionError` when there is none,
        :class:`UnsupportedRequestError` when the broker answers with an empty
        frame, :class:`RequestTimeoutError` after ``timeout`` (default
        ``request_timeout``) and :class:`ProtocolError` on a malformed answer
        (the connection is closed then).

        A field of ``body`` set to a non-default value that ``version`` lacks
        raises :class:`FieldVersionError` before anything is sent, unless
        ``drop_unsupported`` is true (or lists that field); fields dropped so,
        and ``ignorable`` ones Kafka drops anyway, are listed on the response's
        ``dropped_fields``.

        ``max_response_size`` is ``(bytes, reason)``: an answer announcing more
        bytes than that is refused with :class:`FrameTooLargeError` (quoting the
        reason) before it is read, and the connection is closed.  Without it
        the connection's ``max_frame_size`` is the only bound.
        """
        key = api_key_of(api, self.application.catalog)
        check_request_options(version=version, drop_unsupported=drop_unsupported)
        if timeout is not None:
            check_seconds("timeout", timeout)
        if max_response_size is not None and not (
                isinstance(max_response_size, tuple) and len(max_response_size) == 2
                and count_problem(max_response_size[0]) is None):
            raise ConfigError(Text(Option("max_response_size"), " must be (bytes, reason) with "
                                   f"bytes a whole number, 1 or more; got {max_response_size!r}"))
        if version is None:
            version = self.request_version(key, body)
        plan = route(key, version)  # the names and codecs of this API and version, resolved once
        rng = self.api_range(key)
        message, dropped = check_request(
            plan.request_name, version, with_client_values(key, body), drop=drop_unsupported,
            broker=self.broker_label, broker_max=None if rng is None else rng[1],
            route=plan)
        if key == ApiKey.PRODUCE and getattr(message, "acks", None) == 0:
            # A broker never answers a Produce with acks=0: sent is done.
            await self._send(key, version, message, answered=False, plan=plan)
            return None
        future = await self._send(key, version, message, _routed_decoder(plan),
                                  limit=max_response_size, plan=plan)
        response = await self._await(future, f"{plan.name} v{version}", timeout)
        if dropped:
            with contextlib.suppress(AttributeError):
                response._dropped = dropped
        return response

    def request_version(self, api: str | int, body: Any = None) -> int:
        """The version :meth:`request` sends by default: :meth:`version_for`.

        The application's range is what kclient's codec sends (the catalog is
        derived from the shipped specs), so the version named is always one the
        codec can encode.  With ``body``, a request that names topics without
        topic ids stays below the versions that name topics by id only
        (:func:`~kclient.negotiation.clientrules.topic_name_cap`), which would
        drop the names.
        """
        key = api_key_of(api, self.application.catalog)
        return self.application.require_version(key, self.versions,
                                                topic_name_cap(key, body))

    @property
    def in_flight(self) -> int:
        """How many requests sent on this connection still wait for their answer."""
        return len(self._exchange.in_flight)

    # -- raw frames (SASL v0 flow) ------------------------------------------------------
    async def send_raw_frame(self, payload: bytes) -> None:
        """Write ``payload`` with a size prefix and no Kafka header (SASL v0 tokens)."""
        self._check_open()
        if self._exchange.phase is not Phase.RAW:
            self._exchange.raw()
        try:
            await self._write(frame(bytes(payload)))
        except (OSError, ssl.SSLError) as exc:
            error = BrokerConnectionError(f"send failed: {exc}", self.broker_label)
            await self._shutdown(error)
            raise error from None

    async def receive_raw_frame(self) -> bytes:
        """Read one size-prefixed frame (SASL v0 tokens); may be empty."""
        if self._raw_frames:
            return self._raw_frames.popleft()
        self._check_open()
        waiter: asyncio.Future[bytes] = asyncio.get_running_loop().create_future()
        self._raw_waiter = waiter
        return await self._await(waiter, "a SASL token", None)  # type: ignore[no-any-return]

    # -- handshake ---------------------------------------------------------------------
    def _decode_api_versions(self, api_key: int, version: int, payload: bytes
                             ) -> ApiVersionsAnswer:
        # The ApiVersions response header is always v0 (the correlation id alone),
        # so the rest of the frame is the same on every broker with the same ranges.
        try:
            return answer.read_api_versions(version, payload[4:])
        except ProtocolError as exc:
            raise ProtocolError(f"{self.broker_label} sent an ApiVersions v{version} answer "
                                f"kclient cannot use: {exc.detail}", exc.offset) from None

    async def _api_versions(self, version: int) -> ApiVersionsAnswer:
        body: dict[str, Any] = {}
        if version >= 3:
            body = {"client_software_name": self.software[0],
                    "client_software_version": self.software[1]}
        try:
            future = await self._send(ApiKey.API_VERSIONS, version, body, self._decode_api_versions)
        except BrokerConnectionError as exc:
            raise _Closed(str(exc)) from None
        try:
            result: ApiVersionsAnswer = await self._await(future, f"ApiVersions v{version}",
                                                          None, self._silent_listener())
            return result
        except RequestTimeoutError:
            raise
        except ProtocolError:
            raise
        except BrokerConnectionError as exc:
            raise _Closed(str(exc).removeprefix(f"broker {self.broker_label}: ")) from None

    async def _handshake(self) -> BrokerVersions:
        decision, state = ladder.start_for(self.application, self.fallback,
                                           plaintext=self._ssl is None)
        log.debug("%s: %s", self.broker_label, state.steps[-1])
        response: ApiVersionsAnswer | None = None
        while True:
            if decision.kind == "send":
                assert decision.version is not None
                version = decision.version
                if decision.reconnect or self._exchange.phase is Phase.CLOSED:
                    await self._shutdown(None)
                    await self._open_transport()
                outcome: ladder.Outcome
                try:
                    response = await self._api_versions(version)
                except _Closed as exc:
                    outcome = ladder.Closed(version, str(exc))
                else:
                    code = response.error_code
                    if code == ErrorCode.NONE:
                        outcome = ladder.Answered(version)
                    else:
                        outcome = ladder.Rejected(version, code, response.key18)
                decision, state = ladder.next_step(state, outcome)
                log.debug("%s: %s", self.broker_label, state.steps[-1])
                continue
            if decision.kind == "done":
                assert response is not None
                return answer.broker_versions(response, self.node_id, self.host, self.port,
                                              rack=self.rack, handshake=state.steps)
            if decision.kind == "fallback":
                assert decision.release is not None
                await self._shutdown(None)
                await self._open_transport()
                return fallback_broker(decision.release, self.node_id, self.host, self.port,
                                       self.rack, handshake=state.steps)
            await self._shutdown(None)
            steps = "; ".join(state.steps)
            raise HandshakeError(Text(decision.message, f" (steps: {steps})"), self.broker_label)
