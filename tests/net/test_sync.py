"""SyncClient: its signature, and the threading contract it documents."""

from __future__ import annotations

import inspect
import threading
import time
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor

import pytest

from kclient.emulator import EmulatedCluster, ThreadedEmulator
from kclient.errors import ClientClosedError, ClientStateError, KClientError
from kclient.negotiation import BrokerState, ClusterView, ViewDiff
from kclient.net import Client, SyncClient
from tests.waiting import wait_until

pytestmark = pytest.mark.timeout(90)


def test_signature_equals_the_async_clients() -> None:
    sync = inspect.signature(SyncClient.__init__).parameters
    async_ = inspect.signature(Client.__init__).parameters
    assert list(sync) == list(async_)
    for name, param in async_.items():
        assert sync[name].kind == param.kind, name
        assert sync[name].default == param.default, name
        assert str(sync[name].annotation) == str(param.annotation), name


def test_close_from_an_on_change_callback_returns_at_once() -> None:
    with ThreadedEmulator(EmulatedCluster(["2.8"])) as emulator:
        client = SyncClient(emulator.bootstrap_servers, metadata_refresh_interval=None,
                            reconnect_backoff=0.01)
        client.start()
        returned = threading.Event()
        took: list[float] = []

        def close_now(diff: ViewDiff, view: ClusterView) -> None:
            started = time.monotonic()
            client.close()
            took.append(time.monotonic() - started)
            returned.set()

        client.on_change(close_now)
        emulator.call(emulator.cluster.rolling_restart("3.9"))
        assert returned.wait(10)
        assert took[0] < 1
        wait_until(lambda: not any(t.name == "kclient-sync" and t.is_alive()
                                   for t in threading.enumerate()),
                   "the loop thread stopped")
        with pytest.raises(KClientError, match="not started"):
            client.version_for("Produce")


def test_two_threads_starting_at_once_both_see_a_ready_client() -> None:
    with ThreadedEmulator(EmulatedCluster(["3.9", "2.8"])) as emulator:
        client = SyncClient(emulator.bootstrap_servers, metadata_refresh_interval=None)
        try:
            with ThreadPoolExecutor(2) as pool:
                results = list(pool.map(lambda _: (client.start(), [
                    b.state for b in client.view.brokers]), range(2)))
            for _, states in results:
                assert states == [BrokerState.ANSWERED, BrokerState.ANSWERED]
        finally:
            client.close()


def test_refresh_does_not_fail_requests_in_flight_on_other_threads() -> None:
    with ThreadedEmulator(EmulatedCluster(["3.9"])) as emulator, \
            SyncClient(emulator.bootstrap_servers, metadata_refresh_interval=None) as client:
        errors: list[BaseException] = []
        done = threading.Event()

        def requester() -> None:
            for _ in range(150):  # bounded
                try:
                    client.request("Metadata", {"topics": []}, broker=1)
                except BaseException as exc:
                    errors.append(exc)
            done.set()

        worker = threading.Thread(target=requester)
        worker.start()
        refreshes = 0
        while not done.is_set() and refreshes < 40:
            client.refresh()
            refreshes += 1
        worker.join(60)
        assert refreshes > 3
        assert errors == []


def _every_method(client: SyncClient) -> dict[str, Callable[[], object]]:
    """Each public method and property of a running SyncClient, called once (close aside)."""
    return {
        "start": client.start,
        "client": lambda: client.client,
        "view": lambda: client.view,
        "brokers": lambda: client.brokers,
        "cluster": lambda: client.cluster,
        "version_for": lambda: client.version_for("Metadata"),
        "version_for(broker)": lambda: client.version_for("Metadata", 1),
        "report": client.report,
        "feature": lambda: client.feature("ZSTD"),
        "supports": lambda: client.supports("ZSTD"),
        "explain": lambda: client.explain("ZSTD"),
        "snapshot": client.snapshot,
        "on_change": lambda: client.on_change(lambda diff, view: None),
        "refresh": client.refresh,
        "request": lambda: client.request("Metadata", {"topics": []}),
        "request(broker)": lambda: client.request("ApiVersions", {}, broker=1),
    }


def _callback_threads_ended() -> bool:
    return not any(t.name.startswith("kclient-sync") and t.is_alive()
                   for t in threading.enumerate())


def test_every_method_works_from_an_on_change_callback_close_included() -> None:
    """refresh() or request() from a callback deadlocked the client for good (callbacks
    ran on the loop thread, which _run then blocked waiting for itself), and close()
    from another thread did not return for 40 s."""
    with ThreadedEmulator(EmulatedCluster(["2.8"])) as emulator:
        client = SyncClient(emulator.bootstrap_servers, metadata_refresh_interval=None,
                            reconnect_backoff=0.01, request_timeout=5, startup_wait=5)
        client.start()
        outcomes: dict[str, str] = {}
        closed = threading.Event()

        def every_method(diff: ViewDiff, view: ClusterView) -> None:
            if outcomes:
                return  # the first change only
            for name, call in _every_method(client).items():
                started = time.monotonic()
                try:
                    call()
                    outcomes[name] = "ok"
                except Exception as exc:  # recorded, asserted below
                    outcomes[name] = f"{type(exc).__name__}: {exc}"
                assert time.monotonic() - started < 10, name
            started = time.monotonic()
            client.close()
            outcomes["close"] = f"returned in {time.monotonic() - started:.1f}s"
            closed.set()

        client.on_change(every_method)
        try:
            emulator.call(emulator.cluster.rolling_restart("3.9"))
            assert closed.wait(30), f"the callback did not finish: {outcomes}"
        finally:
            client.close()
        assert {name: outcome for name, outcome in outcomes.items() if outcome != "ok"} == {
            "close": "returned in 0.0s"}
        wait_until(_callback_threads_ended, "the loop and callback threads stopped")
        with pytest.raises(ClientClosedError):
            client.refresh()


def test_close_from_another_thread_ends_a_callback_busy_with_the_client() -> None:
    with ThreadedEmulator(EmulatedCluster(["2.8"])) as emulator:
        client = SyncClient(emulator.bootstrap_servers, metadata_refresh_interval=None,
                            reconnect_backoff=0.01, request_timeout=5, startup_wait=5)
        client.start()
        busy = threading.Event()
        ended: list[str] = []

        def refresh_until_closed(diff: ViewDiff, view: ClusterView) -> None:
            busy.set()
            try:
                for _ in range(10_000):  # bounded; ends when close() ends a refresh
                    client.refresh()
                    client.request("Metadata", {"topics": []})
            except KClientError as exc:
                ended.append(type(exc).__name__)

        client.on_change(refresh_until_closed)
        emulator.call(emulator.cluster.rolling_restart("3.9"))
        assert busy.wait(30)
        started = time.monotonic()
        client.close()
        assert time.monotonic() - started < 5
        wait_until(lambda: ended == ["ClientClosedError"], "the callback ended")
        wait_until(_callback_threads_ended, "the loop and callback threads stopped")


def test_a_blocking_call_on_the_clients_loop_is_refused_not_a_deadlock() -> None:
    """An async callback runs on the loop: refresh()/request() there would wait for
    themselves; they raise ClientStateError at once (close() begins the shutdown)."""
    with ThreadedEmulator(EmulatedCluster(["2.8"])) as emulator:
        client = SyncClient(emulator.bootstrap_servers, metadata_refresh_interval=None,
                            reconnect_backoff=0.01)
        client.start()
        outcomes: list[str] = []
        done = threading.Event()

        async def on_the_loop(diff: ViewDiff, view: ClusterView) -> None:
            if done.is_set():
                return
            for call in (client.refresh, lambda: client.request("Metadata", {"topics": []})):
                try:
                    call()
                    outcomes.append("ok")
                except ClientStateError as exc:
                    outcomes.append(str(exc))
            await client.client.refresh()  # what to do there instead
            client.close()
            done.set()

        client.on_change(on_the_loop)
        try:
            emulator.call(emulator.cluster.rolling_restart("3.9"))
            assert done.wait(30), outcomes
        finally:
            client.close()
        assert [text.split(" was called")[0] for text in outcomes] == [
            "SyncClient.refresh()", "SyncClient.request()"]
        assert "await sync_client.client.refresh(...)" in outcomes[0]
        wait_until(_callback_threads_ended, "the loop and callback threads stopped")


def test_a_callback_runs_off_the_loop_and_changes_reach_callbacks_in_order() -> None:
    with ThreadedEmulator(EmulatedCluster(["2.8", "2.8"])) as emulator:
        seen: list[tuple[str, int]] = []

        def record(diff: ViewDiff, view: ClusterView) -> None:
            seen.append((threading.current_thread().name, len(view.brokers)))

        with SyncClient(emulator.bootstrap_servers, metadata_refresh_interval=None,
                        reconnect_backoff=0.01, on_change=record) as client:
            emulator.call(emulator.cluster.rolling_restart("3.9"))
            wait_until(lambda: len(seen) >= 2, "two changes")
            assert client.version_for("Produce") >= 0
        assert {name for name, _ in seen} == {"kclient-sync-callbacks"}
