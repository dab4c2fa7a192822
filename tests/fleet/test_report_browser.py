"""The fleet report's report.html in a real headless browser at 1280 pixels.

The page is rendered from a large ReportData (every release, every default
feature, more cluster groups than the heatmap draws, two weeks of history, an
upgrade readiness section with more client software than it lists),
copied alone into an empty folder (so only what is inside the page can
show) and opened from there.  Chromium comes from Debian's ``chromium``
package; the test skips without it and fails instead when CI is set.  A
screenshot of the whole page is saved under the test's temporary folder, or
under $KCLIENT_REPORT_SCREENSHOTS.
"""

from __future__ import annotations

import os
import shutil
from pathlib import Path
from typing import Any

import attrs
import pytest

from kclient.fleet.report import chart_names, write_report
from tests.browser import Browser, require_chromium
from tests.fleet.report_samples import rich_readiness, rich_report

WIDTH, HEIGHT = 1280, 900

# Every image (loaded? from where? how wide?) and how wide the page is.
MEASURE = r"""
(() => {
  const images = [...document.images].map((img) => ({
    alt: img.alt,
    complete: img.complete,
    naturalWidth: img.naturalWidth,
    shownWidth: img.getBoundingClientRect().width,
    right: img.getBoundingClientRect().right,
    scheme: img.src.split(':')[0],
    type: img.src.slice(5, img.src.indexOf(';')),
  }));
  return {
    innerWidth: window.innerWidth,
    pageScroll: document.documentElement.scrollWidth,
    bodyRight: document.body.getBoundingClientRect().right,
    images,
  };
})()
"""


@pytest.mark.timeout(180)
def test_report_page_fits_1280_pixels_with_every_chart_inside(tmp_path: Path) -> None:
    executable = require_chromium("the browser check of the fleet report")
    data = attrs.evolve(rich_report(patterns=60, days=14), readiness=rich_readiness())
    out = tmp_path / "out"
    out.mkdir()
    write_report(data, out)
    alone = tmp_path / "alone"
    alone.mkdir()
    shutil.copy(out / "report.html", alone / "report.html")
    shots = Path(os.environ.get("KCLIENT_REPORT_SCREENSHOTS") or tmp_path / "screenshots")
    shots.mkdir(parents=True, exist_ok=True)

    browser = Browser(executable, tmp_path / "profile", WIDTH, HEIGHT, timeout=30)
    try:
        browser.open((alone / "report.html").as_uri())
        found: dict[str, Any] = browser.evaluate(MEASURE)
        browser.screenshot(shots / "fleet-report.png", full_page=True)
    finally:
        browser.close()
    print(f"screenshot in {shots / 'fleet-report.png'}")

    assert found["innerWidth"] == WIDTH
    assert found["pageScroll"] <= WIDTH, "the report scrolls sideways at 1280 px"
    images = found["images"]
    assert len(images) == len(chart_names(data)) == 5  # upgrade readiness included
    for image in images:
        assert image["scheme"] == "data" and image["type"] == "image/svg+xml", image
        assert image["complete"] and image["naturalWidth"] > 0, image
        assert image["right"] <= found["bodyRight"] + 1, image
        # Drawn at (nearly) its own size: its 11-pixel labels stay legible.
        assert image["shownWidth"] >= 0.9 * image["naturalWidth"], image
    assert (shots / "fleet-report.png").read_bytes().startswith(b"\x89PNG")
