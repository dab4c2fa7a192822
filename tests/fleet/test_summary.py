"""The report's figures from views grouped by shape (kclient.fleet.summary): pure, no engine."""

from __future__ import annotations

from kclient.fleet.judge import FeatureRow, Shape, ShapeVerdicts
from kclient.fleet.summary import REPORT_LIMIT, ShapeGroup, history_rows, summarise
from kclient.negotiation.featurefile import default_features
from kclient.negotiation.releases import guess_release, release_profile

FEATURES = default_features()
NAMES = FEATURES.names()
OLD, NEW = guess_release(release_profile("2.8")), guess_release(release_profile("3.9"))
GUESSES = [OLD, NEW]  # signature 0 and 1


def _verdicts(blocked: str | None = None, flagged: bool = False) -> ShapeVerdicts:
    """Every feature available but ``blocked`` (unavailable, broker 2 in the way)."""
    rows = tuple(
        FeatureRow((), name, "unavailable", None if flagged else f"{name} needs more", (2,),
                   (), flagged) if name == blocked
        else FeatureRow((), name, "available", None, (), (), False)
        for name in NAMES)
    return ShapeVerdicts((), rows)


def _group(shape: Shape, verdicts: ShapeVerdicts, names: list[str], fallback: int = 0,
           sentence: str | None = None) -> ShapeGroup:
    return ShapeGroup(shape, verdicts, len(names),
                      tuple((name, sentence) for name in sorted(names)[:REPORT_LIMIT]), fallback)


def test_totals_count_every_cluster_of_a_group_and_its_brokers() -> None:
    same = Shape(((1, 1, (), False), (2, 1, (), True)), ())  # one broker stale
    mixed = Shape(((1, 0, (), False), (2, 1, (), False)), (3,))  # 2.8 and 3.9, 3 silent
    data = summarise(
        [_group(same, _verdicts(), [f"a{i:02}" for i in range(30)], fallback=4),
         _group(mixed, _verdicts(NAMES[0]), [f"b{i:02}" for i in range(40)])],
        FEATURES, GUESSES, snapshots="in", history=False, window=("a", "b"),
        bad_records=2, bad_lines=())
    assert (data.clusters, data.brokers, data.stale_brokers, data.unknown_brokers,
            data.fallback_brokers) == (70, 60 + 120, 30, 40, 4)
    assert {r.guess: r.count for r in data.releases} == {NEW: 60 + 40, OLD: 40}
    # Only the mixed clusters run two releases and have a silent broker: the
    # first REPORT_LIMIT by name, counted in full.
    first = [f"b{i:02}" for i in range(REPORT_LIMIT)]
    assert (data.upgrading, list(data.upgrading_names)) == (40, first)
    assert (data.silent_clusters, list(data.silent_names)) == (40, first)
    counts = {f.feature: (f.available, f.unavailable, f.unknown) for f in data.features}
    assert counts[NAMES[0]] == (30, 40, 0)
    assert counts[NAMES[1]] == (70, 0, 0)
    assert data.bad_records == 2 and data.observed_from == "a" and data.history_rows == ()


def test_blocked_clusters_are_the_first_by_name_across_groups() -> None:
    shape_a, shape_b = Shape(((1, 1, (), False),), ()), Shape(((2, 1, (), False),), (7,))
    data = summarise(
        [_group(shape_a, _verdicts(NAMES[2]), [f"z{i:02}" for i in range(30)]),
         _group(shape_b, _verdicts(NAMES[2], flagged=True), ["c1", "c2"], sentence="7 silent")],
        FEATURES, GUESSES, snapshots="in", history=False, window=("", ""),
        bad_records=0, bad_lines=())
    listed = [b.cluster for b in data.blocked]
    assert listed == ["c1", "c2", *[f"z{i:02}" for i in range(REPORT_LIMIT - 2)]]
    # A flagged row takes the cluster's own sentence about its silent brokers.
    assert {b.cluster: b.reason for b in data.blocked}["c1"] == "7 silent"
    assert data.blocked[-1].reason == f"{NAMES[2]} needs more"
    assert all(b.blocking == (2,) for b in data.blocked)


def test_groups_with_the_same_states_are_one_pattern() -> None:
    one, two = Shape(((1, 1, (), False),), ()), Shape(((1, 0, (), False),), ())
    other = Shape(((1, 1, (), True),), ())
    data = summarise(
        [_group(one, _verdicts(), ["m", "n"]), _group(two, _verdicts(), ["b"]),
         _group(other, _verdicts(NAMES[3]), ["a", "c", "d", "e"])],
        FEATURES, GUESSES, snapshots="in", history=False, window=("", ""),
        bad_records=0, bad_lines=())
    assert [(p.clusters, p.example) for p in data.patterns] == [(4, "a"), (3, "b")]
    assert (data.pattern_total, data.pattern_clusters) == (2, 7)


def test_history_rows_sum_the_views_of_each_day() -> None:
    good, bad = _verdicts(), _verdicts(NAMES[0])
    rows = history_rows([("2026-11-20", good, 3), ("2026-11-20", bad, 2),
                         ("2026-11-21", good, 5), ("2026-11-20", good, 1)])
    assert ("2026-11-20", NAMES[0], 4, 2, 0) in rows
    assert ("2026-11-21", NAMES[0], 5, 0, 0) in rows
    assert len(rows) == 2 * len(NAMES)
    assert list(rows) == sorted(rows)
