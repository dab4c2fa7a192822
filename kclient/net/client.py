"""The cluster client: a live, refreshed view of what every broker speaks.

:class:`Client` bootstraps from the first reachable server, asks it for the
cluster's brokers (Metadata at the negotiated version), connects to every broker
concurrently (bounded by ``max_concurrency``) and negotiates with each.  One
supervisor task per broker keeps its connection: when it closes, the supervisor
reconnects with backoff and jitter, asks ApiVersions again and rebuilds the
view; ``on_change`` callbacks get the difference.  Queries (``version_for``,
``supports``, ``explain``...) read an immutable :class:`ClusterView` snapshot, so
they never wait for the network.

Verdicts fail closed (``strict=True``, the default): a broker that Metadata lists
but that has never answered ApiVersions makes every API and feature it could
block *unknown*, which ``supports`` and ``version_for`` treat as "no" and
``explain`` names with the reason.  A broker that answered before and is
unreachable now (restarting, say) is *stale*: its last answer keeps counting
until Metadata stops listing it, so ranges never widen and verdicts never flip
because a broker went away.  ``strict=False`` is the explicit opt-in to ignore
brokers that never answered; reports then say which ones were ignored.
"""

from __future__ import annotations

import asyncio
import contextlib
import functools
import inspect
import logging
import math
import random
from collections.abc import Awaitable, Callable, Collection, Iterable, Mapping, Sequence
from datetime import UTC, datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any

import attrs

from kclient.address import address_problem, parse_bootstrap
from kclient.errors import (
    AuthenticationError,
    BrokerConnectionError,
    ClientClosedError,
    ConfigError,
    KClientError,
    ProtocolError,
)
from kclient.events import EVENTS, LOGGER, emit
from kclient.negotiation.diff import ViewDiff, diff_views
from kclient.negotiation.features import (
    FeatureReport,
    FeatureResult,
    FeatureSet,
    evaluate_features,
    explain_feature,
    load_features,
)
from kclient.negotiation.model import (
    ApiSupport,
    ApplicationVersions,
    BrokerVersions,
    ClusterView,
)
from kclient.negotiation.snapshot import SnapshotRecord, utc_now
from kclient.negotiation.verdict import BrokerState
from kclient.net import routing
from kclient.net.connection import (
    DEFAULT_CONNECT_TIMEOUT,
    DEFAULT_REQUEST_TIMEOUT,
    Connection,
    validate_client_software,
)
from kclient.net.tls import TlsOption, client_ssl_context
from kclient.options import PYTHON, Vocabulary

if TYPE_CHECKING:
    from kclient.sasl import SaslConfig

__all__ = ["ChangeCallback", "Client", "parse_bootstrap"]

log = logging.getLogger("kclient.net")

ChangeCallback = Callable[[ViewDiff, ClusterView], Awaitable[None] | None]
_PENDING = "not negotiated yet (connecting)"


def _metadata_body() -> dict[str, Any]:
    # v0 has no way to ask for "no topics" (an empty list means all); v1+ do.
    return {"topics": [], "allow_auto_topic_creation": False,
            "include_cluster_authorized_operations": False,
            "include_topic_authorized_operations": False}


@attrs.define(eq=False)
class _Slot:
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
        _resolve(self.signal)


#: The most brokers a Metadata answer may list (one connection and task each).
DEFAULT_MAX_BROKERS = 10_000
#: The shortest periodic Metadata refresh and SASL retry delay accepted (seconds).
_MIN_METADATA_REFRESH = 0.05
_MIN_AUTH_RETRY = 0.05
#: How long close() waits for an interrupted start() to clean up (seconds).
_CLOSE_WAIT = 5.0


def _check_seconds(name: str, value: float | None, floor: float) -> None:
    """A duration option must be a finite number of seconds above ``floor`` (None: unset)."""
    if value is None:
        return
    if isinstance(value, bool) or not isinstance(value, int | float) or not (
            math.isfinite(value)) or value <= 0 or value < floor:
        least = f"at least {floor}" if floor else "more than 0"
        raise ConfigError(f"{name} must be a finite number of seconds, {least}; got {value!r}")


def _announce_state(versions: BrokerVersions) -> None:
    """The structured event for a broker whose state changed."""
    name = {BrokerState.STALE: "broker.stale", BrokerState.UNKNOWN: "broker.unknown",
            BrokerState.ANSWERED: "broker.answered"}[versions.state]
    emit(name, f"{versions.label}: {versions.state}"
         + (f" ({versions.error})" if versions.error else ""),
         broker=versions.label, error=versions.error)


def _printable(text: str) -> str:
    """``text`` with control characters escaped, for names that came off the wire."""
    if text.isprintable():
        return text
    return "".join(ch if ch.isprintable() else ascii(ch)[1:-1] for ch in text)


def _resolve(future: asyncio.Future[None] | None, *_: object) -> None:
    if future is not None and not future.done():
        future.set_result(None)


class Client:
    """A Kafka cluster seen through ApiVersions: ``async with Client("host:9092") as c: ...``.

    Parameters mirror the settings of the negotiation core: ``max_versions`` /
    ``min_versions`` / ``avoid_versions`` narrow what the application speaks
    (keyed by API name or key), ``features`` is a :class:`FeatureSet` or a path
    to a features.yaml (default: the shipped one), ``api_version_fallback`` is the
    release to assume for brokers that predate ApiVersions, ``client_software``
    is sent in ApiVersions v3+ (KIP-511), ``tls`` is a :class:`~kclient.net.tls.TlsConfig`,
    an :class:`ssl.SSLContext` or ``True``, ``sasl`` a :class:`kclient.sasl.SaslConfig`.
    ``on_change`` callbacks (sync or async) receive ``(diff, view)``.
    ``strict`` (default True) fails closed on brokers that have not answered;
    ``strict=False`` ignores them (see the module documentation).
    ``vocabulary`` names options in messages (the command line passes its flags).
    """

    def __init__(
        self,
        bootstrap_servers: str | Sequence[str],
        *,
        features: FeatureSet | str | Path | None = None,
        client_software: str | tuple[str, str] | None = None,
        api_version_fallback: str | None = None,
        max_versions: Mapping[str | int, int] | None = None,
        min_versions: Mapping[str | int, int] | None = None,
        avoid_versions: Mapping[str | int, Iterable[int]] | None = None,
        tls: TlsOption = None,
        sasl: SaslConfig | None = None,
        strict: bool = True,
        connect_timeout: float = DEFAULT_CONNECT_TIMEOUT,
        request_timeout: float = DEFAULT_REQUEST_TIMEOUT,
        metadata_refresh_interval: float | None = 300.0,
        max_concurrency: int = 64,
        max_brokers: int = DEFAULT_MAX_BROKERS,
        client_id: str = "kclient",
        cluster_name: str | None = None,
        startup_wait: float | None = None,
        reconnect_backoff: float = 0.05,
        reconnect_backoff_max: float = 1.0,
        auth_retry_backoff: float = 30.0,
        on_change: ChangeCallback | Iterable[ChangeCallback] | None = None,
        vocabulary: Vocabulary = PYTHON,
    ) -> None:
        self._bootstrap = parse_bootstrap(bootstrap_servers)
        if isinstance(features, FeatureSet):
            self.features = features
        else:
            self.features = load_features(features)
        self.application = ApplicationVersions.from_catalog(
            max_versions=max_versions, min_versions=min_versions,
            avoid_versions=avoid_versions)
        validate_client_software(client_software)
        client_ssl_context(tls)  # fail early on a bad TLS setup
        if isinstance(max_concurrency, bool) or not isinstance(max_concurrency, int) or (
                max_concurrency < 1):
            raise ConfigError(f"max_concurrency must be a whole number, 1 or more; got "
                              f"{max_concurrency!r}")
        if isinstance(max_brokers, bool) or not isinstance(max_brokers, int) or max_brokers < 1:
            raise ConfigError(f"max_brokers must be a whole number, 1 or more; got "
                              f"{max_brokers!r}")
        self.max_brokers = max_brokers
        for name, value, floor in (
                ("connect_timeout", connect_timeout, 0.0),
                ("request_timeout", request_timeout, 0.0),
                ("reconnect_backoff", reconnect_backoff, 0.0),
                ("reconnect_backoff_max", reconnect_backoff_max, 0.0),
                # Below these, a dead broker or a refused password turns into a storm.
                ("auth_retry_backoff", auth_retry_backoff, _MIN_AUTH_RETRY),
                ("metadata_refresh_interval", metadata_refresh_interval, _MIN_METADATA_REFRESH),
                ("startup_wait", startup_wait, 0.0)):
            _check_seconds(name, value, floor)
        if reconnect_backoff_max < reconnect_backoff:
            raise ConfigError(f"reconnect_backoff ({reconnect_backoff}) must be at most "
                              f"reconnect_backoff_max ({reconnect_backoff_max})")
        self._conn_options: dict[str, Any] = {
            "client_id": client_id, "client_software": client_software,
            "application": self.application, "api_version_fallback": api_version_fallback,
            "tls": tls, "sasl": sasl, "connect_timeout": connect_timeout,
            "request_timeout": request_timeout, "vocabulary": vocabulary,
        }
        self.strict = strict
        self.cluster_name = cluster_name
        self.connect_timeout = connect_timeout
        self.request_timeout = request_timeout
        self.metadata_refresh_interval = metadata_refresh_interval
        self.max_concurrency = max_concurrency
        self.startup_wait = (connect_timeout + request_timeout if startup_wait is None
                             else startup_wait)
        self.reconnect_backoff = reconnect_backoff
        self.reconnect_backoff_max = reconnect_backoff_max
        self.auth_retry_backoff = auth_retry_backoff
        self._callbacks: list[ChangeCallback] = []
        if on_change is not None:
            for cb in [on_change] if callable(on_change) else on_change:
                self.on_change(cb)
        self._view = ClusterView((), self.application, strict, cluster_name)
        # The latest answer per broker.  While the client starts, answers only land
        # here and the view is built once when the startup wait ends (or when it is
        # read); afterwards every answer publishes a new view at once.
        self._members: dict[int, BrokerVersions] = {}
        self._batching = False
        self._dirty = False
        self._report: tuple[ClusterView, FeatureReport] | None = None
        self._slots: dict[int, _Slot] = {}
        self._sem: asyncio.Semaphore | None = None
        self._events: asyncio.Queue[ViewDiff | None] | None = None
        self._dispatcher: asyncio.Task[None] | None = None
        self._metadata_task: asyncio.Task[None] | None = None
        self._started = False
        self._closing = False
        self._notify = False
        self._starting: asyncio.Future[None] | None = None
        self._start_task: asyncio.Task[Any] | None = None
        self._close_requested = False
        self._retiring: set[asyncio.Task[None]] = set()
        self.cluster_id: str | None = None
        self.controller_id: int | None = None

    # -- snapshot queries ---------------------------------------------------------------
    @property
    def view(self) -> ClusterView:
        """The current cluster view (immutable; a new object after each change)."""
        if self._dirty:
            self._publish()
        return self._view

    @property
    def brokers(self) -> tuple[BrokerVersions, ...]:
        """Every known broker: negotiated ones and failed ones (``error`` says why)."""
        return self.view.brokers

    @property
    def cluster(self) -> dict[int, ApiSupport]:
        """Cluster-wide support per API key (KIP-35 intersection, usable version, blockers)."""
        return self.view.api_ranges()

    def version_for(self, api: str | int, broker: int | None = None) -> int:
        """The version of ``api`` to send cluster-wide or to ``broker``.

        Cluster-wide (the default) is the highest version every broker can take,
        the one to use when a request may go to any broker; with ``broker`` it is
        that broker's own highest usable version.  Raises
        :class:`~kclient.errors.UnsupportedVersionError` naming the blocking
        brokers when there is none, or its subclass
        :class:`~kclient.errors.VerdictUnknownError` naming the brokers that have
        not answered yet.
        """
        return self.view.version_for(api, broker)

    def report(self) -> FeatureReport:
        """Every feature of :attr:`features` evaluated on the current view."""
        view = self.view
        cached = self._report
        if cached is None or cached[0] is not view:
            cached = (view, view.evaluate(self.features))
            self._report = cached
        return cached[1]

    def feature(self, name: str) -> FeatureResult:
        """The verdict on one feature.

        Raises :class:`~kclient.errors.UnknownFeatureError` (also a ``KeyError``)
        suggesting names when the features file does not define ``name``.
        """
        return self.report()[name]

    def supports(self, feature: str) -> bool:
        """True only when ``feature`` is available on every broker that matters.

        Unavailable and unknown (a listed broker has not answered) both give
        False; :meth:`explain` says which it is.
        """
        return self.feature(feature).available

    def explain(self, feature: str) -> str:
        """Why ``feature`` is available, unavailable or unknown, in one paragraph.

        It names the blocking brokers, the brokers that have not answered and
        why (timeout, refused, TLS, authentication...), and the unreachable
        brokers counted with their last answer and how old it is.
        """
        definition = self.features[feature]
        fresh = evaluate_features(self.view, [definition], now=datetime.now(UTC))
        return explain_feature(fresh.results[0])

    def snapshot(self, cluster: str | None = None) -> list[SnapshotRecord]:
        """One snapshot record (the snapshot-record contract) per broker of the current view."""
        name = cluster or self.cluster_name or self.cluster_id or "unnamed"
        now = utc_now()
        return [SnapshotRecord.from_broker(name, b, now) for b in self.view.brokers]

    def on_change(self, callback: ChangeCallback) -> ChangeCallback:
        """Register ``callback(diff, view)`` (sync or async); usable as a decorator."""
        if not callable(callback):
            raise ConfigError("on_change needs a callable")
        self._callbacks.append(callback)
        return callback

    def connection(self, node_id: int) -> Connection:
        """The live connection to broker ``node_id``."""
        slot = self._slots.get(node_id)
        if slot is None or slot.conn is None or slot.conn.closed:
            raise BrokerConnectionError("no live connection to this broker",
                                        f"node {node_id}")
        return slot.conn

    def controller(self) -> int:
        """The controller's node id (see :func:`kclient.net.routing.controller`)."""
        return routing.controller(self)

    def any_broker(self) -> int:
        """A connected broker's node id (see :func:`kclient.net.routing.any_broker`)."""
        return routing.any_broker(self)

    def least_loaded(self) -> int:
        """The connected broker with the fewest requests in flight (see
        :func:`kclient.net.routing.least_loaded`)."""
        return routing.least_loaded(self)

    async def request(self, api: str | int, body: Mapping[str, Any] | Any,
                      broker: int | None = None, version: int | None = None, *,
                      cluster_wide: bool = False,
                      drop_unsupported: bool | Collection[str] = False) -> Any:
        """Send a request to ``broker`` (any connected broker when ``None``).

        The version sent is, in order: ``version`` when given; the cluster-wide
        version (:meth:`version_for` without a broker) when ``cluster_wide`` is
        true; otherwise the receiving broker's own highest usable version, which
        during a rolling upgrade may be newer than the cluster-wide one.
        ``drop_unsupported`` is :meth:`Connection.request`'s: a set field the
        version lacks raises :class:`~kclient.errors.FieldVersionError` unless
        it is true (or names the field).
        """
        if cluster_wide:
            if version is not None:
                raise ConfigError("give either version or cluster_wide=True, not both")
            version = self.version_for(api)
        if broker is not None:
            return await self.connection(broker).request(
                api, body, version, drop_unsupported=drop_unsupported)
        for slot in self._slots.values():
            if slot.conn is not None and not slot.conn.closed:
                return await slot.conn.request(api, body, version,
                                               drop_unsupported=drop_unsupported)
        raise BrokerConnectionError("no broker is connected; check client.brokers for errors")

    # -- lifecycle ------------------------------------------------------------------------
    async def __aenter__(self) -> Client:
        await self.start()
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.close()

    async def start(self) -> None:
        """Bootstrap, discover the brokers and negotiate with each (see the class doc).

        A second call while the first runs waits for it and shares its outcome;
        :meth:`close` during start-up makes ``start`` raise
        :class:`~kclient.errors.ClientClosedError` at once, leaving nothing open.
        """
        if self._starting is not None:
            await asyncio.shield(self._starting)
            return
        if self._started:
            return
        loop = asyncio.get_running_loop()
        self._starting = loop.create_future()
        self._start_task = asyncio.current_task()
        self._close_requested = False
        self._started = True
        self._closing = False
        self._sem = asyncio.Semaphore(self.max_concurrency)
        self._events = asyncio.Queue()
        self._dispatcher = asyncio.create_task(self._dispatch(), name="kclient-on-change")
        self._batching = True
        try:
            conn = await self._bootstrap_connection()
            try:
                brokers = await self._metadata(conn)
            except BaseException:
                await conn.close()
                raise
            await self._apply_metadata(brokers, adopt=conn)
            await self._wait_first(list(self._slots.values()), self.startup_wait)
            self._end_batch()
            self._notify = True
        except BaseException as exc:
            failure: BaseException = exc
            task = asyncio.current_task()
            if (isinstance(exc, asyncio.CancelledError) and self._close_requested
                    and task is not None and task.uncancel() == 0):
                # Cancelled by our own close(), not by the caller: a typed error.
                failure = ClientClosedError("close() was called while start() was running; "
                                            "the client is closed")
            await self.close()
            self._finish_start(failure)
            if failure is exc:
                raise
            raise failure from None
        self._finish_start(None)
        if self.metadata_refresh_interval:
            self._metadata_task = asyncio.create_task(self._metadata_loop(),
                                                      name="kclient-metadata")

    def _finish_start(self, failure: BaseException | None) -> None:
        starting, self._starting, self._start_task = self._starting, None, None
        if starting is None or starting.done():
            return
        if failure is None:
            starting.set_result(None)
        else:
            starting.set_exception(failure if isinstance(failure, Exception) else
                                   ClientClosedError("start() was cancelled"))
            starting.exception()  # waiters re-raise it; nobody else needs to look

    async def close(self) -> None:
        """Close every connection and stop every background task (also during start)."""
        self._closing = True
        start_task = self._start_task
        if (start_task is not None and start_task is not asyncio.current_task()
                and not start_task.done() and not self._close_requested):
            self._close_requested = True
            start_task.cancel()
            starting = self._starting
            if starting is not None:
                # start() cleans up what it opened and then raises; wait for that
                # (bounded), so nothing it created outlives this call.
                with contextlib.suppress(Exception):
                    await asyncio.wait_for(asyncio.shield(starting), _CLOSE_WAIT)
        self._end_batch()
        tasks = [s.task for s in self._slots.values() if s.task is not None]
        tasks.extend(self._retiring)
        for extra in (self._metadata_task,):
            if extra is not None:
                tasks.append(extra)
        for task in tasks:
            task.cancel()
        await asyncio.gather(*tasks, return_exceptions=True)
        for slot in self._slots.values():
            if slot.conn is not None:
                await slot.conn.close()
            slot.task = None
            for waiter in slot.waiters:
                if not waiter.done():
                    waiter.cancel()
        self._metadata_task = None
        if self._dispatcher is not None and self._events is not None:
            self._events.put_nowait(None)
            with contextlib.suppress(asyncio.CancelledError):
                await self._dispatcher
        self._dispatcher = None
        self._started = False
        self._notify = False

    async def refresh(self) -> ViewDiff:
        """Ask Metadata and every broker's ApiVersions again now; return the overall diff."""
        if not self._started:
            raise BrokerConnectionError("the client is not started; use `async with Client(...)`")
        before = self.view
        try:
            brokers = await self._metadata_any()
        except KClientError as exc:
            log.debug("refresh: Metadata failed (%s); re-asking the known brokers", exc)
        else:
            await self._apply_metadata(brokers)
        loop = asyncio.get_running_loop()
        waits = []
        for slot in list(self._slots.values()):
            if slot.task is None:
                continue  # an address that cannot be connected to: nothing to re-ask
            future: asyncio.Future[None] = loop.create_future()
            slot.waiters.append(future)
            slot.wake()
            waits.append(future)
        if waits:
            await asyncio.wait(waits, timeout=self.startup_wait)
        return diff_views(before, self.view, self.features)

    # -- bootstrap and metadata -------------------------------------------------------------
    def _new_connection(self, host: str, port: int, node_id: int, rack: str | None
                        ) -> Connection:
        return Connection(host, port, node_id=node_id, rack=rack, **self._conn_options)

    async def _bootstrap_connection(self) -> Connection:
        errors = []
        auth_failures = 0
        for host, port in self._bootstrap:
            conn = self._new_connection(host, port, -1, None)
            try:
                await conn.connect()
            except KClientError as exc:
                log.debug("bootstrap %s:%d failed: %s", host, port, exc)
                errors.append(str(exc))
                auth_failures += isinstance(exc, AuthenticationError)
                continue
            return conn
        if errors and auth_failures == len(errors):
            # Every bootstrap server refused the credentials: say so with its own type.
            raise AuthenticationError("no bootstrap server accepted the SASL credentials: "
                                      + "; ".join(errors))
        raise BrokerConnectionError("no bootstrap server could be negotiated with: "
                                    + "; ".join(errors))

    async def _metadata(self, conn: Connection) -> list[tuple[int, str, int, str | None]]:
        version = conn.version_for("Metadata")
        # Before v4 a broker never auto-creates topics for an empty list: nothing is lost.
        response = await conn.request("Metadata", _metadata_body(), version,
                                      drop_unsupported=("allow_auto_topic_creation",))
        cluster_id = getattr(response, "cluster_id", None)
        self.cluster_id = cluster_id if isinstance(cluster_id, str) else self.cluster_id
        if len(response.brokers) > self.max_brokers:
            raise ProtocolError(
                f"{conn.broker_label}: Metadata lists {len(response.brokers)} brokers, more "
                f"than max_brokers={self.max_brokers}; kclient keeps one connection per "
                "broker, so it refuses the answer (raise max_brokers if the cluster really "
                "is that large)")
        controller = getattr(response, "controller_id", None)
        self.controller_id = int(controller) if controller is not None else None
        return [(int(b.node_id), str(b.host), int(b.port), getattr(b, "rack", None))
                for b in response.brokers]

    async def _metadata_any(self) -> list[tuple[int, str, int, str | None]]:
        for slot in list(self._slots.values()):
            conn = slot.conn
            if conn is not None and not conn.closed:
                try:
                    return await self._metadata(conn)
                except KClientError as exc:
                    log.debug("Metadata from %s failed: %s", conn.broker_label, exc)
        conn = await self._bootstrap_connection()
        try:
            return await self._metadata(conn)
        finally:
            await conn.close()

    async def _apply_metadata(self, brokers: list[tuple[int, str, int, str | None]],
                              adopt: Connection | None = None) -> None:
        wanted = {node_id: (host, port, rack) for node_id, host, port, rack in brokers}
        for node_id in [n for n, s in self._slots.items()
                        if n not in wanted or (s.host, s.port) != wanted[n][:2]]:
            await self._drop_slot(node_id)
        adopted = False
        for node_id, (host, port, rack) in sorted(wanted.items()):
            if node_id in self._slots:
                continue
            slot = _Slot(node_id, host, port, rack)
            self._slots[node_id] = slot
            problem = address_problem(host, port)
            if problem is not None:
                # A broken or hostile Metadata answer: never connect, say why, keep going.
                self._set_broker(BrokerVersions(
                    node_id, _printable(host), port if 0 < port < 65536 else 0, rack=rack,
                    error=f"Metadata lists an invalid address for this broker: {problem}"),
                    notify=False)
                _resolve(slot.first_done)
                continue
            initial: Connection | None = None
            if adopt is not None and not adopted and (adopt.host, adopt.port) == (host, port):
                adopt.adopt(node_id, rack)
                initial, adopted = adopt, True
            self._set_broker(BrokerVersions(node_id, host, port, rack=rack, error=_PENDING),
                             notify=False)
            slot.task = asyncio.create_task(self._supervise(slot, initial),
                                            name=f"kclient-broker-{node_id}")
        if adopt is not None and not adopted:
            await adopt.close()

    async def _drop_slot(self, node_id: int) -> None:
        slot = self._slots.pop(node_id)
        if slot.task is not None:
            slot.task.cancel()
            await asyncio.gather(slot.task, return_exceptions=True)
        if slot.conn is not None:
            await slot.conn.close()
        for waiter in slot.waiters:
            if not waiter.done():
                waiter.set_result(None)
        if self._members.pop(node_id, None) is not None:
            self._changed(notify=True)

    async def _metadata_loop(self) -> None:
        assert self.metadata_refresh_interval
        while not self._closing:
            await asyncio.sleep(self.metadata_refresh_interval)
            try:
                brokers = await self._metadata_any()
            except KClientError as exc:
                log.debug("periodic Metadata refresh failed: %s", exc)
                continue
            await self._apply_metadata(brokers)

    async def _wait_first(self, slots: list[_Slot], timeout: float) -> None:
        # Plain futures, no task per broker: startup cost stays small for big clusters.
        waits = [s.first_done for s in slots if not s.first_done.done()]
        if waits:
            await asyncio.wait(waits, timeout=timeout)

    # -- per-broker supervision -----------------------------------------------------------------
    async def _negotiate(self, slot: _Slot) -> tuple[BrokerVersions, Connection | None, bool]:
        """Connect and negotiate; returns (versions, live connection or None, auth failed)."""
        conn = self._new_connection(slot.host, slot.port, slot.node_id, slot.rack)
        assert self._sem is not None
        try:
            async with self._sem:
                versions = await conn.connect()
        except AuthenticationError as exc:
            message = f"authentication failed: {exc}"
            if conn.negotiated:
                # The broker answered ApiVersions before refusing the credentials.
                answered = attrs.evolve(conn.versions, answered_at=datetime.now(UTC))
                return answered.went_stale(message), None, True
            return self._last_known(slot).went_stale(message), None, True
        except KClientError as exc:
            reason = exc.reason if isinstance(exc, BrokerConnectionError) else str(exc)
            return self._last_known(slot).went_stale(reason), None, False
        except Exception as exc:
            log.debug("node %d: unexpected error while negotiating", slot.node_id,
                      exc_info=True)
            await conn.close()
            reason = f"unexpected {type(exc).__name__} while connecting: {exc}"
            return self._last_known(slot).went_stale(reason), None, False
        return attrs.evolve(versions, answered_at=datetime.now(UTC)), conn, False

    def _last_known(self, slot: _Slot) -> BrokerVersions:
        """The broker's latest entry in the view, or an unknown one at the slot's address."""
        known = self._members.get(slot.node_id)
        if known is not None and (known.host, known.port) == (slot.host, slot.port):
            return known
        return BrokerVersions(slot.node_id, slot.host, slot.port, rack=slot.rack,
                              error=_PENDING)

    async def _supervise(self, slot: _Slot, initial: Connection | None) -> None:
        live: Connection | None = None  # the connection requests are using
        try:
            while not self._closing:
                auth_failed = False
                if initial is not None and not initial.closed:
                    conn: Connection | None = initial
                    versions = attrs.evolve(initial.versions, answered_at=datetime.now(UTC))
                    initial = None
                else:
                    slot.woken = False
                    # On a forced refresh ``live`` keeps serving requests until the
                    # new connection is ready; then it closes once they are answered.
                    versions, conn, auth_failed = await self._negotiate(slot)
                    if live is not None:
                        self._retire(live)
                live = conn
                slot.conn = conn
                self._set_broker(versions)
                _resolve(slot.first_done)
                self._release_waiters(slot)
                if conn is not None:
                    slot.failures = 0
                    if await self._wait(slot, conn, None):
                        continue  # forced refresh: negotiate again now
                    live = None
                    log.debug("%s: connection closed (%s); reconnecting", conn.broker_label,
                              conn.close_reason)
                    delay = self._backoff(0)
                else:
                    slot.failures += 1
                    delay = (self.auth_retry_backoff if auth_failed
                             else self._backoff(slot.failures))
                    log.debug("node %d: negotiation failed (%s); retrying in %.2fs",
                              slot.node_id, versions.error, delay)
                await self._wait(slot, None, delay)
        finally:
            if slot.conn is not None:
                await slot.conn.close()

    def _retire(self, conn: Connection) -> None:
        """Close ``conn`` once the requests in flight on it are answered (bounded)."""
        task = asyncio.create_task(conn.close_when_idle(self.request_timeout),
                                   name=f"kclient-retire-{conn.node_id}")
        self._retiring.add(task)
        task.add_done_callback(self._retiring.discard)

    async def _wait(self, slot: _Slot, conn: Connection | None, delay: float | None) -> bool:
        """Wait until ``conn`` closes, ``delay`` seconds pass or the slot is woken.

        Returns True when woken (a forced refresh).  One future and callbacks, no
        helper tasks: every supervised broker waits here.
        """
        if slot.woken:
            return True
        loop = asyncio.get_running_loop()
        signal: asyncio.Future[None] = loop.create_future()
        fire = functools.partial(_resolve, signal)
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

    def _backoff(self, failures: int) -> float:
        base = min(self.reconnect_backoff_max, self.reconnect_backoff * (1 << min(failures, 30)))
        jitter: float = random.uniform(0.5, 1.0)
        return base * jitter

    def _release_waiters(self, slot: _Slot) -> None:
        waiters, slot.waiters = slot.waiters, []
        for waiter in waiters:
            if not waiter.done():
                waiter.set_result(None)

    # -- view updates and notifications --------------------------------------------------------
    def _set_broker(self, versions: BrokerVersions, notify: bool = True) -> None:
        node_id = versions.node_id
        if node_id not in self._slots:
            return
        previous = self._members.get(node_id)
        same = previous == versions
        self._members[node_id] = versions
        if not same and versions.state is not (previous.state if previous else None):
            _announce_state(versions)
        if same:
            # Same answer again: remember its newer time (the age of a later stale
            # entry) but publish and announce nothing.
            return
        self._changed(notify)

    def _changed(self, notify: bool) -> None:
        """``_members`` changed: publish a new view now, or later while starting.

        Building a view costs time linear in the number of brokers, so building
        one per answer while a large cluster starts would be quadratic.
        """
        if self._batching:
            self._dirty = True
            return
        old = self._view
        self._publish()
        announce = LOGGER.isEnabledFor(EVENTS["view.changed"])
        if notify and self._notify and (self._callbacks or announce) and (
                self._events is not None):
            diff = diff_views(old, self._view, self.features)
            if diff:
                emit("view.changed", "; ".join(diff.lines()),
                     cluster=self.cluster_name or self.cluster_id, changes=diff.lines())
                if self._callbacks:
                    self._events.put_nowait(diff)

    def _end_batch(self) -> None:
        self._batching = False
        if self._dirty:
            self._publish()

    def _publish(self) -> None:
        self._dirty = False
        members = self._members
        self._view = attrs.evolve(self._view,
                                  brokers=tuple(members[n] for n in sorted(members)))

    async def _dispatch(self) -> None:
        assert self._events is not None
        while True:
            diff = await self._events.get()
            if diff is None:
                return
            view = self.view
            for callback in list(self._callbacks):
                try:
                    result = callback(diff, view)
                    if inspect.isawaitable(result):
                        await result
                except Exception:
                    log.exception("on_change callback %r failed", callback)

    @classmethod
    def from_config(cls, config: Mapping[str, Any], **overrides: Any) -> Client:
        """A client from librdkafka / Java client keys (see :mod:`kclient.config`)."""
        from kclient.config import client_options_from_config
        return cls(**{**client_options_from_config(config), **overrides})
