"""The compatibility matrix page: client libraries x Kafka releases x client features.

Written at every docs build from kclient's own data (the client profiles of
``kclient/negotiation/clients.json`` and the release profiles), by the same
function ``kclient compat`` uses (:func:`kclient.negotiation.clients.check_feature`),
so the page can never disagree with the command.  The mkdocs hook
(``tools/docs_hooks.py``) puts the tables where a page says ``<!-- compat-matrix -->``
and adds the figure as ``img/compat-matrix.svg``.
"""

from __future__ import annotations

from html import escape

from kclient.negotiation.clients import (
    ClientProfile,
    Compat,
    check_feature,
    client_lines,
    known_clients,
)
from kclient.negotiation.model import BrokerVersions
from kclient.negotiation.releases import release_profile

MARKER = "<!-- compat-matrix -->"
FIGURE = "img/compat-matrix.svg"

#: The broker releases shown (ZooKeeper-mode up to 3.x, then KRaft-only 4.x).
RELEASES = ("0.10.2", "0.11.0", "1.1", "2.0", "2.8", "3.0", "3.9", "4.0", "4.3")
#: The client features shown, in this order, with their column headings.
FEATURES = {"produce": "produce", "consume_group": "consume (group)",
            "idempotence": "idempotence", "transactions": "transactions",
            "kip848": "KIP-848 groups", "zstd": "zstd"}
#: One symbol per verdict, in tables (words in the alt text and the legend).
SYMBOL = {Compat.WORKS: "✓", Compat.BREAKS: "✗", Compat.UNKNOWN: "?"}
#: One colour per verdict, in the figure: the docs' state colours.
COLOUR = {Compat.WORKS: "#2e7d32", Compat.BREAKS: "#c62828", Compat.UNKNOWN: "#9e9e9e"}


def _lines() -> list[ClientProfile]:
    """The oldest and the newest profiled line of each library (what an upgrade spans)."""
    shown: list[ClientProfile] = []
    for library in known_clients():
        lines = client_lines(library)
        shown.extend(dict.fromkeys((lines[0], lines[-1])) if len(lines) > 1 else lines)
    return shown


def _cluster(release: str) -> list[BrokerVersions]:
    return [BrokerVersions(1, "broker", 9092, release_profile(release))]


def verdicts() -> dict[tuple[str, str, str], tuple[Compat, str]]:
    """(client line, release, feature) -> (verdict, reason or the versions sent)."""
    table: dict[tuple[str, str, str], tuple[Compat, str]] = {}
    for profile in _lines():
        label = f"{profile.library} {profile.line}"
        for release in RELEASES:
            brokers = _cluster(release)
            for feature in FEATURES:
                result = check_feature(profile, brokers, feature)
                table[label, release, feature] = (
                    result.state, result.reason or result.versions_text)
    return table


def matrix_markdown() -> str:
    """The page's tables: one per feature, client lines down, releases across."""
    table = verdicts()
    labels = list(dict.fromkeys(label for label, _, _ in table))
    parts = [f"![Which client library works with which Kafka release, per feature]"
             f"(../{FIGURE})", "",
             "✓ works, ✗ breaks, ? cannot tell from the data. Hover a cell for the versions "
             "sent or the reason.", ""]
    for feature, heading in FEATURES.items():
        parts += [f"### {heading}", "",
                  "| client | " + " | ".join(RELEASES) + " |",
                  "|---|" + "---|" * len(RELEASES)]
        for label in labels:
            cells = []
            for release in RELEASES:
                state, why = table[label, release, feature]
                cells.append(f'<span title="{escape(why)}">{SYMBOL[state]}</span>')
            parts.append(f"| {label} | " + " | ".join(cells) + " |")
        parts.append("")
    parts += ["### Sources", "",
              "Each line's version ranges were read from the library's source at the tag "
              "named here (and, where the library installs here, checked live):", ""]
    for profile in _lines():
        source = profile.source
        where = ", ".join(f"{k} {v}" for k, v in source.items() if k in ("repo", "tag"))
        parts.append(f"- {profile.library} {profile.line}: {where}")
    return "\n".join(parts) + "\n"


def matrix_svg() -> str:
    """A grid per feature: client lines down, releases across, one colour per verdict."""
    table = verdicts()
    labels = list(dict.fromkeys(label for label, _, _ in table))
    cell, gap, left, top = 14, 2, 190, 46
    block = len(RELEASES) * (cell + gap) + 18
    width = left + block * len(FEATURES)
    height = top + len(labels) * (cell + gap) + 30
    out = [f'<svg xmlns="http://www.w3.org/2000/svg" width="{width}" height="{height}" '
           'font-family="sans-serif" font-size="11">']
    for row, label in enumerate(labels):
        y = top + row * (cell + gap)
        out.append(f'<text x="{left - 6}" y="{y + 11}" text-anchor="end">{escape(label)}</text>')
    for column, (feature, heading) in enumerate(FEATURES.items()):
        x0 = left + column * block
        out.append(f'<text x="{x0}" y="14" font-weight="bold">{escape(heading)}</text>')
        for index, release in enumerate(RELEASES):
            x = x0 + index * (cell + gap)
            out.append(f'<text x="{x + cell / 2}" y="{top - 6}" font-size="8" '
                       f'text-anchor="middle" transform="rotate(-60 {x + cell / 2} '
                       f'{top - 6})">{release}</text>')
            for row, label in enumerate(labels):
                state, why = table[label, release, feature]
                y = top + row * (cell + gap)
                out.append(f'<rect x="{x}" y="{y}" width="{cell}" height="{cell}" '
                           f'fill="{COLOUR[state]}"><title>{escape(label)} on Kafka '
                           f'{release}, {heading}: {state.value}. {escape(why)}</title></rect>')
    legend_y = height - 12
    for index, state in enumerate(Compat):
        x = left + index * 90
        out.append(f'<rect x="{x}" y="{legend_y - 9}" width="10" height="10" '
                   f'fill="{COLOUR[state]}"/><text x="{x + 14}" y="{legend_y}">'
                   f'{state.value}</text>')
    out.append("</svg>")
    return "\n".join(out) + "\n"


if __name__ == "__main__":
    print(matrix_markdown())
