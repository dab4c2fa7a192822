"""The inventory benchmark, briefly: its three command lines run and say what they measured."""

from __future__ import annotations

import pytest

from benchmarks.bench_inventory import main
from tests.extras import needs_extra

pytestmark = [pytest.mark.timeout(180)]


def test_one_run_of_each_path_on_a_small_fleet(capsys: pytest.CaptureFixture[str]) -> None:
    needs_extra("fleet", "pyarrow")  # two of the paths write a fleet report
    main(["--repeat", "1", "--clusters", "4"])
    out = capsys.readouterr().out
    rows = {line.split()[0]: line.split() for line in out.splitlines()
            if line.split() and line.split()[0] in ("report", "readiness", "compat")}
    assert set(rows) == {"report", "readiness", "compat"}
    # The reports succeed; compat exits as compat does (1 when a cluster is blocked).
    assert rows["report"][-1] == rows["readiness"][-1] == "0"
    assert rows["compat"][-1] in ("0", "1", "3")
    assert "4-cluster inventory report: " in out and "(goal <= 1.5 s)" in out
