"""The client matrix harness, briefly: this environment's libraries, a few cells.

The full matrix (``python -m benchmarks client_matrix``) installs dozens of
releases and stays out of ``make test``; these cells run the libraries the test
environment already has (kafka-python, aiokafka, confluent-kafka), so the harness
and its scripts cannot rot.
"""

from __future__ import annotations

import json
from pathlib import Path

import attrs
import pytest

from benchmarks.bench_client_matrix import (
    CellResult,
    here,
    rejudge,
    run_unit,
    summary,
)

pytestmark = [pytest.mark.slow, pytest.mark.timeout(600)]


def test_this_environment_s_libraries_agree_with_compat(tmp_path: Path) -> None:
    runners = here()
    if not runners:
        pytest.skip("none of kafka-python, aiokafka, confluent-kafka is installed here")
    cells: list[CellResult] = []
    for runner in runners:
        # A rolling upgrade whose bootstrap broker is the new one, and a zstd topic.
        cells += run_unit(runner, "4.0+2.0", ("produce", "transactions"), tmp_path)
        cells += run_unit(runner, "4.1", ("zstd_topic",), tmp_path)
    ran = [c for c in cells if c.real in ("works", "breaks")]
    assert len(ran) >= 2 * len(runners), summary(cells)
    assert all(c.agrees for c in cells), "\n".join(c.line() for c in cells if not c.agrees)
    for cell in ran:  # every run cell recorded what the library sent to each broker
        assert any(name.startswith("PRODUCE@") for name in cell.sent), cell.line()
    stored = tmp_path / "cells.jsonl"
    stored.write_text("".join(f"{_json(c)}\n" for c in cells), encoding="utf-8")
    assert rejudge(stored) == cells  # the same profiles give the same verdicts


def test_a_cell_agrees_only_with_its_own_outcome() -> None:
    cell = CellResult("x", "aiokafka==0.12.0", "2.0+4.0", "produce", "works", "works",
                      "depends", {}, "1 s")
    assert cell.agrees  # "depends": either outcome is what compat promised
    assert not attrs.evolve(cell, offline="breaks").agrees
    assert not attrs.evolve(cell, live="unknown").agrees  # unknown promises nothing
    assert attrs.evolve(cell, real="not-run", offline="breaks").agrees
    assert not attrs.evolve(cell, real="lenient").agrees  # the emulator took a Kafka refusal


def _json(cell: CellResult) -> str:
    return json.dumps(attrs.asdict(cell))
