"""The whole ``fleet report`` run: Parquet tables, report.md/html and the chart."""

from __future__ import annotations

import json
from collections import Counter
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
from kclient.negotiation.featurefile import default_features
from kclient.negotiation.verdict import BrokerState, Verdict

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
    reports = [ClusterView(b, name=c).evaluate(default_features()) for c, b in clusters.items()]
    for count in data.features:
        assert count.clusters == 25
        states = Counter(r[count.feature].state for r in reports)
        assert (count.available, count.unavailable, count.unknown) == (
            states[Verdict.AVAILABLE], states[Verdict.UNAVAILABLE], states[Verdict.UNKNOWN])
    assert data.brokers == sum(len(b) for b in clusters.values())
    brokers = Counter(b.state for bs in clusters.values() for b in bs)
    assert (data.stale_brokers, data.unknown_brokers) == (
        brokers[BrokerState.STALE], brokers[BrokerState.UNKNOWN])
    # The fleet holds both kinds of failed broker and unknown verdicts.
    assert data.stale_brokers and data.unknown_brokers
    assert any(f.unknown for f in data.features)

    markdown = (out / "report.md").read_text()
    assert "# kclient fleet report" in markdown
    assert f"`{fleet}:4`" in markdown
    blocked = next(f for f in data.features if f.available < f.clusters)
    assert f"### {blocked.feature}" in markdown
    silent = next(f for f in data.features if f.unknown)
    assert (f"| {silent.feature} | {silent.available} / {silent.clusters} | "
            f"{silent.unavailable} | {silent.unknown} |") in markdown
    listed = data.blocked_for(silent.feature, "unknown")
    assert listed and all(b.unknown and not b.blocking for b in listed)
    assert "not answered ApiVersions yet" in listed[0].reason
    assert (out / CHART_NAME).read_bytes().startswith(b"\x89PNG\r\n\x1a\n")
    page = (out / "report.html").read_text()
    # Self-contained: the chart is inside the page, not a file next to it.
    assert 'src="data:image/png;base64,iVBORw0KGgo' in page and "<table>" in page
    assert f'src="{CHART_NAME}"' not in page


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
        snapshots="fleet.jsonl", history=False, clusters=3, brokers=9, stale_brokers=1,
        unknown_brokers=2, fallback_brokers=2,
        features=(FeatureCount("ZSTD", 1, 1, 1), FeatureCount("ApiVersion", 3)),
        blocked=(BlockedCluster("ZSTD", "old|one", (2,), "Produce needs 7+; broker 2 "
                                "offers 0-6"),
                 BlockedCluster("ZSTD", "dark", (), "1 broker has not answered ApiVersions "
                                "yet: broker 4 (h:1) (refused)", "unknown", (4,))),
        releases=(("3.9 (KRaft)", "KRaft", 6), ("2.0", "ZooKeeper", 2)), upgrading=1,
        upgrading_names=("old|one",),
        bad_records=1, bad_lines=(BadLine("fleet.jsonl", 7, "malformed <JSON>"),),
        history_rows=(("2026-11-22", "ZSTD", 1, 1, 1),),
    )
    assert data.failed_brokers == 3
    markdown = render_markdown(data)
    assert "| ZSTD | 1 / 3 | 1 | 1 | 33% |" in markdown
    assert "| ApiVersion | 3 / 3 | 0 | 0 | 100% |" in markdown
    assert "1 cluster(s) cannot use ZSTD:" in markdown
    assert "| old\\|one | 2 | Produce needs 7+; broker 2 offers 0-6 |" in markdown
    assert "| 3.9 (KRaft) | KRaft | 6 |" in markdown
    assert "1 cluster(s) cannot promise (brokers never answered) ZSTD:" in markdown
    assert "| dark | 4 | 1 broker has not answered ApiVersions yet" in markdown
    assert "1 stale: unreachable, last answer used; 2 unknown: never answered" in markdown
    assert "| 2026-11-22 | ZSTD | 1 / 3 | 1 | 1 |" in markdown
    assert "### ApiVersion" not in markdown
    assert "- `fleet.jsonl:7`: malformed <JSON>" in markdown
    page = render_html(data)
    assert "malformed &lt;JSON&gt;" in page
    assert "<h3>ZSTD</h3>" in page and "<h3>ApiVersion</h3>" not in page
    assert "<td>dark</td><td>4</td>" in page


def test_a_fleet_without_one_valid_record_is_an_error(spark: Any, tmp_path: Path) -> None:
    from kclient.errors import FleetError

    bad = tmp_path / "bad.jsonl"
    bad.write_text('{"cluster": "a"}\nnot json\n', encoding="utf-8")
    with pytest.raises(FleetError, match=r"no valid snapshot record \(2 bad record\(s\); "
                       r"first: .*bad.jsonl:1: "):
        run_report(spark, str(bad), str(tmp_path / "out"))
