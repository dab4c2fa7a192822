"""The fleet report's upgrade readiness, in process (both engines: tests/fleet/test_equality.py).

The inventory is a synthetic fleet's (broker metrics in the JMX exporter's default
naming, a ``kafka_cluster`` label), with one of the fleet's clusters left out and a
cluster the snapshots do not have.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from kclient.cli import main
from kclient.fleet.local import compute_local, run_local_report
from kclient.fleet.readiness import (
    NO_INVENTORY,
    READINESS_TABLE,
    JudgedInventory,
    ReadinessInput,
    judge_input,
)
from kclient.fleet.report import READINESS_CHART
from kclient.fleet.synth import cluster_name, write_fleet
from kclient.fleet.synth_inventory import CLUSTER_LABEL, inventory_lines
from tests.extras import needs_extra

CLUSTERS = 8


def _inputs(tmp_path: Path) -> tuple[Path, JudgedInventory]:
    fleet = Path(write_fleet(tmp_path / "fleet.jsonl", CLUSTERS, seed=3).path)
    left_out = cluster_name(1)
    lines = [line for line in inventory_lines(CLUSTERS, seed=3) if left_out not in line]
    lines.append(f'kafka_server_socket_server_metrics_connections{{{CLUSTER_LABEL}="elsewhere",'
                 'clientSoftwareName="apache-kafka-java",clientSoftwareVersion="3.9.0"} 2')
    metrics = tmp_path / "metrics.prom"
    metrics.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return fleet, judge_input(ReadinessInput((str(metrics),), "4.0", CLUSTER_LABEL))


def test_the_in_process_table_matches_the_snapshots_and_the_inventory(tmp_path: Path) -> None:
    fleet, judged = _inputs(tmp_path)
    tables, data = compute_local(str(fleet), readiness=judged)
    rows = tables.upgrade_readiness.to_pylist()
    # Every judged client software has its row, with in_snapshots set from the snapshots.
    judged_rows = [r for r in rows if r["reason"] != NO_INVENTORY]
    assert len(judged_rows) == sum(len(c.software) + len(c.unattributed)
                                   for c in judged.clusters)
    assert {r["cluster"] for r in judged_rows if not r["in_snapshots"]} == {"elsewhere"}
    missing = [r for r in rows if r["reason"] == NO_INVENTORY]
    assert [(r["cluster"], r["state"], r["software_name"]) for r in missing] == [
        (cluster_name(1), "unknown", None)]
    blocked = [r for r in rows if r["cluster_state"] == "blocked"]
    assert blocked and all(r["state"] in ("breaks", "works", "unknown") for r in blocked)
    observed = [r for r in rows if r["observed"]]
    assert all(r["state"] == "breaks" and r["refused"] for r in observed)
    section = data.readiness
    assert section is not None and section.target == "Kafka 4.0"
    assert section.clusters == CLUSTERS + 1  # the fleet's, and the inventory's own "elsewhere"
    assert (section.no_inventory, section.no_inventory_names) == (1, (cluster_name(1),))
    assert (section.outside, section.outside_names) == (1, ("elsewhere",))
    assert section.blocked == len({r["cluster"] for r in blocked})
    assert section.blocking and section.blocking[0].observed
    assert section.summary().startswith(f"{CLUSTERS + 1} cluster(s) on Kafka 4.0: ")


def test_the_report_shows_the_section_and_its_figure(tmp_path: Path) -> None:
    fleet, judged = _inputs(tmp_path)
    out = tmp_path / "out"
    data = run_local_report(str(fleet), str(out), readiness=judged)
    assert data.readiness is not None
    markdown = (out / "report.md").read_text(encoding="utf-8")
    assert "## Upgrade readiness: Kafka 4.0" in markdown
    assert "![Clusters by upgrade readiness" in markdown and READINESS_CHART in markdown
    assert "### Blocked clusters and the client software that breaks" in markdown
    assert "1 cluster(s) of the snapshots have no client inventory (unknown): " \
        f"{cluster_name(1)}." in markdown
    assert (out / READINESS_CHART).read_bytes().startswith(b"<svg")
    assert "Upgrade readiness: Kafka 4.0" in (out / "report.html").read_text(encoding="utf-8")
    assert (out / READINESS_TABLE).is_dir()
    # A report without an inventory leaves no table of a previous run behind.
    run_local_report(str(fleet), str(out))
    assert not (out / READINESS_TABLE).exists() and not (out / READINESS_CHART).exists()


def test_the_command_line_needs_both_flags_and_reads_the_inventory_first(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    needs_extra("fleet", "pyarrow")  # the report at the end is written with it
    fleet, _judged = _inputs(tmp_path)
    out = tmp_path / "out"
    base = ["fleet", "report", "--snapshots", str(fleet), "--out", str(out), "--engine",
            "local"]
    assert main([*base, "--inventory", str(tmp_path / "metrics.prom")]) == 2
    assert "--inventory needs --target" in capsys.readouterr().err
    assert main([*base, "--target", "4.0"]) == 2
    assert "--target and --cluster-label go with --inventory" in capsys.readouterr().err
    assert main([*base, "--inventory", str(tmp_path / "nope.prom"), "--target", "4.0"]) == 2
    err = capsys.readouterr().err
    assert "nope.prom" in err and "engine:" not in err  # refused before any engine starts
    assert main([*base, "--inventory", str(tmp_path / "metrics.prom"), "--target", "4.0",
                 "--cluster-label", CLUSTER_LABEL]) == 0
    err = capsys.readouterr().err
    assert f"upgrade readiness: {CLUSTERS + 1} cluster(s) on Kafka 4.0" in err
    synth = tmp_path / "synth.prom"
    assert main(["fleet", "synth", "--clusters", "3", "--out", str(tmp_path / "s.jsonl"),
                 "--inventory", str(synth)]) == 0
    assert "the client inventory of 3 cluster(s)" in capsys.readouterr().err
    assert synth.read_text(encoding="utf-8").count(CLUSTER_LABEL) > 3
