"""How the pipeline sizes its run (splits, shuffles) and what it leaves out when it can."""

from __future__ import annotations

import json
import math
import threading
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from kclient.fleet import negotiate
from kclient.fleet.pipeline import (
    MAX_SPLIT_BYTES,
    _session_setting,
    _size_splits,
    compute_tables,
    run_report,
    split_bytes,
)
from kclient.fleet.reader import find_inputs
from kclient.fleet.synth import synth_records

SPLIT_KEY = "spark.sql.files.maxPartitionBytes"


@given(st.integers(0, 1 << 40), st.integers(1, 256))
def test_splits_come_in_whole_rounds_of_the_cores(text_bytes: int, cores: int) -> None:
    size = split_bytes(text_bytes, cores)
    if text_bytes <= cores * MAX_SPLIT_BYTES:
        assert size is None
        return
    assert size is not None and 0 < size <= MAX_SPLIT_BYTES
    splits = math.ceil(text_bytes / size)  # how Spark cuts a file into splits
    rounds = math.ceil(text_bytes / (cores * MAX_SPLIT_BYTES))
    assert splits == cores * rounds  # every core busy in every round, no extra round


def test_400_mb_on_two_cores_is_four_splits_not_three() -> None:
    assert split_bytes(400_000_000, 2) == 100_000_000
    assert split_bytes(200_000_000, 2) is None  # Spark gives each core 100 MB itself


@pytest.mark.spark
@pytest.mark.integration
def test_the_split_size_follows_each_input_and_a_chosen_one_stands(spark: Any,
                                                                    tmp_path: Path) -> None:
    large = tmp_path / "large.jsonl"
    with large.open("wb") as out:  # sparse: 300 MB of size, no disk used
        out.truncate(300 << 20)
    small = tmp_path / "small.jsonl"
    small.write_text("{}\n", encoding="utf-8")
    cores = spark.sparkContext.defaultParallelism
    before = spark.conf.get(SPLIT_KEY)
    try:
        assert _size_splits(spark, find_inputs(str(large))) == split_bytes(300 << 20, cores)
        assert spark.conf.get(SPLIT_KEY) == str(split_bytes(300 << 20, cores))
        # A later, smaller input in the same session gets Spark's size back.
        assert _size_splits(spark, find_inputs(str(small))) is None
        assert spark.conf.get(SPLIT_KEY) == before
        # A size someone else chose is theirs.
        spark.conf.set(SPLIT_KEY, str(64 << 20))
        assert _size_splits(spark, find_inputs(str(large))) is None
        assert spark.conf.get(SPLIT_KEY) == str(64 << 20)
    finally:
        spark.conf.set(SPLIT_KEY, before)


def _fleet(path: Path, broken: bool) -> Path:
    lines = [json.dumps(r) for r in synth_records(6, seed=4)]
    if broken:
        lines.insert(2, '{"cluster": "cut short"')
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return path


def _reads_input(frame: Any) -> bool:
    plan = str(frame._jdf.queryExecution().optimizedPlan().toString())
    return "InMemoryRelation" in plan or "Relation" in plan.replace("LocalRelation", "")


@pytest.mark.spark
@pytest.mark.integration
def test_a_clean_fleet_gets_its_empty_bad_records_table_without_a_pass(
        spark: Any, tmp_path: Path) -> None:
    tables = compute_tables(spark, str(_fleet(tmp_path / "clean.jsonl", broken=False)))
    assert not _reads_input(tables.bad_records)
    assert tables.bad_records.count() == 0
    assert tables.bad_records.columns == ["file", "line", "reason"]
    spark.catalog.clearCache()


@pytest.mark.spark
@pytest.mark.integration
def test_a_fleet_with_bad_lines_still_gets_each_of_them(spark: Any, tmp_path: Path) -> None:
    path = _fleet(tmp_path / "broken.jsonl", broken=True)
    tables = compute_tables(spark, str(path))
    assert _reads_input(tables.bad_records)
    assert [(r["file"], r["line"]) for r in tables.bad_records.collect()] == [(str(path), 3)]
    spark.catalog.clearCache()


@pytest.mark.spark
@pytest.mark.integration
def test_the_chart_warm_up_is_over_when_the_report_is(spark: Any, tmp_path: Path) -> None:
    run_report(spark, str(_fleet(tmp_path / "fleet.jsonl", broken=False)), str(tmp_path / "out"))
    assert not [t for t in threading.enumerate() if t.name == "kclient-chart-warm-up"]
    assert (tmp_path / "out" / "report.html").stat().st_size > 0


ADAPTIVE_KEY = "spark.sql.adaptive.enabled"


def _shuffles(frame: Any) -> int:
    return str(frame._jdf.queryExecution().executedPlan().toString()).count("Exchange")


@pytest.mark.spark
@pytest.mark.integration
def test_the_views_reuse_the_brokers_shuffle_and_the_session_keeps_its_setting(
        spark: Any, tmp_path: Path) -> None:
    before = spark.conf.get(ADAPTIVE_KEY)
    path = _fleet(tmp_path / "fleet.jsonl", broken=False)
    try:
        for setting in ("true", "false"):
            spark.conf.set(ADAPTIVE_KEY, setting)
            tables = compute_tables(spark, str(path))
            assert spark.conf.get(ADAPTIVE_KEY) == setting
            # The broker rows were shuffled by view once, before the checkpoint:
            # grouping them by view does not shuffle them again.
            assert _shuffles(negotiate.views_of(tables.brokers)) == 0
            # (A grouping by anything else does.)
            assert _shuffles(tables.brokers.groupBy("host").count()) > 0
            spark.catalog.clearCache()
    finally:
        spark.conf.set(ADAPTIVE_KEY, before)


WHOLE_STAGE_KEY = "spark.sql.codegen.wholeStage"


def test_whole_stage_code_generation_is_on_for_the_writes_and_the_summary_only(
        spark: Any, tmp_path: Path) -> None:
    path = _fleet(tmp_path / "fleet.jsonl", broken=False)
    before = spark.conf.get(WHOLE_STAGE_KEY)
    assert before == "false"  # the fleet sessions' own setting
    seen: list[tuple[str, str]] = []

    def log(text: str) -> None:  # called by run_report as it goes from step to step
        seen.append((text.split()[0], spark.conf.get(WHOLE_STAGE_KEY)))

    run_report(spark, str(path), str(tmp_path / "out"), log=log)
    steps = dict(seen)
    assert (steps["reading"], steps["writing"], steps["summarising"]) == (
        "false", "true", "true")
    assert all(setting == "true" for step, setting in seen if step == "writing")
    assert spark.conf.get(WHOLE_STAGE_KEY) == before


class _DeadAfterStart:
    """A session stand-in whose settings can be read and set once, then fail (a JVM that died)."""

    def __init__(self) -> None:
        self.conf = self
        self.calls = 0

    def get(self, key: str, default: str | None = None) -> str:
        return "false"

    def set(self, key: str, value: str) -> None:
        self.calls += 1
        if self.calls > 1:
            raise RuntimeError("the JVM is gone")

    def unset(self, key: str) -> None:
        raise RuntimeError("the JVM is gone")


def test_a_setting_that_cannot_be_restored_does_not_hide_the_works_own_error() -> None:
    dead: Any = _DeadAfterStart()
    with (pytest.raises(ValueError, match="the write failed"),
          _session_setting(dead, WHOLE_STAGE_KEY, "true")):
        raise ValueError("the write failed")
    # Without an error inside, the failure to restore is the error.
    dead = _DeadAfterStart()
    with (pytest.raises(RuntimeError, match="the JVM is gone"),
          _session_setting(dead, WHOLE_STAGE_KEY, "true")):
        pass
