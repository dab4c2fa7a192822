"""``report.md``: the fleet report as Markdown, linking the charts written beside it."""

from __future__ import annotations

from kclient.fleet.report.charts import (
    CHART_ALT,
    CHART_NAME,
    HEATMAP_CHART,
    HISTORY_CHART,
    READINESS_CHART,
    RELEASES_CHART,
    chart_names,
)
from kclient.fleet.report.data import (
    BLOCKING_HEAD,
    HISTORY_HEAD,
    PATTERN_HEAD,
    READINESS_WORDS,
    SECTIONS,
    SOFTWARE_HEAD,
    ReportData,
    blocking_rows,
    broker_ids,
    brokers_of,
    history_table,
    left_text,
    pattern_intro,
    pattern_rows,
    readiness_lists,
    software_rows,
)
from kclient.fleet.report.escape import markdown_text

__all__ = ["render_markdown"]

_md_cell = markdown_text


def _table(head: tuple[str, ...], rows: list[list[str]], align: tuple[str, ...]) -> list[str]:
    return ["| " + " | ".join(head) + " |", "| " + " | ".join(align) + " |",
            *("| " + " | ".join(_md_cell(c) for c in row) + " |" for row in rows)]


def _readiness(data: ReportData) -> list[str]:
    readiness = data.readiness
    if readiness is None:
        return []
    lines = [f"## Upgrade readiness: {markdown_text(readiness.target)}", "",
             f"**{markdown_text(readiness.summary())}.** {READINESS_WORDS}", "",
             f"![{CHART_ALT[READINESS_CHART]}]({READINESS_CHART})", ""]
    if readiness.blocking:
        lines += ["### Blocked clusters and the client software that breaks", "",
                  *_table(BLOCKING_HEAD, blocking_rows(readiness),
                          ("---", "---", "---:", "---", "---")), ""]
    if readiness.undecided:
        lines += ["### Clusters whose readiness is unknown, and why", "",
                  *_table(BLOCKING_HEAD, blocking_rows(readiness, undecided=True),
                          ("---", "---", "---:", "---", "---")), ""]
    if readiness.software:
        lines += ["### Client software across the fleet", "",
                  *_table(SOFTWARE_HEAD, software_rows(readiness),
                          ("---", "---", "---:", "---:")), ""]
    lines += [markdown_text(line) for line in readiness_lists(readiness)]
    lines += [f"- Inventory: {markdown_text(note)}" for note in readiness.notes]
    return [*lines, ""]


def render_markdown(data: ReportData) -> str:
    """The Markdown report (it links the charts, written next to it as SVG files)."""
    charts = chart_names(data)
    lines = [
        "# kclient fleet report",
        "",
        f"Snapshots: {markdown_text(data.snapshots)}"
        + (" (latest day of each cluster; history in the tables)" if data.history else ""),
        "",
        *([f"**{data.window()}**", ""] if data.window() else []),
        f"- Clusters: {data.clusters}",
        f"- Brokers: {data.broker_summary()}",
        f"- Clusters mid-upgrade (brokers on different releases): {data.upgrading}",
        f"- Skipped input records: {data.bad_records}",
        "",
        *_readiness(data),
        "## Feature availability",
        "",
        "A feature is *available* when every broker of the cluster has answered (now, or "
        "before it became unreachable) and they allow it, *unavailable* when brokers that "
        "answered rule it out, *unknown* when they allow it but a broker never answered.",
        "",
        f"![{CHART_ALT[CHART_NAME]}]({CHART_NAME})",
        "",
        "| Feature | Available | Unavailable | Unknown | Share available |",
        "| --- | ---: | ---: | ---: | ---: |",
    ]
    lines += [f"| {_md_cell(f.feature)} | {f.available} / {f.clusters} | {f.unavailable} | "
              f"{f.unknown} | {f.share:.0%} |" for f in data.features]
    if HEATMAP_CHART in charts:
        lines += ["", "## Clusters by feature state", "",
                  f"![{CHART_ALT[HEATMAP_CHART]}]({HEATMAP_CHART})", "", pattern_intro(data), "",
                  "| " + " | ".join(PATTERN_HEAD) + " |", "| ---: | --- | --- | --- |"]
        lines += ["| " + " | ".join(_md_cell(c) for c in row) + " |"
                  for row in pattern_rows(data)]
        if left_text(data):
            lines += ["", left_text(data)]
    lines += ["", "## Clusters where a feature is unavailable", ""]
    if data.silent_text():
        lines += [data.silent_text(markdown_text), ""]
    for feature in data.features:
        totals = [getattr(feature, count) for _s, count, _w, _h in SECTIONS]
        if not any(totals):
            continue
        lines += [f"### {markdown_text(feature.feature)}", ""]
        for (state, _count, what, head), total in zip(SECTIONS, totals, strict=True):
            listed = data.blocked_for(feature.feature, state)
            if not total:
                continue
            lines += [f"{total} cluster(s) {what} {markdown_text(feature.feature)}"
                      + (f"; the first {len(listed)}:" if len(listed) < total else ":"), "",
                      f"| Cluster | {head} | Reason |", "| --- | --- | --- |"]
            lines += [f"| {_md_cell(b.cluster)} | {broker_ids(brokers_of(b))} | "
                      f"{_md_cell(b.reason)} |" for b in listed]
            lines.append("")
    if data.history_rows:
        intro, rows = history_table(data)
        lines += ["## Availability by day", "",
                  f"![{CHART_ALT[HISTORY_CHART]}]({HISTORY_CHART})", "", intro, "",
                  "| " + " | ".join(HISTORY_HEAD) + " |", "| --- | --- | ---: | ---: | ---: |"]
        lines += ["| " + " | ".join(_md_cell(cell) for cell in row) + " |" for row in rows]
        lines.append("")
    lines += ["## Releases (guessed from each broker's API versions)", ""]
    if RELEASES_CHART in charts:
        lines += [f"![{CHART_ALT[RELEASES_CHART]}]({RELEASES_CHART})", ""]
    lines += ["| Release | Mode | Brokers |", "| --- | --- | ---: |"]
    lines += [f"| {_md_cell(r.release)} | {_md_cell(r.mode)} | {r.count} |"
              for r in data.releases_by_version()]
    lines.append("")
    if data.upgrading_names:
        lines += ["Clusters mid-upgrade: " + ", ".join(markdown_text(n)
                                                       for n in data.upgrading_names)
                  + (" ..." if data.upgrading > len(data.upgrading_names) else ""), ""]
    lines += ["## Skipped input", ""]
    if not data.bad_records:
        lines += ["Every input record was read.", ""]
    else:
        lines += [f"{data.bad_records} record(s) were skipped (all listed in the "
                  "`bad_records` table):", ""]
        lines += [f"- {markdown_text(b.file)}:{b.line}: {markdown_text(b.reason)}"
                  for b in data.bad_lines]
        lines.append("")
    lines.append(f"Generated by kclient fleet report in {data.elapsed:.1f} s.")
    return "\n".join(lines) + "\n"
