"""The whole ``fleet report`` run: Parquet tables, report.md/html and the chart."""

from __future__ import annotations

import itertools
import json
import re
from collections import Counter
from pathlib import Path
from typing import Any
from xml.etree import ElementTree

import attrs
import pytest

from kclient.fleet.local import run_local_report
from kclient.fleet.pipeline import TABLES
from kclient.fleet.report import (
    CHART_FEATURES,
    CHART_NAME,
    HEATMAP_CHART,
    HEATMAP_ROWS,
    HISTORY_CHART,
    HISTORY_LINES,
    OUTPUT_NAMES,
    READINESS_CHART,
    READINESS_TABLE,
    RELEASE_BARS,
    RELEASES_CHART,
    BadLine,
    BlockedCluster,
    ClusterPattern,
    FeatureCount,
    ReleaseCount,
    ReportData,
    chart_names,
    charted_features,
    draw_charts,
    history_lines,
    markdown_text,
    prepare_out,
    release_bars,
    render_html,
    render_markdown,
    write_report,
)
from kclient.fleet.report.data import HISTORY_TABLE_ROWS, history_table
from kclient.fleet.summary import REPORT_LIMIT
from kclient.fleet.synth import synth_records
from kclient.negotiation import ClusterView, brokers_by_cluster, read_snapshots
from kclient.negotiation.featurefile import default_features
from kclient.negotiation.releases import ReleaseGuess, guess_release, known_releases
from kclient.negotiation.verdict import BrokerState, Verdict
from tests.extras import needs_extra
from tests.fleet.report_samples import every_release_guess, rich_report


@pytest.fixture
def engine() -> Any:
    """``run(snapshots, out, **options)``: the in-process engine.

    The Spark engine gives the same report data
    (:func:`test_both_engines_report_the_same`) and tables (``test_equality``).
    Skips, naming the extra, where pyarrow (which it writes the tables with) is missing.
    """
    needs_extra("fleet", "pyarrow")
    return run_local_report


def _read(out: Path, name: str) -> list[dict[str, Any]]:
    import pyarrow.parquet as pq

    return list(pq.read_table(str(out / name)).to_pylist())


def test_report_run_writes_tables_and_report(engine: Any, tmp_path: Path) -> None:
    fleet = tmp_path / "fleet.jsonl"
    lines = [json.dumps(r) for r in synth_records(25, seed=9)]
    lines.insert(3, '{"cluster": "broken"')
    fleet.write_text("\n".join(lines) + "\n", encoding="utf-8")
    out = tmp_path / "out"
    data = engine(str(fleet), str(out))

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
    # Upgrading clusters: more than one release guess among the brokers that count.
    upgrading = sorted(name for name, bs in clusters.items() if len(
        {guess_release(b.apis).text for b in bs if b.state != BrokerState.UNKNOWN}) > 1)
    assert upgrading and data.upgrading == len(upgrading)
    assert list(data.upgrading_names) == upgrading[:REPORT_LIMIT]
    assert any(f.unknown for f in data.features)

    markdown = (out / "report.md").read_text()
    assert "# kclient fleet report" in markdown
    assert f"{markdown_text(str(fleet))}:4: " in markdown
    blocked = next(f for f in data.features if f.unavailable)
    assert f"### {blocked.feature}" in markdown
    silent = next(f for f in data.features if f.unknown)
    assert (f"| {silent.feature} | {silent.available} / {silent.clusters} | "
            f"{silent.unavailable} | {silent.unknown} |") in markdown
    # Clusters with silent brokers: one sentence naming them, not a list per feature.
    assert data.silent_clusters and not data.blocked_for(silent.feature, "unknown")
    assert markdown.count("have brokers that never answered ApiVersions") == 1
    assert "not answered ApiVersions yet" not in markdown
    assert _svg_size((out / CHART_NAME).read_bytes())[0] > 0
    page = (out / "report.html").read_text()
    # Self-contained: the chart is inside the page, not a file next to it.
    assert 'src="data:image/svg+xml;base64,PHN2Zy' in page and "<table>" in page
    assert f'src="{CHART_NAME}"' not in page
    # The heatmap's groups equal a count made here from the feature_availability rows.
    assert data.patterns == _patterns_from_table(out, data)
    assert (data.pattern_total, data.pattern_clusters) == (len(data.patterns), 25)
    assert len(data.patterns) > 1 and (out / HEATMAP_CHART).is_file()


def _last_days(rows: list[Any]) -> dict[str, Any]:
    """Each cluster's last day in ``rows`` (``cluster``, ``day``); empty without history."""
    latest: dict[str, Any] = {}
    for row in rows:
        if row["day"] is not None and (row["cluster"] not in latest
                                       or row["day"] > latest[row["cluster"]]):
            latest[row["cluster"]] = row["day"]
    return latest


def _patterns_from_table(out: Path, data: ReportData) -> tuple[ClusterPattern, ...]:
    """Groups of clusters with the same states, counted in Python from the table's rows.

    With history, each cluster's latest day; ordered as the report orders them.
    """
    rows = _read(out, "feature_availability")
    latest = _last_days(rows)
    states: dict[str, dict[str, str]] = {}
    for row in rows:
        if row["day"] == latest.get(row["cluster"]):
            states.setdefault(row["cluster"], {})[row["feature"]] = row["state"]
    vectors = {cluster: tuple(by_feature.get(f.feature, "") for f in data.features)
               for cluster, by_feature in states.items()}
    counts = Counter(vectors.values())
    groups = [ClusterPattern(v, n, min(c for c, w in vectors.items() if w == v))
              for v, n in counts.items()]
    groups.sort(key=lambda g: (-g.clusters, g.example))
    return tuple(groups[:HEATMAP_ROWS])


def test_history_gives_one_view_per_day(engine: Any, tmp_path: Path) -> None:
    fleet = tmp_path / "fleet.jsonl"
    fleet.write_text("".join(json.dumps(r) + "\n" for r in synth_records(40, seed=4)))
    out = tmp_path / "out"
    data = engine(str(fleet), str(out), history=True)
    days = {r["day"] for r in _read(out, "feature_availability")}
    assert len(days) == 2
    assert data.history_rows and {row[0] for row in data.history_rows} == {str(d) for d in days}
    assert data.clusters == 40
    # The heatmap, the feature counts and the broker totals are each cluster's latest day.
    assert data.patterns == _patterns_from_table(out, data)
    assert data.pattern_clusters == 40
    assert all(f.available + f.unavailable + f.unknown == 40 for f in data.features)
    brokers = _read(out, "broker_releases")
    last = _last_days(brokers)
    assert data.brokers == sum(1 for row in brokers if row["day"] == last[row["cluster"]])
    assert data.brokers < len(brokers)
    assert (out / HISTORY_CHART).is_file() and "## Availability by day" in (
        out / "report.md").read_text()


def test_out_must_be_new_empty_or_a_previous_reports(engine: Any, tmp_path: Path) -> None:
    from kclient.errors import FleetError

    fleet = tmp_path / "fleet.jsonl"
    fleet.write_text("\n".join(json.dumps(r) for r in synth_records(3, seed=2)) + "\n",
                     encoding="utf-8")
    out = tmp_path / "out"
    engine(str(fleet), str(out))
    (out / ".DS_Store").write_bytes(b"")  # a file browser's, hidden: left alone
    engine(str(fleet), str(out))  # a previous report's folder: replaced
    (out / ".DS_Store").unlink()
    assert sorted(p.name for p in out.iterdir()) == sorted(
        n for n in OUTPUT_NAMES if n not in ("snapshots", "availability_by_day.svg",
                                             READINESS_TABLE, READINESS_CHART))
    project = tmp_path / "project"
    (project / "bad_records").mkdir(parents=True)  # a folder of the user's own
    (project / "notes.txt").write_text("mine", encoding="utf-8")
    for given in (project, project / "notes.txt"):
        with pytest.raises(FleetError, match=re.escape(f"--out {given} ")):
            engine(str(fleet), str(given))
    # Nothing written there, nothing removed.
    assert sorted(p.name for p in project.iterdir()) == ["bad_records", "notes.txt"]
    with pytest.raises(FleetError, match=r"holds files a report does not write \(notes\.txt\); "
                                         r"a report replaces its own tables and pages there"):
        prepare_out(str(project))


def test_the_table_by_day_lists_each_features_changes_not_every_day() -> None:
    data = rich_report(days=0)
    steady = [(f"2026-{m:02}-{d:02}", feature, 3, 1, 0) for m in range(1, 13)
              for d in range(1, 29) for feature in ("Alpha", "Beta")]
    # Beta changes on 1 March and back on 2 March; Alpha never.
    rows = tuple((day, f, 2, 2, 0) if (f, day) == ("Beta", "2026-03-01") else (day, f, *c)
                 for day, f, *c in steady)
    intro, table = history_table(attrs.evolve(data, history=True, history_rows=rows))
    assert [row[:3] for row in table] == [
        ["2026-01-01", "Alpha", "3 / 4"], ["2026-01-01", "Beta", "3 / 4"],
        ["2026-03-01", "Beta", "2 / 4"], ["2026-03-02", "Beta", "3 / 4"]]
    assert intro.startswith("Each feature's counts on its first day and on every day they "
                            "changed: 4 row(s) over 336 day(s) (every day's")
    # A fleet in flux every day: the table stops at its bound and says so.
    flux = tuple((f"d{n:05}", "Gamma", n, 0, 0) for n in range(HISTORY_TABLE_ROWS + 50))
    intro, table = history_table(attrs.evolve(data, history=True, history_rows=flux))
    assert len(table) == HISTORY_TABLE_ROWS and table[-1][0] == f"d{HISTORY_TABLE_ROWS - 1:05}"
    assert f"{HISTORY_TABLE_ROWS + 50} row(s) over {HISTORY_TABLE_ROWS + 50} day(s), the first " \
        f"{HISTORY_TABLE_ROWS} listed" in intro
    # Both pages show that table, not every day.
    shown = attrs.evolve(data, history=True, history_rows=rows)
    markdown = render_markdown(shown)
    assert markdown.count("| Alpha |") == 1 and markdown.count("| Beta |") == 3
    page = render_html(shown)
    assert page.count("<td>Alpha</td>") == 1 and page.count("<td>Beta</td>") == 3


def test_markdown_and_html_render_the_data() -> None:
    data = ReportData(
        snapshots="fleet.jsonl", history=False, clusters=3, brokers=9, stale_brokers=1,
        unknown_brokers=2, fallback_brokers=2,
        features=(FeatureCount("ZSTD", 1, 1, 1), FeatureCount("ApiVersion", 3)),
        blocked=(BlockedCluster("ZSTD", "old|one", (2,), "Produce needs 7+; broker 2 "
                                "offers 0-6"),),
        silent_clusters=1, silent_names=("dark",),
        releases=(ReleaseCount(ReleaseGuess("exact", "3.9-kraft", mode="kraft"), 6),
                  ReleaseCount(ReleaseGuess("exact", "2.0", mode="zookeeper"), 2)), upgrading=1,
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
    # Sorted by release, not by count.
    assert markdown.index("| 2.0 | ZooKeeper | 2 |") < markdown.index("| 3.9 (KRaft) |")
    assert ("1 cluster(s) have brokers that never answered ApiVersions, so what their other "
            "brokers allow cannot be promised there") in markdown and "): dark." in markdown
    assert "1 stale: unreachable, last answer used; 2 unknown: never answered" in markdown
    assert "| 2026-11-22 | ZSTD | 1 / 3 | 1 | 1 |" in markdown
    assert "### ApiVersion" not in markdown
    assert "- fleet.jsonl:7: malformed &lt;JSON&gt;" in markdown
    page = render_html(data)
    assert "malformed &lt;JSON&gt;" in page
    assert "<h3>ZSTD</h3>" in page and "<h3>ApiVersion</h3>" not in page
    assert "): dark.</p>" in page
    assert "<details><summary>1 cluster(s) cannot use it.</summary>" in page


def _refuses_a_fleet_without_one_valid_record(run: Any, tmp_path: Path) -> None:
    """``run(snapshots, out)`` on two bad lines: one FleetError, the pages still written."""
    from kclient.errors import FleetError

    bad = tmp_path / "bad.jsonl"
    bad.write_text('{"cluster": "a"}\nnot json\n', encoding="utf-8")
    with pytest.raises(FleetError, match=r"no valid snapshot record \(2 bad record\(s\); "
                       r"first: .*bad.jsonl:1: "):
        run(str(bad), str(tmp_path / "out"))
    assert (tmp_path / "out" / "report.md").is_file()  # the pages list the bad lines


def test_a_fleet_without_one_valid_record_is_an_error(engine: Any, tmp_path: Path) -> None:
    _refuses_a_fleet_without_one_valid_record(engine, tmp_path)


@pytest.mark.spark
@pytest.mark.integration
def test_the_spark_engine_refuses_a_fleet_without_one_valid_record_alike(
        spark: Any, tmp_path: Path) -> None:
    from kclient.fleet.pipeline import run_report

    _refuses_a_fleet_without_one_valid_record(
        lambda snapshots, out: run_report(spark, snapshots, out), tmp_path)


@pytest.mark.spark
@pytest.mark.integration
def test_both_engines_report_the_same(spark: Any, tmp_path: Path) -> None:
    from kclient.fleet.pipeline import run_report

    fleet = tmp_path / "fleet.jsonl"
    lines = [json.dumps(r) for r in synth_records(30, seed=3, history=3)]
    lines.insert(5, "not json")
    fleet.write_text("\n".join(lines) + "\n", encoding="utf-8")
    local = run_local_report(str(fleet), str(tmp_path / "local"))
    theirs = run_report(spark, str(fleet), str(tmp_path / "spark"))
    # The bad lines' reasons are each engine's words; where they are is the same.
    assert [(b.file, b.line) for b in local.bad_lines] == [
        (b.file, b.line) for b in theirs.bad_lines]
    assert attrs.evolve(local, elapsed=0.0, bad_lines=()) == attrs.evolve(
        theirs, elapsed=0.0, bad_lines=())
    # With history, and on the edge-case fleet (stale and silent brokers,
    # fallbacks, upgrades), the reports are compared in test_equality, with
    # their tables.


# -- the charts (ReportData in, files out; no Spark) ----------------------------------


def _svg_size(svg: bytes) -> tuple[int, int]:
    """The size of an SVG chart in pixels; it must be a well-formed SVG document."""
    root = ElementTree.fromstring(svg)
    assert root.tag == "{http://www.w3.org/2000/svg}svg"
    assert root.get("viewBox") == f"0 0 {root.get('width')} {root.get('height')}"
    return int(root.get("width", "0")), int(root.get("height", "0"))


def _release_data(guesses: list[tuple[ReleaseGuess, int]]) -> ReportData:
    base = rich_report(patterns=3, days=0)
    return attrs.evolve(base, releases=tuple(ReleaseCount(g, n) for g, n in guesses))


def test_histogram_is_sorted_by_release_and_split_by_mode(tmp_path: Path) -> None:
    kraft_39 = ReleaseGuess("exact", "3.9-kraft", mode="kraft")
    zk_39 = ReleaseGuess("exact", "3.9", mode="zookeeper")
    data = _release_data([
        (ReleaseGuess("unknown"), 50), (kraft_39, 40), (ReleaseGuess("exact", "4.1",
                                                                     mode="kraft"), 5),
        (ReleaseGuess("exact", "0.10.2", mode="zookeeper"), 3), (zk_39, 7),
        (ReleaseGuess("between", "3.8", "3.9", mode="zookeeper"), 1),
        (ReleaseGuess("at_least", "4.3", mode="kraft"), 2),
        (ReleaseGuess("exact", "2.8-kraft", mode="kraft"), 9)])
    bars, counts, left, hidden = release_bars(data)
    assert bars == ["0.10.2", "2.8", "between 3.8 and 3.9", "3.9", "4.1", "at least 4.3",
                    "unknown/custom"]
    assert counts["ZooKeeper"] == [3, 0, 1, 7, 0, 0, 0]
    assert counts["KRaft"] == [0, 9, 0, 40, 5, 2, 0]
    assert counts[""] == [0, 0, 0, 0, 0, 0, 50]
    assert (left, hidden) == (0, 0)
    markdown = render_markdown(data)
    table = re.findall(r"^\| (.+?) \| (ZooKeeper|KRaft|) \| \d+ \|$", markdown, re.MULTILINE)
    assert [name for name, _mode in table] == [
        "0.10.2", "2.8 (KRaft)", "between 3.8 and 3.9 (ZooKeeper)", "3.9 (ZooKeeper)",
        "3.9 (KRaft)", "4.1", "at least 4.3", "unknown/custom"]
    write_report(data, tmp_path)
    assert f"![Brokers per guessed release, by mode]({RELEASES_CHART})" in markdown
    assert _svg_size((tmp_path / RELEASES_CHART).read_bytes())[0] > 0


def test_histogram_keeps_the_largest_releases_in_release_order() -> None:
    # Every release and the builds between consecutive ZooKeeper ones: more bars than drawn.
    zookeeper = known_releases("zookeeper")
    guesses = [*every_release_guess(), *(
        ReleaseGuess("between", low, high, mode="zookeeper")
        for low, high in itertools.pairwise(zookeeper))]
    sized = [(g, 1000 + i) for i, g in enumerate(guesses)]
    data = _release_data(sized)
    bars, counts, left, hidden = release_bars(data)
    totals: Counter[str] = Counter()
    for guess, count in sized:
        totals[attrs.evolve(guess, mode=None).text] += count
    assert len(totals) > RELEASE_BARS and len(bars) == RELEASE_BARS
    assert set(bars) == {b for b, _ in totals.most_common(RELEASE_BARS)}
    assert hidden == len(totals) - RELEASE_BARS
    assert left == sum(n for b, n in totals.items() if b not in bars)
    order = sorted(guesses, key=lambda g: g.order)
    drawn = [attrs.evolve(g, mode=None).text for g in order]
    assert bars == [b for b in dict.fromkeys(drawn) if b in bars]
    assert sum(map(sum, counts.values())) + left == sum(n for _g, n in sized)
    for mode in ("ZooKeeper", "KRaft"):
        assert any(counts[mode])


def test_heatmap_groups_are_capped_and_the_rest_counted(tmp_path: Path) -> None:
    data = rich_report(patterns=HEATMAP_ROWS + 20, days=0)
    shown = data.shown_patterns()
    assert len(shown) == HEATMAP_ROWS
    assert [p.clusters for p in shown] == sorted((p.clusters for p in data.patterns),
                                                 reverse=True)[:HEATMAP_ROWS]
    clusters_left, groups_left = data.patterns_left()
    assert groups_left == data.pattern_total - HEATMAP_ROWS
    assert clusters_left == data.pattern_clusters - sum(p.clusters for p in shown)
    write_report(data, tmp_path)
    markdown = (tmp_path / "report.md").read_text()
    assert f"+ {clusters_left} more cluster(s) in {groups_left} other pattern(s)" in markdown
    assert (f"{data.pattern_clusters} cluster(s) in {data.pattern_total} pattern(s); "
            f"the {HEATMAP_ROWS} largest:") in markdown
    # The largest group's row names the features it lacks, in the features' order.
    top = shown[0]
    lacking = [f.feature for f, s in zip(data.features, top.states, strict=True)
               if s == Verdict.UNAVAILABLE.value]
    assert f"| {top.clusters} | {top.example} | {', '.join(lacking) or '-'} |" in markdown
    page = (tmp_path / "report.html").read_text()
    assert page.count("data:image/svg+xml;base64,") == len(chart_names(data)) == 3


def test_small_fleet_shows_every_group_and_no_rest_line() -> None:
    data = rich_report(patterns=4, days=0)
    assert len(data.shown_patterns()) == 4
    small = attrs.evolve(data, pattern_total=4,
                         pattern_clusters=sum(p.clusters for p in data.patterns))
    assert small.patterns_left() == (0, 0)
    markdown = render_markdown(small)
    assert "other pattern(s)" not in markdown and "the 4 largest" not in markdown


def test_history_chart_only_with_history(tmp_path: Path) -> None:
    without = rich_report(patterns=5, days=0)
    assert HISTORY_CHART not in chart_names(without)
    write_report(without, tmp_path)
    assert not (tmp_path / HISTORY_CHART).exists()
    assert HISTORY_CHART not in (tmp_path / "report.md").read_text()
    with_history = rich_report(patterns=5, days=3)
    assert HISTORY_CHART in chart_names(with_history)
    markdown = render_markdown(with_history)
    assert (f"![Clusters by state, day by day, for each feature whose availability changed]"
            f"({HISTORY_CHART})") in markdown
    charts = draw_charts(with_history)
    assert set(charts) == {CHART_NAME, RELEASES_CHART, HEATMAP_CHART, HISTORY_CHART}
    assert render_html(with_history, charts).count("data:image/svg+xml;base64,") == 4


def test_chart_sizes_stay_bounded_on_a_huge_fleet() -> None:
    data = rich_report(patterns=300, days=400)
    names = tuple(f"Feature{i:03d}WithAFairlyLongName" for i in range(120))
    features = tuple(attrs.evolve(f, feature=names[i % len(names)])
                     for i, f in enumerate(data.features * 5))[:120]
    huge = attrs.evolve(data, features=features, patterns=tuple(
        attrs.evolve(p, states=p.states * 5) for p in data.patterns),
        history_rows=tuple((d, names[i % 120], a, b, c)
                           for i, (d, _f, a, b, c) in enumerate(data.history_rows)))
    for name, svg in draw_charts(huge).items():
        width, height = _svg_size(svg)
        assert width <= 1500 and height <= 1600, (name, width, height)
    # The bars and the heatmap draw the least available features, in the features' order.
    indexes, features_left = charted_features(huge)
    assert len(indexes) == CHART_FEATURES and features_left == 120 - CHART_FEATURES
    assert indexes == sorted(indexes)
    assert max(huge.features[i].share for i in indexes) <= min(
        f.share for i, f in enumerate(huge.features) if i not in indexes)
    # The history chart draws a panel per feature whose availability changed (those
    # that moved most), and counts the unchanged ones and the rest.
    panels, counts, unchanged, left = history_lines(huge)
    assert len(panels) == HISTORY_LINES
    assert unchanged + len(panels) + left == len(counts)

    def moved(feature: str) -> int:
        available = [c[0] for c in counts[feature].values()]
        return max(available) - min(available)

    changed = [f for f in counts if len(set(counts[f].values())) > 1]
    assert unchanged == len(counts) - len(changed)
    assert min(map(moved, panels)) >= max((moved(f) for f in changed if f not in panels),
                                          default=0)
    assert min(map(moved, panels)) > 0


def test_the_history_chart_shows_only_the_24_features_that_changed() -> None:
    # rich_report moves every other feature day by day: 12 of its 25 change.
    data = rich_report(patterns=10, days=7)
    panels, counts, unchanged, left = history_lines(data)
    assert panels and left == 0 and unchanged == len(counts) - len(panels)
    assert all(len(set(counts[f].values())) > 1 for f in panels)
    svg = draw_charts(data)[HISTORY_CHART]
    assert _svg_size(svg)[1] <= 1600
    # One panel per feature that changed, titled with its name, and one legend.
    titles = re.findall(rb'font-weight="bold">([^<]+)</text>', svg)[1:]
    assert len(titles) == len(panels) and all(
        title.decode() in (panel, panel[:33] + "\u2026")
        for title, panel in zip(titles, panels, strict=True))
    assert svg.count(b">unavailable</text>") == 1


def test_charts_are_deterministic() -> None:
    data = rich_report(patterns=8, days=3)
    first, second = draw_charts(data), draw_charts(data)
    assert first == second
    for svg in first.values():
        _svg_size(svg)
        # One colour per state in every chart that shows states.
        assert b'fill="#d8553b"' in svg or b"KRaft" in svg


def test_the_window_and_the_clusters_nobody_answered_for_are_said_once(tmp_path: Path) -> None:
    from kclient.negotiation import write_snapshots
    from tests.fleet.test_equality import edge_records

    path = tmp_path / "edges.jsonl"
    write_snapshots(path, edge_records())
    data = run_local_report(str(path), str(tmp_path / "out"))
    # The timeline's 2026-11-20 record is not used (the broker's later ones are).
    assert data.window() == "Observed between 2026-11-22 10:00 and 2026-11-22 11:00 (UTC)"
    # A broker of each never answered (odd-error's only record is an error).
    assert data.silent_names == ("all-down", "mixed", "odd-error", "one-down")
    markdown = (tmp_path / "out" / "report.md").read_text(encoding="utf-8")
    # One sentence, not a row under every feature (all-down is listed where the
    # application itself rules a feature out).
    section = markdown.split("## Clusters where a feature is unavailable")[1]
    assert all("the application speaks" in line for line in section.splitlines()
               if line.startswith("| all-down |"))
    assert "**Observed between 2026-11-22 10:00 and 2026-11-22 11:00 (UTC)**" in markdown
    assert (f"{data.silent_clusters} cluster(s) have brokers that never answered ApiVersions, "
            "so what their other brokers allow cannot be promised there (unknown in the table "
            "above; the feature_availability table names the brokers): all-down, mixed, "
            "odd-error, one-down.") in markdown
    assert "not answered ApiVersions yet" not in markdown
