"""The report's charts, drawn as small SVG files by this module (no plotting library).

Four charts: feature availability (stacked bars per feature), brokers per
guessed release (sorted by release, split by mode), clusters by feature
state (clusters with the same state for every feature drawn as one row) and,
with history, one small panel per feature whose availability changed
(clusters by state, day by day).  Every chart uses one colour per state
(:data:`STATE_COLOURS`), whole-number axes, labels written on the marks, and
a size bounded whatever the number of releases, features or days; each says
what it leaves out.  Text from the input is escaped (:func:`html_text`), and
the same data gives the same bytes.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence

from kclient.fleet.report.data import ReportData, left_text
from kclient.fleet.report.escape import html_text, visible
from kclient.negotiation.releases import MODE_LABELS
from kclient.negotiation.verdict import Verdict

__all__ = [
    "CHART_ALT",
    "CHART_FEATURES",
    "CHART_NAME",
    "HEATMAP_CHART",
    "HISTORY_CHART",
    "HISTORY_LINES",
    "MODE_COLOURS",
    "READINESS_CHART",
    "READINESS_COLOURS",
    "RELEASES_CHART",
    "RELEASE_BARS",
    "STATE_COLOURS",
    "chart_names",
    "charted_features",
    "draw_charts",
    "history_lines",
    "release_bars",
]

#: The feature availability chart (bars per feature).
CHART_NAME = "feature_availability.svg"
#: Brokers per guessed release, sorted by release, split by mode.
RELEASES_CHART = "releases.svg"
#: Clusters by feature state: one row per group of clusters in the same states.
HEATMAP_CHART = "cluster_features.svg"
#: With history: clusters by state per day, for each feature whose availability changed.
HISTORY_CHART = "availability_by_day.svg"
#: With a client inventory: clusters by readiness and client software by verdict.
READINESS_CHART = "upgrade_readiness.svg"
#: The most releases (bars) the histogram draws; the smallest others are counted below it.
RELEASE_BARS = 40
#: The most features (small panels) the history chart draws: of those whose
#: availability changed, the ones that moved most.
HISTORY_LINES = 24
#: The most features the availability bars and the heatmap draw: the least available.
CHART_FEATURES = 50

#: Alternative text of each chart, by file name.
CHART_ALT = {
    CHART_NAME: "Feature availability across the fleet",
    RELEASES_CHART: "Brokers per guessed release, by mode",
    HEATMAP_CHART: "Clusters by feature state",
    HISTORY_CHART: "Clusters by state, day by day, for each feature whose availability changed",
    READINESS_CHART: "Clusters by upgrade readiness, and client software by verdict with its "
                     "connections",
}

_AVAILABLE = Verdict.AVAILABLE.value
_UNAVAILABLE = Verdict.UNAVAILABLE.value
_UNKNOWN = Verdict.UNKNOWN.value
_STATES = (_AVAILABLE, _UNAVAILABLE, _UNKNOWN)

#: One colour per state in every chart: available blue, unavailable red, unknown
#: grey; white where a cluster has no row for a feature.
STATE_COLOURS = {_AVAILABLE: "#3b7dd8", _UNAVAILABLE: "#d8553b", _UNKNOWN: "#b0b0b0",
                 "": "#ffffff"}
#: Readiness and verdicts in the states' colours: ready and works as available, blocked and
#: breaks as unavailable, unknown as unknown.
READINESS_COLOURS = {"ready": STATE_COLOURS[_AVAILABLE], "works": STATE_COLOURS[_AVAILABLE],
                     "blocked": STATE_COLOURS[_UNAVAILABLE],
                     "breaks": STATE_COLOURS[_UNAVAILABLE], "unknown": STATE_COLOURS[_UNKNOWN]}
#: The release chart's modes, in colours no state uses.
MODE_COLOURS = {MODE_LABELS["zookeeper"]: "#e69f00", MODE_LABELS["kraft"]: "#009e73",
                "": "#8c6bb1"}

#: Pixels: the font sizes, and the widest a chart gets (the number of marks bounds its height).
_FONT, _SMALL, _TITLE = 12, 11, 14
_MAX_WIDTH = 1300
#: The width of an average character, in font sizes (generous, for a sans-serif face).
_CHAR = 0.62
_INK, _GRID = "#222222", "#dddddd"


def _width(text: str, size: float) -> float:
    """About how wide ``text`` is drawn at ``size`` pixels."""
    return len(text) * size * _CHAR


def _short(text: str, limit: int = 28) -> str:
    """A label: controls written out (:func:`visible`), then at most ``limit`` characters."""
    text = visible(text)
    return text if len(text) <= limit else text[:limit - 1] + "\u2026"


def _num(value: float) -> str:
    return f"{value:.1f}".removesuffix(".0")


class _Svg:
    """One SVG document, drawn mark by mark (coordinates in pixels, y downwards)."""

    def __init__(self) -> None:
        self.parts: list[str] = []

    def rect(self, x: float, y: float, width: float, height: float, fill: str) -> None:
        if width > 0 and height > 0:
            self.parts.append(f'<rect x="{_num(x)}" y="{_num(y)}" width="{_num(width)}" '
                              f'height="{_num(height)}" fill="{fill}"/>')

    def line(self, x1: float, y1: float, x2: float, y2: float, stroke: str = _GRID) -> None:
        self.parts.append(f'<line x1="{_num(x1)}" y1="{_num(y1)}" x2="{_num(x2)}" '
                          f'y2="{_num(y2)}" stroke="{stroke}"/>')

    def text(self, x: float, y: float, text: str, *, size: int = _FONT, anchor: str = "start",
             bold: bool = False, rotate: int = 0, fill: str = _INK) -> None:
        """``text`` (from the input or not: always escaped) with its baseline at ``y``."""
        extra = ' font-weight="bold"' if bold else ""
        if anchor != "start":
            extra += f' text-anchor="{anchor}"'
        if rotate:
            extra += f' transform="rotate({rotate} {_num(x)} {_num(y)})"'
        self.parts.append(f'<text x="{_num(x)}" y="{_num(y)}" font-size="{size}" '
                          f'fill="{fill}"{extra}>{html_text(text)}</text>')

    def legend(self, x: float, y: float, entries: Sequence[tuple[str, str]]) -> float:
        """Colour swatches with their labels in one row from ``(x, y)``; returns the row's end."""
        for label, colour in entries:
            self.rect(x, y - 10, 12, 12, colour)
            self.text(x + 16, y, label, size=_SMALL)
            x += 16 + _width(label, _SMALL) + 14
        return x

    def document(self, width: float, height: float) -> bytes:
        width, height = math.ceil(width), math.ceil(height)
        head = (f'<svg xmlns="http://www.w3.org/2000/svg" width="{width}" height="{height}" '
                f'viewBox="0 0 {width} {height}" font-family="DejaVu Sans, Liberation Sans, '
                'Arial, sans-serif">')
        background = f'<rect width="{width}" height="{height}" fill="#ffffff"/>'
        return "\n".join([head, background, *self.parts, "</svg>", ""]).encode("utf-8")


def _ticks(top: int, most: int = 6) -> list[int]:
    """Whole-number ticks from 0 to at least ``top``, at most ``most``: steps 1, 2, 5, 10, 20..."""
    top = max(top, 1)
    step = 1
    while math.ceil(top / step) > most - 1:
        step = _next_step(step)
    return list(range(0, math.ceil(top / step) * step + 1, step))


def _next_step(step: int) -> int:
    """The step after ``step`` in 1, 2, 5, 10, 20, 50, ..."""
    digits: int = 10 ** (len(str(step)) - 1)
    lead = step // digits
    return (5 if lead == 2 else 2 * lead) * digits


def _legend_states() -> list[tuple[str, str]]:
    return [(state, STATE_COLOURS[state]) for state in _STATES]


def chart_names(data: ReportData) -> tuple[str, ...]:
    """The charts the report of ``data`` has (file names)."""
    names = [CHART_NAME]
    if data.patterns and data.features:
        names.append(HEATMAP_CHART)
    if data.history_rows:
        names.append(HISTORY_CHART)
    if data.releases:
        names.append(RELEASES_CHART)
    if data.readiness is not None:
        names.append(READINESS_CHART)
    return tuple(names)


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


def _feature_chart(data: ReportData) -> bytes:
    """Stacked bars: clusters per feature by state, labelled available / all."""
    svg = _Svg()
    indexes, left = charted_features(data)
    drawn = [data.features[i] for i in indexes]
    labels = [_short(f.feature) for f in drawn]
    label_width = max((_width(label, _SMALL) for label in labels), default=0) + 12
    x0, plot, row, top = 10 + label_width, 520.0, 20, 62
    ticks = _ticks(max((f.clusters for f in drawn), default=0))
    scale = plot / ticks[-1]
    title = f"Feature availability across {data.clusters} cluster(s)"
    svg.text(10, 20, title, size=_TITLE, bold=True)
    svg.legend(10, 42, _legend_states())
    bottom = top + row * len(drawn)
    for tick in ticks:
        svg.line(x0 + tick * scale, top - 4, x0 + tick * scale, bottom)
        svg.text(x0 + tick * scale, bottom + 16, str(tick), size=_SMALL, anchor="middle")
    for index, (feature, label) in enumerate(zip(drawn, labels, strict=True)):
        y = top + index * row
        svg.text(x0 - 8, y + 14, label, size=_SMALL, anchor="end")
        start = x0
        for state in _STATES:
            width = getattr(feature, state) * scale
            svg.rect(start, y + 3, width, row - 6, STATE_COLOURS[state])
            start += width
        svg.text(start + 5, y + 14, f"{feature.available}/{feature.clusters}", size=_SMALL)
    axis = "clusters (label: available / all)" + _features_left(left)
    svg.text(x0, bottom + 36, axis, size=_SMALL)
    width = max(x0 + plot + 70, 20 + _width(title, _TITLE), x0 + _width(axis, _SMALL) + 10)
    return svg.document(min(width, _MAX_WIDTH), bottom + 48)


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
    counts = {mode: [by_mode.get((b, mode), 0) for b in bars] for mode in MODE_COLOURS}
    left = sum(n for b, n in totals.items() if b not in kept)
    return bars, counts, left, len(totals) - len(bars)


def _release_chart(data: ReportData) -> bytes:
    """Vertical bars: brokers per guessed release, oldest first, stacked by mode."""
    svg = _Svg()
    bars, counts, left, hidden = release_bars(data)
    labels = [_short(bar, 24) for bar in bars]
    totals = [sum(values[i] for values in counts.values()) for i in range(len(bars))]
    ticks = _ticks(max(totals, default=0))
    slot = max(22.0, min(56.0, 900 / max(1, len(bars))))
    rotate = any(_width(label, _SMALL) > slot - 6 for label in labels)
    x0, top, plot = 60.0, 62, 260.0
    bottom = top + plot
    scale = plot / ticks[-1]
    title = "Brokers per guessed release (oldest first)"
    svg.text(10, 20, title, size=_TITLE, bold=True)
    modes = [(mode or "unknown mode", MODE_COLOURS[mode])
             for mode, values in counts.items() if any(values)]
    svg.legend(10, 42, modes)
    right = x0 + slot * len(bars)
    for tick in ticks:
        y = bottom - tick * scale
        svg.line(x0, y, right, y)
        svg.text(x0 - 6, y + 4, str(tick), size=_SMALL, anchor="end")
    svg.text(16, top + plot / 2, "brokers", size=_SMALL, anchor="middle", rotate=-90)
    for index, (label, total) in enumerate(zip(labels, totals, strict=True)):
        x = x0 + index * slot
        y = bottom
        for mode, values in counts.items():
            height = values[index] * scale
            svg.rect(x + slot * 0.15, y - height, slot * 0.7, height, MODE_COLOURS[mode])
            y -= height
        svg.text(x + slot / 2, y - 4, str(total), size=_SMALL, anchor="middle")
        if rotate:
            svg.text(x + slot / 2 + 4, bottom + 14, label, size=_SMALL, anchor="end",
                     rotate=-45)
        else:
            svg.text(x + slot / 2, bottom + 16, label, size=_SMALL, anchor="middle")
    below = bottom + (max((_width(label, _SMALL) for label in labels), default=0) * 0.72 + 24
                      if rotate else 30)
    note = f"+ {left} broker(s) on {hidden} other release(s) not drawn" if hidden else ""
    if note:
        svg.text(x0, below, note, size=_SMALL)
    width = max(right + 20, 20 + _width(title, _TITLE), x0 + _width(note, _SMALL) + 10)
    return svg.document(min(width, _MAX_WIDTH), below + 12)


def _heatmap_chart(data: ReportData) -> bytes:
    """Rows: groups of clusters in the same states; columns: features; cells: the state."""
    svg = _Svg()
    shown = data.shown_patterns()
    indexes, left = charted_features(data)
    rows = [_short(f"{p.clusters} like {p.example}", 34) for p in shown]
    columns = [_short(data.features[i].feature, 24) for i in indexes]
    cell = max(10.0, min(20.0, 900 / max(1, len(indexes))))
    x0 = 10 + max((_width(label, _SMALL) for label in rows), default=0) + 10
    top = 62 + max((_width(label, _SMALL) for label in columns), default=0) + 10
    clusters, total = data.pattern_totals()
    title = f"Clusters by feature state: {clusters} cluster(s) in {total} pattern(s)"
    svg.text(10, 20, title, size=_TITLE, bold=True)
    svg.legend(10, 42, _legend_states())
    for column, label in enumerate(columns):
        x = x0 + column * cell + cell / 2 + 4
        svg.text(x, top - 6, label, size=_SMALL if cell >= 14 else 9, rotate=-90)
    for row, (pattern, label) in enumerate(zip(shown, rows, strict=True)):
        y = top + row * cell
        svg.text(x0 - 6, y + cell / 2 + 4, label, size=_SMALL, anchor="end")
        for column, index in enumerate(indexes):
            state = pattern.states[index] if index < len(pattern.states) else ""
            svg.rect(x0 + column * cell, y, cell - 1, cell - 1,
                     STATE_COLOURS.get(state, STATE_COLOURS[""]))
    bottom = top + cell * len(shown)
    svg.text(10, bottom + 18, "rows: clusters in the same states (count, first by name)",
             size=_SMALL)
    below = (left_text(data) + _features_left(left)).lstrip("; ")
    if below:
        svg.text(10, bottom + 36, below, size=_SMALL)
    width = max(x0 + cell * len(indexes) + 20, 20 + _width(title, _TITLE),
                20 + _width(below, _SMALL))
    return svg.document(min(width, _MAX_WIDTH), bottom + (48 if below else 30))


#: Columns of the history chart's small multiples, and each panel's size in pixels.
_HISTORY_COLUMNS = 4
_PANEL_WIDTH, _PANEL_HEIGHT = 280, 150


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


def _history_chart(data: ReportData) -> bytes:
    """Small multiples: per feature that changed, clusters by state, day by day (stacked bars)."""
    svg = _Svg()
    days = sorted({row[0] for row in data.history_rows})
    drawn, counts, unchanged, left = history_lines(data)
    notes = []
    if unchanged:
        notes.append(f"{unchanged} feature(s) unchanged over the {len(days)} day(s), not drawn")
    if left:
        notes.append(f"{left} more that changed less, not drawn (the table lists every one)")
    title = "Clusters by state, day by day (features whose availability changed)"
    svg.text(10, 20, title, size=_TITLE, bold=True)
    if not drawn:
        text = "No feature's availability changed over the days" + (
            f"; {notes[0]}" if notes else "")
        svg.text(10, 48, text, size=_FONT)
        return svg.document(max(20 + _width(title, _TITLE), 20 + _width(text, _FONT)), 64)
    svg.legend(10, 42, _legend_states())
    columns = max(1, min(_HISTORY_COLUMNS, len(drawn)))
    rows = math.ceil(len(drawn) / columns)
    ticks = _ticks(max(sum(c) for f in drawn for c in counts[f].values()), most=4)
    plot_height = _PANEL_HEIGHT - 66.0
    scale = plot_height / ticks[-1]
    plot_width = _PANEL_WIDTH - 56.0
    slot = plot_width / len(days)
    # Every day while they fit under a panel, else the first, middle and last.
    marked = (range(len(days)) if len(days) <= 6
              else sorted({0, len(days) // 2, len(days) - 1}))
    top = 58
    for index, feature in enumerate(drawn):
        px = 10 + (index % columns) * _PANEL_WIDTH + 36
        py = top + (index // columns) * _PANEL_HEIGHT
        series = [counts[feature].get(day, (0, 0, 0)) for day in days]
        svg.text(px, py + 14, _short(feature, 34), size=_SMALL, bold=True)
        first, last = series[0], series[-1]
        svg.text(px, py + 28, f"available {first[0]} \u2192 {last[0]} of {sum(last)}",
                 size=10, fill="#555555")
        bottom = py + 36 + plot_height
        for tick in ticks:
            y = bottom - tick * scale
            svg.line(px, y, px + plot_width, y)
            svg.text(px - 4, y + 4, str(tick), size=10, anchor="end")
        for position, values in enumerate(series):
            y = bottom
            for state, value in zip(_STATES, values, strict=True):
                height = value * scale
                svg.rect(px + position * slot + slot * 0.1, y - height,
                         max(slot * 0.8, 1.0), height, STATE_COLOURS[state])
                y -= height
        for position in marked:
            svg.text(px + position * slot + slot / 2, bottom + 13, days[position][5:], size=10,
                     anchor="middle")
    bottom = top + rows * _PANEL_HEIGHT
    if notes:
        svg.text(10, bottom + 8, "; ".join(notes), size=_SMALL)
    width = max(20 + columns * _PANEL_WIDTH, 20 + _width(title, _TITLE),
                20 + _width("; ".join(notes), _SMALL))
    return svg.document(min(width, _MAX_WIDTH), bottom + 20)


def _readiness_chart(data: ReportData) -> bytes:
    """One stacked bar of clusters by readiness; one bar per client software and verdict,
    its length the connections, labelled with its clusters."""
    readiness = data.readiness
    assert readiness is not None
    svg = _Svg()
    title = f"Upgrade readiness on {readiness.target}: {readiness.clusters} cluster(s)"
    svg.text(10, 20, title, size=_TITLE, bold=True)
    states = [("ready", readiness.ready), ("blocked", readiness.blocked),
              ("unknown", readiness.unknown)]
    svg.legend(10, 42, [(f"{state} ({count})", READINESS_COLOURS[state])
                        for state, count in states])
    plot, x0 = 520.0, 10.0
    scale = plot / max(readiness.clusters, 1)
    start = x0
    for state, count in states:
        svg.rect(start, 54, count * scale, 18, READINESS_COLOURS[state])
        if count and count * scale > _width(str(count), _SMALL) + 4:
            svg.text(start + count * scale / 2, 67, str(count), size=_SMALL, anchor="middle",
                     fill="#ffffff")
        start += count * scale
    labels = [_short(f"{bar.software} ({bar.clusters} cluster{'s' * (bar.clusters != 1)})",
                     64) for bar in readiness.software]
    label_width = max((_width(label, _SMALL) for label in labels), default=0) + 12
    top, row = 112, 20
    svg.text(10, top - 14, "Client software by verdict: connections (most first)", size=_FONT,
             bold=True)
    svg.legend(10 + _width("Client software by verdict: connections (most first)", _FONT) + 16,
               top - 14, [(state, READINESS_COLOURS[state])
                          for state in ("breaks", "unknown", "works")])
    ticks = _ticks(max((bar.connections for bar in readiness.software), default=0))
    bar_x, bar_plot = 10 + label_width, 420.0
    bar_scale = bar_plot / ticks[-1]
    bottom = top + row * len(readiness.software)
    for tick in ticks:
        svg.line(bar_x + tick * bar_scale, top - 4, bar_x + tick * bar_scale, bottom)
        svg.text(bar_x + tick * bar_scale, bottom + 16, f"{tick:,}", size=_SMALL,
                 anchor="middle")
    for index, (bar, label) in enumerate(zip(readiness.software, labels, strict=True)):
        y = top + index * row
        svg.text(bar_x - 8, y + 14, label, size=_SMALL, anchor="end")
        width = bar.connections * bar_scale
        svg.rect(bar_x, y + 3, width, row - 6, READINESS_COLOURS[bar.state])
        svg.text(bar_x + width + 5, y + 14, f"{bar.connections:,} {bar.state}", size=_SMALL)
    left = readiness.software_total - len(readiness.software)
    note = "connections counted by the brokers" + (
        f"; + {left} more client software not drawn (the table lists every one)" if left
        else "")
    svg.text(10, bottom + 36, note, size=_SMALL)
    width = max(x0 + plot + 20, bar_x + bar_plot + 120, 20 + _width(title, _TITLE),
                20 + _width(note, _SMALL))
    return svg.document(min(width, _MAX_WIDTH), bottom + 48)


_DRAW: dict[str, Callable[[ReportData], bytes]] = {
    CHART_NAME: _feature_chart,
    RELEASES_CHART: _release_chart,
    HEATMAP_CHART: _heatmap_chart,
    HISTORY_CHART: _history_chart,
    READINESS_CHART: _readiness_chart,
}


def draw_charts(data: ReportData) -> dict[str, bytes]:
    """Every chart of :func:`chart_names` as SVG (UTF-8 bytes), by file name.

    The same data gives the same bytes (nothing of the time or the software).
    """
    return {name: _DRAW[name](data) for name in chart_names(data)}
