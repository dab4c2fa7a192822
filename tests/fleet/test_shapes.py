"""Shapes of views: what reaches the driver, and the core's verdicts per shape."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from kclient.errors import FleetError
from kclient.fleet import negotiate, pipeline, shapes
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
def test_views_alike_in_their_answering_brokers_share_one_shape(spark: Any,
                                                                tmp_path: Path) -> None:
    kraft = {"metadata.version": (1, 27)}
    records = [
        _answer("a", 1, "4.1", kraft), _answer("a", 2, "4.1", kraft),
        _answer("b", 1, "4.1", kraft), _answer("b", 2, "4.1", kraft), _silent("b", 3),
        _answer("c", 1, "4.1", kraft), _answer("c", 2, "3.9", {"metadata.version": (1, 21)}),
        _silent("d", 7),
    ]
    views, sigs = _views(spark, tmp_path / "fleet.jsonl", records)
    found = shapes.collect_shapes(views)
    # a and b (whose broker 3 never answered) look alike to a feature check; d has nobody.
    assert len(found) == 3
    by_brokers = {tuple(b for b, _sig in s.brokers): s for s in found}
    assert set(by_brokers) == {(1, 2), ()}
    empty = by_brokers[()]
    assert empty.levels == {} and empty.sigset == ()
    mixed = [s for s in found if len(set(sig for _b, sig in s.brokers)) == 2]
    assert len(mixed) == 1
    assert mixed[0].levels[2] == {"metadata.version": VersionRange(1, 21)}
    assert mixed[0].levels[1] == {"metadata.version": VersionRange(1, 27)}
    (one, sig_one), (two, sig_two) = mixed[0].brokers
    assert (one, two) == (1, 2)
    assert sigs.apis(sig_one) == dict(release_profile("4.1"))
    assert sigs.apis(sig_two) == dict(release_profile("3.9"))
    assert shapes.signature_sets(found) == sorted({s.sigset for s in found})
    # Every view finds its shape again: the text is the join key.
    keys = {s.text for s in found}
    assert {r["shape"] for r in views.select("shape").collect()} == keys
    # The known brokers' lists: a and b share one, each view finds its own again.
    knowns = shapes.known_table(spark, found)
    lists = {tuple((k["broker_id"], k["sig_id"]) for k in r["known"]): list(r["sigset"])
             for r in knowns.collect()}
    assert lists == {s.brokers: list(s.sigset) for s in found}
    assert len(lists) == 3
    matched = views.join(knowns, "known").select("cluster").collect()
    assert sorted(r["cluster"] for r in matched) == ["a", "b", "c", "d"]


@pytest.mark.spark
@pytest.mark.integration
def test_more_shapes_than_the_driver_takes_is_one_clear_error(
        spark: Any, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    views, _sigs = _views(spark, tmp_path / "fleet.jsonl",
                          [_answer("a", 1, "3.9"), _answer("b", 1, "4.1")])
    monkeypatch.setattr(shapes, "MAX_SIGNATURES", 1)
    with pytest.raises(FleetError, match="more than 1 distinct sets of answering brokers"):
        shapes.collect_shapes(views)


@pytest.mark.spark
@pytest.mark.integration
def test_a_failure_while_judging_surfaces_where_the_table_is_used(
        spark: Any, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    def broken(*_args: Any) -> shapes.ShapeVerdicts:
        raise RuntimeError("judging failed")

    monkeypatch.setattr(shapes, "judge_shapes", broken)
    path = tmp_path / "fleet.jsonl"
    write_snapshots(path, [_answer("a", 1, "4.1")])
    tables = pipeline.compute_tables(spark, str(path))
    assert tables.cluster_api_versions.count() > 0  # the other tables do not wait
    with pytest.raises(RuntimeError, match="judging failed"):
        _ = tables.feature_availability
    with pytest.raises(KeyError):
        tables.table("no_such_table")
    spark.catalog.clearCache()


# -- judge_shapes, against the core called directly ---------------------------------

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
def _shape_sets(draw: Any) -> tuple[list[shapes.Shape], Signatures]:
    releases = draw(st.lists(st.sampled_from(RELEASES), min_size=1, max_size=4, unique=True))
    sigs = Signatures(tuple(tuple(sorted((k, r.min, r.max)
                                         for k, r in release_profile(rel).items()))
                            for rel in releases))
    found = []
    for _ in range(draw(st.integers(1, 5))):
        ids = draw(st.lists(st.integers(0, 9), max_size=4, unique=True))
        brokers = tuple((b, draw(st.integers(0, len(releases) - 1))) for b in sorted(ids))
        levels = {b: {name: VersionRange(0, draw(st.integers(0, 30)))
                      for name in ("metadata.version", "group.version") if draw(st.booleans())}
                  for b in ids}
        found.append(shapes.Shape(json.dumps([brokers, repr(levels)]), brokers, levels))
    return found, sigs


@settings(max_examples=60, deadline=None)
@given(_shape_sets())
def test_each_shape_gets_what_the_core_says_of_those_brokers(
        drawn: tuple[list[shapes.Shape], Signatures]) -> None:
    found, sigs = drawn
    features = FEATURES.merged(EXTRA)
    verdicts = shapes.judge_shapes(found, features, sigs, APP)
    results = {row[0]: row for row in verdicts.results}
    assert sorted(results) == list(range(len(results)))
    assert len({row[1:3] + tuple(repr(v) for v in row[3:]) for row in results.values()}) == len(
        results)  # kept once each
    assert [text for text, _ids in verdicts.per_shape] == [s.text for s in found]
    for shape, (_text, ids) in zip(found, verdicts.per_shape, strict=True):
        view = ClusterView([BrokerVersions(node_id=b, host="real", port=9092,
                                           apis=sigs.apis(sig), finalized_features=shape.levels[b])
                            for b, sig in shape.brokers], application=APP)
        expected = evaluate_features(view, features)
        assert len(ids) == len(expected)
        for index, (core, result_id) in enumerate(zip(expected, ids, strict=True)):
            got = results[result_id]
            assert got[1:3] == (index, core.name)
            assert got[3] == core.available
            assert got[4] == dict(core.versions)
            assert got[5] == list(core.blocking)
            assert got[6] == list(core.reasons)
            assert got[7] == [b for b, ok in core.brokers.items() if ok]
