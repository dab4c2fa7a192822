"""Shapes of views: what reaches the driver, and the core's verdicts per shape."""

from __future__ import annotations

from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from kclient.errors import FleetError
from kclient.fleet import negotiate, shapes
from kclient.fleet.judge import Shape, ShapeVerdicts, StandIns, judge_shape, unknown_sentence
from kclient.fleet.reader import find_inputs, read_records
from kclient.fleet.signatures import Signatures
from kclient.negotiation import (
    ApplicationVersions,
    BrokerVersions,
    ClusterView,
    SnapshotRecord,
    VersionRange,
    evaluate_features,
    known_releases,
    load_features,
    parse_features,
    release_profile,
    write_snapshots,
)

T0 = "2026-11-22T10:00:00Z"
FEATURES = load_features()
APP = ApplicationVersions.from_catalog()


def _answer(cluster: str, broker: int, release: str,
            levels: dict[str, tuple[int, int]] | None = None) -> SnapshotRecord:
    return SnapshotRecord(cluster=cluster, broker_id=broker, host=f"h{broker}", port=9092,
                          observed_at=T0, source="api_versions",
                          api_versions=release_profile(release),
                          finalized_features={k: VersionRange(*v)
                                              for k, v in (levels or {}).items()})


def _silent(cluster: str, broker: int) -> SnapshotRecord:
    return SnapshotRecord(cluster=cluster, broker_id=broker, host=f"h{broker}", port=9092,
                          observed_at=T0, source="error", error="connection refused")


def _views(spark: Any, path: Path, records: list[SnapshotRecord]) -> tuple[Any, Signatures]:
    write_snapshots(path, records)
    parsed = read_records(spark, find_inputs(str(path)), history=False)
    return negotiate.views_of(negotiate.latest_brokers(parsed.good)), parsed.signatures


@pytest.mark.spark
@pytest.mark.integration
def test_views_alike_in_their_brokers_share_one_shape(spark: Any, tmp_path: Path) -> None:
    kraft = {"metadata.version": (1, 27)}
    records = [
        _answer("a", 1, "4.1", kraft), _answer("a", 2, "4.1", kraft),
        _answer("a2", 1, "4.1", kraft), _answer("a2", 2, "4.1", kraft),
        _answer("b", 1, "4.1", kraft), _answer("b", 2, "4.1", kraft), _silent("b", 3),
        _answer("c", 1, "4.1", kraft), _answer("c", 2, "3.9", {"metadata.version": (1, 21)}),
        _silent("d", 7),
    ]
    views, sigs = _views(spark, tmp_path / "fleet.jsonl", records)
    found = shapes.collect_shapes(views)
    # a and a2 are alike; b's silent broker 3, c's second release and d's silence are not.
    assert len(found) == 4
    by_text = dict(found)
    per_view = {r["cluster"]: by_text[r["shape"]] for r in views.collect()}
    assert per_view["a"] == per_view["a2"]
    assert per_view["b"].unknown == (3,) and per_view["d"] == Shape((), (7,))
    (one, sig_one, levels_one, stale_one), (two, sig_two, levels_two, _) = per_view["c"].known
    assert (one, two, stale_one) == (1, 2, False)
    assert levels_one == (("metadata.version", (1, 27)),)
    assert levels_two == (("metadata.version", (1, 21)),)
    assert sigs.apis(sig_one) == dict(release_profile("4.1"))
    assert sigs.apis(sig_two) == dict(release_profile("3.9"))


@pytest.mark.spark
@pytest.mark.integration
def test_more_shapes_than_the_driver_takes_is_one_clear_error(
        spark: Any, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    views, _sigs = _views(spark, tmp_path / "fleet.jsonl",
                          [_answer("a", 1, "3.9"), _answer("b", 1, "4.1")])
    monkeypatch.setattr(shapes, "MAX_SIGNATURES", 1)
    with pytest.raises(FleetError, match="more than 1 distinct sets of brokers"):
        shapes.collect_shapes(views)


# -- judge_shape, against the core called on the real brokers -----------------------

RELEASES = known_releases()
EXTRA = parse_features("""
version: 1
features:
  - name: Either
    requires:
      - {feature: metadata.version, min: 7}
    any_of:
      - {api: ConsumerGroupHeartbeat, min: 0}
      - [{api: JoinGroup, min: 9}, {feature: group.version, min: 1}]
""", "extra.yaml")


@st.composite
def _views_drawn(draw: Any) -> tuple[list[BrokerVersions], list[dict[int, VersionRange]]]:
    releases = draw(st.lists(st.sampled_from(RELEASES), min_size=1, max_size=3, unique=True))
    ranges = [dict(release_profile(rel)) for rel in releases]
    brokers = []
    for broker in sorted(draw(st.lists(st.integers(0, 9), min_size=1, max_size=5,
                                       unique=True))):
        kind = draw(st.sampled_from(["answered", "answered", "stale", "silent"]))
        sig = draw(st.integers(0, len(ranges) - 1))
        levels = {name: VersionRange(0, draw(st.integers(0, 30)))
                  for name in ("metadata.version", "group.version") if draw(st.booleans())}
        host, port = f"b{broker}.example", 9092 + broker
        if kind == "silent":
            brokers.append(BrokerVersions(broker, host, port, error=f"refused {broker}"))
            continue
        answer = BrokerVersions(broker, host, port, apis=ranges[sig], finalized_features=levels,
                                answered_at=datetime(2026, 1, 1, tzinfo=UTC))
        brokers.append(answer.went_stale("timed out") if kind == "stale" else answer)
    return brokers, ranges


def _sig(broker: BrokerVersions, ranges: list[dict[int, VersionRange]]) -> int:
    return next(i for i, r in enumerate(ranges) if r == dict(broker.apis))


@settings(max_examples=60, deadline=None)
@given(_views_drawn())
def test_each_shape_gets_what_the_core_says_of_the_real_brokers(
        drawn: tuple[list[BrokerVersions], list[dict[int, VersionRange]]]) -> None:
    brokers, ranges = drawn
    features = FEATURES.merged(EXTRA)
    view = ClusterView(brokers, application=APP)
    shape = Shape(tuple((b.node_id, _sig(b, ranges), tuple(
        (name, (rng.min, rng.max)) for name, rng in b.finalized_features.items()),
        b.error is not None) for b in view.known_brokers),
        tuple(b.node_id for b in view.unknown_brokers))
    # A twin view, alike but for its ids (in the same order), is judged first: the
    # core is asked once, and this view gets its own ids put in, lists and texts.
    twin = Shape(tuple((3 * i + 1000, *rest) for i, *rest in shape.known),
                 tuple(3 * i + 1000 for i in shape.unknown))
    judged: dict[Shape, ShapeVerdicts] = {}
    stand_ins = StandIns(ranges)
    first = judge_shape(twin, features, stand_ins, APP, judged)
    verdicts = judge_shape(shape, features, stand_ins, APP, judged)
    assert len(judged) == 1 and first.ids != verdicts.ids
    sentence = unknown_sentence([(b.node_id, b.host, b.port, b.error)
                                 for b in view.unknown_brokers])
    assert sentence == view.unknown_reason()
    core = view.api_ranges()
    assert [row[0] for row in verdicts.apis] == list(core)
    for row in verdicts.apis:
        support = core[row[0]]
        assert row[2] == support.state.value
        assert (row[12], row[13], row[14]) == (support.blocking, support.unknown,
                                               support.stale)
        assert (sentence if row[-1] else row[15]) == support.reason
    expected = evaluate_features(view, features)
    assert len(verdicts.features) == len(expected)
    for got, result in zip(verdicts.features, expected, strict=True):
        template = got.template
        assert (template[1], template[2]) == (result.name, result.state.value)
        assert template[4] == tuple(result.versions.items())
        assert (template[5], template[6], template[7]) == (
            result.blocking, result.unknown, result.stale)
        assert ((sentence,) if got.flagged else tuple(template[8])) == result.reasons
        assert template[13] == tuple(b for b, ok in result.brokers.items() if ok)
