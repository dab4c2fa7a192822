"""The report people read: ``report.md``, ``report.html`` and a PNG chart.

Rendering works on :class:`ReportData`, small aggregates the pipeline has
already brought to the driver, so this module needs no Spark (only
matplotlib, with the Agg backend, for the chart).
"""

from __future__ import annotations

import base64
import html
from collections.abc import Sequence
from pathlib import Path

import attrs

from kclient.errors import FleetError
from kclient.negotiation.verdict import Verdict

__all__ = [
    "CHART_NAME",
    "BadLine",
    "BlockedCluster",
    "FeatureCount",
    "ReportData",
    "render_html",
    "render_markdown",
    "write_chart",
    "write_report",
]

CHART_NAME = "feature_availability.png"


@attrs.frozen
class FeatureCount:
    """How many clusters are in each verdict state for a feature."""

    feature: str
    available: int
    unavailable: int = 0
    unknown: int = 0

    @property
    def clusters(self) -> int:
        """Clusters evaluated (every state)."""
        return self.available + self.unavailable + self.unknown

    @property
    def share(self) -> float:
        """The available fraction (0 when there are no clusters)."""
        return self.available / self.clusters if self.clusters else 0.0


@attrs.frozen
class BlockedCluster:
    """A cluster where a feature is not available: why, and which brokers.

    ``state`` is ``unavailable`` (``blocking`` names the brokers that rule it
    out) or ``unknown`` (``unknown`` names the brokers that never answered).
    """

    feature: str
    cluster: str
    blocking: tuple[int, ...]
    reason: str
    state: str = Verdict.UNAVAILABLE.value
    unknown: tuple[int, ...] = ()


@attrs.frozen
class BadLine:
    """An input line that was skipped."""

    file: str
    line: int
    reason: str


@attrs.frozen
class ReportData:
    """Everything the report shows (a few hundred values at most).

    ``stale_brokers`` are unreachable brokers counted with their last answer,
    ``unknown_brokers`` those that never answered (in the latest view of each
    cluster).  ``history_rows`` are ``(day, feature, available, unavailable,
    unknown)``.
    """

    snapshots: str
    history: bool
    clusters: int
    brokers: int
    stale_brokers: int
    unknown_brokers: int
    fallback_brokers: int
    features: tuple[FeatureCount, ...]
    blocked: tuple[BlockedCluster, ...]
    releases: tuple[tuple[str, str, int], ...]
    upgrading: int
    upgrading_names: tuple[str, ...]
    bad_records: int
    bad_lines: tuple[BadLine, ...]
    history_rows: tuple[tuple[str, str, int, int, int], ...] = ()
    elapsed: float = 0.0

    @property
    def failed_brokers(self) -> int:
        """Brokers whose latest negotiation failed (stale and unknown)."""
        return self.stale_brokers + self.unknown_brokers

    def blocked_for(self, feature: str, state: str = Verdict.UNAVAILABLE.value
                    ) -> list[BlockedCluster]:
        """The listed clusters where ``feature`` is in ``state`` (unavailable or unknown)."""
        return [b for b in self.blocked if b.feature == feature and b.state == state]

    def broker_summary(self) -> str:
        """``12 (1 stale: unreachable, last answer used; ...)``: the brokers line."""
        return (f"{self.brokers} ({self.stale_brokers} stale: unreachable, last answer used; "
                f"{self.unknown_brokers} unknown: never answered; {self.fallback_brokers} "
                "described by a fallback profile)")


def _md_cell(text: str) -> str:
    return text.replace("|", "\\|").replace("\n", " ")


def _ids(ids: Sequence[int]) -> str:
    return ", ".join(str(i) for i in ids) or "-"


def _brokers_of(blocked: BlockedCluster) -> tuple[int, ...]:
    return blocked.unknown if blocked.state == Verdict.UNKNOWN.value else blocked.blocking


# Per state listed under a feature: the FeatureCount field, the words, the broker column.
_SECTIONS = (
    (Verdict.UNAVAILABLE.value, "unavailable", "cannot use", "Blocking brokers"),
    (Verdict.UNKNOWN.value, "unknown", "cannot promise (brokers never answered)",
     "Brokers that never answered"),
)


def render_markdown(data: ReportData) -> str:
    """The Markdown report."""
    lines = [
        "# kclient fleet report",
        "",
        f"Snapshots: `{data.snapshots}`" + (" (latest day of each cluster; history in the "
                                             "tables)" if data.history else ""),
        "",
        f"- Clusters: {data.clusters}",
        f"- Brokers: {data.broker_summary()}",
        f"- Clusters mid-upgrade (brokers on different releases): {data.upgrading}",
        f"- Skipped input records: {data.bad_records}",
        "",
        "## Feature availability",
        "",
        "A feature is *available* when every broker of the cluster has answered (now, or "
        "before it became unreachable) and they allow it, *unavailable* when brokers that "
        "answered rule it out, *unknown* when they allow it but a broker never answered.",
        "",
        f"![Feature availability across the fleet]({CHART_NAME})",
        "",
        "| Feature | Available | Unavailable | Unknown | Share available |",
        "| --- | ---: | ---: | ---: | ---: |",
    ]
    lines += [f"| {f.feature} | {f.available} / {f.clusters} | {f.unavailable} | {f.unknown} "
              f"| {f.share:.0%} |" for f in data.features]
    lines += ["", "## Clusters where a feature is unavailable or unknown", ""]
    for feature in data.features:
        if not feature.unavailable and not feature.unknown:
            continue
        lines += [f"### {feature.feature}", ""]
        for state, count, what, head in _SECTIONS:
            listed = data.blocked_for(feature.feature, state)
            total = getattr(feature, count)
            if not total:
                continue
            lines += [f"{total} cluster(s) {what} {feature.feature}"
                      + (f"; the first {len(listed)}:" if len(listed) < total else ":"), "",
                      f"| Cluster | {head} | Reason |", "| --- | --- | --- |"]
            lines += [f"| {_md_cell(b.cluster)} | {_ids(_brokers_of(b))} | {_md_cell(b.reason)} |"
                      for b in listed]
            lines.append("")
    if data.history_rows:
        lines += ["## Availability by day", "",
                  "| Day | Feature | Available | Unavailable | Unknown |",
                  "| --- | --- | ---: | ---: | ---: |"]
        lines += [f"| {day} | {feature} | {ok} / {ok + no + unknown} | {no} | {unknown} |"
                  for day, feature, ok, no, unknown in data.history_rows]
        lines.append("")
    lines += ["## Releases (guessed from each broker's API versions)", "",
              "| Release | Mode | Brokers |", "| --- | --- | ---: |"]
    lines += [f"| {_md_cell(name)} | {_md_cell(mode)} | {count} |"
              for name, mode, count in data.releases]
    lines.append("")
    if data.upgrading_names:
        lines += ["Clusters mid-upgrade: " + ", ".join(data.upgrading_names)
                  + (" ..." if data.upgrading > len(data.upgrading_names) else ""), ""]
    lines += ["## Skipped input", ""]
    if not data.bad_records:
        lines += ["Every input record was read.", ""]
    else:
        lines += [f"{data.bad_records} record(s) were skipped (all listed in the "
                  "`bad_records` table):", ""]
        lines += [f"- `{b.file}:{b.line}`: {b.reason}" for b in data.bad_lines]
        lines.append("")
    lines.append(f"Generated by kclient fleet report in {data.elapsed:.1f} s.")
    return "\n".join(lines) + "\n"


def _table(head: Sequence[str], rows: Sequence[Sequence[str]]) -> str:
    out = ["<table>", "<tr>" + "".join(f"<th>{html.escape(h)}</th>" for h in head) + "</tr>"]
    out += ["<tr>" + "".join(f"<td>{html.escape(c)}</td>" for c in row) + "</tr>"
            for row in rows]
    out.append("</table>")
    return "\n".join(out)


def render_html(data: ReportData, chart: bytes | None = None) -> str:
    """The same report as a self-contained HTML page.

    ``chart`` (PNG bytes) is embedded as a ``data:`` URI, so the page opens
    from anywhere, copied or mailed alone; without it the page has no image.
    """
    parts = [
        "<!DOCTYPE html>", "<html lang=\"en\">", "<head>", "<meta charset=\"utf-8\">",
        "<title>kclient fleet report</title>",
        "<style>body{font-family:sans-serif;margin:2em;max-width:70em}"
        "table{border-collapse:collapse;margin:1em 0}"
        "td,th{border:1px solid #ccc;padding:.25em .6em;text-align:left}</style>",
        "</head>", "<body>", "<h1>kclient fleet report</h1>",
        f"<p>Snapshots: <code>{html.escape(data.snapshots)}</code></p>",
        "<ul>",
        f"<li>Clusters: {data.clusters}</li>",
        f"<li>Brokers: {html.escape(data.broker_summary())}</li>",
        f"<li>Clusters mid-upgrade: {data.upgrading}</li>",
        f"<li>Skipped input records: {data.bad_records}</li>",
        "</ul>",
        "<h2>Feature availability</h2>",
        *([f"<img src=\"data:image/png;base64,{base64.b64encode(chart).decode('ascii')}\" "
           "alt=\"Feature availability across the fleet\">"] if chart else []),
        _table(["Feature", "Available", "Unavailable", "Unknown", "Share available"],
               [[f.feature, f"{f.available} / {f.clusters}", str(f.unavailable),
                 str(f.unknown), f"{f.share:.0%}"] for f in data.features]),
        "<h2>Clusters where a feature is unavailable or unknown</h2>",
    ]
    for feature in data.features:
        if not feature.unavailable and not feature.unknown:
            continue
        parts.append(f"<h3>{html.escape(feature.feature)}</h3>")
        for state, count, what, head in _SECTIONS:
            total = getattr(feature, count)
            if not total:
                continue
            parts.append(f"<p>{total} cluster(s) {html.escape(what)} it.</p>")
            parts.append(_table(["Cluster", head, "Reason"],
                                [[b.cluster, _ids(_brokers_of(b)), b.reason]
                                 for b in data.blocked_for(feature.feature, state)]))
    if data.history_rows:
        parts.append("<h2>Availability by day</h2>")
        parts.append(_table(["Day", "Feature", "Available", "Unavailable", "Unknown"],
                            [[d, f, f"{ok} / {ok + no + unknown}", str(no), str(unknown)]
                             for d, f, ok, no, unknown in data.history_rows]))
    parts.append("<h2>Releases</h2>")
    parts.append(_table(["Release", "Mode", "Brokers"],
                        [[n, m, str(c)] for n, m, c in data.releases]))
    parts.append("<h2>Skipped input</h2>")
    parts.append(_table(["File", "Line", "Reason"],
                        [[b.file, str(b.line), b.reason] for b in data.bad_lines])
                 if data.bad_records else "<p>Every input record was read.</p>")
    parts += ["</body>", "</html>"]
    return "\n".join(parts) + "\n"


def write_chart(data: ReportData, path: Path) -> None:
    """A horizontal bar chart: share of clusters where each feature is available (and unknown)."""
    import matplotlib

    matplotlib.use("Agg")
    from matplotlib import pyplot as plt

    names = [f.feature for f in data.features][::-1]
    shares = [100.0 * f.share for f in data.features][::-1]
    unknown = [100.0 * f.unknown / f.clusters if f.clusters else 0.0
               for f in data.features][::-1]
    height = max(3.0, 0.32 * len(names) + 1.2)
    figure, axes = plt.subplots(figsize=(8.0, height))
    try:
        bars = axes.barh(names, shares, color="#3b7dd8", label="available")
        axes.barh(names, unknown, left=shares, color="#b0b0b0", label="unknown")
        if any(unknown):
            axes.legend(loc="lower right", fontsize=8)
        for bar, grey, feature in zip(bars, unknown, data.features[::-1], strict=True):
            axes.text(bar.get_width() + grey + 1, bar.get_y() + bar.get_height() / 2,
                      f"{feature.available}/{feature.clusters}", va="center", fontsize=8)
        axes.set_xlim(0, 115)
        axes.set_xlabel("clusters where the feature is available (blue) or unknown (grey), %")
        axes.set_title(f"Feature availability across {data.clusters} cluster(s)")
        figure.tight_layout()
        figure.savefig(path, dpi=100)
    finally:
        plt.close(figure)


def write_report(data: ReportData, target: Path) -> None:
    """Write ``report.md``, ``report.html`` and the chart into ``target``."""
    try:
        write_chart(data, target / CHART_NAME)
        (target / "report.md").write_text(render_markdown(data), encoding="utf-8")
        chart = (target / CHART_NAME).read_bytes()
        (target / "report.html").write_text(render_html(data, chart), encoding="utf-8")
    except OSError as exc:
        raise FleetError(f"cannot write the report into {target}: {exc.strerror or exc}"
                         ) from None
