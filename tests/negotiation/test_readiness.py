"""Who breaks on the target release: observed refused versions first, then the prediction."""

from __future__ import annotations

import pytest

from kclient.negotiation import BrokerVersions
from kclient.negotiation.clients import Compat, check_client, client_profile
from kclient.negotiation.inventory import ClusterInventory, SoftwareUse
from kclient.negotiation.inventoryfile import read_inventory
from kclient.negotiation.readiness import Readiness, judge_cluster, judge_readiness
from kclient.negotiation.software import ClientSoftware
from tests.conftest import REPO_ROOT

DEFAULT = REPO_ROOT / "tests" / "data" / "inventory" / "prod-eu.prom"


def _brokers(*releases: str) -> list[BrokerVersions]:
    """Brokers of a freshly formatted cluster of each release (its feature levels too)."""
    return [BrokerVersions.of_release(r, i, f"kafka-{r}") for i, r in enumerate(releases, 1)]


def _use(name: str, version: str, connections: int | None = 1,
         requests: dict[tuple[int, int], int] | None = None, complete: bool = False,
         seen_in: str = "DeprecatedRequestsPerSec") -> SoftwareUse:
    return SoftwareUse("c", ClientSoftware(name, version), connections, requests or {},
                       complete, seen_in if requests else "")


def test_the_blocking_client_comes_first_with_the_observed_versions() -> None:
    judged = judge_readiness(read_inventory([str(DEFAULT)]), _brokers("4.0"), "Kafka 4.0")
    (cluster,) = judged
    assert cluster.state is Readiness.BLOCKED and cluster.unattributed == ()
    first = cluster.software[0]
    assert first.software.label == "unknown (no name sent)" and first.state is Compat.BREAKS
    assert first.reason == (
        "the brokers saw it send Fetch v3 (1,200 requests), Produce v2 (340 requests): removed "
        "in Kafka 4.0 (KIP-896); JoinGroup v1 (4 requests): removed in Kafka 4.0 (KIP-896), "
        "restored in 4.1 (DeprecatedRequestsPerSec)")
    assert [e.kind for e in first.evidence] == ["observed", "observed", "predicted"]
    assert first.evidence[1].text == ("deprecated versions still taken by Kafka 4.0: Metadata "
                                      "v1 (24 requests) (DeprecatedRequestsPerSec)")
    assert [(r.name, r.version) for r in first.refused] == [
        ("Produce", 2), ("Fetch", 3), ("JoinGroup", 1)]
    states = [(v.software.label, v.state.value) for v in cluster.software]
    assert states == [
        ("unknown (no name sent)", "breaks"), ("sarama dev", "unknown"),
        ("confluent-kafka-python 2.6.1-rdkafka-2.6.1", "works"),
        ("librdkafka 2.13.2", "works"), ("apache-kafka-java 3.9.0", "works")]
    assert cluster.blocking == (first,)


def test_the_prediction_is_compats_own_verdict() -> None:
    brokers = _brokers("4.0")
    cluster = ClusterInventory("c", (_use("confluent-kafka-python", "2.6.1-rdkafka-2.6.1"),
                                     _use("kafka-python", "2.1.5")))
    judged = judge_cluster(cluster, brokers, "Kafka 4.0", features=["produce", "zstd"])
    for verdict, spec in zip(judged.software, ["librdkafka==2.6.1", "kafka-python==2.1.5"],
                             strict=True):
        want = check_client(client_profile(spec), brokers, ["produce", "zstd"])
        assert verdict.results == want
        assert verdict.state is Compat.WORKS and verdict.predicted is Compat.WORKS


def test_a_release_restoring_a_version_changes_the_verdict() -> None:
    joins = ClusterInventory("c", (_use("unknown", "unknown", requests={(11, 1): 4}),))
    assert judge_cluster(joins, _brokers("4.0"), "Kafka 4.0").state is Readiness.BLOCKED
    restored = judge_cluster(joins, _brokers("4.1"), "Kafka 4.1")
    assert restored.state is Readiness.UNKNOWN  # no name: nothing can be promised
    assert restored.software[0].evidence[0].text == (
        "deprecated versions still taken by Kafka 4.1: JoinGroup v1 (4 requests) "
        "(DeprecatedRequestsPerSec)")
    # During the roll, both releases serve the cluster: the old version is refused by one.
    assert judge_cluster(joins, _brokers("4.1", "4.0"), "Kafka 4.1 + 4.0").state is (
        Readiness.BLOCKED)


def test_observed_beats_predicted_and_the_disagreement_is_listed() -> None:
    # librdkafka 2.6 sends Produce v0-10: v13 is neither in its profile nor taken by 4.0.
    cluster = ClusterInventory("c", (
        _use("confluent-kafka-python", "2.6.1-rdkafka-2.6.1", 9, requests={(0, 13): 5}),))
    (verdict,) = judge_cluster(cluster, _brokers("4.0"), "Kafka 4.0").software
    assert verdict.state is Compat.BREAKS and verdict.predicted is Compat.WORKS
    assert verdict.evidence[0].kind == "observed"
    assert verdict.reason == ("the brokers saw it send Produce v13 (5 requests): Kafka 4.0 "
                              "brokers take Produce v3-12 (DeprecatedRequestsPerSec)")
    assert verdict.disagreements == (
        "the librdkafka 2.6.1 profile predicts it works on Kafka 4.0, but the brokers saw it "
        "send Produce v13 (5 requests), which Kafka 4.0 refuses",
        "the brokers saw it send Produce v13 (5 requests), which the librdkafka 2.6.1 profile "
        "does not list: the name, the profile or the identification is wrong")


def test_requests_nobody_is_named_for_block_the_cluster() -> None:
    # A broker before 3.7 has no DeprecatedRequestsPerSec: only RequestsPerSec says it.
    old = ClusterInventory("c", (_use("librdkafka", "2.6.1", 3),),
                           {(0, 2): 100, (0, 9): 900, (1, 16): 50})
    judged = judge_cluster(old, _brokers("4.0"), "Kafka 4.0")
    assert judged.state is Readiness.BLOCKED
    assert [(r.text(), r.refused) for r in judged.unattributed] == [
        ("Produce v2 (100 requests)", "removed in Kafka 4.0 (KIP-896)")]
    # Counted under a named software: attributed, not listed again.
    named = ClusterInventory("c", (_use("unknown", "unknown", 2, {(0, 2): 100}),),
                             {(0, 2): 100})
    assert judge_cluster(named, _brokers("4.0"), "Kafka 4.0").unattributed == ()


@pytest.mark.parametrize("name, version, why", [
    ("librdkafka", "99.0.0", "librdkafka 99.0.0 is not profiled"),
    ("sarama", "dev", "sarama, release unknown: sarama sends 'dev'"),
    ("my-app", "1.0", "no library in kclient's table sends the name 'my-app'"),
])
def test_what_no_profile_judges_is_unknown_and_says_why(name: str, version: str,
                                                        why: str) -> None:
    cluster = ClusterInventory("c", (_use(name, version),))
    judged = judge_cluster(cluster, _brokers("4.0"), "Kafka 4.0")
    assert judged.state is Readiness.UNKNOWN
    (verdict,) = judged.software
    assert verdict.state is Compat.UNKNOWN and why in verdict.reason


def test_a_complete_recording_with_nothing_refused_says_so() -> None:
    recorded = _use("unknown", "unknown", 4, {(18, 0): 4, (0, 7): 30, (1, 11): 12},
                    complete=True, seen_in="kclient's emulator")
    (verdict,) = judge_cluster(ClusterInventory("c", (recorded,)), _brokers("4.0"),
                               "Kafka 4.0").software
    assert verdict.state is Compat.UNKNOWN
    assert verdict.evidence[0].text == ("every request version recorded from it (3) is one "
                                        "Kafka 4.0 takes (kclient's emulator)")


def test_every_cluster_is_ready_when_everything_works() -> None:
    works = ClusterInventory("c", (_use("apache-kafka-java", "3.9.0", 4),))
    assert judge_cluster(works, _brokers("4.0"), "Kafka 4.0").state is Readiness.READY
    assert judge_cluster(ClusterInventory("empty", ()), _brokers("4.0"),
                         "Kafka 4.0").state is Readiness.UNKNOWN


def test_group_protocols_are_judged_when_chosen_or_seen_never_by_default() -> None:
    # librdkafka 2.16 can speak share groups, which Kafka 4.0 does not serve: that breaks
    # only an application that chose a share consumer, seen by the brokers sending ShareFetch.
    profile = client_profile("confluent-kafka==2.16.1")
    assert profile.uses("share_groups") and profile.uses("kip848")
    assert all(r.state is Compat.WORKS for r in check_client(profile, _brokers("4.0")))
    (shares,) = check_client(profile, _brokers("4.0"), ["share_groups"])
    assert shares.state is Compat.BREAKS
    plain = _use("confluent-kafka-python", "2.16.1-rdkafka-2.16.0")
    sharing = _use("confluent-kafka-python", "2.16.1-rdkafka-2.16.0", requests={(78, 1): 10})
    for use, state in ((plain, Readiness.READY), (sharing, Readiness.BLOCKED)):
        judged = judge_cluster(ClusterInventory("c", (use,)), _brokers("4.0"), "Kafka 4.0")
        assert judged.state is state
    assert judge_cluster(ClusterInventory("c", (sharing,)), _brokers("4.2"),
                         "Kafka 4.2").state is Readiness.READY
