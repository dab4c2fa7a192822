"""The compatibility matrix page: every client line x every Kafka release x client features.

Written at every docs build from kclient's own data (the client profiles of
``kclient/negotiation/clients.json`` and the release profiles), by the same
function ``kclient compat`` uses (:func:`kclient.negotiation.clients.check_feature`),
so the page can never disagree with the command.  The mkdocs hook
(``tools/docs_hooks.py``) puts the page's text where it says ``<!-- compat-matrix -->``
and adds one figure per feature (``img/compat-<feature>.svg``).

Every profiled line is a row and every release from 0.10.2 to the newest a column;
consecutive lines of one library whose verdicts are the same on every release share
a row (``kafkajs 1.12-1.16``), so each row is one distinct answer.  Labels are at
least 12 px at the figure's own size, which fits a 1280 px window.
"""

from __future__ import annotations

from functools import cache, partial
from html import escape

from kclient.negotiation.clients import (
    ClientProfile,
    Compat,
    check_feature,
    client_lines,
    known_clients,
)
from kclient.negotiation.model import BrokerVersions
from kclient.negotiation.releases import known_releases, release_number

MARKER = "<!-- compat-matrix -->"

#: The client features shown, in this order, with their headings.
FEATURES = {"produce": "produce", "consume_group": "consume (group)",
            "idempotence": "idempotence", "transactions": "transactions",
            "kip848": "KIP-848 groups", "share_groups": "share groups",
            "streams_groups": "streams groups", "zstd": "zstd", "admin": "admin client"}
#: One figure per feature, in the site.
FIGURES = {feature: f"img/compat-{feature}.svg" for feature in FEATURES}
#: One colour per verdict, in the figures: the docs' state colours; a works cell with a
#: caveat (breaks on some topics) or a support statement is marked with a dot.
COLOUR = {Compat.WORKS: "#2e7d32", Compat.BREAKS: "#c62828", Compat.UNKNOWN: "#9e9e9e"}
#: Pixel sizes of the figures (labels >= 12 px: legible at 1280 px).
CELL, GAP, LABEL_PX, LEFT, TOP = 18, 2, 12, 190, 58


def releases() -> tuple[str, ...]:
    """The broker releases shown: every release from 0.10.2 on, ZooKeeper mode to 3.9,
    then KRaft-only 4.x."""
    names = [n for n in known_releases() if not n.endswith("-kraft")]
    return tuple(names[names.index("0.10.2"):])


def _lines() -> list[ClientProfile]:
    """Every profiled line of every library, oldest first."""
    return [profile for library in known_clients() for profile in client_lines(library)]


def _cluster(release: str) -> list[BrokerVersions]:
    """One broker of ``release`` in a fresh cluster (its release's default feature levels),
    as ``kclient compat --release`` judges it."""
    return [BrokerVersions.of_release(release)]


Cell = tuple[Compat, str, bool]


@cache
def verdicts() -> dict[tuple[str, str, str], Cell]:
    """(client line, release, feature) -> (verdict, reason or versions sent, marked).

    ``marked`` is a verdict that works with a caveat or a support statement.
    """
    table: dict[tuple[str, str, str], Cell] = {}
    clusters = {release: _cluster(release) for release in releases()}
    for profile in _lines():
        label = f"{profile.library} {profile.line}"
        for release, brokers in clusters.items():
            for feature in FEATURES:
                result = check_feature(profile, brokers, feature)
                table[label, release, feature] = (
                    result.state, result.detail,
                    result.state is Compat.WORKS and bool(result.caveats or result.support))
    return table


def rows(table: dict[tuple[str, str, str], Cell], feature: str) -> list[tuple[str, list[str]]]:
    """The rows of one feature: (label, the lines it stands for); consecutive lines of one
    library with the same verdict on every release share a row."""
    out: list[tuple[str, list[str]]] = []
    previous: tuple[str, tuple[tuple[Compat, bool], ...]] | None = None
    for profile in _lines():
        label = f"{profile.library} {profile.line}"
        key = (profile.library, tuple((table[label, r, feature][0], table[label, r, feature][2])
                                      for r in releases()))
        if previous == key:
            out[-1][1].append(label)
        else:
            out.append((label, [label]))
        previous = key
    return [(_row_label(lines), lines) for _, lines in out]


def _row_label(lines: list[str]) -> str:
    if len(lines) == 1:
        return lines[0]
    library, first = lines[0].rsplit(" ", 1)
    return f"{library} {first}-{lines[-1].rsplit(' ', 1)[1]}"


def matrix_markdown() -> str:
    """The page's text: what a cell means, one figure per feature, and every line's source."""
    shown = releases()
    parts = [
        f"Each figure below is one client feature. Each row is a line of a client library "
        f"(lines of one library that give the same answer on every release share a row, "
        f"e.g. `kafkajs 1.12-1.16`), each column a Kafka release from {shown[0]} to "
        f"{shown[-1]} (ZooKeeper mode up to 3.9; 4.x runs KRaft only). A cell is what "
        "`kclient compat --release R --client LIBRARY==LINE --feature F` answers: green "
        "*works*, red *breaks*, grey *unknown* (the profile has not read it); a white dot "
        "marks *works* with a caveat (zstd: consuming breaks on topics configured "
        "`compression.type=zstd`) or a support statement (Apache calls Java clients before "
        "2.1 not compatible with Kafka 4.0). Hover a cell for the versions sent or the "
        "reason. One broker of the release is judged; for a mixed cluster ask "
        "`kclient compat --release 3.9,4.0`.", ""]
    for feature, heading in FEATURES.items():
        parts += [f"### {heading}", "",
                  f"![{heading}: which client line works with which Kafka release]"
                  f"(../{FIGURES[feature]})", ""]
    parts += ["### The lines and their sources", "",
              "Every profiled line, the releases it covers and where it was read. A release "
              "outside every line is judged *unknown* by `kclient compat` (exit 3), never "
              "with a neighbour's profile.", "",
              "| library | line | covers | read at | picks versions |", "|---|---|---|---|---|"]
    for profile in _lines():
        asks = f" ({profile.asks.text})" if profile.asks is not None else ""
        parts.append(f"| {profile.library} | {profile.line} | {profile.covers} | "
                     f"{profile.read_at} | {profile.strategy_text}{asks} |")
    return "\n".join(parts) + "\n"


def matrix_svg(feature: str) -> str:
    """One feature's grid: rows of client lines, columns of releases, one colour per verdict."""
    table = verdicts()
    shown = releases()
    grid = rows(table, feature)
    step = CELL + GAP
    width = LEFT + len(shown) * step + 20
    height = TOP + len(grid) * step + 40
    out = [f'<svg xmlns="http://www.w3.org/2000/svg" width="{width}" height="{height}" '
           f'font-family="sans-serif" font-size="{LABEL_PX}">']
    for index, release in enumerate(shown):
        x = LEFT + index * step + CELL / 2
        out.append(f'<text x="{x}" y="{TOP - 6}" text-anchor="start" transform="rotate(-60 '
                   f'{x} {TOP - 6})">{escape(release_number(release))}</text>')
    for row, (label, lines) in enumerate(grid):
        y = TOP + row * step
        out.append(f'<text x="{LEFT - 6}" y="{y + CELL - 4}" text-anchor="end">'
                   f'{escape(label)}</text>')
        for index, release in enumerate(shown):
            state, why, marked = table[lines[0], release, feature]
            x = LEFT + index * step
            out.append(f'<rect x="{x}" y="{y}" width="{CELL}" height="{CELL}" '
                       f'fill="{COLOUR[state]}"><title>{escape(label)} on Kafka {release}, '
                       f'{escape(FEATURES[feature])}: {state.value}. {escape(why[:300])}'
                       '</title></rect>')
            if marked:
                out.append(f'<circle cx="{x + CELL / 2}" cy="{y + CELL / 2}" r="3" '
                           'fill="#ffffff"/>')
    legend_y = height - 14
    for index, (state, words) in enumerate(((Compat.WORKS, "works"),
                                            (Compat.BREAKS, "breaks"),
                                            (Compat.UNKNOWN, "unknown"))):
        x = LEFT + index * 90
        out.append(f'<rect x="{x}" y="{legend_y - 11}" width="12" height="12" '
                   f'fill="{COLOUR[state]}"/><text x="{x + 16}" y="{legend_y}">{words}</text>')
    out.append(f'<circle cx="{LEFT + 276}" cy="{legend_y - 5}" r="3" fill="#2e7d32"/>'
               f'<text x="{LEFT + 284}" y="{legend_y}">caveat or support note</text>')
    out.append("</svg>")
    return "\n".join(out) + "\n"


def figures() -> dict[str, object]:
    """Site path -> a function writing that figure's text (for the mkdocs hook)."""
    return {path: partial(matrix_svg, feature) for feature, path in FIGURES.items()}


if __name__ == "__main__":
    print(matrix_markdown())
