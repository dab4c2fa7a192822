"""The report people read: ``report.md``, ``report.html`` and PNG charts.

Rendering works on :class:`ReportData`, small aggregates the pipeline has
already brought to the driver, so this module needs no Spark (only
matplotlib, with the Agg backend, for the charts).  The charts: feature
availability, brokers per guessed release (sorted by release, split by
mode), clusters by feature state (clusters with the same state for every
feature drawn as one row) and, with history, availability by day.  Every
chart's size is bounded whatever the number of releases, features or days.
"""

from __future__ import annotations

import base64
import html
import io
import math
import re
from collections.abc import Callable, Mapping, Sequence
from datetime import UTC, datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any

import attrs

from kclient.errors import FleetError
from kclient.negotiation.releases import MODE_LABELS, ReleaseGuess
from kclient.negotiation.verdict import Verdict

if TYPE_CHECKING:
    from matplotlib.axes import Axes
    from matplotlib.figure import Figure

__all__ = [
    "CHART_FEATURES",
    "CHART_NAME",
    "HEATMAP_CHART",
    "HEATMAP_ROWS",
    "HISTORY_CHART",
    "HISTORY_LINES",
    "RELEASES_CHART",
    "RELEASE_BARS",
    "BadLine",
    "BlockedCluster",
    "ClusterPattern",
    "FeatureCount",
    "ReleaseCount",
    "ReportData",
    "chart_names",
    "chart_text",
    "charted_features",
    "draw_charts",
    "history_lines",
    "html_text",
    "markdown_text",
    "prepare_out",
    "release_bars",
    "render_html",
    "render_markdown",
    "visible",
    "window_text",
    "write_report",
]

#: The feature availability chart (bars per feature).
CHART_NAME = "feature_availability.png"
#: Brokers per guessed release, sorted by release, split by mode.
RELEASES_CHART = "releases.png"
#: Clusters by feature state: one row per group of clusters in the same states.
HEATMAP_CHART = "cluster_features.png"
#: With history: clusters by state per day, for each feature whose availability changed.
HISTORY_CHART = "availability_by_day.png"
#: The most groups of clusters (rows) the heatmap draws; the rest are counted below it.
HEATMAP_ROWS = 40
#: The most releases (bars) the histogram draws; the smallest others are counted below it.
RELEASE_BARS = 40
#: The most features (small panels) the history chart draws: of those whose
#: availability changed, the ones that moved most.
HISTORY_LINES = 24
#: The most features the availability bars and the heatmap draw: the least available.
CHART_FEATURES = 50


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
class ReleaseCount:
    """How many brokers got one release guess (the core's :class:`ReleaseGuess`)."""

    guess: ReleaseGuess
    count: int

    @property
    def release(self) -> str:
        """The guess as the tables print it (``3.9 (KRaft)``)."""
        return self.guess.text

    @property
    def mode(self) -> str:
        """``ZooKeeper``, ``KRaft`` or empty (an unknown set of APIs)."""
        return MODE_LABELS.get(self.guess.mode or "", "")

    @property
    def bar(self) -> str:
        """The guess without its mode: one histogram bar holds both modes of a release."""
        return attrs.evolve(self.guess, mode=None).text


@attrs.frozen
class ClusterPattern:
    """Clusters that share one verdict state per feature.

    ``states`` follow the order of :attr:`ReportData.features` (``available``,
    ``unavailable``, ``unknown``, or empty where a cluster has no row for the
    feature); ``example`` is the first of the clusters by name.
    """

    states: tuple[str, ...]
    clusters: int
    example: str


@attrs.frozen
class ReportData:
    """Everything the report shows (a few hundred values at most).

    ``stale_brokers`` are unreachable brokers counted with their last answer,
    ``unknown_brokers`` those that never answered (in the latest view of each
    cluster).  ``releases`` may come in any order (the report sorts them by
    release).  ``patterns`` are the largest groups of clusters in the same
    states (at most :data:`HEATMAP_ROWS` are drawn); ``pattern_total`` counts
    every group and ``pattern_clusters`` every cluster in one.  ``history_rows``
    are ``(day, feature, available, unavailable, unknown)``.  ``observed_from``
    and ``observed_to`` bound the times of the records the views use (UTC,
    ``2026-11-22 10:00``; empty when unknown).  ``silent_clusters`` counts the
    clusters with a broker that never answered, where what the other brokers
    allow is unknown (``silent_names``: the first of them by name); the report
    says so once instead of under every feature.
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
    releases: tuple[ReleaseCount, ...]
    upgrading: int
    upgrading_names: tuple[str, ...]
    bad_records: int
    bad_lines: tuple[BadLine, ...]
    history_rows: tuple[tuple[str, str, int, int, int], ...] = ()
    elapsed: float = 0.0
    patterns: tuple[ClusterPattern, ...] = ()
    pattern_total: int = 0
    pattern_clusters: int = 0
    observed_from: str = ""
    observed_to: str = ""
    silent_clusters: int = 0
    silent_names: tuple[str, ...] = ()

    @property
    def failed_brokers(self) -> int:
        """Brokers whose latest negotiation failed (stale and unknown)."""
        return self.stale_brokers + self.unknown_brokers

    def blocked_for(self, feature: str, state: str = Verdict.UNAVAILABLE.value
                    ) -> list[BlockedCluster]:
        """The listed clusters where ``feature`` is in ``state`` (unavailable or unknown)."""
        return [b for b in self.blocked if b.feature == feature and b.state == state]

    def releases_by_version(self) -> list[ReleaseCount]:
        """The release counts, oldest release first (the core's order), ZooKeeper before KRaft."""
        return sorted(self.releases, key=lambda r: r.guess.order)

    def shown_patterns(self) -> list[ClusterPattern]:
        """The groups of clusters the heatmap draws: the largest, at most :data:`HEATMAP_ROWS`."""
        ranked = sorted(self.patterns, key=lambda p: (-p.clusters, p.example))
        return ranked[:HEATMAP_ROWS]

    def pattern_totals(self) -> tuple[int, int]:
        """``(clusters, groups)`` of every group of clusters in the same states.

        ``pattern_clusters`` and ``pattern_total``, or what ``patterns`` holds
        when they were left at 0.
        """
        return (max(self.pattern_clusters, sum(p.clusters for p in self.patterns)),
                max(self.pattern_total, len(self.patterns)))

    def patterns_left(self) -> tuple[int, int]:
        """``(clusters, groups)`` not drawn in the heatmap."""
        shown = self.shown_patterns()
        clusters, total = self.pattern_totals()
        return clusters - sum(p.clusters for p in shown), total - len(shown)

    def window(self) -> str:
        """``Observed between A and B (UTC)``, or empty when the times are unknown."""
        if not self.observed_from:
            return ""
        if self.observed_from == self.observed_to:
            return f"Observed at {self.observed_from} (UTC)"
        return f"Observed between {self.observed_from} and {self.observed_to} (UTC)"

    def silent_text(self, escape: Callable[[str], str] = str) -> str:
        """One sentence for the clusters where no broker ever answered (empty: none).

        ``escape`` writes each cluster name for the output (Markdown, HTML).
        """
        if not self.silent_clusters:
            return ""
        more = (f" and {self.silent_clusters - len(self.silent_names)} more"
                if self.silent_clusters > len(self.silent_names) else "")
        names = ", ".join(escape(name) for name in self.silent_names)
        return (f"{self.silent_clusters} cluster(s) have brokers that never answered "
                "ApiVersions, so what their other brokers allow cannot be promised there "
                "(unknown in the table above; the feature_availability table names the "
                f"brokers): {names}{more}.")

    def broker_summary(self) -> str:
        """``12 (1 stale: unreachable, last answer used; ...)``: the brokers line."""
        return (f"{self.brokers} ({self.stale_brokers} stale: unreachable, last answer used; "
                f"{self.unknown_brokers} unknown: never answered; {self.fallback_brokers} "
                "described by a fallback profile)")


def window_text(seconds: int) -> str:
    """An instant (seconds since the epoch) as the report prints it: ``2026-11-22 10:00``."""
    return datetime.fromtimestamp(seconds, UTC).strftime("%Y-%m-%d %H:%M")


_AVAILABLE = Verdict.AVAILABLE.value
_UNAVAILABLE = Verdict.UNAVAILABLE.value
_UNKNOWN = Verdict.UNKNOWN.value


#: Characters that must not reach a reader as they are: C0 and C1 controls (ANSI
#: escapes, NUL...), DEL, and the bidirectional controls and line separators
#: that reorder or break text ("Trojan source").
_UNSAFE = re.compile("[\x00-\x1f\x7f-\x9f\u061c\u200e\u200f\u2028\u2029"
                     "\u202a-\u202e\u2066-\u2069]")
#: Markdown punctuation that could start markup (emphasis, code, links and
#: images, tables, strike-through, math, headings' closing), escaped with a backslash.
_MARKDOWN = re.compile(r"([\\`*_\[\]{}|~!#$])")
#: What HTML-aware Markdown renderers (mkdocs, pandoc, wikis) would take as markup.
_MARKDOWN_HTML = {"&": "&amp;", "<": "&lt;", ">": "&gt;"}


def _visible_char(found: re.Match[str]) -> str:
    char = found.group()
    if char in "\t\n\r":
        return " "
    code = ord(char)
    return f"\\x{code:02x}" if code < 0x100 else f"\\u{code:04x}"


def visible(text: str) -> str:
    """``text`` with every control, bidirectional or line-separator character written out.

    Tabs and line breaks become spaces; the others their escape (``\\x1b``,
    ``\\u202e``): a report shows what the input held, and cannot recolour a
    terminal, hide text or reorder a line.
    """
    return _UNSAFE.sub(_visible_char, text)


def markdown_text(text: str) -> str:
    """``text`` (from the input: names, errors, paths) as literal Markdown text.

    Controls are written out (:func:`visible`); ``& < >`` become entities, so
    renderers that pass HTML through show them as text; the punctuation that
    starts Markdown markup is backslash-escaped, so ``[a](javascript:...)`` is
    no link and ``|`` does not end a table cell.
    """
    escaped = _MARKDOWN.sub(r"\\\1", visible(text))
    return "".join(_MARKDOWN_HTML.get(char, char) for char in escaped)


def html_text(text: str) -> str:
    """``text`` as literal HTML text (quotes too): controls written out, markup escaped."""
    return html.escape(visible(text), quote=True)


def chart_text(text: str) -> str:
    """``text`` for a chart label: controls written out, ``$`` kept from starting math."""
    return visible(text).replace("$", "\\$")


_md_cell = markdown_text


def _ids(ids: Sequence[int]) -> str:
    return ", ".join(str(i) for i in ids) or "-"


def _brokers_of(blocked: BlockedCluster) -> tuple[int, ...]:
    return blocked.unknown if blocked.state == Verdict.UNKNOWN.value else blocked.blocking


# Per state listed under a feature: the FeatureCount field, the words, the broker column.
_SECTIONS = (
    (Verdict.UNAVAILABLE.value, "unavailable", "cannot use", "Blocking brokers"),
)


#: Alternative text of each chart, by file name.
_ALT = {
    CHART_NAME: "Feature availability across the fleet",
    RELEASES_CHART: "Brokers per guessed release, by mode",
    HEATMAP_CHART: "Clusters by feature state",
    HISTORY_CHART: "Clusters by state, day by day, for each feature whose availability changed",
}


def chart_names(data: ReportData) -> tuple[str, ...]:
    """The charts the report of ``data`` has (file names)."""
    names = [CHART_NAME]
    if data.patterns and data.features:
        names.append(HEATMAP_CHART)
    if data.history_rows:
        names.append(HISTORY_CHART)
    if data.releases:
        names.append(RELEASES_CHART)
    return tuple(names)


def _pattern_features(data: ReportData, pattern: ClusterPattern, state: str) -> str:
    names = [f.feature for f, s in zip(data.features, pattern.states, strict=False)
             if s == state]
    return ", ".join(names) or "-"


def _pattern_intro(data: ReportData) -> str:
    shown = data.shown_patterns()
    clusters, total = data.pattern_totals()
    return (f"Clusters with the same state for every feature form one row: {clusters} "
            f"cluster(s) in {total} pattern(s)"
            + (f"; the {len(shown)} largest:" if len(shown) < total else ":"))


def _pattern_rows(data: ReportData) -> list[list[str]]:
    return [[str(p.clusters), p.example, _pattern_features(data, p, _UNAVAILABLE),
             _pattern_features(data, p, _UNKNOWN)] for p in data.shown_patterns()]


def _left_text(data: ReportData) -> str:
    clusters, groups = data.patterns_left()
    return f"+ {clusters} more cluster(s) in {groups} other pattern(s)" if groups else ""


_PATTERN_HEAD = ("Clusters", "Like", "Unavailable features", "Unknown features")


def render_markdown(data: ReportData) -> str:
    """The Markdown report (it links the charts, written next to it)."""
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
        "## Feature availability",
        "",
        "A feature is *available* when every broker of the cluster has answered (now, or "
        "before it became unreachable) and they allow it, *unavailable* when brokers that "
        "answered rule it out, *unknown* when they allow it but a broker never answered.",
        "",
        f"![{_ALT[CHART_NAME]}]({CHART_NAME})",
        "",
        "| Feature | Available | Unavailable | Unknown | Share available |",
        "| --- | ---: | ---: | ---: | ---: |",
    ]
    lines += [f"| {_md_cell(f.feature)} | {f.available} / {f.clusters} | {f.unavailable} | "
              f"{f.unknown} | {f.share:.0%} |" for f in data.features]
    if HEATMAP_CHART in charts:
        lines += ["", "## Clusters by feature state", "",
                  f"![{_ALT[HEATMAP_CHART]}]({HEATMAP_CHART})", "", _pattern_intro(data), "",
                  "| " + " | ".join(_PATTERN_HEAD) + " |", "| ---: | --- | --- | --- |"]
        lines += ["| " + " | ".join(_md_cell(c) for c in row) + " |"
                  for row in _pattern_rows(data)]
        if _left_text(data):
            lines += ["", _left_text(data)]
    lines += ["", "## Clusters where a feature is unavailable", ""]
    if data.silent_text():
        lines += [data.silent_text(markdown_text), ""]
    for feature in data.features:
        totals = [getattr(feature, count) for _s, count, _w, _h in _SECTIONS]
        if not any(totals):
            continue
        lines += [f"### {markdown_text(feature.feature)}", ""]
        for (state, _count, what, head), total in zip(_SECTIONS, totals, strict=True):
            listed = data.blocked_for(feature.feature, state)
            if not total:
                continue
            lines += [f"{total} cluster(s) {what} {markdown_text(feature.feature)}"
                      + (f"; the first {len(listed)}:" if len(listed) < total else ":"), "",
                      f"| Cluster | {head} | Reason |", "| --- | --- | --- |"]
            lines += [f"| {_md_cell(b.cluster)} | {_ids(_brokers_of(b))} | {_md_cell(b.reason)} |"
                      for b in listed]
            lines.append("")
    if data.history_rows:
        lines += ["## Availability by day", "",
                  f"![{_ALT[HISTORY_CHART]}]({HISTORY_CHART})", "",
                  "| Day | Feature | Available | Unavailable | Unknown |",
                  "| --- | --- | ---: | ---: | ---: |"]
        lines += [f"| {_md_cell(day)} | {_md_cell(feature)} | {ok} / {ok + no + unknown} | "
                  f"{no} | {unknown} |"
                  for day, feature, ok, no, unknown in data.history_rows]
        lines.append("")
    lines += ["## Releases (guessed from each broker's API versions)", ""]
    if RELEASES_CHART in charts:
        lines += [f"![{_ALT[RELEASES_CHART]}]({RELEASES_CHART})", ""]
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


#: A cell with an unbroken run of text longer than this may break anywhere (no sideways
#: scroll); a shorter single word (a cluster name) stays on one line.
_LONG_WORD = 30


def _cell(text: str) -> str:
    words = text.split()
    if any(len(word) > _LONG_WORD for word in words):
        return f"<td class=\"long\">{html_text(text)}</td>"
    if len(words) == 1 and "-" in text:
        return f"<td class=\"word\">{html_text(text)}</td>"
    return f"<td>{html_text(text)}</td>"


def _table(head: Sequence[str], rows: Sequence[Sequence[str]]) -> str:
    out = ["<table>", "<tr>" + "".join(f"<th>{html_text(h)}</th>" for h in head) + "</tr>"]
    out += ["<tr>" + "".join(_cell(c) for c in row) + "</tr>" for row in rows]
    out.append("</table>")
    return "\n".join(out)


def _img(charts: Mapping[str, bytes], name: str) -> list[str]:
    png = charts.get(name)
    if png is None:
        return []
    return [f"<p><img src=\"data:image/png;base64,{base64.b64encode(png).decode('ascii')}\" "
            f"alt=\"{html.escape(_ALT[name])}\"></p>"]


def render_html(data: ReportData, charts: Mapping[str, bytes] | None = None) -> str:
    """The same report as a self-contained HTML page.

    ``charts`` (PNG bytes by file name, as :func:`draw_charts` gives them) are
    embedded as ``data:`` URIs, so the page opens from anywhere, copied or
    mailed alone; a chart left out is not shown.
    """
    images = charts or {}
    parts = [
        "<!DOCTYPE html>", "<html lang=\"en\">", "<head>", "<meta charset=\"utf-8\">",
        "<title>kclient fleet report</title>",
        "<style>body{font-family:sans-serif;margin:2em;max-width:70em}"
        "table{border-collapse:collapse;margin:1em 0}"
        "td,th{border:1px solid #ccc;padding:.25em .6em;text-align:left}"
        "td.long,code{overflow-wrap:anywhere}td.word{white-space:nowrap}"
        "img{max-width:100%;height:auto}</style>",
        "</head>", "<body>", "<h1>kclient fleet report</h1>",
        f"<p>Snapshots: <code>{html_text(data.snapshots)}</code></p>",
        *([f"<p><strong>{html_text(data.window())}</strong></p>"] if data.window() else []),
        "<ul>",
        f"<li>Clusters: {data.clusters}</li>",
        f"<li>Brokers: {html.escape(data.broker_summary())}</li>",
        f"<li>Clusters mid-upgrade: {data.upgrading}</li>",
        f"<li>Skipped input records: {data.bad_records}</li>",
        "</ul>",
        "<h2>Feature availability</h2>",
        *_img(images, CHART_NAME),
        _table(["Feature", "Available", "Unavailable", "Unknown", "Share available"],
               [[f.feature, f"{f.available} / {f.clusters}", str(f.unavailable),
                 str(f.unknown), f"{f.share:.0%}"] for f in data.features]),
    ]
    if HEATMAP_CHART in chart_names(data):
        parts += ["<h2>Clusters by feature state</h2>", *_img(images, HEATMAP_CHART),
                  f"<p>{html_text(_pattern_intro(data))}</p>",
                  _table(_PATTERN_HEAD, _pattern_rows(data))]
        if _left_text(data):
            parts.append(f"<p>{html_text(_left_text(data))}</p>")
    parts.append("<h2>Clusters where a feature is unavailable</h2>")
    if data.silent_text():
        parts.append(f"<p>{data.silent_text(html_text)}</p>")
    for feature in data.features:
        totals = [getattr(feature, count) for _s, count, _w, _h in _SECTIONS]
        if not any(totals):
            continue
        parts.append(f"<h3>{html_text(feature.feature)}</h3>")
        for (state, _count, what, head), total in zip(_SECTIONS, totals, strict=True):
            if not total:
                continue
            # Folded: with many features the lists would make the page very long.
            listed = data.blocked_for(feature.feature, state)
            first = f" (the first {len(listed)} listed)" if len(listed) < total else ""
            parts.append(f"<details><summary>{total} cluster(s) {html.escape(what)} "
                         f"it{first}.</summary>")
            parts.append(_table(["Cluster", head, "Reason"],
                                [[b.cluster, _ids(_brokers_of(b)), b.reason]
                                 for b in listed]))
            parts.append("</details>")
    if data.history_rows:
        parts.append("<h2>Availability by day</h2>")
        parts += _img(images, HISTORY_CHART)
        parts.append(f"<details><summary>Every day and feature ({len(data.history_rows)} "
                     "rows)</summary>")
        parts.append(_table(["Day", "Feature", "Available", "Unavailable", "Unknown"],
                            [[d, f, f"{ok} / {ok + no + unknown}", str(no), str(unknown)]
                             for d, f, ok, no, unknown in data.history_rows]))
        parts.append("</details>")
    parts.append("<h2>Releases</h2>")
    parts += _img(images, RELEASES_CHART)
    parts.append(_table(["Release", "Mode", "Brokers"],
                        [[r.release, r.mode, str(r.count)] for r in data.releases_by_version()]))
    parts.append("<h2>Skipped input</h2>")
    parts.append(_table(["File", "Line", "Reason"],
                        [[b.file, str(b.line), b.reason] for b in data.bad_lines])
                 if data.bad_records else "<p>Every input record was read.</p>")
    parts += ["</body>", "</html>"]
    return "\n".join(parts) + "\n"


# Colours: available blue, unavailable red, unknown grey (in every chart); modes.
_STATE_COLOURS = {_AVAILABLE: "#3b7dd8", _UNAVAILABLE: "#d8553b", _UNKNOWN: "#b0b0b0",
                  "": "#ffffff"}
_MODE_COLOURS = {MODE_LABELS["zookeeper"]: "#e69f00", MODE_LABELS["kraft"]: "#0072b2",
                 "": "#999999"}
#: Inches: the widest and tallest a chart gets.
_MAX_WIDTH, _MAX_HEIGHT = 13.0, 14.0


def _clamp(value: float, low: float, high: float) -> float:
    return min(high, max(low, value))


def _short(text: str, limit: int = 28) -> str:
    """A chart label: at most ``limit`` characters, made safe (:func:`chart_text`)."""
    text = visible(text)
    return chart_text(text if len(text) <= limit else text[:limit - 1] + "\u2026")


def charted_features(data: ReportData) -> tuple[list[int], int]:
    """Which features the bars and the heatmap draw (indexes), and how many they leave out.

    Every feature, up to :data:`CHART_FEATURES`; with more, the least
    available ones (the tables list every feature), in the features' order.
    """
    indexes = list(range(len(data.features)))
    if len(indexes) <= CHART_FEATURES:
        return indexes, 0
    ranked = sorted(indexes, key=lambda i: (data.features[i].share, i))
    return sorted(ranked[:CHART_FEATURES]), len(indexes) - CHART_FEATURES


def _features_left(left: int) -> str:
    return f"; + {left} more available feature(s) not drawn" if left else ""


def _integer_axis(axis: Any) -> None:
    """Ticks at whole numbers only: the axis counts clusters or brokers."""
    from matplotlib.ticker import MaxNLocator

    axis.set_major_locator(MaxNLocator(integer=True))


def _feature_chart(data: ReportData, figure: Figure, axes: Axes) -> None:
    """Stacked bars: clusters per feature by state (one colour per state, as every chart)."""
    indexes, left = charted_features(data)
    drawn = [data.features[i] for i in indexes][::-1]
    names = [_short(f.feature) for f in drawn]
    start = [0] * len(drawn)
    for state in (_AVAILABLE, _UNAVAILABLE, _UNKNOWN):
        values = [getattr(f, state) for f in drawn]
        axes.barh(names, values, left=start, color=_STATE_COLOURS[state], label=state)
        start = [a + b for a, b in zip(start, values, strict=True)]
    top = max((f.clusters for f in drawn), default=0)
    for y, feature in enumerate(drawn):
        axes.text(feature.clusters + top * 0.01, y, f"{feature.available}/{feature.clusters}",
                  va="center", fontsize=8)
    axes.legend(loc="lower left", bbox_to_anchor=(1.01, 0.0), fontsize=8, frameon=False)
    axes.set_xlim(0, top * 1.15 + 1)
    _integer_axis(axes.xaxis)
    axes.set_ylim(-0.6, len(names) - 0.4)
    axes.set_xlabel("clusters (label: available / all)" + _features_left(left))
    axes.set_title(f"Feature availability across {data.clusters} cluster(s)")


def _feature_size(data: ReportData) -> tuple[float, float]:
    rows = len(charted_features(data)[0])
    return 8.0, _clamp(0.3 * rows + 1.2, 3.0, _MAX_HEIGHT)


def release_bars(data: ReportData) -> tuple[list[str], dict[str, list[int]], int, int]:
    """The release histogram: bars, brokers per mode label per bar, brokers and bars left out.

    A bar is a guess without its mode (:attr:`ReleaseCount.bar`), oldest
    release first; at most :data:`RELEASE_BARS`, the largest, are kept (in
    release order), and the brokers of the others are counted.
    """
    totals: dict[str, int] = {}
    by_mode: dict[tuple[str, str], int] = {}
    for item in data.releases_by_version():
        totals[item.bar] = totals.get(item.bar, 0) + item.count
        by_mode[item.bar, item.mode] = by_mode.get((item.bar, item.mode), 0) + item.count
    kept = set(sorted(totals, key=lambda b: -totals[b])[:RELEASE_BARS])
    bars = [b for b in totals if b in kept]
    counts = {mode: [by_mode.get((b, mode), 0) for b in bars] for mode in _MODE_COLOURS}
    left = sum(n for b, n in totals.items() if b not in kept)
    return bars, counts, left, len(totals) - len(bars)


def _release_chart(data: ReportData, figure: Figure, axes: Axes) -> None:
    """Vertical bars: brokers per guessed release, oldest first, stacked by mode."""
    bars, counts, left, hidden = release_bars(data)
    positions = list(range(len(bars)))
    bottom = [0] * len(bars)
    for mode, values in counts.items():
        if not any(values):
            continue
        axes.bar(positions, values, bottom=bottom, color=_MODE_COLOURS[mode],
                 label=mode or "unknown mode", width=0.7)
        bottom = [b + v for b, v in zip(bottom, values, strict=True)]
    top = max(bottom, default=0)
    for x, total in zip(positions, bottom, strict=True):
        axes.text(x, total + top * 0.01, str(total), ha="center", va="bottom", fontsize=7)
    axes.set_ylim(0, top * 1.12 + 1)
    axes.set_xlim(-0.6, len(bars) - 0.4)
    axes.set_xticks(positions)
    rotate = len(bars) > 6 or any(len(b) > 8 for b in bars)
    axes.set_xticklabels([_short(b, 24) for b in bars], rotation=45 if rotate else 0,
                         ha="right" if rotate else "center", rotation_mode="anchor",
                         fontsize=8)
    axes.set_ylabel("brokers")
    _integer_axis(axes.yaxis)
    axes.legend(loc="upper left", fontsize=8)
    axes.set_title("Brokers per guessed release (oldest first)")
    if hidden:
        axes.set_xlabel(f"+ {left} broker(s) on {hidden} other release(s) not drawn")


def _release_size(data: ReportData) -> tuple[float, float]:
    bars = len({r.bar for r in data.releases})
    return _clamp(1.5 + 0.3 * min(bars, RELEASE_BARS), 6.0, _MAX_WIDTH), 4.5


#: Inches of the heatmap beside its cells: row labels and legend; at most per cell.
_HEATMAP_MARGIN, _HEATMAP_CELL = 4.2, 0.26


def _heatmap_cell(data: ReportData) -> float:
    columns = max(1, len(charted_features(data)[0]))
    return min(_HEATMAP_CELL, (_MAX_WIDTH - _HEATMAP_MARGIN) / columns)


def _heatmap_chart(data: ReportData, figure: Figure, axes: Axes) -> None:
    """Rows: groups of clusters in the same states; columns: features; cells: the state."""
    from matplotlib.colors import ListedColormap
    from matplotlib.patches import Patch

    order = list(_STATE_COLOURS)
    shown = data.shown_patterns()
    indexes, left = charted_features(data)
    matrix = [[order.index(p.states[i] if i < len(p.states) and p.states[i] in order
                           else "") for i in indexes] for p in shown]
    axes.imshow(matrix, cmap=ListedColormap(list(_STATE_COLOURS.values())), vmin=-0.5,
                vmax=len(order) - 0.5, aspect="auto", interpolation="nearest")
    axes.set_xticks([x - 0.5 for x in range(1, len(indexes))], minor=True)
    axes.set_yticks([y - 0.5 for y in range(1, len(shown))], minor=True)
    axes.grid(which="minor", color="white", linewidth=1)
    axes.tick_params(which="minor", length=0)
    axes.set_xticks(range(len(indexes)))
    axes.set_xticklabels([_short(data.features[i].feature, 24) for i in indexes],
                         rotation=90, fontsize=8 if _heatmap_cell(data) >= 0.2 else 7)
    axes.xaxis.tick_top()
    axes.set_yticks(range(len(shown)))
    axes.set_yticklabels([_short(f"{p.clusters} like {p.example}", 34) for p in shown],
                         fontsize=8)
    axes.set_ylabel("clusters in the same states (count, first by name)")
    axes.legend(handles=[Patch(color=_STATE_COLOURS[s], label=s)
                         for s in (_AVAILABLE, _UNAVAILABLE, _UNKNOWN)],
                loc="upper left", bbox_to_anchor=(1.01, 1.0), fontsize=8, frameon=False)
    below = (_left_text(data) + _features_left(left)).lstrip("; ")
    if below:
        axes.set_xlabel(below)
    clusters, total = data.pattern_totals()
    axes.set_title(f"Clusters by feature state: {clusters} cluster(s) in {total} pattern(s)",
                   pad=12)


def _heatmap_size(data: ReportData) -> tuple[float, float]:
    rows = len(data.shown_patterns())
    cell = _heatmap_cell(data)
    width = _HEATMAP_MARGIN + cell * len(charted_features(data)[0])
    height = 2.4 + 0.26 * rows + 0.6
    return _clamp(width, 6.0, _MAX_WIDTH), _clamp(height, 3.5, _MAX_HEIGHT)


#: Columns of the history chart's small multiples.
_HISTORY_COLUMNS = 4


def history_lines(data: ReportData) -> tuple[list[str], dict[str, dict[str, tuple[int, int, int]]],
                                             int, int]:
    """The history chart's panels: features drawn, counts per feature and day, features left.

    A feature gets a panel only when its counts changed over the days (the
    others are counted: unchanged); at most :data:`HISTORY_LINES`, those that
    moved most, in the order of the features.  Returns ``(drawn, counts by
    feature and day as (available, unavailable, unknown), unchanged, changed
    but not drawn)``.
    """
    counts: dict[str, dict[str, tuple[int, int, int]]] = {}
    for day, feature, ok, no, unknown in data.history_rows:
        counts.setdefault(feature, {})[day] = (ok, no, unknown)
    features = [f.feature for f in data.features if f.feature in counts]
    features += sorted(set(counts) - set(features))
    changed = [f for f in features if len(set(counts[f].values())) > 1]
    unchanged = len(features) - len(changed)

    def moved(name: str) -> int:
        available = [c[0] for c in counts[name].values()]
        return -(max(available) - min(available))

    kept = set(sorted(changed, key=moved)[:HISTORY_LINES])
    drawn = [f for f in changed if f in kept]
    return drawn, counts, unchanged, len(changed) - len(drawn)


def _history_grid(data: ReportData) -> tuple[int, int]:
    drawn = len(history_lines(data)[0])
    columns = max(1, min(_HISTORY_COLUMNS, drawn))
    return max(1, math.ceil(drawn / columns)), columns


def _history_chart(data: ReportData, figure: Figure, axes: Axes) -> None:
    """Small multiples: per feature that changed, clusters by state, day by day."""
    days = sorted({row[0] for row in data.history_rows})
    drawn, counts, unchanged, left = history_lines(data)
    rows, columns = _history_grid(data)
    axes.remove()
    notes = []
    if unchanged:
        notes.append(f"{unchanged} feature(s) unchanged over the {len(days)} day(s), not drawn")
    if left:
        notes.append(f"{left} more that changed less, not drawn (the table lists every one)")
    if not drawn:
        figure.text(0.5, 0.5, "No feature's availability changed over the days"
                    + (f"; {notes[0]}" if notes else ""), ha="center", va="center")
        return
    grid = figure.subplots(rows, columns, sharex=True, sharey=True, squeeze=False)
    positions = list(range(len(days)))
    step = max(1, math.ceil(len(days) / 4))
    for index, panel in enumerate(grid.flat):
        if index >= len(drawn):
            panel.set_visible(False)
            continue
        feature = drawn[index]
        series = [counts[feature].get(day, (0, 0, 0)) for day in days]
        panel.stackplot(positions, *zip(*series, strict=True),
                        colors=[_STATE_COLOURS[s] for s in (_AVAILABLE, _UNAVAILABLE, _UNKNOWN)],
                        labels=[_AVAILABLE, _UNAVAILABLE, _UNKNOWN])
        panel.set_title(_short(feature, 30), fontsize=8)
        panel.set_xticks(positions[::step])
        panel.set_xticklabels([days[i][5:] for i in positions[::step]], fontsize=7)
        if index + columns >= len(drawn):  # nothing drawn below: the days go here
            panel.xaxis.set_tick_params(labelbottom=True)
        panel.tick_params(axis="y", labelsize=7)
        _integer_axis(panel.yaxis)
        panel.margins(x=0)
    handles, labels = grid.flat[0].get_legend_handles_labels()
    figure.legend(handles, labels, loc="upper right", ncol=3, fontsize=8, frameon=False)
    figure.suptitle("Clusters by state, day by day (features whose availability changed)",
                    x=0.02, ha="left", fontsize=10)
    figure.supylabel("clusters", fontsize=8)
    if notes:
        figure.supxlabel("; ".join(notes), fontsize=8)


def _history_size(data: ReportData) -> tuple[float, float]:
    rows, columns = _history_grid(data)
    return max(6.0, 2.6 * columns), _clamp(1.9 * rows + 1.2, 3.0, _MAX_HEIGHT)


_DRAW: dict[str, tuple[Callable[[ReportData, Figure, Axes], None],
                       Callable[[ReportData], tuple[float, float]]]] = {
    CHART_NAME: (_feature_chart, _feature_size),
    RELEASES_CHART: (_release_chart, _release_size),
    HEATMAP_CHART: (_heatmap_chart, _heatmap_size),
    HISTORY_CHART: (_history_chart, _history_size),
}


def warm_up_charts() -> None:
    """Import matplotlib and draw one small throw-away chart, to be run while Spark works.

    The first chart of a process costs about two seconds more than the next
    ones (imports, font loading, the first text layout); the pipeline runs
    this in a background thread and waits for it before :func:`draw_charts`.
    The chart is a bare :class:`~matplotlib.figure.Figure`: no pyplot state
    (current figure, rc settings) changes under the caller's feet.
    """
    import matplotlib

    matplotlib.use("Agg")
    from matplotlib import pyplot  # noqa: F401 - the import is part of the warm-up
    from matplotlib.figure import Figure

    figure = Figure(figsize=(2.0, 1.5))
    axes = figure.subplots()
    axes.barh(["warm-up"], [1], color="#4c78a8")
    axes.set_title("warm-up")
    figure.savefig(io.BytesIO(), format="png", dpi=50, bbox_inches="tight")


def draw_charts(data: ReportData) -> dict[str, bytes]:
    """Every chart of :func:`chart_names` as PNG bytes, by file name.

    The same data gives the same bytes (no time or software version in the
    PNG metadata).
    """
    import matplotlib

    matplotlib.use("Agg")
    from matplotlib import pyplot as plt

    charts: dict[str, bytes] = {}
    for name in chart_names(data):
        draw, size = _DRAW[name]
        with plt.rc_context({"font.size": 9}):
            figure, axes = plt.subplots(figsize=size(data))
            try:
                draw(data, figure, axes)
                buffer = io.BytesIO()
                figure.savefig(buffer, format="png", dpi=100, bbox_inches="tight",
                               metadata={"Software": None})
            finally:
                plt.close(figure)
        charts[name] = buffer.getvalue()
    return charts


def prepare_out(out: str) -> Path:
    """The output directory ``out``, created if needed; a :class:`FleetError` if it cannot be."""
    target = Path(out)
    try:
        target.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise FleetError(f"cannot create the output directory {out}: "
                         f"{exc.strerror or exc}; choose another --out") from None
    if not target.is_dir():
        raise FleetError(f"--out {out} is not a directory; choose another --out")
    return target


def write_report(data: ReportData, target: Path) -> None:
    """Write ``report.md``, ``report.html`` and the charts (PNG) into ``target``."""
    charts = draw_charts(data)
    try:
        for name, png in charts.items():
            (target / name).write_bytes(png)
        (target / "report.md").write_text(render_markdown(data), encoding="utf-8")
        (target / "report.html").write_text(render_html(data, charts), encoding="utf-8")
    except OSError as exc:
        raise FleetError(f"cannot write the report into {target}: {exc.strerror or exc}"
                         ) from None
