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
from typing import Any
from xml.etree import ElementTree

import markdown
import pytest

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


def _planted_links(out: Path, outside: Path, *planted: str) -> dict[Path, bytes]:
    """Links in ``out`` named as a report's outputs (its ``pages`` and charts, a ``table
    folder``) to files elsewhere; returns what each target holds (a run must leave it)."""
    from kclient.fleet.report import RELEASES_CHART

    out.mkdir(parents=True)
    outside.mkdir(parents=True)
    kept: dict[Path, bytes] = {}
    if "pages" in planted:
        for name in ("report.md", "report.html", RELEASES_CHART, CHART_NAME):
            target = outside / f"precious-{name}"
            target.write_bytes(f"precious {name}\n".encode())
            (out / name).symlink_to(target)
            kept[target] = target.read_bytes()
    if "table folder" in planted:
        (outside / "keep.txt").write_bytes(b"keep")
        (out / "cluster_api_versions").symlink_to(outside, target_is_directory=True)
        kept[outside / "keep.txt"] = b"keep"
    return kept


def _one_record(tmp_path: Path) -> Path:
    snapshots = tmp_path / "fleet.jsonl"
    snapshots.write_text(json.dumps(_record("prod", 1)) + "\n", encoding="utf-8")
    return snapshots


@pytest.mark.parametrize("planted", ["pages", "table folder"])
def test_a_report_never_writes_through_a_link_in_out(tmp_path: Path, planted: str) -> None:
    """report.md, report.html and the charts were written through a link named so in
    --out, overwriting whatever it pointed at; a link named as a table failed the run."""
    out = tmp_path / "out"
    kept = _planted_links(out, tmp_path / "elsewhere", planted)
    run_local_report(str(_one_record(tmp_path)), str(out))
    assert {path: path.read_bytes() for path in kept} == kept
    assert [path.name for path in out.iterdir() if path.is_symlink()] == []
    assert (out / "report.md").read_text(encoding="utf-8").startswith("# kclient fleet report")
    assert [p.name for p in (out / "cluster_api_versions").iterdir()] == ["part-00000.parquet"]
    assert not [p.name for p in out.iterdir() if p.name.startswith(".")]  # no partial left


def test_preparing_out_removes_the_links_a_run_would_write_through(tmp_path: Path) -> None:
    """prepare_out, which both engines pass first, leaves no link among the names a run
    writes (Spark writes its tables by path, not through kclient._outputfile)."""
    from kclient.fleet.report import prepare_out

    out = tmp_path / "out"
    kept = _planted_links(out, tmp_path / "elsewhere", "pages", "table folder")
    (out / ".hidden").symlink_to(tmp_path)  # not a name a run writes: left alone
    assert prepare_out(str(out)) == out
    assert [path.name for path in out.iterdir()] == [".hidden"]
    assert {path: path.read_bytes() for path in kept} == kept


@pytest.mark.spark
@pytest.mark.integration
@pytest.mark.slow  # a whole Spark report (a minute on a busy machine)
def test_a_spark_report_never_writes_through_a_link_in_out(spark: Any, tmp_path: Path) -> None:
    from kclient.fleet.pipeline import run_report

    out = tmp_path / "out"
    kept = _planted_links(out, tmp_path / "elsewhere", "pages", "table folder")
    run_report(spark, str(_one_record(tmp_path)), str(out))
    assert {path: path.read_bytes() for path in kept} == kept
    assert [path.name for path in out.iterdir() if path.is_symlink()] == []
