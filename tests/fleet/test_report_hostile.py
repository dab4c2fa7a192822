"""Reports are data from strangers: names, errors and paths from the input are shown, never run.

Cluster names, hosts and broker errors come from the snapshot records, which
come from brokers and from whoever wrote the targets.  ``report.md`` and
``report.html`` must show them as text: no HTML or Markdown markup (a
``<script>``, a live ``javascript:`` link), no control characters (ANSI
escapes recolour a terminal that ``cat``s the file; NUL; bidirectional
overrides reorder a line), no cell-breaking ``|``, nothing live in a chart.
"""

from __future__ import annotations

import json
import re
from pathlib import Path
from xml.etree import ElementTree

import markdown

from kclient.fleet.local import run_local_report
from kclient.fleet.report import CHART_NAME, HEATMAP_CHART, html_text, markdown_text, visible

HOSTILE = [
    "<script>alert(1)</script>",
    "[click](javascript:alert(1))",
    "![x](javascript:alert(2))",
    "<img src=x onerror=alert(3)>",
    "\x1b[31mred\x1b[0m\x1b]0;title\x07",
    "nul\x00byte\x7f\x9b",
    "pipe|cell|break",
    "$\\frac{1}{0}$ math",
    "right\u202eto\u2066left",
    "line\nbreak\r\u2028sep",
    "**bold** _em_ `code` ~~strike~~",
    "<https://evil.example/>",
    "&amp; &lt;",
]
#: Characters no report file may hold (the text the input gave is written out instead).
_CONTROLS = re.compile("[\x00-\x08\x0b-\x1f\x7f-\x9f\u202a-\u202e\u2066-\u2069\u2028\u2029]")


def test_each_escape_shows_the_text_and_nothing_else() -> None:
    assert visible("a\x1b[31mb\x00c\u202ed\n") == "a\\x1b[31mb\\x00c\\u202ed "
    assert markdown_text("[a](javascript:x) <b> | $m$") == (
        "\\[a\\](javascript:x) &lt;b&gt; \\| \\$m\\$")
    assert html_text("<a href='x'>\x00") == "&lt;a href=&#x27;x&#x27;&gt;\\x00"
    for name in HOSTILE:
        assert not _CONTROLS.search(markdown_text(name) + html_text(name))


def _record(cluster: str, broker: int, error: str | None = None) -> dict[str, object]:
    return {"cluster": cluster, "broker_id": broker, "host": f"h{broker}.example", "port": 9092,
            "observed_at": "2026-11-22T10:00:00Z",
            "source": "error" if error else "api_versions",
            "api_versions": [] if error else [
                {"api_key": 18, "min_version": 0, "max_version": 3},
                {"api_key": 0, "min_version": 0, "max_version": 9}],
            "error": error}


def test_a_report_of_hostile_names_and_errors_shows_them_as_text(tmp_path: Path) -> None:
    lines = []
    for index, name in enumerate(HOSTILE):
        lines.append(json.dumps(_record(name, 1)))
        # A broker whose error text is hostile too: it reaches the reasons.
        lines.append(json.dumps(_record(name, 2, error=f"refused {HOSTILE[-1 - index]}")))
    lines.append("<script>not json</script>\x1b[2J")  # a bad line: its reason quotes it
    snapshots = tmp_path / "fleet.jsonl"
    snapshots.write_text("\n".join(lines) + "\n", encoding="utf-8")
    out = tmp_path / "out"
    data = run_local_report(str(snapshots), str(out))
    assert data.clusters == len(HOSTILE) and data.bad_records == 1

    page = (out / "report.html").read_text(encoding="utf-8")
    text = (out / "report.md").read_text(encoding="utf-8")
    for written in (page, text):
        assert not _CONTROLS.search(written)
        assert "<script" not in written
        assert "\\x1b" in written  # the escape is shown, written out
    assert "<img" not in text
    # The page's only images are its own charts, embedded.
    assert re.findall(r"<img [^>]*", page) and all(
        tag.startswith('<img src="data:image/svg+xml;base64,')
        for tag in re.findall(r"<img [^>]*", page))
    # The charts (SVG) hold the names as text: well-formed, no element but the drawing's own.
    heatmap = ElementTree.fromstring((out / HEATMAP_CHART).read_bytes())
    tags = {element.tag.split("}")[-1] for element in heatmap.iter()}
    assert tags == {"svg", "rect", "text"}
    labels = [element.text or "" for element in heatmap.iter() if element.tag.endswith("text")]
    assert any("like \\x1b[31mred" in label for label in labels)  # written out, as text
    assert not any(_CONTROLS.search(label) for label in labels)
    for chart in (CHART_NAME, HEATMAP_CHART):
        assert not _CONTROLS.search((out / chart).read_text(encoding="utf-8"))
    # Markdown renderers that pass HTML through (Python-Markdown: mkdocs) make no
    # element of the input: no script, no image, no link to anywhere.
    rendered = markdown.markdown(text, extensions=["tables"])
    assert "<script" not in rendered and "<img src=\"x\"" not in rendered
    assert "javascript:" not in re.sub(r">[^<]*<", "><", rendered)  # only in text, if at all
    assert "href=" not in rendered and "<del>" not in rendered
    assert "<strong>" not in rendered.replace(f"<strong>{data.window()}</strong>", "")
    assert "<code>" not in rendered.replace("<code>bad_records</code>", "")  # the report's own
    # Every cluster still has its row (no '|' broke a table), in every feature table.
    heatmap_rows = [line for line in text.splitlines() if line.startswith("| ")]
    assert all(line.count(" | ") == line.replace("\\|", "").count(" | ") for line in heatmap_rows)
    # The HTML page: the names are there as text, escaped.
    assert html_text("<script>alert(1)</script>") in page
    assert "&lt;img src=x onerror=alert(3)&gt;" in page
