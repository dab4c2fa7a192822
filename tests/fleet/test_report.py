"""The whole ``fleet report`` run: Parquet tables, report.md/html and the chart."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from kclient.fleet.pipeline import TABLES, run_report
from kclient.fleet.report import (
    CHART_NAME,
    BadLine,
    BlockedCluster,
    FeatureCount,
    ReportData,
    render_html,
    render_markdown,
)
from kclient.fleet.synth import synth_records
from kclient.negotiation import ClusterView, brokers_by_cluster, read_snapshots

pytestmark = [pytest.mark.spark, pytest.mark.integration]


def test_report_run_writes_tables_and_report(spark: Any, tmp_path: Path) -> None:
    fleet = tmp_path / "fleet.jsonl"
    lines = [json.dumps(r) for r in synth_records(25, seed=9)]
    lines.insert(3, '{"cluster": "broken"')
    fleet.write_text("\n".join(lines) + "\n", encoding="utf-8")
    out = tmp_path / "out"
    data = run_report(spark, str(fleet), str(out))

    for name in TABLES:
        assert list((out / name).glob("*.parquet")), name
    assert data.clusters == 25
    assert data.bad_records == 1
    assert data.bad_lines[0].line == 4
    # The counts per feature equal the core on the good lines.
    good = tmp_path / "good.jsonl"
    good.write_text("\n".join(lines[:3] + lines[4:]) + "\n", encoding="utf-8")
    clusters = brokers_by_cluster(read_snapshots(good))
    reports = [ClusterView(b, name=c).evaluate() for c, b in clusters.items()]
    for count in data.features:
        assert count.clusters == 25
        assert count.available == sum(r.is_available(count.feature) for r in reports)
    assert data.brokers == sum(len(b) for b in clusters.values())

    markdown = (out / "report.md").read_text()
    assert "# kclient fleet report" in markdown
    assert f"`{fleet}:4`" in markdown
    blocked = next(f for f in data.features if f.available < f.clusters)
    assert f"### {blocked.feature}" in markdown
    assert (out / CHART_NAME).read_bytes().startswith(b"\x89PNG\r\n\x1a\n")
    page = (out / "report.html").read_text()
    assert f'src="{CHART_NAME}"' in page and "<table>" in page


def test_history_gives_one_view_per_day(spark: Any, tmp_path: Path) -> None:
    fleet = tmp_path / "fleet.jsonl"
    fleet.write_text("".join(json.dumps(r) + "\n" for r in synth_records(40, seed=4)))
    out = tmp_path / "out"
    data = run_report(spark, str(fleet), str(out), history=True)
    table = spark.read.parquet(str(out / "feature_availability"))
    days = {r["day"] for r in table.select("day").distinct().collect()}
    assert len(days) == 2
    assert data.history_rows and {row[0] for row in data.history_rows} == {str(d) for d in days}
    assert data.clusters == 40


def test_markdown_and_html_render_the_data() -> None:
    data = ReportData(
        snapshots="fleet.jsonl", history=False, clusters=3, brokers=9, failed_brokers=1,
        fallback_brokers=2,
        features=(FeatureCount("ZSTD", 2, 3), FeatureCount("ApiVersion", 3, 3)),
        blocked=(BlockedCluster("ZSTD", "old|one", (2,), "Produce needs 7+; broker 2 "
                                "offers 0-6"),),
        releases=(("3.9 (KRaft)", "KRaft", 6), ("2.0", "ZooKeeper", 2)), upgrading=1,
        upgrading_names=("old|one",),
        bad_records=1, bad_lines=(BadLine("fleet.jsonl", 7, "malformed <JSON>"),),
    )
    markdown = render_markdown(data)
    assert "| ZSTD | 2 / 3 | 67% |" in markdown
    assert "| old\\|one | 2 | Produce needs 7+; broker 2 offers 0-6 |" in markdown
    assert "| 3.9 (KRaft) | KRaft | 6 |" in markdown
    assert "### ApiVersion" not in markdown
    assert "- `fleet.jsonl:7`: malformed <JSON>" in markdown
    page = render_html(data)
    assert "malformed &lt;JSON&gt;" in page
    assert "<h3>ZSTD</h3>" in page and "<h3>ApiVersion</h3>" not in page
