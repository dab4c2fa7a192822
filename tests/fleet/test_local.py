"""The in-process engine's reading: bad lines by file and line, in the core's words."""

from __future__ import annotations

import gzip
from pathlib import Path

from kclient.fleet.local import compute_local
from tests.fleet.test_reader import BAD_LINES, _write_mixed


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
    assert good == [1, 14, 15]


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
