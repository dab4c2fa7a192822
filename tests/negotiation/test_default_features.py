"""The shipped features.yaml against every Kafka release profile.

The expected first releases come from Kafka's history (release notes and KIPs),
not from kclient: message format v1 arrived in 0.10.0 (KIP-31/32), v2 and the
idempotent producer in 0.11 (KIP-98), ZSTD in 2.1 (KIP-110), SaslAuthenticate in
1.0 (KIP-152), ApiVersions v3 with flexible versions in 2.4 (KIP-482/511),
DescribeCluster in 2.8 (KIP-700), fetching by topic id in 3.1 (KIP-516), leader
discovery in 3.7 (KIP-951), share group APIs advertised from 4.1 (KIP-932).
Kafka 4.0 removed Fetch v0-v3 (KIP-896), so the message-format-v1 and
throttle-time ranges librdkafka uses no longer overlap from 4.0 on.
"""

from __future__ import annotations

import pytest

from kclient.negotiation import (
    BrokerVersions,
    ClusterView,
    default_features,
    fallback_broker,
    known_releases,
    release_profile,
)

# The history of releases as a client upgrading a cluster sees it: ZooKeeper mode up
# to 3.9, then 4.x (KRaft); the KRaft profiles of 2.8-3.9 are checked on their own.
RELEASES = known_releases("zookeeper") + tuple(
    r for r in known_releases("kraft") if not r.endswith("-kraft"))

# feature -> (first release where usable, last release checked or None for "to the newest")
TRUTHS: dict[str, tuple[str | None, str | None]] = {
    "MsgVer1": ("0.10.0", "3.9"),
    "MsgVer2": ("0.11", None),
    "ApiVersion": ("0.10.0", None),
    "BrokerGroupCoordinator": ("0.8.2", None),
    "BrokerBalancedConsumer": ("0.9", "3.9"),
    "ThrottleTime": ("0.9", "3.9"),
    "Sasl": ("0.9", "3.9"),
    "SaslHandshake": ("0.10.0", None),
    "LZ4": ("0.8.2", None),
    "OffsetTime": ("0.10.1", None),
    "IdempotentProducer": ("0.11", None),
    "ZSTD": ("2.1", None),
    "SaslAuthReq": ("1.0", None),
    "Transactions": ("0.11", None),
    "ConsumerGroup": ("0.9", None),
    "ClientSoftwareName": ("2.4", None),
    "FlexibleVersions": ("2.4", None),
    "DescribeCluster": ("2.8", None),
    "TopicIds": ("3.1", None),
    "LeaderDiscovery": ("3.7", None),
    "ShareGroups": ("4.1", None),
    # Need finalized feature levels (or a configured plugin) that ApiVersions
    # ranges alone never show: unusable on every bare release profile.
    "ClientTelemetry": (None, None),
    "ConsumerGroupProtocol": (None, None),
    "TransactionsV2": (None, None),
}

# Kafka 4.0 dropped Fetch v0-v3 (KIP-896): these cannot be used with 4.0 brokers.
GONE_IN_4_0 = ("MsgVer1", "ThrottleTime")

LIBRDKAFKA_FEATURES = (
    "MsgVer1", "MsgVer2", "ApiVersion", "BrokerGroupCoordinator", "BrokerBalancedConsumer",
    "ThrottleTime", "Sasl", "SaslHandshake", "LZ4", "OffsetTime", "IdempotentProducer", "ZSTD",
    "SaslAuthReq",
)


def _availability() -> dict[str, dict[str, bool]]:
    features = default_features()
    table: dict[str, dict[str, bool]] = {f.name: {} for f in features}
    for release in RELEASES:
        view = ClusterView([fallback_broker(release, 1, "127.0.0.1", 9092)], name=release)
        for result in view.evaluate(features):
            table[result.name][release] = result.available
    return table


def test_every_feature_has_a_truth_and_a_reference() -> None:
    features = default_features()
    assert sorted(f.name for f in features) == sorted(TRUTHS)
    for feature in features:
        assert feature.reference, feature.name
        assert feature.description, feature.name
    for name in LIBRDKAFKA_FEATURES:
        assert name in features


@pytest.mark.parametrize("name", sorted(TRUTHS))
def test_first_usable_release(name: str) -> None:
    first, last = TRUTHS[name]
    row = _availability()[name]
    usable = [r for r in RELEASES if row[r]]
    if first is None:
        assert usable == []
        return
    assert usable, f"{name} is usable on no release"
    assert usable[0] == first
    stop = RELEASES.index(last) if last is not None else len(RELEASES) - 1
    for release in RELEASES[RELEASES.index(first): stop + 1]:
        assert row[release], f"{name} should be usable on {release}"


@pytest.mark.parametrize("name", GONE_IN_4_0)
def test_features_gone_with_kafka_4(name: str) -> None:
    row = _availability()[name]
    assert not row["4.0"]


def test_level_features_usable_once_finalized() -> None:
    profile = release_profile("4.0")
    broker = BrokerVersions(
        1, "127.0.0.1", 9092, profile,
        finalized_features={"group.version": (1, 1), "transaction.version": (2, 2)},
    )
    report = ClusterView([broker]).evaluate(default_features())
    assert report["ConsumerGroupProtocol"].available
    assert report["TransactionsV2"].available
    assert report["TransactionsV2"].versions["Produce"] == 12
    lower = BrokerVersions(2, "127.0.0.1", 9093, profile,
                           finalized_features={"group.version": (0, 0)})
    report = ClusterView([broker, lower]).evaluate(default_features())
    result = report["ConsumerGroupProtocol"]
    assert not result.available
    assert result.reasons == ("group.version needs 1+; broker 2 has it at level 0",)
    assert result.brokers == {1: True, 2: False}


def test_zstd_reason_names_the_old_broker() -> None:
    view = ClusterView([fallback_broker("2.1", 1, "h", 1), fallback_broker("2.0", 2, "h", 2)])
    result = view.evaluate()["ZSTD"]
    assert not result.available
    assert result.reasons[0] == "Produce needs 7; broker 2 offers 0-6"
    assert result.blocking == (2,)


def test_alternatives_pick_the_first_that_holds() -> None:
    old = ClusterView([fallback_broker("0.9", 1, "h", 1)])
    result = old.evaluate()["ConsumerGroup"]
    assert result.available and result.versions["JoinGroup"] == 0
    bare = ClusterView([fallback_broker("0.8.2", 1, "h", 1)])
    result = bare.evaluate()["ConsumerGroup"]
    assert not result.available
    assert result.reasons[-1].startswith("no alternative holds: (JoinGroup needs any version")


def test_kraft_early_access_lacks_producer_ids() -> None:
    # KIP-730: KRaft brokers hand out producer ids from 3.0; the 2.8 preview had none.
    features = default_features()
    for release, usable in (("2.8", True), ("2.8-kraft", False), ("3.0-kraft", True)):
        view = ClusterView([fallback_broker(release, 1, "127.0.0.1", 9092)], name=release)
        result = {r.name: r.available for r in view.evaluate(features)}
        assert result["IdempotentProducer"] is usable, release
