"""Reading snapshot inputs: formats, paths, and bad lines counted with file and line."""

from __future__ import annotations

import gzip
import json
import math
import os
from pathlib import Path
from typing import Any

import pytest

from kclient.errors import FleetError
from kclient.fleet.reader import (
    JSON_RECORD_BYTES,
    PARQUET_BYTES_PER_PARTITION,
    SnapshotInput,
    find_inputs,
    parquet_is_typed,
    parquet_partitions,
    read_records,
)
from kclient.fleet.synth import synth_records, write_fleet
from kclient.negotiation.snapshot import LONG_RECORD, MAX_RECORD_LINE
from tests.extras import needs_extra

GOOD = {"cluster": "c1", "broker_id": 1, "host": "h", "port": 9092,
        "observed_at": "2026-11-22T10:00:00Z", "source": "api_versions",
        "api_versions": [{"api_key": 18, "min_version": 0, "max_version": 3}]}


def _line(**changes: Any) -> str:
    record = dict(GOOD)
    for key, value in changes.items():
        if value is ...:
            record.pop(key)
        else:
            record[key] = value
    return json.dumps(record)


def _sized(size: int, **changes: Any) -> str:
    """A record line of exactly ``size`` bytes (its host padded)."""
    return _line(**changes, host="h" * (size - len(_line(**changes, host=""))))


BAD_LINES = {
    2: ("{not json", "malformed JSON"),
    4: (_line(port=...), "missing key(s) port"),
    5: (_line(broker_id="one"), "wrong type"),
    6: (_line(api_versions=[{"api_key": 0, "min_version": 5, "max_version": 2}]),
        "api_versions[0]: empty version range 5-2"),
    7: (_line(api_versions=[{"api_key": 0, "min_version": 0, "max_version": 2},
                            {"api_key": 0, "min_version": 0, "max_version": 3}]),
        "api_versions lists api_key 0 twice"),
    8: (_line(source="fallback:9.9"), "'source' must be"),
    9: (_line(observed_at="yesterday"), "'observed_at' is not an ISO-8601 time"),
    10: (_line(source="error", api_versions=[]), "'error' gives no message"),
    11: (_line(cluster=""), "'cluster' must be a non-empty string"),
    12: ("[1, 2, 3]", "not a valid record"),
    13: (_line(finalized_features={"group.version": [2, 1]}), "'finalized_features' values"),
    # Longer than the core reads (its line end not counted), valid or blank.
    14: (_sized(MAX_RECORD_LINE + 1, broker_id=14), LONG_RECORD),
    15: (" " * (MAX_RECORD_LINE + 1), LONG_RECORD),
}
#: Good lines but the first (fallback records), line 16 as long as a record may be.
GOOD_LINES = (16, 17)


def _write_mixed(path: Path) -> None:
    lines = [_line(broker_id=1)]
    for number in range(2, 18):
        if number in BAD_LINES:
            lines.append(BAD_LINES[number][0])
        elif number == 3:
            lines.append("   ")
        elif number == 16:
            lines.append(_sized(MAX_RECORD_LINE, broker_id=number, source="fallback:2.8.1"))
        else:
            lines.append(_line(broker_id=number, source="fallback:2.8.1"))
    # Written as some Windows tools write UTF-8: a byte order mark first.
    path.write_text("\n".join(lines) + "\n", encoding="utf-8-sig")


@pytest.mark.spark
@pytest.mark.integration
def test_bad_lines_are_reported_with_file_line_and_reason(spark: Any, tmp_path: Path) -> None:
    path = tmp_path / "mixed.jsonl"
    _write_mixed(path)
    records = read_records(spark, find_inputs(str(path)))
    bad = {r["line"]: (r["file"], r["reason"]) for r in records.bad.collect()}
    assert sorted(bad) == sorted(BAD_LINES)
    for number, (_, expected) in BAD_LINES.items():
        file, reason = bad[number]
        assert file == str(path)
        assert expected in reason, (number, reason)
    good = sorted(r["broker_id"] for r in records.good.collect())
    assert good == [1, *GOOD_LINES]


@pytest.mark.spark
@pytest.mark.integration
def test_a_refused_input_leaves_no_cache_of_its_own(spark: Any, tmp_path: Path,
                                                    monkeypatch: pytest.MonkeyPatch) -> None:
    import kclient.fleet.reader as reader

    path = tmp_path / "fleet.jsonl"
    path.write_text(_line() + "\n" + _line(api_versions=[
        {"api_key": 18, "min_version": 0, "max_version": 4}]) + "\n", encoding="utf-8")
    monkeypatch.setattr(reader, "MAX_SIGNATURES", 1)  # two distinct lists: one too many
    persistent = spark.sparkContext._jsc.getPersistentRDDs  # Java's public API, test only
    before = persistent().size()
    with pytest.raises(FleetError, match="api_versions lists"):
        read_records(spark, find_inputs(str(path)))
    assert persistent().size() == before


@pytest.mark.spark
@pytest.mark.integration
def test_line_numbers_hold_across_many_input_splits(spark: Any, tmp_path: Path) -> None:
    path = tmp_path / "big.jsonl"
    wanted = {7, 1234, 2999, 3000}
    lines = ["{broken" if n in wanted else _line(broker_id=n) for n in range(1, 3001)]
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    previous = spark.conf.get("spark.sql.files.maxPartitionBytes")
    spark.conf.set("spark.sql.files.maxPartitionBytes", str(64 * 1024))
    try:
        records = read_records(spark, find_inputs(str(path)))
        assert records.good.rdd.getNumPartitions() > 3
        assert {r["line"] for r in records.bad.collect()} == wanted
        assert records.good.count() == 3000 - len(wanted)
    finally:
        spark.conf.set("spark.sql.files.maxPartitionBytes", previous)


@pytest.mark.spark
@pytest.mark.integration
def test_directories_globs_and_parquet_read_the_same_records(spark: Any,
                                                             tmp_path: Path) -> None:
    needs_extra("fleet", "pyarrow")
    records = list(synth_records(8, seed=5))
    folder = tmp_path / "dir"
    (folder / "nested").mkdir(parents=True)
    half = len(records) // 2
    (folder / "a.jsonl").write_text("".join(json.dumps(r) + "\n" for r in records[:half]))
    (folder / "nested" / "b.jsonl").write_text(
        "".join(json.dumps(r) + "\n" for r in records[half:]))
    (folder / "_SUCCESS").write_text("")
    (folder / "notes.txt").write_text("not a snapshot")
    parquet = tmp_path / "fleet.parquet"
    write_fleet(parquet, 8, seed=5)

    def count(path: str) -> int:
        read = read_records(spark, find_inputs(path))
        assert read.bad.count() == 0
        return int(read.good.count())

    assert count(str(folder)) == len(records)
    assert count(str(folder / "**" / "*.jsonl")) == len(records)
    assert count(str(parquet)) == len(records)


def test_unusable_paths_are_clear_errors(tmp_path: Path) -> None:
    with pytest.raises(FleetError, match="no such file or directory"):
        find_inputs(str(tmp_path / "missing.jsonl"))
    (tmp_path / "empty").mkdir()
    with pytest.raises(FleetError, match="no snapshot files found"):
        find_inputs(str(tmp_path / "empty"))
    with pytest.raises(FleetError, match="no file matches this glob"):
        find_inputs(str(tmp_path / "nothing-*.jsonl"))


@pytest.mark.skipif(os.name != "posix" or os.geteuid() == 0,
                    reason="root reads any file, so permissions cannot be tested")
def test_unreadable_file_is_a_clear_error(tmp_path: Path) -> None:
    path = tmp_path / "secret.jsonl"
    path.write_text(_line() + "\n")
    path.chmod(0)
    try:
        with pytest.raises(FleetError, match="permission denied"):
            find_inputs(str(path))
    finally:
        path.chmod(0o600)


@pytest.mark.skipif(not hasattr(os, "mkfifo"), reason="no FIFOs on this system")
def test_fifos_and_devices_are_refused_before_anything_reads_them(tmp_path: Path) -> None:
    fifo = tmp_path / "in" / "part.jsonl"
    fifo.parent.mkdir()
    os.mkfifo(fifo)  # no writer: reading it would wait forever
    for given in (fifo, fifo.parent):
        with pytest.raises(FleetError, match=r"part\.jsonl: the snapshot file is a FIFO "
                                             r"\(named pipe\), not a regular file"):
            find_inputs(str(given))
    with pytest.raises(FleetError, match=r"^/dev/zero: the snapshot file is a character "
                                         r"device"):  # would never end
        find_inputs("/dev/zero")


def test_work_bytes_counts_parquet_rows_as_the_json_they_replace(tmp_path: Path) -> None:
    needs_extra("fleet", "pyarrow")
    lines = tmp_path / "fleet.jsonl"
    write_fleet(lines, 30, seed=3)
    table = tmp_path / "fleet.parquet"
    summary = write_fleet(table, 30, seed=3)
    assert find_inputs(str(lines)).work_bytes() == lines.stat().st_size
    # Dictionary encoding packs the records far below their JSON size; the
    # footer's row count gives the estimate back.
    assert table.stat().st_size * 5 < lines.stat().st_size
    assert find_inputs(str(table)).work_bytes() == summary.records * JSON_RECORD_BYTES
    assert abs(summary.records * JSON_RECORD_BYTES / lines.stat().st_size - 1) < 0.25
    assert find_inputs(str(tmp_path)).work_bytes() == (
        lines.stat().st_size + summary.records * JSON_RECORD_BYTES)
    (tmp_path / "broken.parquet").write_bytes(b"PAR1 not really")
    assert find_inputs(str(tmp_path / "broken.parquet")).work_bytes() is None
    assert find_inputs("s3a://bucket/fleet/").work_bytes() is None


def test_parquet_rows_are_spread_by_their_json_size(tmp_path: Path) -> None:
    needs_extra("fleet", "pyarrow")
    table = tmp_path / "fleet.parquet"
    summary = write_fleet(table, 30, seed=3)
    inputs = find_inputs(str(table))
    assert parquet_partitions(inputs, 2) == 2  # a few kB: never fewer than the cores
    # The same file a thousand times: its rows' JSON size, not its own, counts.
    many = SnapshotInput((), inputs.parquet_files * 1000)
    expected = math.ceil(1000 * summary.records * JSON_RECORD_BYTES
                         / PARQUET_BYTES_PER_PARTITION)
    assert expected > 2 and parquet_partitions(many, 2) == expected
    assert parquet_partitions(find_inputs("s3a://bucket/fleet.parquet"), 2) is None
    assert parquet_partitions(SnapshotInput(("a.jsonl",), ()), 2) is None


def test_splittable_bytes_count_the_plain_text_files_only(tmp_path: Path) -> None:
    needs_extra("fleet", "pyarrow")
    plain = tmp_path / "a.jsonl"
    write_fleet(plain, 10, seed=1)
    packed = tmp_path / "b.jsonl.gz"
    packed.write_bytes(gzip.compress(plain.read_bytes()))
    write_fleet(tmp_path / "c.parquet", 10, seed=1)
    # gzip is read whole by one task and Parquet by row groups: neither is cut.
    assert find_inputs(str(tmp_path)).splittable_bytes() == plain.stat().st_size
    assert find_inputs("hdfs://namenode/fleet/").splittable_bytes() is None


@pytest.mark.spark
@pytest.mark.integration
def test_parquet_that_kclient_writes_takes_the_typed_fast_path(spark: Any,
                                                               tmp_path: Path) -> None:
    # Guards the two homes of the record's column types: the Arrow schema of
    # write_parquet_records (fleet synth, probe --record) and the reader's.
    needs_extra("fleet", "pyarrow")
    table = tmp_path / "fleet.parquet"
    write_fleet(table, 6, seed=2)
    assert parquet_is_typed(spark.read.parquet(str(table)))
    # A column of another type is read through JSON text instead.
    from pyspark.sql import functions as F

    mistyped = spark.read.parquet(str(table)).withColumn("port", F.col("port").cast("string"))
    assert not parquet_is_typed(mistyped)
