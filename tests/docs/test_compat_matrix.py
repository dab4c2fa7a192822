"""The compatibility matrix page: built from the data, and equal to `kclient compat`."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "tools"))
import compat_matrix

from kclient.negotiation.clients import Compat


def test_every_line_release_and_feature_has_a_cell() -> None:
    table = compat_matrix.verdicts()
    lines = {label for label, _, _ in table}
    assert len(table) == len(lines) * len(compat_matrix.RELEASES) * len(compat_matrix.FEATURES)
    markdown = compat_matrix.matrix_markdown()
    for label in lines:
        assert f"| {label} |" in markdown
    assert markdown.count("### ") == len(compat_matrix.FEATURES) + 1  # and the sources
    svg = compat_matrix.matrix_svg()
    assert svg.count("<rect") == len(table) + len(Compat)  # the cells and the legend


@pytest.mark.parametrize(("library", "version", "release", "feature"), [
    ("sarama", "1.45.0", "0.10.2", "produce"),      # pinned Produce v7: breaks
    ("aiokafka", "0.14.0", "4.0", "idempotence"),    # InitProducerId v0 only
    ("librdkafka", "2.15.0", "4.3", "consume_group"),
])
def test_a_cell_says_what_kclient_compat_says(library: str, version: str, release: str,
                                              feature: str) -> None:
    profile = next(p for p in compat_matrix._lines() if p.library == library)
    state, why = compat_matrix.verdicts()[f"{library} {profile.line}", release, feature]
    result = subprocess.run(
        [sys.executable, "-m", "kclient.cli", "compat", "--release", release, "--client",
         f"{library}=={version}", "--feature", feature, "--format", "json"],
        capture_output=True, text=True, timeout=120)
    answer = json.loads(result.stdout)["clusters"][0]["clients"][0]["features"][0]
    assert answer["state"] == state.value
    if state is Compat.WORKS:
        assert answer["reason"] is None and why  # the cell shows the versions sent instead
    else:  # the page names the line (1.45.x), the command the release asked about
        assert answer["reason"] == why.replace(f"{profile.line}.x", version)
