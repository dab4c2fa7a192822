"""A view changed one broker at a time answers exactly as one built from scratch.

``ClusterView.with_broker`` / ``without_broker`` update the view's tally (see
kclient/negotiation/tally.py) instead of judging every broker again.  These
properties run random sequences of answers, losses (stale), never-answered
brokers, repeated answers and removals, strict and lenient, and compare every
query of the changed view with a view built from its brokers, the diff of two
changed views with the diff of two built ones, and both with the rules applied
broker by broker (``judge_api``, ``combine_checks`` over every known broker).
"""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

from kclient.errors import UnsupportedVersionError
from kclient.negotiation import (
    ApplicationVersions,
    BrokerVersions,
    ClusterView,
    FeatureSet,
    Verdict,
    VersionRange,
    default_features,
    diff_views,
    intersect_all,
    release_profile,
)
from kclient.negotiation.evaluation import combine_checks, requirement_checks, usable_alone
from kclient.negotiation.features import ApiRequirement, Feature, LevelRequirement
from kclient.negotiation.judge import judge_api
from kclient.negotiation.verdict import APP_SPEAKS
from kclient.protocol.catalog import ApiInfo, Catalog

KEYS = (0, 1, 2, 3)
NODES = (1, 2, 3, 4, 5, 40)
ANSWERED = datetime(2026, 1, 1, tzinfo=UTC)
_CATALOG = Catalog.from_infos([ApiInfo(k, f"Api{k}", 0, 12, None, None, "") for k in KEYS[:3]])

#: Features over the keys and one finalized feature: plain, open-ended, bounded,
#: a level, alternatives, and one on a key the application does not speak.
FEATURES = FeatureSet([
    Feature("Plain", requires=(ApiRequirement(0, "Api0", 2),)),
    Feature("Two", requires=(ApiRequirement(0, "Api0", 1, 9), ApiRequirement(1, "Api1", 3))),
    Feature("Level", requires=(LevelRequirement("group.version", 1),)),
    Feature("Either", any_of=((ApiRequirement(2, "Api2", 5),),
                              (ApiRequirement(1, "Api1", 0, 4),
                               LevelRequirement("group.version", 0, 1)))),
    Feature("Unspoken", requires=(ApiRequirement(3, "Api3", 0),)),
    Feature("Produce", requires=(ApiRequirement(0, "Api0", 0, 2),)),
])


@st.composite
def ranges(draw: st.DrawFn) -> VersionRange:
    low = draw(st.integers(0, 12))
    return VersionRange(low, draw(st.integers(low, 12)))


# A few tables, so that brokers share answers (cohorts) as a real cluster's do; a
# 4.x table too, whose Produce v0-v2 are advertised and not taken.
TABLES = st.lists(st.dictionaries(st.sampled_from(KEYS), ranges(), max_size=4),
                  min_size=1, max_size=3).map(lambda tables: [*tables, release_profile("4.1")])
LEVELS = st.sampled_from([{}, {"group.version": (0, 1)}, {"group.version": (1, 1)}])
#: What brokers say they support decides what a level's reason says can be done.
SUPPORTED = st.sampled_from([{}, {"group.version": (0, 0)}, {"group.version": (0, 1)}])


@st.composite
def steps(draw: st.DrawFn, tables: list[dict[int, VersionRange]]) -> tuple[str, int, Any]:
    kind = draw(st.sampled_from(["answer", "answer", "answer", "stale", "never", "remove",
                                 "again"]))
    node = draw(st.sampled_from(NODES))
    if kind == "answer":
        return kind, node, (draw(st.sampled_from(tables)), draw(LEVELS), draw(SUPPORTED))
    return kind, node, None


@st.composite
def applications(draw: st.DrawFn) -> ApplicationVersions:
    avoid = draw(st.dictionaries(st.sampled_from(KEYS[:3]), st.lists(st.integers(0, 12),
                                                                      max_size=3), max_size=2))
    caps = draw(st.dictionaries(st.sampled_from(KEYS[:3]), st.integers(3, 12), max_size=1))
    return ApplicationVersions.from_catalog(_CATALOG, max_versions=caps, avoid_versions=avoid)


def _answer(node: int, table: dict[int, VersionRange], levels: dict[str, Any],
            supported: dict[str, Any] | None = None) -> BrokerVersions:
    return BrokerVersions(node, "127.0.0.1", 9000 + node, table, finalized_features=levels,
                          supported_features=supported, answered_at=ANSWERED)


def _apply(view: ClusterView, step: tuple[str, int, Any]) -> ClusterView:
    kind, node, data = step
    present = next((b for b in view.brokers if b.node_id == node), None)
    if kind == "answer":
        return view.with_broker(_answer(node, *data))
    if kind == "remove":
        return view.without_broker(node)
    if kind == "never" or present is None:
        return view.with_broker(BrokerVersions(node, "127.0.0.1", 9000 + node,
                                               error="connect timed out"))
    if kind == "stale":
        return view.with_broker(present.went_stale("connection closed by the broker"))
    # The same answer again, a new entry.
    return view.with_broker(BrokerVersions(
        node, present.host, present.port, present.apis, finalized_features=dict(
            present.finalized_features), supported_features=dict(present.supported_features),
        error=present.error, answered_at=present.answered_at))


def _outcome(view: ClusterView, key: int) -> tuple[str, Any]:
    try:
        return "version", view.version_for(key)
    except UnsupportedVersionError as exc:
        return type(exc).__name__, str(exc)


def _same_answers(changed: ClusterView, built: ClusterView, features: FeatureSet) -> None:
    assert changed.brokers == built.brokers
    for part in ("live_brokers", "stale_brokers", "unknown_brokers", "known_brokers",
                 "failed_brokers", "ignored_brokers"):
        assert getattr(changed, part) == getattr(built, part), part
    assert changed.unknown_reason() == built.unknown_reason()
    assert changed.stale_notes(ANSWERED) == built.stale_notes(ANSWERED)
    assert changed.api_keys() == built.api_keys()
    assert changed.api_ranges() == built.api_ranges()
    for key in (*KEYS, 18):
        assert _outcome(changed, key) == _outcome(built, key)
    for broker in built.brokers:
        assert changed.broker(broker.node_id) == broker
    report, again = changed.evaluate(features), built.evaluate(features)
    for state in Verdict:  # the names come from the tally, before any result is made
        assert report.names_in(state) == again.names_in(state)
    assert report == again
    for state in Verdict:
        assert report.names_in(state) == [r.name for r in report if r.state is state]


def _as_the_rules_say(view: ClusterView, features: FeatureSet) -> None:
    """Every verdict of ``view`` is what the rules give applied to every known broker."""
    app, known = view.application, view.known_brokers
    silent = bool(view.unknown_reason())
    for key, support in view.api_ranges().items():
        assert support.brokers == {b.node_id: b.apis.get(key) for b in known}
        assert support.cluster == (intersect_all(b.apis.get(key) for b in known)
                                   if known else None)
        wanted = app.apis.get(key)
        if wanted is None:
            assert support.state is Verdict.UNAVAILABLE
            continue
        judged = judge_api(known, key, support.name, wanted, app.avoided(key),
                           f"{support.name}{APP_SPEAKS}{app.describe(key)}")
        if not judged.ok:
            assert (support.state, support.blocking, support.reason) == (
                Verdict.UNAVAILABLE, judged.blocking, judged.reason)
        elif silent or not known:
            assert support.state is Verdict.UNKNOWN
        else:
            assert (support.state, support.version, support.usable) == (
                Verdict.AVAILABLE, judged.version, judged.overlap)
    check = requirement_checks(app, known)
    for result, feature in zip(view.evaluate(features), features, strict=True):
        ok, versions, reasons, blocking = combine_checks(feature, check)
        if not ok:
            assert (result.state, result.reasons, result.blocking) == (
                Verdict.UNAVAILABLE, tuple(reasons), tuple(blocking))
        elif silent or not known:
            assert result.state is Verdict.UNKNOWN
        else:
            assert (result.state, result.versions) == (Verdict.AVAILABLE, versions)
        assert result.brokers == {b.node_id: b.known and usable_alone(app, b, feature)
                                  for b in view.brokers}


@settings(max_examples=100, deadline=None)
@given(st.data(), TABLES, st.booleans())
def test_a_changed_view_answers_as_one_built_from_its_brokers(
        data: st.DataObject, tables: list[dict[int, VersionRange]], strict: bool) -> None:
    app = data.draw(applications())
    view = ClusterView((), app, strict, "c")
    built_before = view
    for step in data.draw(st.lists(steps(tables), min_size=1, max_size=14)):
        changed = _apply(view, step)
        built = ClusterView(changed.brokers, app, strict, "c")
        _same_answers(changed, built, FEATURES)
        _as_the_rules_say(built, FEATURES)
        assert diff_views(view, changed, FEATURES) == diff_views(built_before, built, FEATURES)
        view, built_before = changed, built


@settings(max_examples=15, deadline=None)
@given(st.lists(st.tuples(st.sampled_from(NODES), st.sampled_from(
    ["2.0", "2.8", "3.9", "3.9-kraft", "4.1", "stale", "never", "remove"])),
    min_size=1, max_size=10), st.booleans())
def test_release_answers_and_the_shipped_features(moves: list[tuple[int, str]],
                                                  strict: bool) -> None:
    features = default_features()
    view = ClusterView((), strict=strict)
    for node, move in moves:
        if move == "remove":
            changed = view.without_broker(node)
        elif move in ("stale", "never"):
            present = next((b for b in view.brokers if b.node_id == node), None)
            changed = view.with_broker(
                present.went_stale("closed") if present is not None and move == "stale"
                else BrokerVersions(node, "h", 9000 + node, error="refused"))
        else:
            changed = view.with_broker(BrokerVersions(node, "h", 9000 + node,
                                                      release_profile(move),
                                                      answered_at=ANSWERED))
        built = ClusterView(changed.brokers, strict=strict)
        _same_answers(changed, built, features)
        assert diff_views(view, changed, features) == diff_views(
            ClusterView(view.brokers, strict=strict), built, features)
        view = changed


def test_a_view_in_its_own_order_keeps_it_when_a_broker_goes() -> None:
    brokers = [_answer(n, {0: VersionRange(0, n)}, {}) for n in (5, 2, 9)]
    view = ClusterView(brokers, name="c")
    smaller = view.without_broker(2)
    assert [b.node_id for b in smaller.brokers] == [5, 9]
    _same_answers(smaller, ClusterView(smaller.brokers, name="c"), FEATURES)
    # Adding a broker orders them by id, as it always has.
    assert [b.node_id for b in view.with_broker(_answer(1, {}, {})).brokers] == [1, 2, 5, 9]


def test_the_diff_of_one_answer_skips_what_did_not_change() -> None:
    brokers = [_answer(n, release_profile("3.9"), {}) for n in range(1, 2001)]
    view = ClusterView(brokers)
    stale = view.with_broker(view.broker(7).went_stale("closed"))
    diff = diff_views(view, stale, default_features())
    assert diff.brokers_changed == (7,) and not diff.apis
    # Nothing a verdict depends on changed: no API's verdict is even looked at again.
    assert stale._state().changed_keys(view._state()) == []
    upgraded = stale.with_broker(_answer(7, release_profile("4.1"), {}))
    diff = diff_views(stale, upgraded, default_features())
    assert diff.brokers_changed == (7,) and diff.apis
    assert len(upgraded.brokers) == 2000 and upgraded.broker(7).apis == release_profile("4.1")
