""":class:`SyncClient`: the cluster client for code without an event loop.

It runs a :class:`~kclient.net.client.Client` on its own event loop in a daemon
thread.  Snapshot queries read the immutable view directly; calls that touch
the network (``refresh``, ``request``) are run on the loop and waited for.
``on_change`` callbacks run on the client's thread, so keep them short.
"""

from __future__ import annotations

import asyncio
import threading
from collections.abc import Coroutine, Mapping
from concurrent.futures import Future
from typing import Any, TypeVar

from kclient.errors import BrokerConnectionError
from kclient.negotiation.diff import ViewDiff
from kclient.negotiation.features import FeatureReport, FeatureResult
from kclient.negotiation.model import ApiSupport, BrokerVersions, ClusterView
from kclient.negotiation.snapshot import SnapshotRecord
from kclient.net.client import ChangeCallback, Client

__all__ = ["SyncClient"]

T = TypeVar("T")


class SyncClient:
    """``with SyncClient("host:9092") as client: client.version_for("Produce")``.

    Takes the same arguments as :class:`~kclient.net.client.Client`.  Use it as
    a context manager, or call :meth:`start` and :meth:`close` yourself.
    """

    def __init__(self, bootstrap_servers: str | list[str], *args: Any, **kwargs: Any) -> None:
        self._args = (bootstrap_servers, *args)
        self._kwargs = kwargs
        self._client: Client | None = None
        self._loop: asyncio.AbstractEventLoop | None = None
        self._thread: threading.Thread | None = None
        self._lock = threading.Lock()

    # -- lifecycle -----------------------------------------------------------------------
    def start(self) -> SyncClient:
        """Start the loop thread, then bootstrap and negotiate (blocks until done)."""
        with self._lock:
            if self._thread is not None:
                return self
            loop = asyncio.new_event_loop()
            started = threading.Event()

            def run() -> None:
                asyncio.set_event_loop(loop)
                loop.call_soon(started.set)
                try:
                    loop.run_forever()
                finally:
                    loop.run_until_complete(loop.shutdown_asyncgens())
                    loop.close()

            self._loop = loop
            self._thread = threading.Thread(target=run, name="kclient-sync", daemon=True)
            self._thread.start()
            started.wait()
        try:
            self._client = self._run(self._create())
            self._run(self._client.start())
        except BaseException:
            self.close()
            raise
        return self

    async def _create(self) -> Client:
        return Client(*self._args, **self._kwargs)

    def close(self) -> None:
        """Close the client, stop the loop and join the thread."""
        with self._lock:
            loop, thread, client = self._loop, self._thread, self._client
            self._loop = self._thread = self._client = None
        if loop is None or thread is None:
            return
        try:
            if client is not None:
                asyncio.run_coroutine_threadsafe(client.close(), loop).result(30)
        finally:
            loop.call_soon_threadsafe(loop.stop)
            thread.join(30)

    def __enter__(self) -> SyncClient:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.close()

    def _run(self, coro: Coroutine[Any, Any, T], timeout: float | None = None) -> T:
        loop = self._loop
        if loop is None:
            coro.close()
            raise BrokerConnectionError("the SyncClient is closed; use `with SyncClient(...)`")
        future: Future[T] = asyncio.run_coroutine_threadsafe(coro, loop)
        return future.result(timeout)

    @property
    def client(self) -> Client:
        """The asyncio client underneath."""
        if self._client is None:
            raise BrokerConnectionError("the SyncClient is not started; use "
                                        "`with SyncClient(...)`")
        return self._client

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
        """DESIGN §5 snapshot records, one per broker."""
        return self.client.snapshot(cluster)

    def on_change(self, callback: ChangeCallback) -> ChangeCallback:
        """Register a change callback (it runs on the client's thread)."""
        return self.client.on_change(callback)

    # -- network --------------------------------------------------------------------------
    def refresh(self) -> ViewDiff:
        """Re-ask Metadata and every broker's ApiVersions now; return the diff."""
        return self._run(self.client.refresh())

    def request(self, api: str | int, body: Mapping[str, Any] | Any, broker: int | None = None,
                version: int | None = None, *, cluster_wide: bool = False) -> Any:
        """Send a request and return the response (versions as :meth:`Client.request`)."""
        return self._run(self.client.request(api, body, broker, version,
                                             cluster_wide=cluster_wide))
