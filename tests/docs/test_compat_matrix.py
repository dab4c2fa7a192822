"""The compatibility matrix page: every line, every release, and equal to `kclient compat`."""

from __future__ import annotations

import json
import re
import subprocess
import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "tools"))
import compat_matrix

from kclient.negotiation.clients import Compat, client_lines, known_clients


def test_every_line_release_and_feature_has_a_cell_and_a_row() -> None:
    table = compat_matrix.verdicts()
    lines = {label for label, _, _ in table}
    every = {f"{p.library} {p.line}" for lib in known_clients() for p in client_lines(lib)}
    assert lines == every  # every profiled line, not only the oldest and newest
    releases = compat_matrix.releases()
    assert releases[0] == "0.10.2" and releases[-1] == "4.3" and "3.6" in releases
    assert len(table) == len(lines) * len(releases) * len(compat_matrix.FEATURES)
    for feature in compat_matrix.FEATURES:
        rows = compat_matrix.rows(table, feature)
        assert sorted(line for _, group in rows for line in group) == sorted(every)
        svg = compat_matrix.matrix_svg(feature)
        assert svg.count("<rect") == len(rows) * len(releases) + 3  # the cells, the legend
        for label, _ in rows:
            assert f">{label}</text>" in svg


def test_labels_are_legible_at_1280_px() -> None:
    svg = compat_matrix.matrix_svg("produce")
    width = int(re.search(r'width="(\d+)"', svg).group(1))
    assert width <= 1280 - 300  # the page's navigation takes the rest
    sizes = [int(s) for s in re.findall(r'font-size="(\d+)"', svg)]
    assert sizes and min(sizes) >= 11


def test_the_page_says_what_a_cell_means_and_lists_every_line() -> None:
    markdown = compat_matrix.matrix_markdown()
    assert "A cell is what `kclient compat --release R --client LIBRARY==LINE --feature F`" in (
        markdown)
    for library in known_clients():
        for profile in client_lines(library):
            assert f"| {profile.library} | {profile.line} | {profile.covers} |" in markdown


@pytest.mark.parametrize(("library", "version", "line", "release", "feature"), [
    ("sarama", "1.45.0", "1.45", "0.10.2", "produce"),      # pinned Produce v7: breaks
    ("aiokafka", "0.14.0", "0.14", "4.0", "idempotence"),    # InitProducerId v0 only
    ("librdkafka", "2.15.0", "2.15", "4.3", "consume_group"),
    ("kafka-python", "2.0.2", "2.0", "4.0", "zstd"),        # works, with the topic caveat
    ("java", "0.10.2", "0.10.2", "4.0", "produce"),          # KIP-896
])
def test_a_cell_says_what_kclient_compat_says(library: str, version: str, line: str,
                                              release: str, feature: str) -> None:
    state, why, _ = compat_matrix.verdicts()[f"{library} {line}", release, feature]
    result = subprocess.run(
        [sys.executable, "-m", "kclient.cli", "compat", "--release", release, "--client",
         f"{library}=={version}", "--feature", feature, "--format", "json"],
        capture_output=True, text=True, timeout=120)
    answer = json.loads(result.stdout)["clusters"][0]["clients"][0]["features"][0]
    assert answer["state"] == state.value
    detail = "; ".join([answer["reason"] or "", *answer["caveats"], *answer["support"]])
    if state is Compat.WORKS:
        assert answer["reason"] is None and why
    else:  # the page names the line (1.45.x), the command the release asked about
        assert detail == why.replace(f"{line}.x", version)
