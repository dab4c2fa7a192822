"""``report.html``: the fleet report as one self-contained page, its charts inside."""

from __future__ import annotations

import base64
import html
from collections.abc import Mapping, Sequence

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
from kclient.fleet.report.escape import html_text

__all__ = ["render_html"]


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
    # An image, not inline SVG: a browser runs nothing inside an <img>, whatever it holds.
    svg = charts.get(name)
    if svg is None:
        return []
    return [f"<p><img src=\"data:image/svg+xml;base64,{base64.b64encode(svg).decode('ascii')}\" "
            f"alt=\"{html.escape(CHART_ALT[name])}\"></p>"]


def _readiness(data: ReportData, images: Mapping[str, bytes]) -> list[str]:
    readiness = data.readiness
    if readiness is None:
        return []
    words = html_text(READINESS_WORDS).replace("*", "")
    parts = [f"<h2>Upgrade readiness: {html_text(readiness.target)}</h2>",
             f"<p><strong>{html_text(readiness.summary())}.</strong> {words}</p>",
             *_img(images, READINESS_CHART)]
    if readiness.blocking:
        parts += ["<h3>Blocked clusters and the client software that breaks</h3>",
                  _table(BLOCKING_HEAD, blocking_rows(readiness))]
    if readiness.undecided:
        parts += ["<details><summary>Clusters whose readiness is unknown, and why</summary>",
                  _table(BLOCKING_HEAD, blocking_rows(readiness, undecided=True)),
                  "</details>"]
    if readiness.software:
        parts += ["<h3>Client software across the fleet</h3>",
                  _table(SOFTWARE_HEAD, software_rows(readiness))]
    parts += [f"<p>{html_text(line)}</p>" for line in readiness_lists(readiness)]
    if readiness.notes:
        parts.append("<details><summary>What the inventory reader read</summary><ul>"
                     + "".join(f"<li>{html_text(n)}</li>" for n in readiness.notes)
                     + "</ul></details>")
    return parts


def render_html(data: ReportData, charts: Mapping[str, bytes] | None = None) -> str:
    """The same report as a self-contained HTML page.

    ``charts`` (SVG bytes by file name, as
    :func:`~kclient.fleet.report.charts.draw_charts` gives them) are embedded
    as ``data:`` URIs, so the page opens from anywhere, copied or
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
        *_readiness(data, images),
        "<h2>Feature availability</h2>",
        *_img(images, CHART_NAME),
        _table(["Feature", "Available", "Unavailable", "Unknown", "Share available"],
               [[f.feature, f"{f.available} / {f.clusters}", str(f.unavailable),
                 str(f.unknown), f"{f.share:.0%}"] for f in data.features]),
    ]
    if HEATMAP_CHART in chart_names(data):
        parts += ["<h2>Clusters by feature state</h2>", *_img(images, HEATMAP_CHART),
                  f"<p>{html_text(pattern_intro(data))}</p>",
                  _table(PATTERN_HEAD, pattern_rows(data))]
        if left_text(data):
            parts.append(f"<p>{html_text(left_text(data))}</p>")
    parts.append("<h2>Clusters where a feature is unavailable</h2>")
    if data.silent_text():
        parts.append(f"<p>{data.silent_text(html_text)}</p>")
    for feature in data.features:
        totals = [getattr(feature, count) for _s, count, _w, _h in SECTIONS]
        if not any(totals):
            continue
        parts.append(f"<h3>{html_text(feature.feature)}</h3>")
        for (state, _count, what, head), total in zip(SECTIONS, totals, strict=True):
            if not total:
                continue
            # Folded: with many features the lists would make the page very long.
            listed = data.blocked_for(feature.feature, state)
            first = f" (the first {len(listed)} listed)" if len(listed) < total else ""
            parts.append(f"<details><summary>{total} cluster(s) {html.escape(what)} "
                         f"it{first}.</summary>")
            parts.append(_table(["Cluster", head, "Reason"],
                                [[b.cluster, broker_ids(brokers_of(b)), b.reason]
                                 for b in listed]))
            parts.append("</details>")
    if data.history_rows:
        parts.append("<h2>Availability by day</h2>")
        parts += _img(images, HISTORY_CHART)
        intro, rows = history_table(data)
        parts.append(f"<details><summary>{html.escape(intro)}</summary>")
        parts.append(_table(list(HISTORY_HEAD), rows))
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
