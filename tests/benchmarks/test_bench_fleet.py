"""The fleet benchmark's yardsticks (benchmarks/bench_fleet.py) compute the same ranges.

The Spark floor is the reference's work as one plain Spark job; its ratio to
the reference is only a floor if it does that work, no less.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from benchmarks.bench_fleet import _check_floor, floor_counts, floor_ranges, reference_ranges
from kclient.fleet.synth import write_fleet


def _record(cluster: str, broker: int, at: str, apis: list[tuple[int, int, int]] | None,
            ) -> dict[str, Any]:
    return {"cluster": cluster, "broker_id": broker, "observed_at": at,
            "error": "connection refused" if apis is None else None,
            "api_versions": [{"api_key": k, "min_version": lo, "max_version": hi}
                             for k, lo, hi in apis or []]}


_EDGES = [
    # Equal times: the later line wins (api 0 up to 9, not 7).
    _record("a", 1, "2026-11-01T10:00:00Z", [(0, 0, 7), (1, 0, 5)]),
    _record("a", 1, "2026-11-01T10:00:00Z", [(0, 0, 9), (1, 0, 5)]),
    # A broker whose latest record is an error keeps its latest answer.
    _record("a", 2, "2026-11-01T09:00:00Z", [(0, 2, 8), (1, 1, 5), (2, 0, 1)]),
    _record("a", 2, "2026-11-01T11:00:00Z", None),
    # An older answer loses to a newer one, in whatever order the lines come.
    _record("a", 3, "2026-11-01T12:00:00Z", [(0, 0, 9), (1, 0, 4), (2, 0, 3)]),
    _record("a", 3, "2026-10-01T12:00:00Z", [(0, 0, 1)]),
    # No answer at all: the cluster is there, without ranges.
    _record("b", 1, "2026-11-01T10:00:00Z", None),
    # An empty intersection is left out.
    _record("c", 1, "2026-11-01T10:00:00Z", [(3, 0, 2), (4, 0, 9)]),
    _record("c", 2, "2026-11-01T10:00:00Z", [(3, 3, 5), (4, 1, 9)]),
]


def _floor(spark: Any, path: Path, out: Path) -> dict[str, dict[int, tuple[int, int]]]:
    found: dict[str, dict[int, tuple[int, int]]] = {}
    for row in floor_ranges(spark, str(path), str(out)).collect():
        ranges = found.setdefault(row["cluster"], {})
        if row["api_key"] is not None:
            ranges[row["api_key"]] = (row["lo"], row["hi"])
    # What the benchmark compares with the reference's counts.
    assert floor_counts(str(out)) == {"clusters": len(found),
                                      "ranges": sum(map(len, found.values()))}
    return found


@pytest.mark.spark
def test_the_spark_floor_finds_the_references_ranges_on_the_edge_cases(
        spark: Any, tmp_path: Path) -> None:
    path = tmp_path / "edges.jsonl"
    path.write_text("".join(json.dumps(r) + "\n" for r in _EDGES), encoding="utf-8")
    expected = {"a": {0: (2, 8), 1: (1, 4)}, "b": {}, "c": {4: (1, 9)}}
    assert reference_ranges(str(path)) == expected
    assert _floor(spark, path, tmp_path / "out") == expected


@pytest.mark.spark
def test_the_spark_floor_finds_the_references_ranges_on_a_synthetic_history(
        spark: Any, tmp_path: Path) -> None:
    path = tmp_path / "fleet.jsonl"
    summary = write_fleet(path, 60, seed=7, history=4)  # errors and upgrades along the days
    assert summary.records > summary.brokers
    expected = reference_ranges(str(path))
    assert len(expected) == 60 and sum(map(len, expected.values())) > 1000
    assert _floor(spark, path, tmp_path / "out") == expected


def test_the_benchmark_refuses_a_floor_that_did_other_work() -> None:
    reference = {"clusters": 3, "ranges": 3}
    _check_floor(10, {(10, "reference"): reference, (10, "floor"): dict(reference)})
    with pytest.raises(RuntimeError, match="floor at 10 brokers found 3 clusters and 2 ranges"):
        _check_floor(10, {(10, "reference"): reference, (10, "floor"): {"clusters": 3,
                                                                        "ranges": 2}})
