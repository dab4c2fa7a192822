"""Cluster views: KIP-35 semantics, version choice, errors and explanations."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest

from kclient.errors import (
    ConfigError,
    KClientError,
    UnknownFeatureError,
    UnknownMessageError,
    UnsupportedVersionError,
    VerdictUnknownError,
)
from kclient.negotiation import (
    ApplicationVersions,
    BrokerState,
    BrokerVersions,
    ClusterView,
    FeatureSet,
    Verdict,
    VersionRange,
    default_features,
    evaluate_features,
    fallback_broker,
    parse_features,
)
from kclient.protocol.catalog import ApiInfo, Catalog, default_catalog
from kclient.spelling import closest_name


def _toy_catalog() -> Catalog:
    return Catalog.from_infos([ApiInfo(k, f"Api{k}", 0, 9, None, None, "") for k in range(3)])


def _kip35_view() -> ClusterView:
    app = ApplicationVersions.from_catalog(_toy_catalog())
    b1 = BrokerVersions(1, "b1", 9092, {0: (0, 3), 1: (2, 3)})
    b2 = BrokerVersions(2, "b2", 9092, {0: (1, 2), 1: (0, 3), 2: (0, 0)})
    return ClusterView([b1, b2], app)


def test_kip35_worked_example_cluster_ranges() -> None:
    view = _kip35_view()
    ranges = view.api_ranges()
    assert ranges[0].cluster == VersionRange(1, 2)
    assert ranges[1].cluster == VersionRange(2, 3)
    assert ranges[2].cluster is None
    assert ranges[2].version is None
    assert ranges[2].blocking == (1,)
    assert view.version_for(0) == 2
    assert view.version_for("Api1") == 3


def test_kip35_worked_example_features() -> None:
    text = """
version: 1
features:
  - name: Feature1
    requires:
      - {api: 0, min: 3, max: 3}
      - {api: 1, min: 2, max: 3}
  - name: Feature2
    requires:
      - {api: 0, min: 0, max: 1}
      - {api: 1, min: 2, max: 3}
"""
    features = parse_features(text, "kip35.yaml", _toy_catalog())
    report = evaluate_features(_kip35_view(), features)
    assert not report["Feature1"].available
    assert report["Feature1"].reasons == ("Api0 needs 3; broker 2 offers 1-2",)
    assert report["Feature1"].blocking == (2,)
    assert report["Feature2"].available
    assert report["Feature2"].versions == {"Api0": 1, "Api1": 3}
    # Feature 1 holds with broker 1 alone, not with broker 2.
    assert report["Feature1"].brokers == {1: True, 2: False}


def test_version_for_error_names_application_and_brokers() -> None:
    view = _kip35_view()
    with pytest.raises(UnsupportedVersionError) as info:
        view.version_for(2)
    message = str(info.value)
    assert "Api2 (key 2)" in message
    assert "application speaks 0-9" in message
    assert "broker 1 lacks it" in message
    assert "broker 2 offers 0" in message


def test_version_for_one_broker() -> None:
    view = _kip35_view()
    assert view.version_for(0, broker=1) == 3
    assert view.version_for(0, broker=2) == 2
    with pytest.raises(UnsupportedVersionError, match="broker 1 lacks it"):
        view.version_for(2, broker=1)
    with pytest.raises(ConfigError, match="broker 7 is not in this cluster view"):
        view.version_for(0, broker=7)


def test_application_caps_minimums_and_avoided_versions() -> None:
    cat = default_catalog()
    app = ApplicationVersions.from_catalog(
        cat, max_versions={"Produce": 9}, min_versions={1: 4}, avoid_versions={"produce": [9]}
    )
    assert app.range_for("Produce") == VersionRange(0, 9)
    assert app.range_for("Fetch") == VersionRange(4, cat.resolve("Fetch").max_version)
    view = ClusterView([BrokerVersions(1, "h", 1, {0: (0, 11), 1: (0, 3)})], app)
    assert view.version_for("Produce") == 8  # 9 is avoided
    with pytest.raises(UnsupportedVersionError, match="application speaks 4-"):
        view.version_for("Fetch")
    support = view.api_support("Fetch")
    assert support.blocking == (1,)


def test_only_avoided_versions_left() -> None:
    app = ApplicationVersions.from_catalog(avoid_versions={"Produce": [3, 4]})
    view = ClusterView([BrokerVersions(1, "h", 1, {0: (3, 4)})], app)
    with pytest.raises(UnsupportedVersionError, match=r"every common version \(3-4\) is avoided"):
        view.version_for(0)


def test_bad_application_settings() -> None:
    with pytest.raises(ConfigError, match="empty"):
        ApplicationVersions.from_catalog(max_versions={"Produce": 3}, min_versions={"Produce": 5})
    with pytest.raises(ConfigError, match="unknown Kafka API 'Prodce'"):
        ApplicationVersions.from_catalog(max_versions={"Prodce": 3})
    with pytest.raises(ConfigError, match="version number"):
        ApplicationVersions.from_catalog(max_versions={"Produce": -1})


def test_unknown_keys_are_kept_and_named() -> None:
    view = ClusterView([BrokerVersions(1, "h", 1, {0: (0, 9), 999: (0, 5)})])
    support = view.api_support(999)
    assert support.name == "UNKNOWN(999)"
    assert support.cluster == VersionRange(0, 5)
    assert support.version is None
    assert 999 in view.api_ranges()
    assert view.api_support("UNKNOWN(999)").key == 999
    with pytest.raises(UnsupportedVersionError, match="does not speak UNKNOWN"):
        view.version_for(999)


def test_silent_broker_fails_closed_unless_lenient() -> None:
    ok = BrokerVersions(1, "h", 1, {0: (0, 9)})
    silent = BrokerVersions(2, "h", 2, source="api_versions", error="connection refused")
    assert silent.state is BrokerState.UNKNOWN
    strict = ClusterView([ok, silent])  # strict is the default
    support = strict.api_support("Produce")
    assert support.state is Verdict.UNKNOWN and not support.available
    assert support.version is None and support.unknown == (2,) and support.blocking == ()
    with pytest.raises(VerdictUnknownError, match="connection refused") as info:
        strict.version_for("Produce")
    assert info.value.brokers == (2,)
    assert isinstance(info.value, UnsupportedVersionError)  # unknown counts as "no"
    lenient = ClusterView([ok, silent], strict=False)
    assert lenient.version_for("Produce") == 9
    assert lenient.api_support("Produce").state is Verdict.AVAILABLE
    assert lenient.failed_brokers == (silent,) and lenient.ignored_brokers == (silent,)
    with pytest.raises(UnsupportedVersionError, match="negotiation failed"):
        lenient.version_for("Produce", broker=2)
    assert len(strict.evaluate(FeatureSet(()))) == 0


def test_known_blockers_win_over_silent_brokers() -> None:
    # A broker that answered and lacks the API rules it out whatever the silent one says.
    old = BrokerVersions(1, "h", 1, {0: (0, 2)})
    silent = BrokerVersions(2, "h", 2, error="timed out")
    app = ApplicationVersions.from_catalog(min_versions={"Produce": 3})
    support = ClusterView([old, silent], app).api_support("Produce")
    assert support.state is Verdict.UNAVAILABLE and support.blocking == (1,)
    assert support.unknown == (2,)


def test_stale_broker_keeps_its_last_answer() -> None:
    when = datetime(2026, 11, 23, 12, 0, tzinfo=UTC)
    new = BrokerVersions(1, "h", 1, {0: (0, 11)}, answered_at=when)
    old = BrokerVersions(2, "h", 2, {0: (0, 6)}, answered_at=when)
    down = old.went_stale("connection refused")
    assert down.state is BrokerState.STALE and down.apis == old.apis
    view = ClusterView([new, down])
    # The range does not widen to 0-11 because broker 2 went away.
    assert view.api_support("Produce").cluster == VersionRange(0, 6)
    assert view.version_for("Produce") == 6
    assert view.api_support("Produce").stale == (2,)
    later = when + timedelta(seconds=42)
    assert view.stale_notes(later) == (
        "broker 2 (h:2) is unreachable (connection refused); using its last answer, 42 s old",)
    # A broker that never answered loses nothing by failing again: it stays unknown.
    never = BrokerVersions(3, "h", 3, error="pending").went_stale("refused")
    assert never.state is BrokerState.UNKNOWN and never.apis == {}


def test_no_brokers() -> None:
    view = ClusterView([])
    with pytest.raises(UnsupportedVersionError, match="no broker answered"):
        view.version_for("Produce")


def test_brokers_overlap_application_but_not_each_other() -> None:
    view = ClusterView([BrokerVersions(1, "h", 1, {0: (0, 3)}),
                        BrokerVersions(2, "h", 2, {0: (5, 9)}),
                        BrokerVersions(3, "h", 3, {0: (0, 9)})])
    support = view.api_support(0)
    assert support.usable is None
    assert support.bounds == (5, 3)
    assert support.blocking == (1, 2)


def test_with_and_without_broker() -> None:
    view = _kip35_view()
    upgraded = view.with_broker(BrokerVersions(1, "b1", 9092, {0: (0, 3), 1: (2, 3), 2: (0, 1)}))
    assert upgraded.version_for(2) == 0
    assert view.without_broker(2).version_for(0) == 3
    with pytest.raises(ConfigError, match="appears twice"):
        ClusterView([BrokerVersions(1, "a", 1), BrokerVersions(1, "b", 2)])


def test_reason_says_when_kafka_removed_the_needed_version() -> None:
    features = parse_features(
        "version: 1\nfeatures:\n  - name: OldFetch\n    requires: [{api: Fetch, max: 3}]\n"
        "  - name: NewFetch\n    requires: [{api: Fetch, min: 99}]\n")
    view = ClusterView([fallback_broker("4.0", 1, "h", 1), fallback_broker("3.9", 2, "h", 2)])
    report = view.evaluate(features)
    assert report["OldFetch"].reasons == (
        "Fetch needs 0-3; broker 1 offers 4-17; Fetch v3 removed in Kafka 4.0 (KIP-896)",)
    assert report["OldFetch"].blocking == (1,)
    # A broker that is too old (not too new) gets no removal note.
    assert "removed" not in report["NewFetch"].reasons[0]


def test_unknown_feature_names_are_typed_key_errors_with_a_suggestion() -> None:
    report = ClusterView([fallback_broker("3.9", 1, "h", 1)]).evaluate(default_features())
    with pytest.raises(UnknownFeatureError) as info:
        report["zstdd"]
    assert isinstance(info.value, KeyError) and isinstance(info.value, KClientError)
    assert info.value.suggestion == "ZSTD"
    assert str(info.value).startswith("unknown feature 'zstdd'; did you mean 'ZSTD'?")
    with pytest.raises(UnknownFeatureError):
        default_features()["nope"]


def test_unknown_api_names_suggest_a_name_as_feature_names_do() -> None:
    view = ClusterView([fallback_broker("3.9", 1, "h", 1)])
    with pytest.raises(UnknownMessageError) as info:
        view.version_for("Metdata")
    assert isinstance(info.value, KeyError) and isinstance(info.value, KClientError)
    assert (info.value.name, info.value.suggestion) == ("Metdata", "Metadata")
    assert str(info.value) == ("unknown Kafka API 'Metdata'; did you mean 'Metadata'? (use a "
                               "name such as 'Produce' or a key from 0 to 92)")
    # One rule for both: letter case ignored, the nearest name.
    with pytest.raises(UnknownMessageError, match="did you mean 'ApiVersions'") as info:
        view.version_for("apiversion")
    assert closest_name("apiversion", ["ApiVersions", "Produce"]) == info.value.suggestion
    with pytest.raises(UnknownFeatureError) as feature:
        view.evaluate(default_features())["zstD1"]
    assert feature.value.suggestion == closest_name("zstD1", default_features().names())
    with pytest.raises(UnknownMessageError) as info:
        view.version_for("Xyzzy")
    assert info.value.suggestion is None and "did you mean" not in str(info.value)
    with pytest.raises(ConfigError, match="unknown Kafka API 'Prodce'; did you mean 'Produce'"):
        ApplicationVersions.from_catalog(max_versions={"Prodce": 3})


def test_ipv6_hosts_are_printed_in_brackets() -> None:
    from kclient.negotiation.verdict import broker_label

    broker = BrokerVersions(1, "::1", 9092, {0: (0, 9)})
    assert broker.address == "[::1]:9092"
    assert broker.label == broker_label(1, "::1", 9092) == "broker 1 ([::1]:9092)"
    assert BrokerVersions(2, "kafka-2", 9092).label == "broker 2 (kafka-2:9092)"
