"""Diffs between cluster views (a rolling upgrade, a broker leaving)."""

from __future__ import annotations

from kclient.negotiation import (
    ApiChange,
    ApplicationVersions,
    BrokerVersions,
    ClusterView,
    VersionRange,
    ViewDiff,
    diff_views,
    fallback_broker,
)
from kclient.negotiation.featurefile import default_features


def _cluster(*releases: str) -> ClusterView:
    return ClusterView([fallback_broker(r, i, "h", 9092 + i)
                        for i, r in enumerate(releases, start=1)], name="c")


def test_no_change() -> None:
    view = _cluster("2.8", "2.8")
    diff = diff_views(view, view, default_features())
    assert not diff
    assert str(diff) == "no change"


def test_rolling_upgrade_widens_and_gains_features() -> None:
    before = _cluster("2.0", "2.1")
    after = _cluster("2.1", "2.1")
    diff = diff_views(before, after, default_features())
    produce = next(c for c in diff.apis if c.key == 0)
    assert produce.kind == "widened"
    assert (produce.old, produce.new) == (VersionRange(0, 6), VersionRange(0, 7))
    assert (produce.old_version, produce.new_version) == (6, 7)
    assert "ZSTD" in diff.features_gained
    assert diff.features_lost == ()
    assert diff.brokers_changed == (1,)
    assert diff.brokers_added == diff.brokers_removed == ()
    assert "Produce(0) widened: 0-6 -> 0-7 (sends v6 -> v7)" in diff.lines()


def test_downgrade_narrows_and_loses() -> None:
    diff = diff_views(_cluster("2.4", "2.4"), _cluster("2.4", "2.3"),
                      default_features())
    api_versions = next(c for c in diff.apis if c.key == 18)
    assert api_versions.kind == "narrowed"
    assert "ClientSoftwareName" in diff.features_lost


def test_appeared_disappeared_and_brokers() -> None:
    before = _cluster("2.7")
    after = before.with_broker(fallback_broker("2.8", 2, "h", 9))
    diff = diff_views(before, after, default_features())
    assert diff.brokers_added == (2,)
    # Every broker must have an API for it to count: 2.8 adds DescribeCluster (60)
    # but broker 1 (2.7) lacks it, so nothing appears cluster-wide yet.
    assert all(c.key != 60 for c in diff.apis)
    only_new = ClusterView([fallback_broker("2.8", 2, "h", 9)], name="c")
    diff = diff_views(before, only_new, default_features())
    assert diff.brokers_removed == (1,) and diff.brokers_added == (2,)
    kinds = {c.key: c.kind for c in diff.apis}
    assert kinds[60] == "appeared"
    back = diff_views(only_new, before, default_features())
    assert {c.key: c.kind for c in back.apis}[60] == "disappeared"


def test_application_change_shifts_version() -> None:
    brokers = [BrokerVersions(1, "h", 1, {0: (0, 9)})]
    before = ClusterView(brokers)
    after = ClusterView(brokers, ApplicationVersions.from_catalog(avoid_versions={0: [9]}))
    diff = diff_views(before, after, default_features())
    assert [(c.key, c.kind, c.old_version, c.new_version) for c in diff.apis] == [
        (0, "shifted", 9, 8)]


def test_str_reads_like_watch_and_the_detail_is_one_attribute_away() -> None:
    """One broker upgrade moves every admin and internal API: ``str(diff)`` lists what
    clients notice and counts the rest, ``diff.detail`` lists everything."""
    diff = diff_views(_cluster("2.0", "2.0"), _cluster("3.9", "3.9"), default_features())
    text, detail = str(diff).splitlines(), diff.detail.splitlines()
    noticed = diff.client_changes
    assert len(diff.apis) > 40 and len(text) < 12 < len(detail)
    gained = {key for feature in default_features() if feature.name in diff.features_gained
              for key in feature.api_keys()}
    assert {c.key for c in noticed} <= {0, 1, 3} | gained
    assert {0, 1, 3} <= {c.key for c in noticed}
    assert all(c.old_version != c.new_version for c in noticed)
    assert [str(c) for c in noticed] == text[1:1 + len(noticed)]
    assert text[1 + len(noticed)] == (
        f"{len(diff.apis) - len(noticed)} other API range(s) changed (admin or "
        "broker-internal APIs; diff.detail lists them)")
    assert [str(c) for c in diff.apis] == detail[1:1 + len(diff.apis)]
    assert text[-1] == detail[-1] == "features gained: " + ", ".join(diff.features_gained)
    # The command line folds with the same rule, pointing at its own flags.
    assert diff.api_lines(elsewhere="-v lists them")[-1].endswith("; -v lists them)")
    assert diff.api_lines(verbose=True) == [str(c) for c in diff.apis]


def test_a_diff_made_by_hand_lists_every_change() -> None:
    change = ApiChange(44, "IncrementalAlterConfigs", "widened", VersionRange(0, 1),
                       VersionRange(0, 2), 1, 2)
    assert str(ViewDiff((change,))) == str(change)
    assert ViewDiff((change,), noticed=()).lines() == [
        "1 other API range(s) changed (admin or broker-internal APIs; diff.detail lists them)"]
