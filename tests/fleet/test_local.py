"""The in-process engine's reading: bad lines by file and line, in the core's words."""

from __future__ import annotations

import gzip
import json
import os
import re
from pathlib import Path
from typing import Any

import pytest

from kclient.errors import FleetError, SnapshotError
from kclient.fleet.local import compute_local
from kclient.fleet.report import TABLES
from kclient.negotiation.snapshot import parse_snapshots, record_from_json
from tests.extras import needs_extra
from tests.fleet.test_reader import BAD_LINES, GOOD_LINES, _write_mixed


@pytest.fixture(autouse=True)
def _pyarrow() -> None:
    """Every test here runs the in-process engine: without its extra they skip, naming it
    (a test expecting another FleetError would otherwise fail on the engine's refusal)."""
    needs_extra("fleet", "pyarrow")


def test_bad_lines_are_the_spark_readers_with_the_cores_reasons(tmp_path: Path) -> None:
    path = tmp_path / "mixed.jsonl"
    _write_mixed(path)
    tables, data = compute_local(str(path))
    bad = {r["line"]: (r["file"], r["reason"]) for r in tables.bad_records.to_pylist()}
    # The same lines as the Spark reader sets aside (tests/fleet/test_reader.py).
    assert sorted(bad) == sorted(BAD_LINES)
    assert {file for file, _ in bad.values()} == {str(path)}
    assert data.bad_records == len(BAD_LINES)
    assert [b.line for b in data.bad_lines] == sorted(BAD_LINES)
    # The core's own words, more specific than a schema's.
    assert "not valid JSON" in bad[2][1]
    assert "missing key(s) port" in bad[4][1]
    assert "'broker_id' must be an integer, got 'one'" in bad[5][1]
    assert "api_versions lists api_key 0 twice" in bad[7][1]
    assert "'observed_at' is not an ISO-8601 time" in bad[9][1]
    good = sorted(r["broker_id"] for r in tables.broker_releases.to_pylist())
    assert good == [1, *GOOD_LINES]


def test_gzip_and_directories_read_the_same_records(tmp_path: Path) -> None:
    path = tmp_path / "mixed.jsonl"
    _write_mixed(path)
    folder = tmp_path / "in"
    folder.mkdir()
    with gzip.open(folder / "part.jsonl.gz", "wt", encoding="utf-8") as out:
        out.write(path.read_text(encoding="utf-8"))
    plain, _ = compute_local(str(path))
    packed, _ = compute_local(str(folder))
    assert plain.broker_releases.drop(["observed_at"]).equals(
        packed.broker_releases.drop(["observed_at"]))
    assert packed.bad_records.num_rows == len(BAD_LINES)


def test_blank_lines_in_a_gzip_input_are_read_a_buffer_at_a_time(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A .jsonl.gz of line ends was read a line at a time: 254 KiB of 256 MiB of them cost
    about three minutes of CPU.  The numbers stay every line's."""
    path = tmp_path / "part.jsonl.gz"
    with gzip.open(path, "wb") as out:
        out.write("\n".join(_broker_lines("c", range(1, 3))).encode() + b"\n")
        out.write(b"\n" * 1_000_000 + b" \r\n" * 100_000 + b"not json\n")
    asked = [0]
    readline = gzip.GzipFile.readline

    def counted(self: gzip.GzipFile, size: int = -1) -> bytes:
        asked[0] += 1
        return readline(self, size)

    monkeypatch.setattr(gzip.GzipFile, "readline", counted)
    tables, data = compute_local(str(path))
    assert [(b.line, b.reason[:14]) for b in data.bad_lines] == [(1_100_003, "not valid JSON")]
    assert tables.broker_releases.num_rows == 2
    assert asked[0] < 1_000  # one per buffer of line ends, not 1,100,000


@pytest.mark.parametrize("damage", ["cut short", "corrupt inside"])
def test_a_broken_gzip_input_is_one_fleet_error(tmp_path: Path, damage: str) -> None:
    path = tmp_path / "part.jsonl.gz"
    text = "\n".join(_broker_lines("c", range(1, 200))) + "\n"
    packed = bytearray(gzip.compress(text.encode()))
    if damage == "cut short":
        del packed[len(packed) // 2:]
    else:
        packed[40:80] = bytes(40)  # deflate data no decoder accepts (zlib.error)
    path.write_bytes(bytes(packed))
    with pytest.raises(FleetError, match=r"part\.jsonl\.gz: cannot read the snapshot file"):
        compute_local(str(path))


@pytest.mark.skipif(not hasattr(os, "mkfifo"), reason="no FIFOs on this system")
@pytest.mark.parametrize("name", ["part.jsonl", "part.jsonl.gz"])
@pytest.mark.timeout(30)  # waiting on the FIFO is the failure
def test_a_fifo_swapped_in_after_the_search_is_refused_not_waited_on(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch, name: str) -> None:
    import kclient.fleet.local as local
    from kclient.fleet.reader import SnapshotInput

    fifo = tmp_path / name
    os.mkfifo(fifo)  # no writer: opening or reading it blocks
    monkeypatch.setattr(local, "find_inputs", lambda _path: SnapshotInput((str(fifo),), ()))
    with pytest.raises(FleetError, match=rf"{re.escape(name)}: the snapshot file is a FIFO"):
        compute_local(str(fifo))


def _broker_lines(cluster: str, ids: range, day: int = 22) -> list[str]:
    return [json.dumps({"cluster": cluster, "broker_id": i, "host": f"b{i}", "port": 9092,
                        "observed_at": f"2026-11-{day}T10:00:00Z", "source": "api_versions",
                        "api_versions": [{"api_key": 18, "min_version": 0, "max_version": 3}],
                        "error": None}) for i in ids]


def test_a_cluster_of_more_brokers_than_the_cores_bound_is_refused(tmp_path: Path) -> None:
    path = tmp_path / "fleet.jsonl"
    # Three brokers are within a bound of 3, also with history (the same three each day).
    path.write_text("\n".join(_broker_lines("a", range(3)) + _broker_lines("a", range(3), 23)
                              + _broker_lines("b", range(2))) + "\n", encoding="utf-8")
    for history in (False, True):
        _tables, data = compute_local(str(path), max_brokers=3, history=history)
        assert data.brokers == 5
    # A fourth distinct broker, on another day with history, is one too many, as in the core.
    lines = _broker_lines("a", range(3)) + _broker_lines("a", range(3, 4), 23)
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    with pytest.raises(SnapshotError) as core:
        parse_snapshots(path.read_text(encoding="utf-8"), max_brokers=3)
    assert core.value.line == 4
    for history in (False, True):
        with pytest.raises(FleetError, match=r"fleet.jsonl:4: cluster a lists more than 3 "
                                             "brokers, the most kclient takes per cluster"):
            compute_local(str(path), max_brokers=3, history=history)


@pytest.fixture
def readers(monkeypatch: pytest.MonkeyPatch) -> list[Any]:
    """The in-process engine's readers of the test's runs, to look at what they keep."""
    import kclient.fleet.local as local

    made: list[Any] = []

    class Watched(local._Reader):
        def __init__(self, *args: Any) -> None:
            super().__init__(*args)
            made.append(self)

    monkeypatch.setattr(local, "_Reader", Watched)
    return made


@pytest.mark.parametrize("kept", [10_000, 1])  # 1: past the bound, judged afresh each time
def test_feature_objects_judged_once_keep_the_cores_reasons(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch, readers: list[Any], kept: int) -> None:
    import kclient.fleet.local as local

    monkeypatch.setattr(local, "_LEVELS_KEPT", kept)
    # Feature objects are judged apart, once each: a valid one gives its levels to
    # every record holding it; any other sends the record to the core whole.
    good = {"metadata.version": [1, 20]}
    bad_objects: list[Any] = [
        {"metadata.version": [True, 20]}, {"metadata.version": [1.0, 20]},
        {"metadata.version": [20, 1]}, {"metadata.version": [1, 2, 3]},
        {"metadata.version": {"min": 1}}, {"\ud800": [1, 2]}, [1, 2], "x"]
    records = []
    for index, value in enumerate([good, good, *bad_objects]):
        for key in ("finalized_features", "supported_features"):
            record = json.loads(_broker_lines(f"c{index}", range(1))[0])
            record[key] = value
            record["finalized_features" if key == "supported_features"
                   else "supported_features"] = good
            records.append(record)
    path = tmp_path / "features.jsonl"
    path.write_text("".join(json.dumps(r) + "\n" for r in records), encoding="utf-8")
    tables, data = compute_local(str(path))
    reasons = {r["line"]: r["reason"] for r in tables.bad_records.to_pylist()}
    expected = {}
    for line, record in enumerate(records, start=1):
        try:
            record_from_json(record)
        except SnapshotError as exc:
            expected[line] = str(exc)
    assert reasons == expected and len(expected) == 2 * len(bad_objects)
    assert data.clusters == 2  # the two records of valid objects
    assert 0 < len(readers[0].levels) <= kept  # remembered up to the bound, no further


def test_lists_past_the_remembered_bound_are_judged_the_same(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch, readers: list[Any]) -> None:
    import kclient.fleet.local as local

    path = tmp_path / "mixed.jsonl"
    _write_mixed(path)  # bad lists, good ones, some spelled alike
    with path.open("a", encoding="utf-8") as out:
        out.write("".join(line + "\n" for line in _broker_lines("more", range(1, 40))))
    remembered, _ = compute_local(str(path))
    monkeypatch.setattr(local, "_LISTS_KEPT", 1)
    afresh, _ = compute_local(str(path))
    for name in TABLES:
        assert afresh.table(name).equals(remembered.table(name)), name
    assert len(readers[0].signatures.by_raw) > 1 and len(readers[1].signatures.by_raw) == 1


def test_tables_written_a_batch_of_views_at_a_time_equal_the_whole_tables(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    # With out, every table is appended to its folder a batch of views at a time
    # (memory bounded by the batch, not the fleet); read back, the tables are the
    # ones made whole in memory.  Batches of 3 views over 20 clusters: several,
    # the last one short.
    import pyarrow.parquet as pq

    from kclient.fleet import local
    from kclient.fleet.synth import write_fleet

    fleet = write_fleet(tmp_path / "fleet.jsonl", 20, seed=7, brokers_per_cluster=3)
    whole, _ = compute_local(fleet.path)
    monkeypatch.setattr(local, "_VIEWS_PER_BATCH", 3)
    out = tmp_path / "out"
    written, data = compute_local(fleet.path, out=out)
    assert data.clusters == 20
    for name in ("cluster_api_versions", "feature_availability", "broker_releases",
                 "bad_records"):
        assert written.table(name) is None
        files = sorted((out / name).iterdir())
        assert [f.name for f in files] == ["part-00000.parquet"]
        read = pq.read_table(files[0])
        assert read.schema.equals(whole.table(name).schema), name
        assert read.to_pylist() == whole.table(name).to_pylist(), name
    # The clean input has no bad records: the file still says which columns there are.
    assert pq.read_table(out / "bad_records" / "part-00000.parquet").num_rows == 0


def test_a_run_that_fails_while_writing_leaves_no_half_written_table(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    # A failure between batches (here the second batch's release rows) goes up
    # as it is; the tables begun are closed and removed, not left without the
    # footer that makes a Parquet file readable.
    from kclient.fleet import local
    from kclient.fleet.synth import write_fleet

    fleet = write_fleet(tmp_path / "fleet.jsonl", 12, seed=3, brokers_per_cluster=3)
    made = local._release_rows
    calls = []

    def failing(*args: Any) -> Any:
        calls.append(1)
        if len(calls) == 2:
            raise OSError("disk full")
        return made(*args)

    monkeypatch.setattr(local, "_VIEWS_PER_BATCH", 4)
    monkeypatch.setattr(local, "_release_rows", failing)
    out = tmp_path / "out"
    with pytest.raises(OSError, match="disk full"):
        compute_local(fleet.path, out=out)
    assert len(calls) == 2
    for name in ("cluster_api_versions", "feature_availability", "broker_releases"):
        assert list((out / name).iterdir()) == [], name
