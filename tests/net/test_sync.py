"""SyncClient: its signature, and the threading contract it documents."""

from __future__ import annotations

import inspect
import threading
import time
from concurrent.futures import ThreadPoolExecutor

import pytest

from kclient.emulator import EmulatedCluster, ThreadedEmulator
from kclient.errors import KClientError
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
