"""The report people read: ``report.md``, ``report.html`` and SVG charts.

Rendering works on :class:`ReportData`, small aggregates either engine has
already gathered, so nothing here needs Spark, Arrow or a plotting library.
One module per output:

* :mod:`~kclient.fleet.report.data` -- :class:`ReportData` and its rows, and
  the words both texts share;
* :mod:`~kclient.fleet.report.escape` -- text from the input made safe for
  Markdown, HTML and SVG;
* :mod:`~kclient.fleet.report.markdown` -- ``report.md``;
* :mod:`~kclient.fleet.report.html` -- ``report.html``, the charts inside;
* :mod:`~kclient.fleet.report.charts` -- the four charts, drawn as SVG.

This module writes them all into the output folder (:func:`write_report`;
:func:`publish_report` as both engines end a run).
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

from kclient._outputfile import unlink_links, write_output
from kclient.errors import FleetError
from kclient.fleet.report.charts import (
    CHART_ALT,
    CHART_FEATURES,
    CHART_NAME,
    HEATMAP_CHART,
    HISTORY_CHART,
    HISTORY_LINES,
    READINESS_CHART,
    RELEASE_BARS,
    RELEASES_CHART,
    chart_names,
    charted_features,
    draw_charts,
    history_lines,
    release_bars,
)
from kclient.fleet.report.data import (
    HEATMAP_ROWS,
    BadLine,
    BlockedCluster,
    ClusterPattern,
    FeatureCount,
    ReleaseCount,
    ReportData,
    window_text,
)
from kclient.fleet.report.escape import html_text, markdown_text, visible
from kclient.fleet.report.html import render_html
from kclient.fleet.report.markdown import render_markdown

__all__ = [
    "CHART_FEATURES",
    "CHART_NAME",
    "HEATMAP_CHART",
    "HEATMAP_ROWS",
    "HISTORY_CHART",
    "HISTORY_LINES",
    "OUTPUT_NAMES",
    "READINESS_CHART",
    "READINESS_TABLE",
    "RELEASES_CHART",
    "RELEASE_BARS",
    "TABLES",
    "BadLine",
    "BlockedCluster",
    "ClusterPattern",
    "FeatureCount",
    "ReleaseCount",
    "ReportData",
    "chart_names",
    "charted_features",
    "draw_charts",
    "history_lines",
    "html_text",
    "markdown_text",
    "prepare_out",
    "publish_report",
    "release_bars",
    "render_html",
    "render_markdown",
    "visible",
    "window_text",
    "write_report",
]


#: The tables a report writes, each a folder of Parquet files named for it.
TABLES = ("cluster_api_versions", "feature_availability", "broker_releases", "bad_records")
#: The table a report with a client inventory adds (:mod:`kclient.fleet.readiness`).
READINESS_TABLE = "upgrade_readiness"
#: Everything a report (or a scan: its probed records) writes into its folder;
#: a run replaces these, and leaves a folder holding anything else alone.
OUTPUT_NAMES = frozenset({*TABLES, READINESS_TABLE, "snapshots", "report.md", "report.html",
                          CHART_NAME, RELEASES_CHART, HEATMAP_CHART, HISTORY_CHART,
                          READINESS_CHART})


def prepare_out(out: str) -> Path:
    """The output directory ``out``, created if needed; a :class:`FleetError` if it cannot be.

    ``out`` must be new, empty, or hold only what a report writes
    (:data:`OUTPUT_NAMES`, a previous report's) and hidden files: a run
    replaces those it writes, so a folder of other files (``--out .`` in a
    project) is refused rather than written into.  A link among those names
    is removed, never followed (:mod:`kclient._outputfile`): what it points at
    is left alone, whichever engine writes.
    """
    target = Path(out)
    if target.exists() and not target.is_dir():
        raise FleetError(f"--out {out} is not a directory; choose another --out")
    try:
        target.mkdir(parents=True, exist_ok=True)
        # Hidden entries (a file browser's .DS_Store) are never touched: let be.
        others = sorted(entry.name for entry in target.iterdir()
                        if entry.name not in OUTPUT_NAMES and not entry.name.startswith("."))
    except OSError as exc:
        raise FleetError(f"cannot create the output directory {out}: "
                         f"{exc.strerror or exc}; choose another --out") from None
    if others:
        shown = ", ".join(others[:3]) + (f" and {len(others) - 3} more" if len(others) > 3
                                          else "")
        raise FleetError(f"--out {out} holds files a report does not write ({shown}); a "
                         "report replaces its own tables and pages there: choose a new or "
                         "empty directory, or a previous report's")
    try:
        unlink_links(target, OUTPUT_NAMES)
    except OSError as exc:
        raise FleetError(f"cannot prepare the output directory {out}: "
                         f"{exc.strerror or exc}; choose another --out") from None
    return target


def write_report(data: ReportData, target: Path) -> None:
    """Write ``report.md``, ``report.html`` and the charts (SVG) into ``target``.

    Each replaces its name, never writing through a link there
    (:func:`~kclient._outputfile.write_output`).
    A chart of a previous report that this one does not draw is removed.
    """
    charts = draw_charts(data)
    try:
        for name in CHART_ALT.keys() - charts.keys():
            (target / name).unlink(missing_ok=True)
        for name, svg in charts.items():
            write_output(target / name, svg)
        write_output(target / "report.md", render_markdown(data).encode("utf-8"))
        write_output(target / "report.html", render_html(data, charts).encode("utf-8"))
    except OSError as exc:
        raise FleetError(f"cannot write the report into {target}: {exc.strerror or exc}"
                         ) from None


def publish_report(data: ReportData, target: Path, snapshots: str,
                   say: Callable[[str], None]) -> None:
    """End a run: write the pages (:func:`write_report`) and say where they are.

    An input without one valid record still gets its pages (they list the
    bad lines), then a :class:`FleetError` naming the first bad lines: a
    report of nothing is never taken for a healthy fleet.
    """
    write_report(data, target)
    say(f"report written to {target / 'report.md'} and {target / 'report.html'}")
    if data.clusters == 0:
        first = "; ".join(f"{b.file}:{b.line}: {b.reason}" for b in data.bad_lines[:3])
        raise FleetError(f"{snapshots}: no valid snapshot record ({data.bad_records} bad "
                         f"record(s){'; first: ' + first if first else ''}); the report in "
                         f"{target} is empty: check the input")
