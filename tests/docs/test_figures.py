"""The pictures of the site are drawn from kclient's own code, and show what it computes."""

from __future__ import annotations

import importlib
import sys
import xml.etree.ElementTree as ET
from pathlib import Path
from types import ModuleType

from kclient.negotiation import ClusterView, fallback_broker
from kclient.negotiation.ladder import Answered, Closed, Rejected, next_step, start
from kclient.protocol.constants import ErrorCode
from tests.docs.conftest import BuiltSite

REPO = Path(__file__).resolve().parents[2]
SVG = "{http://www.w3.org/2000/svg}"


def _figures() -> ModuleType:
    tools = str(REPO / "tools")
    if tools not in sys.path:
        sys.path.insert(0, tools)
    return importlib.import_module("docs_figures")


def _ladder_steps() -> set[str]:
    """Every step the ladder records on the six paths the picture promises."""
    steps: set[str] = set()
    for fallback in ("0.9.0", None):
        _, first = start(fallback=fallback)
        steps.update(first.steps)
        for outcome, then in ((Answered(4), None),
                              (Rejected(4, ErrorCode.UNSUPPORTED_VERSION, (0, 3)), Answered(3)),
                              (Rejected(4, ErrorCode.UNSUPPORTED_VERSION, None), Answered(0)),
                              (Closed(4), Answered(0)),
                              (Closed(4), Closed(0))):
            decision, state = next_step(first, outcome)
            if then is not None:
                assert decision.kind == "send"
                decision, state = next_step(state, then)
            assert decision.kind in ("done", "fallback", "fail")
            steps.update(state.steps)
    return steps


def test_the_ladder_picture_shows_every_step_the_ladder_takes(built_site: BuiltSite) -> None:
    assert built_site.returncode == 0, built_site.stderr
    svg = ET.parse(built_site.path / "img" / "handshake-ladder.svg").getroot()
    boxes = {g.findtext(f"{SVG}title"): g.get("class")
             for g in svg.iter(f"{SVG}g") if "step" in (g.get("class") or "")}
    expected = _ladder_steps()
    assert len(expected) == 9  # "ApiVersions v0 answered" ends two paths
    assert set(boxes) == expected
    # Each way out is drawn as such: answered, fallback release, failure.
    assert boxes["ApiVersions v3 answered"] == "step step-done"
    fallback = [s for s in expected if "assume release 0.9.0" in s]
    assert len(fallback) == 1 and boxes[fallback[0]] == "step step-fallback"
    assert boxes["connection closed before an answer to ApiVersions v0"] == "step step-fail"
    # The concepts page and the HandshakeError section show it.
    for page in ("concepts", "troubleshooting"):
        html = (built_site.path / page / "index.html").read_text("utf-8")
        assert 'src="../img/handshake-ladder.svg"' in html, page


def test_the_ranges_picture_shows_the_kip35_intersection(built_site: BuiltSite) -> None:
    assert built_site.returncode == 0, built_site.stderr
    figures = _figures()
    svg = ET.parse(built_site.path / "img" / "kip35-ranges.svg").getroot()
    view = ClusterView([fallback_broker(release, node_id, "b", 9092)
                        for node_id, release in enumerate(figures.RANGE_RELEASES, start=1)])
    groups = [g for g in svg.iter(f"{SVG}g") if g.get("class") == "api"]
    assert [g.get("data-api") for g in groups] == list(figures.RANGE_APIS)
    empty = 0
    for group in groups:
        support = view.api_support(group.get("data-api"))
        bars = [r for r in group.iter(f"{SVG}rect") if r.get("class") == "broker"]
        common = [e for e in group.iter() if e.get("class") == "intersection"]
        assert len(common) == 1
        assert len(bars) == sum(1 for r in support.brokers.values() if r is not None)
        if support.cluster is None:
            assert common[0].get("data-empty") == "true"
            empty += 1
            continue
        assert (int(common[0].get("data-min")), int(common[0].get("data-max"))) == (
            support.cluster.min, support.cluster.max)
        # Drawn where it belongs: from the latest start to the earliest end of the bars.
        left = max(float(b.get("x")) for b in bars)
        right = min(float(b.get("x")) + float(b.get("width")) for b in bars)
        assert abs(float(common[0].get("x")) - left) < 0.5
        assert abs(float(common[0].get("x")) + float(common[0].get("width")) - right) < 0.5
    # The example shows a narrowed range and a cluster with no common version.
    assert empty == 1
    html = (built_site.path / "concepts" / "index.html").read_text("utf-8")
    assert 'src="../img/kip35-ranges.svg"' in html
