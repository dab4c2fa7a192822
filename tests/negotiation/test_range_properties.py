"""Property tests for the range algebra and version choice (hypothesis)."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from kclient.negotiation import (
    ApplicationVersions,
    BrokerVersions,
    ClusterView,
    VersionRange,
    highest_allowed,
    intersect_all,
)
from kclient.protocol.catalog import ApiInfo, Catalog

KEYS = range(4)


@st.composite
def ranges(draw: st.DrawFn, top: int = 15) -> VersionRange:
    low = draw(st.integers(0, top))
    high = draw(st.integers(low, top))
    return VersionRange(low, high)


@st.composite
def brokers(draw: st.DrawFn, node_id: int) -> BrokerVersions:
    apis = draw(st.dictionaries(st.sampled_from(list(KEYS)), ranges(), max_size=len(KEYS)))
    return BrokerVersions(node_id, "127.0.0.1", 9000 + node_id, apis)


@st.composite
def views(draw: st.DrawFn) -> ClusterView:
    count = draw(st.integers(1, 4))
    members = [draw(brokers(i)) for i in range(1, count + 1)]
    catalog = Catalog.from_infos(
        [ApiInfo(k, f"Api{k}", 0, draw(st.integers(0, 15)), None, None, "") for k in KEYS])
    avoid = draw(st.dictionaries(st.sampled_from(list(KEYS)),
                                 st.lists(st.integers(0, 15), max_size=4), max_size=2))
    app = ApplicationVersions.from_catalog(catalog, avoid_versions=avoid)
    return ClusterView(members, app)


@given(ranges(), ranges())
def test_intersection_commutative(a: VersionRange, b: VersionRange) -> None:
    assert a.intersection(b) == b.intersection(a)


@given(ranges(), ranges(), ranges())
def test_intersection_associative(a: VersionRange, b: VersionRange, c: VersionRange) -> None:
    left = a.intersection(b)
    right = b.intersection(c)
    lhs = None if left is None else left.intersection(c)
    rhs = None if right is None else a.intersection(right)
    assert lhs == rhs == intersect_all([a, b, c])


@given(ranges())
def test_intersection_idempotent(a: VersionRange) -> None:
    assert a.intersection(a) == a
    assert intersect_all([a, a, a]) == a


@given(ranges(), ranges())
def test_intersection_is_exactly_the_common_versions(a: VersionRange, b: VersionRange) -> None:
    common = set(a) & set(b)
    result = a.intersection(b)
    assert (set(result) if result is not None else set()) == common
    assert a.overlaps(b) == bool(common)


@settings(max_examples=200)
@given(views(), brokers(99))
def test_adding_a_broker_never_widens(view: ClusterView, extra: BrokerVersions) -> None:
    before = view.api_ranges()
    after = view.with_broker(extra).api_ranges()
    for key in KEYS:
        old = before[key].usable if key in before else None
        new = after[key].usable if key in after else None
        if old is None:
            assert new is None
        elif new is not None:
            assert old.contains_range(new)


@settings(max_examples=200)
@given(views())
def test_chosen_version_lies_in_every_range_and_is_never_avoided(view: ClusterView) -> None:
    for key in KEYS:
        support = view.api_support(key)
        if support.version is None:
            continue
        version = support.version
        assert version not in view.application.avoided(key)
        assert version in view.application.apis[key]
        for broker in view.brokers:
            assert version in broker.apis[key]
        assert view.version_for(key) == version
        # Nothing higher would have done.
        for higher in range(version + 1, 16):
            usable = all(higher in b.apis[key] for b in view.brokers)
            assert not (usable and higher in view.application.apis[key]
                        and higher not in view.application.avoided(key))


@settings(max_examples=200)
@given(views())
def test_per_broker_choice_lies_in_both_ranges(view: ClusterView) -> None:
    for broker in view.brokers:
        for key in KEYS:
            rng = broker.apis.get(key)
            expected = highest_allowed(
                None if rng is None else rng.intersection(view.application.apis[key]),
                view.application.avoided(key))
            if expected is None:
                continue
            chosen = view.version_for(key, broker.node_id)
            assert chosen == expected
            assert chosen in rng if rng is not None else False


@given(st.one_of(st.none(), ranges()), st.sets(st.integers(0, 15)))
def test_highest_allowed_skips_avoided(rng: VersionRange | None, avoid: set[int]) -> None:
    result = highest_allowed(rng, avoid)
    if rng is None:
        assert result is None
        return
    candidates = [v for v in rng if v not in avoid]
    assert result == (max(candidates) if candidates else None)


@given(ranges(), ranges(), ranges())
def test_ranges_made_by_the_algebra_are_ordinary_ranges(a: VersionRange, b: VersionRange,
                                                        c: VersionRange) -> None:
    # Intersections are built without the constructor's checks (trusted_range):
    # they must equal, hash and print as ranges built the ordinary way.
    for made in (a.intersection(b), intersect_all([a, b, c])):
        if made is None:
            continue
        plain = VersionRange(made.min, made.max)
        assert made == plain and hash(made) == hash(plain)
        assert str(made) == str(plain) and repr(made) == repr(plain)
        assert 0 <= made.min <= made.max
