"""One verdict engine: an API's verdict is the verdict of a feature needing only that API.

Both entry points (``ClusterView.api_support`` and ``evaluate_features``) go
through :func:`kclient.negotiation.judge.judge_api`; these properties hold them
to it over random views: strict and lenient, with answered, stale and
never-answered brokers, avoided versions and APIs the application lacks.
"""

from __future__ import annotations

from datetime import UTC, datetime

from hypothesis import given, settings
from hypothesis import strategies as st

from kclient.negotiation import (
    ApplicationVersions,
    BrokerVersions,
    ClusterView,
    Verdict,
    VersionRange,
)
from kclient.negotiation.evaluation import evaluate_features
from kclient.negotiation.features import ApiRequirement, Feature
from kclient.negotiation.judge import blocking_brokers
from kclient.protocol.catalog import ApiInfo, Catalog

KEYS = range(4)
ANSWERED = datetime(2026, 1, 1, tzinfo=UTC)


@st.composite
def ranges(draw: st.DrawFn, top: int = 12) -> VersionRange:
    low = draw(st.integers(0, top))
    return VersionRange(low, draw(st.integers(low, top)))


@st.composite
def brokers(draw: st.DrawFn, node_id: int) -> BrokerVersions:
    apis = draw(st.dictionaries(st.sampled_from(list(KEYS)), ranges(), max_size=len(KEYS)))
    broker = BrokerVersions(node_id, "127.0.0.1", 9000 + node_id, apis, answered_at=ANSWERED)
    kind = draw(st.sampled_from(["answered", "stale", "never"]))
    if kind == "stale":
        return broker.went_stale("connection refused")
    if kind == "never":
        return BrokerVersions(node_id, "127.0.0.1", 9000 + node_id, error="connect timed out")
    return broker


@st.composite
def views(draw: st.DrawFn) -> ClusterView:
    members = [draw(brokers(i)) for i in range(1, draw(st.integers(0, 4)) + 1)]
    # Key 3 is missing from the application's catalog in some views.
    spoken = [k for k in KEYS if k != 3 or draw(st.booleans())]
    catalog = Catalog.from_infos(
        [ApiInfo(k, f"Api{k}", 0, draw(st.integers(0, 12)), None, None, "") for k in spoken])
    avoid = draw(st.dictionaries(st.sampled_from(spoken), st.lists(st.integers(0, 12),
                                                                    max_size=4), max_size=2))
    app = ApplicationVersions.from_catalog(catalog, avoid_versions=avoid)
    return ClusterView(members, app, strict=draw(st.booleans()))


@settings(max_examples=600, deadline=None)
@given(views(), st.sampled_from(list(KEYS)))
def test_api_verdict_equals_the_one_requirement_feature(view: ClusterView, key: int) -> None:
    support = view.api_support(key)
    feature = Feature("OnlyThisApi", requires=(ApiRequirement(key, support.name),))
    result = view.evaluate([feature])["OnlyThisApi"]
    assert result.state is support.state
    assert result.blocking == support.blocking
    # The silent brokers are named where they decide the verdict (ApiSupport
    # also lists them on an API the answered brokers already rule out).
    assert result.unknown == (support.unknown if support.state is Verdict.UNKNOWN else ())
    assert result.stale == support.stale
    if support.state is Verdict.AVAILABLE:
        assert result.versions == {support.name: support.version}
    else:
        assert result.versions == {}


@settings(max_examples=300, deadline=None)
@given(views(), st.sampled_from(list(KEYS)), ranges())
def test_blocking_brokers_follow_the_documented_rule(view: ClusterView, key: int,
                                                     wanted: VersionRange) -> None:
    known = view.known_brokers
    blocking = set(blocking_brokers(known, key, wanted))
    outside = {b.node_id for b in known
               if (r := b.apis.get(key)) is None or not r.overlaps(wanted)}
    shared = all((r := b.apis.get(key)) is not None for b in known) and all(
        max(b.apis[key].min for b in known) <= min(b.apis[key].max for b in known)
        for _ in [0] if known)
    if outside:
        assert blocking == outside
    elif shared:
        assert blocking == set()
    else:
        ranges_ = {b.node_id: b.apis[key] for b in known}
        assert blocking, "a conflict always names someone"
        for node, rng in ranges_.items():
            others = [r for n, r in ranges_.items() if n != node]
            overlaps_all = all(rng.overlaps(r) for r in others)
            if node in blocking:
                # At an edge of the conflict: the highest minimum or the lowest maximum.
                assert (rng.min == max(r.min for r in ranges_.values())
                        or rng.max == min(r.max for r in ranges_.values()))
            if overlaps_all and len(ranges_) > 1:
                # Overlapping every other broker means not being at an edge.
                assert node not in blocking


def test_the_kip35_example_blocks_by_the_rule() -> None:
    """A broker whose range overlaps every other broker's is never named."""
    view = ClusterView([BrokerVersions(1, "h", 1, {0: (0, 9)}),
                        BrokerVersions(2, "h", 2, {0: (0, 2)}),
                        BrokerVersions(3, "h", 3, {0: (5, 9)})])
    assert view.api_support(0).blocking == (2, 3)
    result = view.evaluate([Feature("P", requires=(ApiRequirement(0, "Produce"),))])["P"]
    assert result.blocking == (2, 3)


def _features_over(keys: range) -> list[Feature]:
    return [Feature(f"needs-{key}-{low}", requires=(ApiRequirement(key, f"Api{key}", low),))
            for key in keys for low in (0, 3)]


@settings(max_examples=200, deadline=None)
@given(st.lists(views(), min_size=1, max_size=4))
def test_remembered_per_broker_verdicts_are_the_ones_judged_afresh(
        drawn: list[ClusterView]) -> None:
    # evaluate_features(alone=...) remembers whether a feature is usable with one
    # broker's answer alone, across views (here views of one application sharing
    # answers); every report equals the one judged without it.
    app = drawn[0].application
    features = _features_over(KEYS)
    alone: dict[object, bool] = {}
    shared = [b for view in drawn for b in view.brokers]
    for view in drawn:
        # The same application object for every view: the first view's.
        mixed = ClusterView(view.brokers, app, strict=view.strict)
        assert mixed.evaluate(features) == evaluate_features(mixed, features, alone=alone)
    answers = {(frozenset(b.apis.items()), frozenset(b.finalized_features.items()))
               for b in shared if b.known}
    assert len(alone) <= len(features) * len(answers)
    if answers:
        assert alone, "nothing was remembered"


def test_a_remembered_verdict_is_reused_not_judged_again() -> None:
    # A stored answer is what a later view gets for the same application, feature
    # and broker answer: planting the opposite shows it is read, not recomputed.
    app = ApplicationVersions.from_catalog(Catalog.from_infos(
        [ApiInfo(0, "Api0", 0, 9, None, None, "")]))
    feature = Feature("f", requires=(ApiRequirement(0, "Api0", 2),))
    broker = BrokerVersions(1, "127.0.0.1", 9001, {0: VersionRange(0, 9)}, answered_at=ANSWERED)
    alone: dict[object, bool] = {}
    first = evaluate_features(ClusterView([broker], app), [feature], alone=alone)
    assert first["f"].brokers == {1: True} and list(alone.values()) == [True]
    (key,) = alone
    alone[key] = False
    twin = BrokerVersions(2, "127.0.0.1", 9002, {0: VersionRange(0, 9)}, answered_at=ANSWERED)
    later = evaluate_features(ClusterView([twin], app), [feature], alone=alone)
    assert later["f"].brokers == {2: False}
    # An application with other ranges is another key: judged afresh (an equal
    # one, same ranges and avoided versions, shares the answers: they are the same).
    other = ApplicationVersions.from_catalog(app.catalog, avoid_versions={"Api0": [9]})
    assert evaluate_features(ClusterView([twin], other), [feature],
                             alone=alone)["f"].brokers == {2: True}
    equal = ApplicationVersions.from_catalog(app.catalog)
    assert evaluate_features(ClusterView([twin], equal), [feature],
                             alone=alone)["f"].brokers == {2: False}
    assert len(alone) == 2
