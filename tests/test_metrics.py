"""The Prometheus exporter follows an emulated cluster through a restart and an upgrade."""

from __future__ import annotations

import pytest

from kclient import SyncClient
from kclient.emulator import EmulatedCluster, ThreadedEmulator
from tests.extras import needs_extra
from tests.waiting import wait_until

prometheus_client = needs_extra("metrics")

pytestmark = [pytest.mark.timeout(60)]


def test_gauges_follow_the_cluster() -> None:
    from kclient.metrics import ClusterMetrics

    registry = prometheus_client.CollectorRegistry()

    def value(name: str, **labels: str) -> float | None:
        labels.setdefault("cluster", "kclient-emulated")
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
        wait_until(lambda: value("kclient_feature_verdict", feature="ZSTD",
                                 verdict="available") == 1, "ZSTD available after the restarts")
        assert (value("kclient_broker_answers_total") or 0) >= 2
        assert value("kclient_api_usable_version", api="Produce") == 11
        assert value("kclient_broker_info", broker="1", address=client.view.broker(1).address,
                     state="answered", release_guess="3.9 (ZooKeeper)") == 1
        text = prometheus_client.generate_latest(registry).decode()
        assert 'kclient_brokers{cluster="kclient-emulated",state="answered"} 2.0' in text


def test_outage_usable_versions_and_broker_info() -> None:
    from kclient.metrics import NO_VERSION, ClusterMetrics

    registry = prometheus_client.CollectorRegistry()

    def value(name: str, **labels: str) -> float | None:
        return registry.get_sample_value(name, {"cluster": "lab", **labels})  # type: ignore[no-any-return]

    with ThreadedEmulator(EmulatedCluster(["2.0", "3.9"])) as emulator, \
            SyncClient(emulator.bootstrap_servers, metadata_refresh_interval=None) as client:
        ClusterMetrics(client, registry=registry, cluster="lab")
        # The cluster-wide versions: the 2.0 broker bounds Produce; 3.9 alone has
        # DescribeCluster, so no version of it can be promised.
        assert value("kclient_api_usable_version", api="Produce") == 6
        assert value("kclient_api_usable_version", api="DescribeCluster") == NO_VERSION == -1
        address = client.view.broker(2).address
        assert value("kclient_broker_info", broker="2", address=address, state="answered",
                     release_guess="3.9 (ZooKeeper)") == 1
        emulator.call(emulator.cluster.broker(2).stop())
        # Unreachable: its last answer (and the release it showed) still counts.
        wait_until(lambda: value("kclient_broker_info", broker="2", address=address,
                                 state="stale", release_guess="3.9 (ZooKeeper)") == 1,
                   "broker 2 stale with its last release kept")
        assert value("kclient_brokers", state="stale") == 1
        assert value("kclient_broker_info", broker="2", address=address, state="answered",
                     release_guess="3.9 (ZooKeeper)") is None


def test_two_clusters_share_the_default_registry() -> None:
    from kclient.errors import ConfigError
    from kclient.metrics import ClusterMetrics

    registry = prometheus_client.REGISTRY
    with ThreadedEmulator(EmulatedCluster(["2.0"])) as old, \
            ThreadedEmulator(EmulatedCluster(["3.9"])) as new, \
            SyncClient(old.bootstrap_servers, metadata_refresh_interval=None,
                       cluster_name="old") as old_client, \
            SyncClient(new.bootstrap_servers, metadata_refresh_interval=None,
                       cluster_name="new") as new_client:
        first = ClusterMetrics(old_client)  # the default registry, as the module doc shows
        second = ClusterMetrics(new_client)
        try:
            assert registry.get_sample_value(
                "kclient_api_usable_version", {"cluster": "old", "api": "Produce"}) == 6
            assert registry.get_sample_value(
                "kclient_api_usable_version", {"cluster": "new", "api": "Produce"}) == 11
            text = prometheus_client.generate_latest(registry).decode()
            # One family per name, a series per cluster.
            assert text.count("# TYPE kclient_brokers gauge") == 1
            with pytest.raises(ConfigError, match=r"^ClusterMetrics: cluster 'old' is already "
                               r"exported on this registry with prefix 'kclient'; pass "
                               r"cluster= a distinct name \(or close\(\) the other first\)$"):
                ClusterMetrics(old_client)
            third = ClusterMetrics(old_client, cluster="old-again")
            third.close()
        finally:
            first.close()
            second.close()
        assert registry.get_sample_value(
            "kclient_brokers", {"cluster": "old", "state": "answered"}) is None
