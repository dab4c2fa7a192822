"""The cluster client against emulated clusters: discovery, intersection, features, changes."""

from __future__ import annotations

import asyncio
import json

import pytest

from kclient.emulator import BrokerInfo, EmulatedBroker, EmulatedCluster, ThreadedEmulator
from kclient.errors import (
    BrokerConnectionError,
    ClientClosedError,
    ConfigError,
    UnsupportedVersionError,
    VerdictUnknownError,
)
from kclient.negotiation import (
    BrokerState,
    BrokerVersions,
    ClusterView,
    Verdict,
    VersionRange,
    ViewDiff,
    diff_views,
    load_features,
    record_to_json,
    release_profile,
)
from kclient.negotiation.featurefile import default_features
from kclient.net import Client, SyncClient, parse_bootstrap
from tests.waiting import until

pytestmark = pytest.mark.timeout(60)

MIXED = ["2.0", "2.8", "3.9", "4.1"]


def advertised(release: str) -> dict[int, VersionRange]:
    """What an emulated broker of ``release`` advertises: exactly the release profile."""
    return dict(release_profile(release))


def offline_view(releases: list[str], strict: bool = True) -> ClusterView:
    brokers = [BrokerVersions(i, "127.0.0.1", 0, advertised(r))
               for i, r in enumerate(releases, start=1)]
    return ClusterView(brokers, strict=strict)


async def test_mixed_cluster_equals_the_offline_answer() -> None:
    async with EmulatedCluster(MIXED) as cluster, Client(cluster.bootstrap_servers,
                                                         metadata_refresh_interval=None) as client:
        assert [b.node_id for b in client.brokers] == [1, 2, 3, 4]
        assert all(b.error is None for b in client.brokers)
        for broker, release in zip(cluster.brokers, MIXED, strict=True):
            assert dict(broker.profile) == advertised(release)
        offline = offline_view(MIXED)
        online = {k: (s.cluster, s.usable, s.version) for k, s in client.cluster.items()}
        expected = {k: (s.cluster, s.usable, s.version) for k, s in offline.api_ranges().items()}
        assert online == expected
        features = load_features()
        assert [(r.name, r.available, dict(r.brokers)) for r in client.report()] == [
            (r.name, r.available, dict(r.brokers)) for r in offline.evaluate(features)]
        for name in ("Produce", "Fetch", "Metadata"):
            assert client.version_for(name) == offline.version_for(name)
            assert client.version_for(name, broker=4) == offline.version_for(name, 4)
        # The 2.0 broker lacks DescribeCluster: unusable cluster-wide, named as blocker.
        with pytest.raises(UnsupportedVersionError, match="blocked by broker"):
            client.version_for("DescribeCluster")
        assert client.cluster_id == "kclient-emulated"


async def test_features_and_explanations() -> None:
    features = load_features()
    names = [f.name for f in features]
    async with EmulatedCluster(["2.0", "4.1"]) as cluster, \
            Client(cluster.bootstrap_servers, metadata_refresh_interval=None) as client:
        offline = offline_view(["2.0", "4.1"]).evaluate(features)
        for name in names:
            assert client.supports(name) == offline[name].available
            text = client.explain(name)
            assert text.startswith(name)
            assert ("not available" in text) == (not offline[name].available)
        with pytest.raises(KeyError):
            client.supports("no-such-feature")


async def test_snapshot_records_follow_design_5() -> None:
    async with EmulatedCluster(["2.8", "3.9"]) as cluster, \
            Client(cluster.bootstrap_servers, cluster_name="emu",
                   metadata_refresh_interval=None) as client:
        records = client.snapshot()
        assert [(r.cluster, r.broker_id, r.source) for r in records] == [
            ("emu", 1, "api_versions"), ("emu", 2, "api_versions")]
        as_json = json.loads(json.dumps(record_to_json(records[0])))
        assert as_json["port"] == cluster.broker(1).port
        assert {a["api_key"]: [a["min_version"], a["max_version"]]
                for a in as_json["api_versions"]} == {
            k: [r.min, r.max] for k, r in release_profile("2.8").items()}


async def test_rolling_upgrade_fires_on_change_with_the_diff() -> None:
    diffs: list[ViewDiff] = []
    seen = asyncio.Event()

    async def record(diff: ViewDiff, view: ClusterView) -> None:
        diffs.append(diff)
        if all(b.apis == advertised("3.9") for b in view.brokers if b.error is None) \
                and len(view.live_brokers) == 2:
            seen.set()

    async with EmulatedCluster(["2.8", "2.8"]) as cluster, \
            Client(cluster.bootstrap_servers, on_change=record, reconnect_backoff=0.01,
                   metadata_refresh_interval=None) as client:
        before = client.view
        await cluster.rolling_restart("3.9")
        await asyncio.wait_for(seen.wait(), 10)
        after = client.view
        expected = diff_views(before, after, default_features())
        assert expected.apis and expected.features_gained
        gained = {f for d in diffs for f in d.features_gained}
        assert set(expected.features_gained) <= gained
        changed = {c.key for d in diffs for c in d.apis}
        assert {c.key for c in expected.apis} <= changed
        assert client.version_for("Metadata") == offline_view(["3.9", "3.9"]).version_for(
            "Metadata")


async def test_refresh_and_sync_callback() -> None:
    calls: list[ViewDiff] = []
    async with EmulatedCluster(["2.8"]) as cluster, \
            Client(cluster.bootstrap_servers, metadata_refresh_interval=None) as client:
        client.on_change(lambda diff, view: calls.append(diff))
        assert not await client.refresh()  # nothing changed
        broker = cluster.broker(1)
        # Change the release without closing the connection: only a forced refresh sees it.
        broker.set_release("4.1")
        diff = await client.refresh()
        assert diff.brokers_changed == (1,)
        new_keys = set(release_profile("4.1")) - set(release_profile("2.8"))
        appeared = {c.key for c in diff.apis if c.kind == "appeared"}
        assert new_keys & set(client.application.apis) <= appeared
        assert appeared
        await until(lambda: calls and calls[-1].brokers_changed == (1,),
                    "the change reached on_change")


async def test_periodic_metadata_notices_added_and_removed_brokers() -> None:
    async with EmulatedCluster(["3.9", "3.9"]) as cluster, \
            Client(cluster.bootstrap_servers, metadata_refresh_interval=0.05) as client:
        await cluster.add_broker("2.8")
        await until(lambda: len(client.view.live_brokers) == 3, "the added broker joined")
        assert [b.node_id for b in client.view.live_brokers] == [1, 2, 3]
        assert client.version_for("ApiVersions") == 3
        await cluster.remove_broker(3)
        await until(lambda: len(client.brokers) == 2, "the removed broker left")
        assert [b.node_id for b in client.brokers] == [1, 2]
        assert client.version_for("ApiVersions") == 4


async def test_dead_and_hanging_brokers_do_not_block_the_others() -> None:
    dead = EmulatedBroker(98, "3.9")
    await dead.start()
    dead_port = dead.port
    await dead.stop()
    async with EmulatedBroker(99, "3.9", behaviour="hang") as hang, \
            EmulatedCluster(["3.9", "2.8"]) as cluster:
        extra = [BrokerInfo(98, "127.0.0.1", dead_port), BrokerInfo(99, "127.0.0.1", hang.port)]
        for broker in cluster.brokers:
            broker.peers = lambda: [*cluster.listed(), *extra]
        loop = asyncio.get_running_loop()
        started = loop.time()
        async with Client(cluster.bootstrap_servers, request_timeout=5, startup_wait=0.5,
                          metadata_refresh_interval=None) as client:
            assert loop.time() - started < 3
            assert [b.node_id for b in client.view.live_brokers] == [1, 2]
            failed = {b.node_id: b.error for b in client.view.failed_brokers}
            assert set(failed) == {98, 99}
            assert "cannot connect" in str(failed[98])
            assert "not negotiated yet" in str(failed[99])
            # Strict (the default): two listed brokers never answered, so nothing is promised.
            with pytest.raises(VerdictUnknownError, match="not answered ApiVersions") as info:
                client.version_for("Metadata")
            assert info.value.brokers == (98, 99)
            assert "cannot connect" in str(info.value)
            assert not any(r.available for r in client.report())
            assert {r.state for r in client.report()} <= {Verdict.UNKNOWN, Verdict.UNAVAILABLE}
            assert "unknown:" in client.explain("IdempotentProducer")
            assert "broker 98" in client.explain("IdempotentProducer")
            assert not client.supports("IdempotentProducer")
        async with Client(cluster.bootstrap_servers, strict=False, startup_wait=0.5,
                          metadata_refresh_interval=None) as lenient:
            # Lenient (the explicit opt-in): the brokers that answered decide, and say so.
            assert lenient.version_for("Metadata") == offline_view(["3.9", "2.8"]).version_for(
                "Metadata")
            assert lenient.supports("IdempotentProducer")
            assert "lenient mode: ignored broker(s)" in lenient.explain("IdempotentProducer")


async def test_bootstrap_errors() -> None:
    with pytest.raises(ConfigError, match="no port after"):
        Client("localhost:")
    with pytest.raises(ConfigError, match="empty"):
        Client("")
    assert parse_bootstrap("[::1]:9092, h:1") == [("::1", 9092), ("h", 1)]
    async with EmulatedBroker(1, "3.9") as broker:
        port = broker.port
    with pytest.raises(BrokerConnectionError, match="no bootstrap server"):
        async with Client(f"127.0.0.1:{port}", connect_timeout=1):
            pass


async def test_bootstrap_skips_an_unreachable_server() -> None:
    async with EmulatedBroker(1, "3.9") as gone:
        port = gone.port
    async with EmulatedCluster(["3.9"]) as cluster, \
            Client(f"127.0.0.1:{port},{cluster.bootstrap_servers}",
                   metadata_refresh_interval=None) as client:
        assert [b.node_id for b in client.view.live_brokers] == [1]


def test_sync_client_in_a_thread() -> None:
    with ThreadedEmulator(EmulatedCluster(["2.8", "3.9"])) as emu, \
            SyncClient(emu.bootstrap_servers, metadata_refresh_interval=None) as client:
        assert [b.node_id for b in client.brokers] == [1, 2]
        assert client.version_for("Metadata") == offline_view(["2.8", "3.9"]).version_for(
            "Metadata")
        response = client.request("Metadata", {"topics": []}, broker=2)
        assert len(response.brokers) == 2
        emu.restart(1, release="3.9")
        client.refresh()
        assert client.version_for("ApiVersions") == 4
        assert len(client.snapshot("x")) == 2
    with pytest.raises(ClientClosedError, match="closed"):
        _ = client.brokers


async def test_broker_down_keeps_its_last_answer_and_gains_once_on_upgrade() -> None:
    diffs: list[ViewDiff] = []
    async with EmulatedCluster(["2.0", "3.9", "3.9"]) as cluster, \
            Client(cluster.bootstrap_servers, on_change=lambda d, v: diffs.append(d),
                   reconnect_backoff=0.01, reconnect_backoff_max=0.05, connect_timeout=1,
                   metadata_refresh_interval=None) as client:
        old = cluster.broker(1)
        assert old.release == "2.0"
        assert client.feature("ZSTD").state is Verdict.UNAVAILABLE
        # The 2.0 broker goes down: it turns stale, keeps its 2.0 answer, ZSTD stays "no".
        await old.stop()
        await until(lambda: client.view.broker(1).state is BrokerState.STALE)
        result = client.feature("ZSTD")
        assert result.state is Verdict.UNAVAILABLE and result.blocking == (1,)
        assert result.stale == (1,)
        assert "broker 1" in client.explain("ZSTD") and "last answer" in client.explain("ZSTD")
        assert client.view.api_support("Produce").cluster == release_profile("2.0")[0]
        slot = client._supervisor.slots[1]
        await until(lambda: slot.failures >= 3, "three failed reconnects")
        assert not any(d.features_gained or d.features_lost for d in diffs)  # still no flip
        # It comes back upgraded: ZSTD is gained exactly once.
        await old.restart("3.9")
        await until(lambda: client.supports("ZSTD"))
        await until(lambda: any("ZSTD" in d.features_gained for d in diffs), "ZSTD gained")
        gained = [f for d in diffs for f in d.features_gained]
        assert gained.count("ZSTD") == 1
        assert not any("ZSTD" in d.features_lost for d in diffs)


async def test_same_answer_after_restart_changes_no_verdict() -> None:
    diffs: list[ViewDiff] = []
    async with EmulatedCluster(["3.9", "3.9"]) as cluster, \
            Client(cluster.bootstrap_servers, on_change=lambda d, v: diffs.append(d),
                   reconnect_backoff=0.01, reconnect_backoff_max=0.05, connect_timeout=1,
                   metadata_refresh_interval=None) as client:
        assert client.supports("ZSTD")
        await cluster.broker(2).stop()
        await until(lambda: client.view.broker(2).state is BrokerState.STALE)
        assert client.supports("ZSTD")  # the last answer still counts
        await cluster.broker(2).start()
        await until(lambda: client.view.broker(2).state is BrokerState.ANSWERED)
        assert not any(d.features_gained or d.features_lost or d.apis for d in diffs)
        assert any(2 in d.brokers_changed for d in diffs)  # the outage itself is reported


async def test_request_uses_the_brokers_own_version_or_the_cluster_wide_one() -> None:
    async with EmulatedCluster(["3.9", "2.8"]) as cluster, \
            Client(cluster.bootstrap_servers, metadata_refresh_interval=None) as client:
        newer = cluster.broker(1)
        assert newer.release == "3.9"
        own, wide = client.version_for("Metadata", broker=1), client.version_for("Metadata")
        assert own > wide  # the 2.8 broker holds the cluster-wide version back
        await client.request("Metadata", {"topics": []}, broker=1)
        assert newer.received[-1] == (3, own)
        await client.request("Metadata", {"topics": []}, broker=1, cluster_wide=True)
        assert newer.received[-1] == (3, wide)
        with pytest.raises(ConfigError, match="not both"):
            await client.request("Metadata", {"topics": []}, version=1, cluster_wide=True)
