"""The KIP-584 feature levels an emulated cluster reports: a freshly formatted cluster of
its release by default, an upgraded one (old levels kept) on request, as Kafka's
ApiVersions answer carries them."""

from __future__ import annotations

import pytest

from kclient.emulator import BrokerSpec, EmulatedBroker, EmulatedCluster
from kclient.errors import ConfigError
from kclient.negotiation import VersionRange, release_feature_levels
from kclient.net import Client, Connection

FRESH = {
    "4.0": {"metadata.version": 25, "kraft.version": 1, "transaction.version": 2,
            "group.version": 1},
    "4.1": {"metadata.version": 27, "kraft.version": 1, "transaction.version": 2,
            "group.version": 1, "eligible.leader.replicas.version": 1},
    "4.2": {"metadata.version": 29, "kraft.version": 1, "transaction.version": 2,
            "group.version": 1, "eligible.leader.replicas.version": 1, "share.version": 1,
            "streams.version": 1},
}


@pytest.mark.parametrize("release", sorted(FRESH))
async def test_a_fresh_cluster_reports_its_release_s_levels(release: str) -> None:
    async with EmulatedBroker(1, release) as broker, \
            Connection("127.0.0.1", broker.port) as conn:
        versions = conn.versions
        levels = {name: rng.max for name, rng in versions.finalized_features.items()}
        assert levels == FRESH[release]
        assert all(rng.min == rng.max for rng in versions.finalized_features.values())
        assert versions.finalized_features_epoch == 1
        assert dict(versions.supported_features) == dict(
            release_feature_levels(release).supported)


async def test_releases_before_4_0_finalize_nothing_unless_told() -> None:
    async with EmulatedBroker(1, "3.9") as broker, \
            Connection("127.0.0.1", broker.port) as conn:
        assert dict(conn.versions.finalized_features) == {}
        assert conn.versions.finalized_features_epoch == -1


async def test_an_upgraded_cluster_keeps_level_0_which_is_left_out() -> None:
    """group.version 0 (a 3.x cluster upgraded to 4.0 that kept its level) is not listed,
    as Kafka leaves level-0 features out of ApiVersions; the others stay."""
    broker = EmulatedBroker(1, "4.0", finalized_features={"group.version": (0, 0)})
    async with broker, Connection("127.0.0.1", broker.port) as conn:
        assert "group.version" not in conn.versions.finalized_features
        assert conn.versions.finalized_level("transaction.version") == 2
        assert conn.versions.supported_features["group.version"] == VersionRange(0, 1)


def test_a_level_above_the_release_s_supported_range_is_refused() -> None:
    with pytest.raises(ConfigError, match=r"transaction.version finalized at 3 is outside "
                                          r"the range 0-2 brokers of that release support; "
                                          r"give the supported range too"):
        EmulatedBroker(1, "4.0", finalized_features={"transaction.version": (3, 3)})
    # A feature the release does not report is supported from 0 to the level asked for
    # (4.1's unstable streams.version: an experiment the caller asked for).
    broker = EmulatedBroker(1, "4.1", finalized_features={"streams.version": (1, 1)})
    assert broker.supported_features["streams.version"] == (0, 1)


async def test_a_rolling_upgrade_keeps_the_finalized_levels() -> None:
    """Brokers restarted on 4.1 keep the 4.0 cluster's levels (an upgrade changes no
    finalized level) and report 4.1's supported ranges; a mixed cluster starts at the
    levels of its oldest release."""
    async with EmulatedCluster(["4.0", "4.1"]) as cluster:
        assert cluster.formatted_with == "4.0"
        for broker in cluster.brokers:
            assert "eligible.leader.replicas.version" not in broker.finalized_features
        assert "share.version" in cluster.broker(2).supported_features
        await cluster.rolling_restart("4.1")
        async with Client(cluster.bootstrap_servers, metadata_refresh_interval=None) as client:
            for versions in client.view.brokers:
                assert versions.finalized_level("group.version") == 1
                assert versions.finalized_level("eligible.leader.replicas.version") is None
                assert "share.version" in versions.supported_features


def test_broker_specs_change_levels_of_the_cluster() -> None:
    cluster = EmulatedCluster([BrokerSpec("4.2", finalized_features={"share.version": (0, 0)}),
                               BrokerSpec("4.2", finalized_features={"share.version": (0, 0)})])
    assert all("share.version" not in b.finalized_features for b in cluster.brokers)
    assert all(b.finalized_features["streams.version"] == (1, 1) for b in cluster.brokers)
