"""The shipped features.yaml against every Kafka release profile.

The expected first releases come from Kafka's history (release notes and KIPs),
not from kclient: message format v1 arrived in 0.10.0 (KIP-31/32), v2 and the
idempotent producer in 0.11 (KIP-98), ZSTD in 2.1 (KIP-110), SaslAuthenticate in
1.0 (KIP-152), ApiVersions v3 with flexible versions in 2.4 (KIP-482/511),
DescribeCluster in 2.8 (KIP-700), fetching by topic id in 3.1 (KIP-516), leader
discovery in 3.7 (KIP-951), share group APIs advertised from 4.1 (KIP-932) and
streams group APIs from 4.2 (KIP-1071); share and streams groups also need their
finalized feature levels (share.version, streams.version), which no bare release
profile shows.
Kafka 4.0 removed many old request versions (KIP-896: Fetch v0-v3, JoinGroup
v0-v1 until 4.1 brought them back, OffsetCommit v0-v1, ...).  Every requirement of
the default file is open-ended, as librdkafka's are since 2.11.1, so no feature
usable on 3.9 is lost on 4.x; the KIP-848 and SaslHandshake alternatives keep
BrokerBalancedConsumer and Sasl usable on a broker without the classic group APIs.
"""

from __future__ import annotations

import pytest

from kclient.negotiation import (
    ApplicationVersions,
    BrokerVersions,
    ClusterView,
    VersionRange,
    default_features,
    fallback_broker,
    known_releases,
    release_feature_levels,
    release_profile,
)
from kclient.negotiation.features import ApiRequirement

# The history of releases as a client upgrading a cluster sees it: ZooKeeper mode up
# to 3.9, then 4.x (KRaft); the KRaft profiles of 2.8-3.9 are checked on their own.
RELEASES = known_releases("zookeeper") + tuple(
    r for r in known_releases("kraft") if not r.endswith("-kraft"))

# feature -> (first release where usable, last release checked or None for "to the newest")
TRUTHS: dict[str, tuple[str | None, str | None]] = {
    "MsgVer1": ("0.10.0", None),
    "MsgVer2": ("0.11", None),
    "ApiVersion": ("0.10.0", None),
    "BrokerGroupCoordinator": ("0.8.2", None),
    "BrokerBalancedConsumer": ("0.9", None),
    "ThrottleTime": ("0.9", None),
    "Sasl": ("0.9", None),
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
    # Need finalized feature levels (or a configured plugin) that ApiVersions
    # ranges alone never show: unusable on every bare release profile.
    "ClientTelemetry": (None, None),
    "ConsumerGroupProtocol": (None, None),
    "ConsumerGroupRegex": (None, None),
    "TransactionsV2": (None, None),
    "ShareGroups": (None, None),
    "StreamsGroups": (None, None),
}

# The features NOT usable on each Kafka 4.x release profile (all others are):
# each needs a finalized feature level or a metrics plugin that a bare profile
# never shows.
UNUSABLE_ON_4X: dict[str, set[str]] = {
    release: {"ClientTelemetry", "ConsumerGroupProtocol", "ConsumerGroupRegex",
              "TransactionsV2", "ShareGroups", "StreamsGroups"}
    for release in ("4.0", "4.1", "4.2", "4.3")
}

# The first release whose brokers advertise what each level-gated feature needs
# from ApiVersions, and the levels that switch it on (KIP-584 finalized features).
LEVEL_GATED: dict[str, tuple[str, dict[str, tuple[int, int]]]] = {
    "ConsumerGroupProtocol": ("3.7-kraft", {"group.version": (1, 1)}),
    "ConsumerGroupRegex": ("4.0", {"group.version": (1, 1)}),
    "TransactionsV2": ("4.0", {"transaction.version": (2, 2)}),
    "ShareGroups": ("4.1", {"share.version": (1, 1)}),
    "StreamsGroups": ("4.2", {"streams.version": (1, 1)}),
}

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


@pytest.mark.parametrize("release", sorted(UNUSABLE_ON_4X))
def test_verdicts_on_kafka_4(release: str) -> None:
    table = _availability()
    unusable = {name for name, row in table.items() if not row[release]}
    assert unusable == UNUSABLE_ON_4X[release]


def test_kip_896_removes_no_feature() -> None:
    """Whatever 3.9 allows, every 4.x release allows too (or is listed above for a
    reason that is not a removed version)."""
    table = _availability()
    on_3_9 = {name for name, row in table.items() if row["3.9"]}
    for release in UNUSABLE_ON_4X:
        assert not on_3_9 & UNUSABLE_ON_4X[release], release


def test_every_api_requirement_is_open_ended() -> None:
    for feature in default_features():
        reqs = [*feature.requires, *(r for alt in feature.any_of for r in alt)]
        for req in reqs:
            if isinstance(req, ApiRequirement):
                assert req.max is None, f"{feature.name}: {req.describe()} has an upper bound"


def _without(release: str, *apis: int, **caps: tuple[int, int]) -> BrokerVersions:
    profile = {k: r for k, r in release_profile(release).items() if k not in apis}
    for key, (low, high) in caps.items():
        profile[int(key.removeprefix("api"))] = VersionRange(low, high)
    return BrokerVersions(1, "127.0.0.1", 9092, profile)


# JoinGroup, Heartbeat, LeaveGroup, SyncGroup: the classic group protocol.
CLASSIC_GROUP_APIS = (11, 12, 13, 14)


def test_balanced_consumer_through_kip_848() -> None:
    report = ClusterView([_without("4.3", *CLASSIC_GROUP_APIS)]).evaluate(default_features())
    result = report["BrokerBalancedConsumer"]
    assert result.available
    # v1: stable since Kafka 4.0 (its 4.2.0 and 4.3.0 release specs; the 2024 corpus
    # still marked it unstable).
    assert result.versions == {"ConsumerGroupHeartbeat": 1, "OffsetCommit": 10, "OffsetFetch": 10}
    # KIP-848's path needs OffsetCommit v9+: capped at 8 neither path holds.
    capped = _without("4.3", *CLASSIC_GROUP_APIS, api8=(2, 8))
    result = ClusterView([capped]).evaluate(default_features())["BrokerBalancedConsumer"]
    assert not result.available
    assert result.reasons[0].startswith("no alternative holds: (JoinGroup needs any version")
    assert "OffsetCommit needs 9+; broker 1 offers 2-8" in result.reasons[0]


def test_classic_balanced_consumer_is_reported_first() -> None:
    view = ClusterView([fallback_broker("4.0", 1, "h", 1)])
    result = view.evaluate(default_features())["BrokerBalancedConsumer"]
    assert result.available and result.versions["JoinGroup"] == 9


def test_sasl_without_join_group() -> None:
    # SaslHandshake (key 17) vouches for SASL where JoinGroup (key 11) is gone.
    report = ClusterView([_without("4.3", 11)]).evaluate(default_features())
    assert report["Sasl"].available and report["Sasl"].versions == {"SaslHandshake": 1}
    report = ClusterView([_without("4.3", 11, 17)]).evaluate(default_features())
    assert not report["Sasl"].available


# An application that speaks every version a 4.3 broker offers (a current Java
# client, say): what the level gates decide, apart from what kclient can encode.
EVERYTHING = ApplicationVersions(release_profile("4.3"))
@pytest.mark.parametrize("name", sorted(LEVEL_GATED))
def test_level_gated_features(name: str) -> None:
    first, levels = LEVEL_GATED[name]
    lineage = known_releases("kraft")
    for release in lineage:
        broker = BrokerVersions(1, "127.0.0.1", 9092, release_profile(release),
                                finalized_features=levels)
        result = ClusterView([broker], EVERYTHING).evaluate(default_features())[name]
        assert result.available is (lineage.index(release) >= lineage.index(first)), release
    # The APIs alone, or the level one below what is needed, are not enough.
    for level in (None, 0):
        finalized = {} if level is None else {f: (level, level) for f in levels}
        broker = BrokerVersions(1, "127.0.0.1", 9092, release_profile("4.3"),
                                finalized_features=finalized)
        result = ClusterView([broker], EVERYTHING).evaluate(default_features())[name]
        assert not result.available
        assert any(next(iter(levels)) in reason for reason in result.reasons)


@pytest.mark.parametrize("name", sorted(LEVEL_GATED))
def test_kclient_itself_speaks_every_level_gated_feature(name: str) -> None:
    """kclient's own application range (its codec) covers each level-gated feature on
    a 4.3 broker with the levels on: the share-group and streams-group APIs included."""
    levels = LEVEL_GATED[name][1]
    broker = BrokerVersions(1, "127.0.0.1", 9092, release_profile("4.3"),
                            finalized_features=levels)
    assert ClusterView([broker]).evaluate(default_features())[name].available


@pytest.mark.parametrize(("release", "available"), [("4.0", False), ("4.1", False),
                                                      ("4.2", True), ("4.3", True)])
def test_share_groups_on_each_release_s_fresh_cluster_levels(release: str,
                                                             available: bool) -> None:
    """A freshly formatted 4.2+ cluster has share.version 1; 4.1's has 0 (a preview,
    off), and 4.0 neither speaks the released APIs nor knows share.version."""
    levels = release_feature_levels(release)
    broker = BrokerVersions(1, "127.0.0.1", 9092, release_profile(release),
                            supported_features=levels.supported,
                            finalized_features={n: (lv, lv) for n, lv in levels.finalized.items()})
    result = ClusterView([broker]).evaluate(default_features())["ShareGroups"]
    assert result.available is available
    if release == "4.1":
        assert result.reasons == ("share.version needs 1+; broker 1 has not finalized it; to "
                                  "finalize it: kafka-features.sh upgrade --feature "
                                  "share.version=1 (an emulated cluster: kclient emulate "
                                  "--finalized-feature share.version=1)",)
    if release == "4.0":
        assert result.reasons[-1].endswith(
            "broker 1 cannot finalize share.version 1 (the Kafka release running there does "
            "not support it): upgrade first")


def test_consumer_group_protocol_on_an_upgraded_cluster_names_the_fix() -> None:
    """A 4.0 cluster upgraded from 3.x keeps group.version 0: the reason says how to
    finalize level 1; at level 1 (a fresh 4.0 cluster) the feature is on."""
    levels = release_feature_levels("4.0")
    fresh = {n: (lv, lv) for n, lv in levels.finalized.items()}
    upgraded = {n: r for n, r in fresh.items() if n != "group.version"}
    for finalized, available in ((fresh, True), (upgraded, False)):
        broker = BrokerVersions(1, "127.0.0.1", 9092, release_profile("4.0"),
                                supported_features=levels.supported,
                                finalized_features=finalized)
        result = ClusterView([broker]).evaluate(default_features())["ConsumerGroupProtocol"]
        assert result.available is available
    assert "kafka-features.sh upgrade --feature group.version=1" in result.reasons[0]


def test_transactions_v2_adds_partitions_implicitly() -> None:
    # KIP-890 part 2: Produce v12+ and TxnOffsetCommit v5+ add the partitions and
    # offsets; a transactions-v2 client sends no AddPartitionsToTxn/AddOffsetsToTxn.
    feature = default_features()["TransactionsV2"]
    apis = {r.key for r in feature.requires if isinstance(r, ApiRequirement)}
    assert {0, 26, 28} <= apis
    assert not {24, 25} & apis
    profile = {k: r for k, r in release_profile("4.0").items() if k not in (24, 25)}
    broker = BrokerVersions(1, "127.0.0.1", 9092, profile,
                            finalized_features={"transaction.version": (2, 2)})
    assert ClusterView([broker]).evaluate(default_features())["TransactionsV2"].available


def test_no_feature_requires_a_broker_only_add_partitions_version() -> None:
    # AddPartitionsToTxn v4+ is for brokers (its spec; KIP-890): no feature may
    # require more than v3, or it could never hold for a client.
    for feature in default_features():
        reqs = [*feature.requires, *(r for alt in feature.any_of for r in alt)]
        for req in reqs:
            if isinstance(req, ApiRequirement) and req.key == 24:
                assert req.min <= 3, f"{feature.name}: {req.describe()}"


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
    assert result.reasons == (
        "group.version needs 1+; broker 2 has it at level 0; to finalize it: "
        "kafka-features.sh upgrade --feature group.version=1 (an emulated cluster: kclient "
        "emulate --finalized-feature group.version=1)",)
    assert result.brokers == {1: True, 2: False}


def test_zstd_reason_names_the_old_broker() -> None:
    view = ClusterView([fallback_broker("2.1", 1, "h", 1), fallback_broker("2.0", 2, "h", 2)])
    result = view.evaluate(default_features())["ZSTD"]
    assert not result.available
    assert result.reasons[0] == "Produce needs 7+; broker 2 offers 0-6"
    assert result.blocking == (2,)


def test_alternatives_pick_the_first_that_holds() -> None:
    old = ClusterView([fallback_broker("0.9", 1, "h", 1)])
    result = old.evaluate(default_features())["ConsumerGroup"]
    assert result.available and result.versions["JoinGroup"] == 0
    bare = ClusterView([fallback_broker("0.8.2", 1, "h", 1)])
    result = bare.evaluate(default_features())["ConsumerGroup"]
    assert not result.available
    assert result.reasons[-1].startswith("no alternative holds: (JoinGroup needs any version")


def test_kraft_early_access_lacks_producer_ids() -> None:
    # KIP-730: KRaft brokers hand out producer ids from 3.0; the 2.8 preview had none.
    features = default_features()
    for release, usable in (("2.8", True), ("2.8-kraft", False), ("3.0-kraft", True)):
        view = ClusterView([fallback_broker(release, 1, "127.0.0.1", 9092)], name=release)
        result = {r.name: r.available for r in view.evaluate(features)}
        assert result["IdempotentProducer"] is usable, release
