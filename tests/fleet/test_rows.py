"""Arrow tables from Python rows (kclient.fleet.rows): pyarrow's own values, without pandas."""

from __future__ import annotations

import importlib.util
import subprocess
import sys
from datetime import date
from pathlib import Path

import pytest

pa = pytest.importorskip("pyarrow", reason="the fleet tables need pyarrow (the fleet extra)")

from kclient.fleet.rows import int64_array, table_from_rows  # noqa: E402


def test_rows_become_the_table_pyarrow_itself_builds() -> None:
    schema = pa.schema([
        ("name", pa.string()), ("day", pa.date32()), ("n", pa.int32()), ("big", pa.int64()),
        ("ok", pa.bool_()), ("ids", pa.list_(pa.int64())), ("words", pa.list_(pa.string())),
        ("versions", pa.map_(pa.string(), pa.int32()))])
    rows = [
        ("caf\u00e9 \"q\" \\ \x1b", date(2026, 11, 22), 7, 2**40, True, [1, 2], ["a"],
         [("Produce", 9), ("Fetch", 12)]),
        (None, None, None, None, None, None, None, None),
        ("", date(1969, 12, 31), -1, 0, False, [], [], []),
    ]
    built = table_from_rows(rows, schema)
    expected = pa.table({field.name: pa.array([row[i] for row in rows], field.type)
                         for i, field in enumerate(schema)}, schema=schema)
    assert built.schema == schema
    assert built.equals(expected)
    assert table_from_rows([], schema).equals(schema.empty_table())


def test_int64_array_is_pyarrows() -> None:
    values = [0, -1, 2**62, 5]
    assert int64_array(values).equals(pa.array(values, pa.int64()))
    assert len(int64_array([])) == 0


@pytest.mark.skipif(importlib.util.find_spec("pandas") is None,
                    reason="pandas is not installed, so nothing could import it")
def test_the_local_engine_never_imports_pandas(tmp_path: Path) -> None:
    # pyarrow's conversion of Python values imports pandas when it is installed
    # (0.25-0.5 s); the local engine's tables, parquet files and report do without.
    from kclient.fleet.synth import write_fleet

    fleet = write_fleet(tmp_path / "fleet.jsonl", 4, seed=3, brokers_per_cluster=3, history=2)
    with (tmp_path / "fleet.jsonl").open("a", encoding="utf-8") as handle:
        handle.write("not json\n")  # a bad record: the bad_records table too
    code = ("import sys\n"
            "from kclient.fleet.local import run_local_report\n"
            f"data = run_local_report({fleet.path!r}, {str(tmp_path / 'out')!r}, history=True)\n"
            "assert data.bad_records == 1 and data.clusters == 4\n"
            "print('pandas' in sys.modules, 'pyarrow' in sys.modules)\n")
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                          timeout=120, check=False)
    assert done.returncode == 0, done.stderr
    assert done.stdout.split() == ["False", "True"]


def test_nulls_anywhere_in_long_columns_and_tuples_for_lists() -> None:
    # Validity bitmaps span several bytes (nulls at irregular places, across
    # byte edges); list and map values may be tuples (the fleet judge's rows).
    schema = pa.schema([("n", pa.int64()), ("text", pa.string()),
                        ("ids", pa.list_(pa.int64())),
                        ("versions", pa.map_(pa.string(), pa.int32()))])
    nulls = {0, 7, 8, 9, 15, 16, 22}
    rows = [(None, None, None, None) if i in nulls
            else (i, f"r{i}", tuple(range(i % 3)), (("Fetch", i),)) for i in range(23)]
    built = table_from_rows(rows, schema)
    expected = pa.table({field.name: pa.array(
        [None if row[i] is None else list(row[i]) if isinstance(row[i], tuple) else row[i]
         for row in rows], field.type) for i, field in enumerate(schema)}, schema=schema)
    assert built.equals(expected)
    assert [i for i, v in enumerate(built.column("n").to_pylist()) if v is None] == sorted(nulls)
