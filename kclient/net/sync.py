""":class:`SyncClient`: the cluster client for code without an event loop.

It runs a :class:`~kclient.net.client.Client` on its own event loop in a daemon
thread.  Snapshot queries read the immutable view directly; calls that touch
the network (``refresh``, ``request``) are run on the loop and waited for.
``on_change`` callbacks run on the client's thread, so keep them short.
"""

from __future__ import annotations

import concurrent.futures
import contextlib
import logging
import threading
from collections.abc import Collection, Coroutine, Iterable, Mapping, Sequence
from typing import TYPE_CHECKING, Any, Literal, TypeVar

from kclient._lazy import DeferredModule
from kclient.errors import ClientClosedError, ClientStateError
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
)

if TYPE_CHECKING:
    import asyncio
    from pathlib import Path

    from kclient.installed import ApplicationOption
    from kclient.negotiation.diff import ViewDiff
    from kclient.negotiation.evaluation import FeatureReport, FeatureResult
    from kclient.negotiation.features import FeatureSet
    from kclient.negotiation.model import ApiSupport, BrokerVersions, ClusterView
    from kclient.negotiation.snapshot import SnapshotRecord
    from kclient.net import client as engine
    from kclient.net import config as config_keys
    from kclient.net.client import ChangeCallback, Client
    from kclient.net.tls import TlsOption
    from kclient.sasl import SaslConfig
else:
    # The asyncio engine loads when a SyncClient starts, not when it is imported.
    asyncio = DeferredModule("asyncio")
    engine = DeferredModule("kclient.net.client")
    config_keys = DeferredModule("kclient.net.config")

__all__ = ["SyncClient"]

T = TypeVar("T")
Future = concurrent.futures.Future

log = logging.getLogger("kclient.net")

#: The longest SyncClient.close() waits for the client's own close and for the
#: loop thread: Client.close() is itself bounded by a few CLOSE_WAITs.
_SHUTDOWN_BOUND = 4 * CLOSE_WAIT


def _settle(future: Future[None]) -> None:
    """Complete ``future`` unless it is done (safe from any thread, any order)."""
    with contextlib.suppress(concurrent.futures.InvalidStateError):
        future.set_result(None)


async def _shut_down(client: Client | None, loop: asyncio.AbstractEventLoop) -> None:
    """Close ``client``, cancel whatever else runs on ``loop`` (bounded), stop the loop."""
    try:
        if client is not None:
            await client.close()
    finally:
        current = asyncio.current_task()
        leftovers = [task for task in asyncio.all_tasks() if task is not current]
        for task in leftovers:
            task.cancel()
        if leftovers:
            await asyncio.wait(leftovers, timeout=CLOSE_WAIT)
        loop.stop()


class SyncClient:
    """``with SyncClient("host:9092") as client: client.version_for("Produce")``.

    Takes the same arguments as :class:`~kclient.net.client.Client`.  Use it as
    a context manager, or call :meth:`start` and :meth:`close` yourself.

    Threads: every method may be called from any thread.  Queries
    (``version_for``, ``supports``, ``explain``, ``view``...) read the current
    immutable view and never wait; ``refresh`` and ``request`` run on the
    client's loop and block the calling thread until done.  A second ``start``
    while one runs waits for it.  ``on_change`` callbacks run on the client's
    loop thread; ``close()`` called from one (or from any code on that thread)
    schedules the shutdown and returns at once instead of waiting for itself.
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
        # Every argument goes to Client unchanged; a test keeps the two signatures equal.
        self._options: dict[str, Any] = {
            name: value for name, value in locals().items() if name not in ("self", "__class__")}
        self._client: Client | None = None
        # The client while start() runs, so close() can reach it before it is ready.
        self._creating: Client | None = None
        self._loop: asyncio.AbstractEventLoop | None = None
        self._thread: threading.Thread | None = None
        # Set by close(): later calls raise ClientClosedError, not "not started".
        self._closed = False
        # Done once the loop thread has stopped: calls still waiting then give up.
        self._stopped: Future[None] | None = None
        self._lock = threading.Lock()
        self._start_lock = threading.Lock()

    # -- lifecycle -----------------------------------------------------------------------
    def start(self) -> SyncClient:
        """Start the loop thread, then bootstrap and negotiate (blocks until done)."""
        with self._start_lock:
            if self._client is not None:
                return self
            with self._lock:
                self._closed = False
                loop = asyncio.new_event_loop()
                started = threading.Event()
                stopped: Future[None] = concurrent.futures.Future()

                def run() -> None:
                    asyncio.set_event_loop(loop)
                    loop.call_soon(started.set)
                    try:
                        loop.run_forever()
                    finally:
                        try:
                            loop.run_until_complete(loop.shutdown_asyncgens())
                            loop.close()
                        finally:
                            _settle(stopped)

                self._loop = loop
                self._stopped = stopped
                self._thread = threading.Thread(target=run, name="kclient-sync", daemon=True)
                self._thread.start()
                started.wait()
            try:
                client = self._run(self._create())
                self._run(client.start())
            except BaseException:
                self.close()
                raise
            self._client = client
        return self

    async def _create(self) -> Client:
        self._creating = engine.Client(**self._options)
        return self._creating

    def close(self) -> None:
        """Close the client, stop the loop and join the thread (bounded).

        Calls running on other threads fail with
        :class:`~kclient.errors.ClientClosedError`; afterwards no task, socket
        or thread of this client is left.  From the client's own thread (an
        ``on_change`` callback) the shutdown is scheduled and this returns at once.
        """
        with self._lock:
            loop, thread, stopped = self._loop, self._thread, self._stopped
            client = self._client or self._creating
            self._loop = self._thread = self._client = self._stopped = None
            self._creating = None
            self._closed = True
        if loop is None or thread is None or stopped is None:
            return
        if threading.current_thread() is thread:
            loop.create_task(_shut_down(client, loop))
            return
        try:
            asyncio.run_coroutine_threadsafe(_shut_down(client, loop), loop).result(
                _SHUTDOWN_BOUND)
        except concurrent.futures.TimeoutError:
            log.warning("the client did not finish closing within %gs; stopping its loop",
                        _SHUTDOWN_BOUND)
            loop.call_soon_threadsafe(loop.stop)
        finally:
            thread.join(_SHUTDOWN_BOUND)
            _settle(stopped)  # calls still waiting (a loop that did not stop) give up

    def __enter__(self) -> SyncClient:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.close()

    def _run(self, coro: Coroutine[Any, Any, T]) -> T:
        """Run ``coro`` on the loop and wait for it, or for the client to close."""
        with self._lock:
            loop, stopped = self._loop, self._stopped
        if loop is None or stopped is None:
            coro.close()
            raise ClientClosedError("the SyncClient is closed; use `with SyncClient(...)`")
        try:
            future: Future[T] = asyncio.run_coroutine_threadsafe(coro, loop)
        except RuntimeError:  # the loop closed since it was read
            coro.close()
            raise ClientClosedError("the SyncClient was closed by another thread") from None
        waits: list[Future[Any]] = [future, stopped]
        concurrent.futures.wait(waits, return_when=concurrent.futures.FIRST_COMPLETED)
        if future.done() and not future.cancelled():
            return future.result()
        raise ClientClosedError("the SyncClient was closed by another thread while this "
                                "call ran")

    @property
    def client(self) -> Client:
        """The asyncio client underneath."""
        client = self._client
        if client is None:
            if self._closed:
                raise ClientClosedError("the SyncClient is closed (not started); start() it "
                                        "again, or use `with SyncClient(...)`")
            raise ClientStateError("the SyncClient is not started; use "
                                   "`with SyncClient(...)`")
        return client

    # -- queries (immutable snapshot) ---------------------------------------------------------
    @property
    def view(self) -> ClusterView:
        """The current cluster view."""
        return self.client.view

    @property
    def brokers(self) -> tuple[BrokerVersions, ...]:
        """Every known broker (failed ones carry ``error``)."""
        return self.client.brokers

    @property
    def cluster(self) -> dict[int, ApiSupport]:
        """Cluster-wide support per API key."""
        return self.client.cluster

    def version_for(self, api: str | int, broker: int | None = None) -> int:
        """The version of ``api`` to send cluster-wide or to ``broker``."""
        return self.client.version_for(api, broker)

    def report(self) -> FeatureReport:
        """Every feature evaluated on the current view."""
        return self.client.report()

    def feature(self, name: str) -> FeatureResult:
        """The verdict on one feature."""
        return self.client.feature(name)

    def supports(self, feature: str) -> bool:
        """True when ``feature`` is usable cluster-wide."""
        return self.client.supports(feature)

    def explain(self, feature: str) -> str:
        """Why ``feature`` is or is not usable."""
        return self.client.explain(feature)

    def snapshot(self, cluster: str | None = None) -> list[SnapshotRecord]:
        """Snapshot records (the snapshot-record contract), one per broker."""
        return self.client.snapshot(cluster)

    def on_change(self, callback: ChangeCallback) -> ChangeCallback:
        """Register a change callback (it runs on the client's thread)."""
        return self.client.on_change(callback)

    # -- network --------------------------------------------------------------------------
    def refresh(self) -> ViewDiff:
        """Re-ask Metadata and every broker's ApiVersions now; return the diff."""
        return self._run(self.client.refresh())

    def request(self, api: str | int, body: Mapping[str, Any] | Any, broker: int | None = None,
                version: int | None = None, *, cluster_wide: bool = False,
                drop_unsupported: bool | Collection[str] = False,
                max_response_size: int | None = None) -> Any:
        """Send a request and return the response (versions, ``drop_unsupported`` and
        ``max_response_size`` as :meth:`Client.request`)."""
        return self._run(self.client.request(api, body, broker, version,
                                             cluster_wide=cluster_wide,
                                             drop_unsupported=drop_unsupported,
                                             max_response_size=max_response_size))

    @classmethod
    def from_config(cls, config: Mapping[str, Any], *,
                    unknown: Literal["ignore", "warn", "error"] = "ignore",
                    **overrides: Any) -> SyncClient:
        """A client from an application's configuration (see :meth:`Client.from_config`)."""
        return cls(**{**config_keys.client_options_from_config(
            config, unknown=unknown,
            require_bootstrap="bootstrap_servers" not in overrides),
                      **overrides})
