"""The Spark engine is a good citizen: the caller's session is left exactly as it was found."""

from __future__ import annotations

import json
import threading
from pathlib import Path
from typing import Any

import pytest

from kclient.fleet.pipeline import compute_tables, run_report, shuffle_partitions
from kclient.fleet.synth import synth_records


def test_the_shuffle_of_broker_rows_is_sized_from_the_input_on_the_job_itself() -> None:
    assert shuffle_partitions(None, 2) is None  # unknown size: Spark's own
    assert shuffle_partitions(1000, 2) == 2  # never fewer than the cores
    assert shuffle_partitions(400 << 20, 2) == 13  # 32 MiB each
    assert shuffle_partitions(1 << 40, 2) == 400  # bounded


def _fleet(path: Path, broken: bool) -> Path:
    lines = [json.dumps(r) for r in synth_records(6, seed=4)]
    if broken:
        lines.insert(2, '{"cluster": "cut short"')
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return path


def _session_state(spark: Any) -> tuple[Any, ...]:
    """What a caller can see of a session: SQL settings, context settings, cached tables."""
    tables = sorted((t.name, spark.catalog.isCached(t.name)) for t in spark.catalog.listTables())
    return (sorted(spark.conf.getAll.items()), sorted(spark.sparkContext.getConf().getAll()),
            tables)


@pytest.mark.spark
@pytest.mark.integration
def test_run_report_leaves_the_callers_session_as_it_found_it(spark: Any,
                                                               tmp_path: Path) -> None:
    # The caller's own cache: a cached view and a persisted frame.
    mine = spark.range(1000).selectExpr("id", "id % 7 AS bucket")
    mine.createOrReplaceTempView("callers_view")
    spark.catalog.cacheTable("callers_view")
    persisted = spark.range(50).persist()
    persisted.count()
    level = persisted.storageLevel
    # And settings of the caller's choosing, which the pipeline must not override.
    spark.conf.set("spark.sql.shuffle.partitions", "3")
    try:
        before = _session_state(spark)
        run_report(spark, str(_fleet(tmp_path / "fleet.jsonl", broken=True)),
                   str(tmp_path / "out"))
        assert _session_state(spark) == before
        # No thread of kclient's outlives the report.
        assert not [t.name for t in threading.enumerate() if t.name.startswith("kclient")]
        assert (tmp_path / "out" / "report.html").stat().st_size > 0
        assert spark.catalog.isCached("callers_view")
        assert persisted.is_cached and persisted.storageLevel == level
        assert spark.conf.get("spark.sql.shuffle.partitions") == "3"
    finally:
        spark.catalog.uncacheTable("callers_view")
        spark.catalog.dropTempView("callers_view")
        persisted.unpersist()
        spark.conf.set("spark.sql.shuffle.partitions", "4")


@pytest.mark.spark
@pytest.mark.integration
def test_compute_tables_frees_its_own_cache_on_release(spark: Any, tmp_path: Path) -> None:
    path = _fleet(tmp_path / "broken.jsonl", broken=True)
    tables = compute_tables(spark, str(path))
    assert [(r["file"], r["line"]) for r in tables.bad_records.collect()] == [(str(path), 3)]
    tables.release()
    # Still usable after release: Spark computes again from the input.
    assert tables.bad_records.count() == 1
