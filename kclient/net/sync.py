""":class:`SyncClient`: the cluster client for code without an event loop.

It runs a :class:`~kclient.net.client.Client` on its own event loop in a daemon
thread.  Snapshot queries read the immutable view directly; calls that touch
the network (``refresh``, ``request``) are run on the loop and waited for.
Synchronous ``on_change`` callbacks run on a second thread of the client's, off
the loop, so they may call every method (see :class:`SyncClient`).
"""

from __future__ import annotations

import concurrent.futures
import contextlib
import functools
import inspect
import logging
import queue
import threading
from collections.abc import Callable, Collection, Coroutine, Iterable, Mapping, Sequence
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
    # The asyncio engine loads when a SyncClient is made, not when it is imported.
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


class _CallbackThread:
    """The thread a SyncClient's synchronous ``on_change`` callbacks run on.

    One at a time, in the order the client hands them over, off the event loop:
    a callback may block (``refresh``, ``request``) while the loop does the work.
    A daemon thread, so a callback that never returns cannot hold the
    interpreter's exit.
    """

    def __init__(self) -> None:
        self._jobs: queue.SimpleQueue[tuple[Callable[[], Any], Future[Any]] | None] = (
            queue.SimpleQueue())
        self.thread = threading.Thread(target=self._work, name="kclient-sync-callbacks",
                                       daemon=True)
        self.thread.start()

    def submit(self, call: Callable[[], T]) -> Future[T]:
        """Run ``call`` on the thread; its outcome is the future's."""
        future: Future[T] = concurrent.futures.Future()
        self._jobs.put((call, future))
        return future

    def stop(self) -> None:
        """End the thread once the callbacks handed over before are done."""
        self._jobs.put(None)

    def _work(self) -> None:
        while (job := self._jobs.get()) is not None:
            call, future = job
            if not future.set_running_or_notify_cancel():
                continue
            try:
                future.set_result(call())
            except BaseException as exc:  # the caller (the client's dispatcher) logs it
                future.set_exception(exc)


async def _shut_down(client: Client | None, loop: asyncio.AbstractEventLoop,
                     callbacks: _CallbackThread | None) -> None:
    """Close ``client``, cancel whatever else runs on ``loop`` (bounded), stop the loop."""
    try:
        if client is not None:
            await client.close()
    finally:
        if callbacks is not None:
            callbacks.stop()  # after the client's own dispatcher has ended
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

    Threads: every method may be called from any thread, an ``on_change``
    callback's included.  Queries (``version_for``, ``supports``, ``explain``,
    ``view``...) read the current immutable view and never wait; ``refresh``
    and ``request`` run on the client's loop and block the calling thread until
    done.  A second ``start`` while one runs waits for it.

    Callbacks: synchronous ``on_change`` callbacks run one at a time, in order,
    on the client's callback thread (``kclient-sync-callbacks``), not on its
    event loop, so they may call every method: ``refresh()`` and ``request()``
    block the callback (later changes wait for it) while the loop does the work.
    ``close()`` called from a callback cannot wait for the callback that called
    it: it begins the shutdown and returns at once, and the shutdown completes
    when the callback returns.  Async callbacks (coroutine functions) run on the
    client's loop; code there awaits the asyncio client (``await
    sync.client.refresh()``), and a blocking call from the loop's thread, which
    would wait for itself forever, raises
    :class:`~kclient.errors.ClientStateError` at once instead (``close()`` from
    there begins the shutdown and returns, as from a callback).

    Arguments are checked when the SyncClient is made, as :class:`Client`
    checks them: a bad one raises a typed error there, not at :meth:`start`.
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
        # Every argument goes to Client (a test keeps the two signatures equal), the
        # synchronous callbacks moved off the loop (_off_loop).
        self._options: dict[str, Any] = {
            name: value for name, value in locals().items() if name not in ("self", "__class__")}
        self._options["on_change"] = [
            self._off_loop(callback) for callback in engine.change_callbacks(on_change)]
        self._callback_thread: _CallbackThread | None = None
        # Made now, so that a bad argument fails here as it does for Client; the
        # first start() uses it, a start() after close() makes a new one.
        self._prepared: Client | None = engine.Client(**self._options)
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
                self._callback_thread = _CallbackThread()
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
                client = self._run(self._create(), "start")
                self._run(client.start(), "start")
            except BaseException:
                self.close()
                raise
            self._client = client
        return self

    async def _create(self) -> Client:
        prepared, self._prepared = self._prepared, None
        self._creating = prepared or engine.Client(**self._options)
        return self._creating

    def _off_loop(self, callback: ChangeCallback) -> ChangeCallback:
        """``callback`` run on the callback thread when it is synchronous (see the class doc)."""
        if inspect.iscoroutinefunction(callback):
            return callback

        @functools.wraps(callback)
        async def off_loop(diff: ViewDiff, view: ClusterView) -> None:
            runner = self._callback_thread
            if runner is None:
                return
            result = await asyncio.wrap_future(runner.submit(lambda: callback(diff, view)))
            if inspect.isawaitable(result):
                await result
        return off_loop

    def close(self) -> None:
        """Close the client, stop the loop and join the thread (bounded).

        Calls running on other threads fail with
        :class:`~kclient.errors.ClientClosedError`; afterwards no task, socket
        or thread of this client is left.  From an ``on_change`` callback (or
        any code on the client's loop) the shutdown begins and this returns at
        once: it completes when the callback returns.
        """
        with self._lock:
            loop, thread, stopped = self._loop, self._thread, self._stopped
            client = self._client or self._creating
            callbacks = self._callback_thread
            self._loop = self._thread = self._client = self._stopped = None
            self._creating = self._callback_thread = None
            self._closed = True
        if loop is None or thread is None or stopped is None:
            return
        current = threading.current_thread()
        if current is thread:
            loop.create_task(_shut_down(client, loop, callbacks))
            return
        shutdown = asyncio.run_coroutine_threadsafe(_shut_down(client, loop, callbacks), loop)
        if callbacks is not None and current is callbacks.thread:
            return  # the shutdown waits for this callback to return
        try:
            shutdown.result(_SHUTDOWN_BOUND)
        except concurrent.futures.TimeoutError:
            log.warning("the client did not finish closing within %gs; stopping its loop",
                        _SHUTDOWN_BOUND)
            loop.call_soon_threadsafe(loop.stop)
        finally:
            thread.join(_SHUTDOWN_BOUND)
            _settle(stopped)  # calls still waiting (a loop that did not stop) give up
            if callbacks is not None:
                callbacks.stop()  # no-op when the shutdown stopped it
                callbacks.thread.join(CLOSE_WAIT)
                if callbacks.thread.is_alive():
                    log.warning("an on_change callback has not returned within %gs of "
                                "close(); its thread is left to finish it", CLOSE_WAIT)

    def __enter__(self) -> SyncClient:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.close()

    def _run(self, coro: Coroutine[Any, Any, T], call: str) -> T:
        """Run ``coro`` (of the method ``call``) on the loop and wait for it, or for the
        client to close."""
        with self._lock:
            loop, stopped, thread = self._loop, self._stopped, self._thread
        if loop is None or stopped is None:
            coro.close()
            raise ClientClosedError("the SyncClient is closed; use `with SyncClient(...)`")
        if threading.current_thread() is thread:
            coro.close()
            raise ClientStateError(
                f"SyncClient.{call}() was called on the client's own event loop (from an "
                "async on_change callback?), where it would wait for itself forever; await "
                f"the asyncio client there instead (await sync_client.client.{call}(...)), "
                "or register a synchronous callback, which runs on its own thread and may "
                "call it", event=call)
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
        """Register a change callback; a synchronous one runs on the client's callback
        thread, an async one on its loop (see the class doc).  Usable as a decorator."""
        self.client.on_change(self._off_loop(engine.change_callback(callback)))
        return callback

    # -- network --------------------------------------------------------------------------
    def refresh(self) -> ViewDiff:
        """Re-ask Metadata and every broker's ApiVersions now; return the diff."""
        return self._run(self.client.refresh(), "refresh")

    def request(self, api: str | int, body: Mapping[str, Any] | Any, broker: int | None = None,
                version: int | None = None, *, cluster_wide: bool = False,
                drop_unsupported: bool | Collection[str] = False,
                max_response_size: int | None = None) -> Any:
        """Send a request and return the response (versions, ``drop_unsupported`` and
        ``max_response_size`` as :meth:`Client.request`)."""
        return self._run(self.client.request(api, body, broker, version,
                                             cluster_wide=cluster_wide,
                                             drop_unsupported=drop_unsupported,
                                             max_response_size=max_response_size),
                         "request")

    @classmethod
    def from_config(cls, config: Mapping[str, Any], *,
                    unknown: Literal["ignore", "warn", "error"] = "ignore",
                    **overrides: Any) -> SyncClient:
        """A client from an application's configuration (see :meth:`Client.from_config`)."""
        return cls(**{**config_keys.client_options_from_config(
            config, unknown=unknown,
            require_bootstrap="bootstrap_servers" not in overrides),
                      **overrides})
