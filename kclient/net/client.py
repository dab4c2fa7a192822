"""The cluster client: a live, refreshed view of what every broker speaks.

:class:`Client` bootstraps from the first reachable server, asks it for the
cluster's brokers (Metadata at the negotiated version), connects to every broker
concurrently (bounded by ``max_concurrency``) and negotiates with each.  One
supervisor task per broker keeps its connection: when it closes, the supervisor
reconnects with backoff and jitter, asks ApiVersions again and rebuilds the
view; ``on_change`` callbacks get the difference.  Queries (``version_for``,
``supports``, ``explain``...) read an immutable :class:`ClusterView` snapshot, so
they never wait for the network.  The supervision itself lives in
:mod:`kclient.net.supervisor`, the client's states and their legal transitions
in :mod:`kclient.net.lifecycle`.

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
import inspect
import logging
from collections.abc import Awaitable, Callable, Collection, Iterable, Mapping, Sequence
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, Literal

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
from kclient.installed import ApplicationOption, resolve_application
from kclient.negotiation.clientrules import topic_name_cap
from kclient.negotiation.diff import ViewDiff, diff_views
from kclient.negotiation.evaluation import (
    FeatureReport,
    FeatureResult,
    evaluate_features,
    explain_feature,
)
from kclient.negotiation.featurefile import load_features
from kclient.negotiation.features import FeatureSet
from kclient.negotiation.model import (
    ApiSupport,
    ApplicationVersions,
    BrokerVersions,
    ClusterView,
    api_key_of,
)
from kclient.negotiation.snapshot import SnapshotRecord, utc_now
from kclient.negotiation.verdict import BrokerState
from kclient.net import routing
from kclient.net.config import client_options_from_config
from kclient.net.connection import (
    Connection,
    check_request_options,
    validate_client_software,
)
from kclient.net.defaults import (
    CLOSE_WAIT,
    DEFAULT_APPLICATION,
    DEFAULT_AUTH_RETRY_BACKOFF,
    DEFAULT_CLIENT_ID,
    DEFAULT_CONNECT_TIMEOUT,
    DEFAULT_MAX_BROKERS,
    DEFAULT_MAX_CONCURRENCY,
    DEFAULT_MAX_RESPONSE_SIZE,
    DEFAULT_METADATA_REFRESH_INTERVAL,
    DEFAULT_RECONNECT_BACKOFF,
    DEFAULT_RECONNECT_BACKOFF_MAX,
    DEFAULT_REQUEST_TIMEOUT,
    METADATA_BYTES_PER_BROKER,
    MIN_METADATA_REFRESH_INTERVAL,
    metadata_answer_limit,
)
from kclient.net.lifecycle import Event, Lifecycle, State, illegal
from kclient.net.settings import Backoff, Timeouts, check_seconds
from kclient.net.supervisor import (
    PENDING,
    Answered,
    BrokerEvent,
    BrokerSlot,
    Supervisor,
    resolve,
)
from kclient.net.tls import TlsOption, prepare_tls
from kclient.options import Option, Text, joined
from kclient.sasl import SaslConfig
from kclient.values import count_problem

__all__ = ["ChangeCallback", "Client", "change_callback", "change_callbacks",
           "parse_bootstrap"]

log = logging.getLogger("kclient.net")
#: Why an answer over max_response_size is refused (made once: every request carries it).
_RESPONSE_CAP_REASON = Text(Option("max_response_size"), "; raise it for larger answers")

ChangeCallback = Callable[[ViewDiff, ClusterView], Awaitable[None] | None]


def _metadata_body() -> dict[str, Any]:
    # v0 has no way to ask for "no topics" (an empty list means all); v1+ do.
    return {"topics": [], "allow_auto_topic_creation": False,
            "include_cluster_authorized_operations": False,
            "include_topic_authorized_operations": False}



def change_callback(callback: object) -> ChangeCallback:
    """``callback`` when it can be an ``on_change`` callback; else a :class:`ConfigError`."""
    if not callable(callback):
        raise ConfigError(f"on_change needs a callable, not {callback!r}")
    return callback


def change_callbacks(on_change: object) -> list[ChangeCallback]:
    """The callbacks an ``on_change`` argument gives: one, a list of them, or ``None``."""
    if on_change is None:
        return []
    if callable(on_change):
        return [change_callback(on_change)]
    if isinstance(on_change, Iterable) and not isinstance(on_change, str | bytes):
        callbacks = list(on_change)
        if all(callable(callback) for callback in callbacks):
            return callbacks
    raise ConfigError(f"on_change must be a callable or a list of callables, not {on_change!r}")


def _check_types(*, features: object, sasl: object, strict: object, client_id: object,
                 cluster_name: object, api_version_fallback: object) -> None:
    """Arguments of the wrong type fail here, typed, rather than deep inside later."""
    wrong: list[str] = []
    if not (features is None or isinstance(features, FeatureSet | str | Path)):
        wrong.append(f"features must be a FeatureSet or a file path, not {features!r}")
    if not (sasl is None or isinstance(sasl, SaslConfig)):
        wrong.append(f"sasl must be a kclient.SaslConfig (e.g. SaslConfig('PLAIN', "
                     f"username, password)), not {sasl!r}")
    if not isinstance(strict, bool):
        wrong.append(f"strict must be True or False, not {strict!r}")
    if not isinstance(client_id, str):
        wrong.append(f"client_id must be text, not {client_id!r}")
    for name, value in (("cluster_name", cluster_name),
                        ("api_version_fallback", api_version_fallback)):
        if not (value is None or isinstance(value, str)):
            wrong.append(f"{name} must be text or None, not {value!r}")
    if wrong:
        raise ConfigError("; ".join(wrong))


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


class Client:
    """A Kafka cluster seen through ApiVersions: ``async with Client("host:9092") as c: ...``.

    Parameters mirror the settings of the negotiation core: ``max_versions`` /
    ``min_versions`` / ``avoid_versions`` narrow what the application speaks
    (keyed by API name or key); ``application`` instead names the Kafka library
    the application runs (``"aiokafka==0.14.0"``, ``"installed:aiokafka"``, see
    :mod:`kclient.installed`), so verdicts answer for that library;
    ``features`` is a :class:`FeatureSet` or a path to a features.yaml
    (default: the shipped one), ``api_version_fallback`` is the release to assume
    for brokers that predate ApiVersions, ``client_software`` is sent in
    ApiVersions v3+ (KIP-511), ``tls`` is a :class:`~kclient.net.tls.TlsConfig`,
    an :class:`ssl.SSLContext` or ``True``, ``sasl`` a :class:`kclient.sasl.SaslConfig`.
    ``on_change`` callbacks (sync or async) receive ``(diff, view)``.
    ``strict`` (default True) fails closed on brokers that have not answered;
    ``strict=False`` ignores them (see the module documentation).
    Errors that point to an option name it as a fact
    (:attr:`~kclient.KClientError.options`); their text reads in these names.
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
        application: ApplicationOption = DEFAULT_APPLICATION,
        tls: TlsOption = None,
        sasl: SaslConfig | None = None,
        strict: bool = True,
        connect_timeout: float = DEFAULT_CONNECT_TIMEOUT,
        request_timeout: float = DEFAULT_REQUEST_TIMEOUT,
        metadata_refresh_interval: float | None = DEFAULT_METADATA_REFRESH_INTERVAL,
        max_concurrency: int = DEFAULT_MAX_CONCURRENCY,
        max_brokers: int = DEFAULT_MAX_BROKERS,
        max_response_size: int = DEFAULT_MAX_RESPONSE_SIZE,
        client_id: str = DEFAULT_CLIENT_ID,
        cluster_name: str | None = None,
        startup_wait: float | None = None,
        reconnect_backoff: float = DEFAULT_RECONNECT_BACKOFF,
        reconnect_backoff_max: float = DEFAULT_RECONNECT_BACKOFF_MAX,
        auth_retry_backoff: float = DEFAULT_AUTH_RETRY_BACKOFF,
        on_change: ChangeCallback | Iterable[ChangeCallback] | None = None,
    ) -> None:
        self._bootstrap = parse_bootstrap(bootstrap_servers)
        _check_types(features=features, sasl=sasl, strict=strict, client_id=client_id,
                     cluster_name=cluster_name, api_version_fallback=api_version_fallback)
        callbacks = change_callbacks(on_change)
        if isinstance(features, FeatureSet):
            self.features = features
        else:
            self.features = load_features(features)
        own = ApplicationVersions.from_catalog(
            max_versions=max_versions, min_versions=min_versions,
            avoid_versions=avoid_versions)
        judged = resolve_application(application)
        if judged is not None and (max_versions or min_versions or avoid_versions):
            raise ConfigError("application names what the application speaks; max_versions, "
                              "min_versions and avoid_versions narrow kclient's own ranges: "
                              "give one or the other")
        # Verdicts (the view, version_for, supports, explain) answer for the
        # application; kclient's own requests keep kclient's ranges.
        self.application = own if judged is None else judged
        validate_client_software(client_software)
        # Built once (CA bundle and client certificate read once), shared by every
        # connection; a bad TLS setup fails here.
        self._tls = prepare_tls(tls)
        for name, count in (("max_concurrency", max_concurrency), ("max_brokers", max_brokers),
                            ("max_response_size", max_response_size)):
            if (problem := count_problem(count)) is not None:
                raise ConfigError(Text(Option(name), f" {problem}"))
        self.max_response_size = max_response_size
        self.max_brokers = max_brokers
        # Grouped settings check themselves (kclient.net.settings); below the minimum
        # interval, a dead broker turns periodic Metadata into a storm of requests.
        self.timeouts = Timeouts(connect_timeout, request_timeout, *(
            () if startup_wait is None else (startup_wait,)))
        self.backoff = Backoff(reconnect_backoff, reconnect_backoff_max, auth_retry_backoff)
        check_seconds("metadata_refresh_interval", metadata_refresh_interval,
                      MIN_METADATA_REFRESH_INTERVAL)
        self._conn_options: dict[str, Any] = {
            "client_id": client_id, "client_software": client_software,
            "application": own, "api_version_fallback": api_version_fallback,
            "tls": self._tls, "sasl": sasl, "connect_timeout": connect_timeout,
            "request_timeout": request_timeout,
        }
        self.strict = strict
        self.cluster_name = cluster_name
        self.metadata_refresh_interval = metadata_refresh_interval
        self._callbacks: list[ChangeCallback] = callbacks
        self._view = ClusterView((), self.application, strict, cluster_name)
        # The latest answer per broker.  While the client starts, answers only land
        # here (``_dirty``) and the view is built once when the startup wait ends (or
        # when it is read); afterwards every answer publishes a new view at once.
        self._members: dict[int, BrokerVersions] = {}
        self._dirty = False
        self._report: tuple[ClusterView, FeatureReport] | None = None
        self._life = Lifecycle()
        # Connection, backoff and concurrency settings live with the supervisor alone.
        self._supervisor = Supervisor(
            connect=self._slot_connection, report=self._on_event,
            alive=lambda: self._life.alive, max_concurrency=max_concurrency,
            request_timeout=request_timeout, backoff=self.backoff)
        # (diff, view) pairs computed together: a callback sees the view its diff led to.
        self._events: asyncio.Queue[tuple[ViewDiff, ClusterView] | None] | None = None
        self._dispatcher: asyncio.Task[None] | None = None
        self._metadata_task: asyncio.Task[None] | None = None
        # Set while the client is STARTING: what concurrent start() calls share and
        # the task close() interrupts.
        self._starting: asyncio.Future[None] | None = None
        self._start_task: asyncio.Task[Any] | None = None
        self.cluster_id: str | None = None
        self.controller_id: int | None = None

    @property
    def state(self) -> State:
        """Where the client is in its life (see :mod:`kclient.net.lifecycle`)."""
        return self._life.state

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
        if not (cluster is None or isinstance(cluster, str)):
            raise ConfigError(f"cluster must be text or None, not {cluster!r}")
        name = cluster or self.cluster_name or self.cluster_id or "unnamed"
        now = utc_now()
        return [SnapshotRecord.from_broker(name, b, now) for b in self.view.brokers]

    def on_change(self, callback: ChangeCallback) -> ChangeCallback:
        """Register ``callback(diff, view)`` (sync or async); usable as a decorator.

        Callbacks run on the client's event loop, one at a time, in order; an
        async one may await the client's calls, ``close()`` included: that
        returns at once, and the callbacks already queued run after it.
        """
        self._callbacks.append(change_callback(callback))
        return callback

    def connection(self, node_id: int) -> Connection:
        """The live connection to broker ``node_id``."""
        check_request_options(broker=node_id)
        slot = self._supervisor.slots.get(node_id)
        conn = slot.live if slot is not None else None
        if conn is None:
            raise BrokerConnectionError("no live connection to this broker",
                                        f"node {node_id}")
        return conn

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
                      drop_unsupported: bool | Collection[str] = False,
                      max_response_size: int | None = None) -> Any:
        """Send a request to ``broker`` (any connected broker when ``None``).

        The version sent is, in order: ``version`` when given; the cluster-wide
        version (:meth:`version_for` without a broker) when ``cluster_wide`` is
        true; otherwise the receiving broker's own highest usable version, which
        during a rolling upgrade may be newer than the cluster-wide one.
        ``drop_unsupported`` is :meth:`Connection.request`'s: a set field the
        version lacks raises :class:`~kclient.errors.FieldVersionError` unless
        it is true (or names the field).  An answer announcing more than
        ``max_response_size`` bytes (default: the client's, 4 MiB) is refused
        with :class:`~kclient.errors.FrameTooLargeError` before it is read;
        large answers are decoded in a worker thread, so the event loop keeps
        serving the other brokers meanwhile.
        """
        key = api_key_of(api, self.application.catalog)  # a bad API fails first, typed
        check_request_options(version=version, drop_unsupported=drop_unsupported,
                              broker=broker, cluster_wide=cluster_wide)
        limit = self.max_response_size if max_response_size is None else max_response_size
        if (problem := count_problem(limit)) is not None:
            raise ConfigError(Text(Option("max_response_size"), f" {problem}"))
        cap = (limit, _RESPONSE_CAP_REASON)
        if cluster_wide:
            if version is not None:
                raise ConfigError("give either version or cluster_wide=True, not both")
            version = self.view.version_for(key, ceiling=topic_name_cap(key, body))
        if broker is not None:
            return await self.connection(broker).request(
                key, body, version, drop_unsupported=drop_unsupported, max_response_size=cap)
        for slot in self._supervisor.slots.values():
            if (conn := slot.live) is not None:
                return await conn.request(key, body, version,
                                          drop_unsupported=drop_unsupported,
                                          max_response_size=cap)
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
        A started client may be closed and started again.
        """
        before = self._life.handle(Event.START)
        if before is State.STARTING:
            assert self._starting is not None
            await asyncio.shield(self._starting)
            return
        if before is State.RUNNING:
            return
        loop = asyncio.get_running_loop()
        self._starting = loop.create_future()
        self._start_task = asyncio.current_task()
        self._supervisor.begin()
        self._events = asyncio.Queue()
        self._dispatcher = asyncio.create_task(self._dispatch(), name="kclient-on-change")
        try:
            conn = await self._bootstrap_connection()
            try:
                brokers = await self._metadata(conn)
            except BaseException:
                await conn.close()
                raise
            await self._apply_metadata(brokers, adopt=conn)
            await self._supervisor.wait_first(self.timeouts.startup)
            self._publish_pending()
            # Judge the started view's features now, once (counting its brokers: time
            # linear in them, like the start itself), so that each later answer
            # changes the view in time that does not grow with them.
            self.report().available_names()
            self._life.handle(Event.STARTED)
        except BaseException as exc:
            failure: BaseException = exc
            task = asyncio.current_task()
            if (isinstance(exc, asyncio.CancelledError)
                    and self._life.state in (State.CLOSING, State.CLOSED)
                    and task is not None and task.uncancel() == 0):
                # Cancelled by our own close(), not by the caller: a typed error.
                failure = ClientClosedError("close() was called while start() was running; "
                                            "the client is closed", state=str(State.STARTING),
                                            event=str(Event.CLOSE))
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
        """Close every connection and stop every background task (also during start).

        Returns within a few seconds whatever the brokers do: each wait inside is
        bounded by :data:`~kclient.net.defaults.CLOSE_WAIT`.  Calls in flight
        (``request``, ``refresh``, ``start``) fail with
        :class:`~kclient.errors.ClientClosedError`; afterwards no task or socket
        of this client is left (called from an ``on_change`` callback, it
        returns at once: the callbacks' task ends after that callback).
        """
        before = self._life.handle(Event.CLOSE)
        start_task = self._start_task
        if (before is State.STARTING and start_task is not None
                and start_task is not asyncio.current_task() and not start_task.done()):
            start_task.cancel()
            starting = self._starting
            if starting is not None:
                # start() cleans up what it opened and then raises; wait for that
                # (bounded), so nothing it created outlives this call.
                await asyncio.wait([starting], timeout=CLOSE_WAIT)
        self._publish_pending()
        closing = ClientClosedError("the client was closed while this call was in flight",
                                    state=str(State.CLOSING), event=str(Event.CLOSE))
        metadata_task, self._metadata_task = self._metadata_task, None
        if metadata_task is not None:
            metadata_task.cancel()
            await asyncio.wait([metadata_task], timeout=CLOSE_WAIT)
        await self._supervisor.stop(closing)
        dispatcher, self._dispatcher = self._dispatcher, None
        if dispatcher is not None and self._events is not None:
            self._events.put_nowait(None)
            if dispatcher is asyncio.current_task():
                # Called from a callback, which cannot wait for itself: the
                # dispatcher ends after it (and the callbacks queued before).
                self._life.handle(Event.CLOSED)
                return
            # Callbacks already queued run first; one that hangs is cancelled.
            _, late = await asyncio.wait([dispatcher], timeout=CLOSE_WAIT)
            if late:
                dispatcher.cancel()
                await asyncio.wait([dispatcher], timeout=CLOSE_WAIT)
        self._life.handle(Event.CLOSED)

    async def refresh(self) -> ViewDiff:
        """Ask Metadata and every broker's ApiVersions again now; return the overall diff.

        Bounded by ``startup_wait`` for the brokers' answers (plus the Metadata
        request's own timeout).  Raises :class:`~kclient.errors.ClientStateError`
        before :meth:`start` (its subclass :class:`~kclient.errors.ClientClosedError`
        once closing or closed, also when :meth:`close` interrupts it).
        """
        self._life.handle(Event.REFRESH)
        before = self.view
        try:
            brokers = await self._metadata_any()
        except KClientError as exc:
            log.debug("refresh: Metadata failed (%s); re-asking the known brokers", exc)
        else:
            self._check_alive()
            await self._apply_metadata(brokers)
        await self._supervisor.renegotiate_all(self.timeouts.startup)
        self._check_alive()
        return diff_views(before, self.view, self.features)

    def _check_alive(self) -> None:
        """Raise :class:`ClientClosedError` when close() began while a call was running."""
        if not self._life.alive:
            raise illegal(self._life.state, Event.REFRESH)

    # -- bootstrap and metadata -------------------------------------------------------------
    def _slot_connection(self, slot: BrokerSlot) -> Connection:
        return self._new_connection(slot.host, slot.port, slot.node_id, slot.rack)

    def _new_connection(self, host: str, port: int, node_id: int, rack: str | None
                        ) -> Connection:
        return Connection(host, port, node_id=node_id, rack=rack, **self._conn_options)

    async def _bootstrap_connection(self) -> Connection:
        errors: list[KClientError] = []
        auth_failures = 0
        for host, port in self._bootstrap:
            conn = self._new_connection(host, port, -1, None)
            try:
                await conn.connect()
            except KClientError as exc:
                log.debug("bootstrap %s:%d failed: %s", host, port, exc)
                errors.append(exc)
                auth_failures += isinstance(exc, AuthenticationError)
                continue
            return conn
        if errors and auth_failures == len(errors):
            # Every bootstrap server refused the credentials: say so with its own type.
            raise AuthenticationError(Text("no bootstrap server accepted the SASL credentials: ",
                                           joined("; ", errors)))
        raise BrokerConnectionError(Text("no bootstrap server could be negotiated with: ",
                                         joined("; ", errors)))

    async def _metadata(self, conn: Connection) -> list[tuple[int, str, int, str | None]]:
        version = conn.version_for("Metadata")
        # Before v4 a broker never auto-creates topics for an empty list: nothing is lost.
        limit = (metadata_answer_limit(self.max_brokers),
                 Text(Option("max_brokers"), f"={self.max_brokers} brokers of at most "
                      f"{METADATA_BYTES_PER_BROKER} bytes each"))
        try:
            response = await conn.request("Metadata", _metadata_body(), version,
                                          drop_unsupported=("allow_auto_topic_creation",),
                                          max_response_size=limit)
        except BrokerConnectionError as exc:
            if conn.sasl is None and exc.reason == "connection closed by the broker":
                # ApiVersions answered, then a close on the first other request: the
                # behaviour of a listener that wants SASL before anything else.
                raise BrokerConnectionError(Text(
                    "the broker answered ApiVersions, then closed the connection on "
                    "Metadata: that is what a listener that requires SASL authentication "
                    "does; connect with SASL (", Option("sasl"), ")"),
                    conn.broker_label) from None
            raise
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
        for conn in self._supervisor.live_connections():
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
        slots = self._supervisor.slots
        for node_id in [n for n, s in slots.items()
                        if n not in wanted or (s.host, s.port) != wanted[n][:2]]:
            await self._supervisor.drop(node_id)
            if self._members.pop(node_id, None) is not None:
                self._changed(node_id, notify=True)
        adopted = False
        for node_id, (host, port, rack) in sorted(wanted.items()):
            if node_id in slots:
                continue
            slot = BrokerSlot(node_id, host, port, rack)
            problem = address_problem(host, port)
            if problem is not None:
                # A broken or hostile Metadata answer: never connect, say why, keep going.
                self._supervisor.add(slot)
                self._set_broker(BrokerVersions(
                    node_id, _printable(host), port if 0 < port < 65536 else 0, rack=rack,
                    error=f"Metadata lists an invalid address for this broker: {problem}"),
                    notify=False)
                resolve(slot.first_done)
                continue
            initial: Connection | None = None
            if adopt is not None and not adopted and (adopt.host, adopt.port) == (host, port):
                adopt.adopt(node_id, rack)
                initial, adopted = adopt, True
            self._supervisor.add(slot)
            self._set_broker(BrokerVersions(node_id, host, port, rack=rack, error=PENDING),
                             notify=False)
            self._supervisor.supervise(slot, initial)
        if adopt is not None and not adopted:
            await adopt.close()

    async def _metadata_loop(self) -> None:
        assert self.metadata_refresh_interval
        while self._life.alive:
            await asyncio.sleep(self.metadata_refresh_interval)
            try:
                brokers = await self._metadata_any()
            except KClientError as exc:
                log.debug("periodic Metadata refresh failed: %s", exc)
                continue
            await self._apply_metadata(brokers)

    # -- view updates and notifications --------------------------------------------------------
    def _on_event(self, event: BrokerEvent) -> None:
        """What the supervisor saw, applied to the one store of broker answers."""
        if isinstance(event, Answered):
            self._set_broker(event.versions)
            return
        if event.answer is not None:  # answered ApiVersions, then refused the credentials
            self._set_broker(event.answer.went_stale(event.reason))
            return
        slot = event.slot
        known = self._members.get(slot.node_id)
        if known is None or (known.host, known.port) != (slot.host, slot.port):
            known = BrokerVersions(slot.node_id, slot.host, slot.port, rack=slot.rack,
                                   error=PENDING)
        # The last answer keeps counting, marked stale (or the broker stays unknown).
        self._set_broker(known.went_stale(event.reason))

    def _set_broker(self, versions: BrokerVersions, notify: bool = True) -> None:
        node_id = versions.node_id
        if node_id not in self._supervisor.slots:
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
        self._changed(node_id, notify)

    def _changed(self, node_id: int, notify: bool) -> None:
        """Broker ``node_id``'s entry in ``_members`` changed: publish a new view now, or
        later while starting.

        The new view is the current one with that broker's entry replaced
        (:meth:`_publish`), and the diff compares the two by what changed.  While
        STARTING the change is only marked (``_dirty``) and the view is built once,
        from every answer.  Callbacks hear of changes only while RUNNING.
        """
        if self._life.state is State.STARTING:
            self._dirty = True
            return
        old = self._view
        self._publish(node_id)
        announce = LOGGER.isEnabledFor(EVENTS["view.changed"])
        if notify and self._life.state is State.RUNNING and (self._callbacks or announce) and (
                self._events is not None):
            diff = diff_views(old, self._view, self.features)
            if diff:
                if announce:
                    every = diff.lines(verbose=True)
                    emit("view.changed", "; ".join(every),
                         cluster=self.cluster_name or self.cluster_id, changes=every)
                if self._callbacks:
                    self._events.put_nowait((diff, self._view))

    def _publish_pending(self) -> None:
        """Publish the changes marked while starting (the one view build of a start-up)."""
        if self._dirty:
            self._publish()

    def _publish(self, node_id: int | None = None) -> None:
        """Publish the view of the member store: the current view with broker
        ``node_id``'s entry replaced when only that one changed (time that does not
        grow with the number of brokers), else one built from every member."""
        members = self._members
        if node_id is not None and not self._dirty:
            member = members.get(node_id)
            self._view = (self._view.without_broker(node_id) if member is None
                          else self._view.with_broker(member))
            return
        self._dirty = False
        self._view = attrs.evolve(self._view,
                                  brokers=tuple(members[n] for n in sorted(members)))

    async def _dispatch(self) -> None:
        events = self._events  # this run's queue (a restart makes a new one)
        assert events is not None
        while True:
            event = await events.get()
            if event is None:
                return
            diff, view = event
            for callback in list(self._callbacks):
                try:
                    result = callback(diff, view)
                    if inspect.isawaitable(result):
                        await result
                except Exception:
                    log.exception("on_change callback %r failed", callback)

    @classmethod
    def from_config(cls, config: Mapping[str, Any], *,
                    unknown: Literal["ignore", "warn", "error"] = "ignore",
                    **overrides: Any) -> Client:
        """A client from an application's librdkafka / Java client configuration.

        Keys kclient uses are read (see :mod:`kclient.net.config`); the others
        (``acks``, ``group.id``...) are ignored with a debug line, or warned about
        (``unknown="warn"``), or refused (``unknown="error"``).  Keyword
        arguments override what the configuration says.
        """
        return cls(**{**client_options_from_config(
            config, unknown=unknown,
            require_bootstrap="bootstrap_servers" not in overrides), **overrides})
