"""The Prometheus exporter follows an emulated cluster through a restart and an upgrade."""

from __future__ import annotations

import time

import pytest

from kclient import SyncClient
from kclient.emulator import EmulatedCluster, ThreadedEmulator

prometheus_client = pytest.importorskip("prometheus_client")

pytestmark = [pytest.mark.timeout(60)]


def _wait(check: object, timeout: float = 15.0) -> None:
    deadline = time.monotonic() + timeout
    while not check():  # type: ignore[operator]
        assert time.monotonic() < deadline, "metrics did not change in time"
        time.sleep(0.05)


def test_gauges_follow_the_cluster() -> None:
    from kclient.metrics import ClusterMetrics

    registry = prometheus_client.CollectorRegistry()

    def value(name: str, **labels: str) -> float | None:
        return registry.get_sample_value(name, labels)  # type: ignore[no-any-return]

    with ThreadedEmulator(EmulatedCluster(["2.0", "2.0"])) as emulator, \
            SyncClient(emulator.bootstrap_servers, metadata_refresh_interval=None) as client:
        ClusterMetrics(client, registry=registry)
        assert value("kclient_brokers", state="answered") == 2
        assert value("kclient_brokers", state="unknown") == 0
        assert value("kclient_feature_verdict", feature="ZSTD", verdict="unavailable") == 1
        total = len(client.report().results)
        assert sum(value("kclient_features", verdict=v) or 0
                   for v in ("available", "unavailable", "unknown")) == total
        assert value("kclient_broker_answers_total") == 0
        emulator.restart(1, release="3.9")
        emulator.restart(2, release="3.9")
        _wait(lambda: value("kclient_feature_verdict", feature="ZSTD",
                            verdict="available") == 1)
        assert (value("kclient_broker_answers_total") or 0) >= 2
        text = prometheus_client.generate_latest(registry).decode()
        assert 'kclient_brokers{state="answered"} 2.0' in text
