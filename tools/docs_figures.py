"""Figures for the documentation site, drawn at build time from kclient's own code.

* :func:`ladder_svg` runs the handshake ladder (``kclient.negotiation.ladder``)
  against a handful of peers and draws the decisions it takes: every box is a
  step the ladder itself recorded, so the picture cannot drift from the rules.
* :func:`ranges_svg` draws what brokers of an example cluster (Kafka releases
  from kclient's release data) advertise for a few APIs, with the KIP-35
  intersection that :class:`kclient.negotiation.ClusterView` computes.
* :func:`pygments_css` is the stylesheet for the code highlighting done at build
  time (no script, no CDN).

Pure Python writing SVG text: no plotting library is needed.  The mkdocs hook
in ``tools/docs_hooks.py`` adds the results to the site.
"""

from __future__ import annotations

import textwrap
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from xml.sax.saxutils import escape, quoteattr

from kclient.negotiation import ClusterView, fallback_broker, release_profile
from kclient.negotiation.ladder import (
    Answered,
    Closed,
    Decision,
    Outcome,
    Rejected,
    next_step,
    start,
)
from kclient.protocol.constants import ApiKey, ErrorCode
from kclient.protocol.headers import is_flexible

__all__ = ["LADDER_PEERS", "RANGE_APIS", "RANGE_RELEASES", "Peer", "example_cluster",
           "ladder_paths", "ladder_svg", "pygments_css", "ranges_svg"]

#: The Pygments style of the code blocks (highlighted when the site is built).
PYGMENTS_STYLE = "default"

_FONT = "font-family=\"Lato, 'Helvetica Neue', Arial, sans-serif\""
_KIND_FILL = {"send": "#e8f1fb", "done": "#e3f4e6", "fallback": "#fdf3dc", "fail": "#fbe4e4"}
_KIND_STROKE = {"send": "#2980b9", "done": "#27ae60", "fallback": "#c98b00", "fail": "#c0392b"}


def pygments_css() -> str:
    """The CSS for the ``.highlight`` blocks that pymdownx.highlight writes."""
    from pygments.formatters import HtmlFormatter

    css: str = HtmlFormatter(style=PYGMENTS_STYLE).get_style_defs(".highlight")
    return ("/* Generated at build time by tools/docs_figures.py from Pygments' "
            f"{PYGMENTS_STYLE!r} style. */\n" + css + "\n")


# -- the handshake ladder ------------------------------------------------------


@dataclass(frozen=True)
class Peer:
    """A peer the ladder may meet: how it answers ApiVersions at a version.

    ``answer(version)`` is the outcome of one request; the ladder alone decides
    what to do about it.
    """

    label: str
    answer: Callable[[int], Outcome]
    fallback: str | None = None


def _speaks(release: str, *, lists_range: bool = True, closes_on_flexible: bool = False,
            legacy: bool = False) -> Callable[[int], Outcome]:
    """A broker of ``release`` (its ApiVersions range from kclient's release data)."""
    own = release_profile(release).get(ApiKey.API_VERSIONS)

    def answer(version: int) -> Outcome:
        if legacy or own is None:
            return Closed(version)
        if closes_on_flexible and is_flexible(ApiKey.API_VERSIONS, version):
            return Closed(version)
        if version > own.max:
            listed = (own.min, own.max) if lists_range else None
            return Rejected(version, ErrorCode.UNSUPPORTED_VERSION, listed)
        return Answered(version)

    return answer


def _range_text(release: str) -> str:
    own = release_profile(release).get(ApiKey.API_VERSIONS)
    return "no ApiVersions" if own is None else f"ApiVersions v{own.min}-v{own.max}"


#: The peers drawn in the ladder figure, one path each (behaviour words as the emulator's).
LADDER_PEERS: tuple[Peer, ...] = (
    Peer(f"Kafka 4.0 ({_range_text('4.0')})", _speaks("4.0")),
    Peer(f"Kafka 3.0 ({_range_text('3.0')}), lists its range", _speaks("3.0")),
    Peer(f"Kafka 2.0 ({_range_text('2.0')}), empty list: pre-kip511",
         _speaks("2.0", lists_range=False)),
    Peer("a proxy that closes on flexible requests: closes-on-flexible",
         _speaks("4.0", closes_on_flexible=True)),
    Peer("Kafka 0.9 (legacy), api_version_fallback=\"0.9.0\"", _speaks("0.9", legacy=True),
         fallback="0.9.0"),
    Peer("Kafka 0.9 (legacy), no fallback set", _speaks("0.9", legacy=True)),
)

#: At most this many requests per peer: the ladder must end well before.
_MAX_STEPS = 10


def ladder_paths(peers: Sequence[Peer] = LADDER_PEERS
                 ) -> list[tuple[Peer, list[str], Decision]]:
    """Run the ladder against each peer: the steps it recorded and its last decision."""
    paths: list[tuple[Peer, list[str], Decision]] = []
    for peer in peers:
        decision, state = start(fallback=peer.fallback)
        for _ in range(_MAX_STEPS):
            if decision.kind != "send" or decision.version is None:
                break
            decision, state = next_step(state, peer.answer(decision.version))
        if decision.kind == "send":
            raise RuntimeError(f"the ladder did not finish within {_MAX_STEPS} steps "
                               f"against {peer.label}")
        paths.append((peer, list(state.steps), decision))
    return paths


@dataclass
class _Node:
    step: str
    kind: str = "send"
    children: list[_Node] = field(default_factory=list)
    peer: str | None = None
    x: float = 0.0
    y: float = 0.0
    lines: list[str] = field(default_factory=list)


_BOX_W, _GAP_X, _LINE_H, _PAD, _WRAP = 236, 44, 15, 8, 34


def _box_h(node: _Node) -> float:
    return len(node.lines) * _LINE_H + 2 * _PAD


def ladder_svg(peers: Sequence[Peer] = LADDER_PEERS) -> str:
    """The handshake ladder as an SVG tree: each box a step the ladder recorded."""
    root: _Node | None = None
    for peer, steps, decision in ladder_paths(peers):
        if root is None:
            root = _Node(steps[0])
        elif root.step != steps[0]:
            raise RuntimeError(f"the ladder starts differently for {peer.label}: {steps[0]}")
        node = root
        for step in steps[1:]:
            child = next((c for c in node.children if c.step == step), None)
            if child is None:
                child = _Node(step)
                node.children.append(child)
            node = child
        node.kind, node.peer = decision.kind, peer.label
    assert root is not None, "no peers to draw"

    # Leaves take one row each, top to bottom; a parent sits level with its children.
    rows: list[_Node] = []

    def place(node: _Node, depth: int) -> None:
        node.lines = textwrap.wrap(node.step, _WRAP)
        node.x = 16 + depth * (_BOX_W + _GAP_X)
        for child in node.children:
            place(child, depth + 1)
        if not node.children:
            rows.append(node)

    place(root, 0)
    pitch = max(_box_h(n) for n in rows) + 2 * _LINE_H + 10
    for index, leaf in enumerate(rows):
        leaf.y = 16 + index * pitch

    def centre(node: _Node) -> float:
        if node.children:
            mids = [centre(c) for c in node.children]
            node.y = (min(mids) + max(mids)) / 2 - _box_h(node) / 2
        return node.y + _box_h(node) / 2

    centre(root)
    nodes: list[_Node] = []

    def walk(node: _Node) -> None:
        nodes.append(node)
        for child in node.children:
            walk(child)

    walk(root)
    width = max(n.x for n in nodes) + _BOX_W + 16
    height = max(n.y + _box_h(n) + (2 * _LINE_H if n.peer else 0) for n in nodes) + 16
    out = [_svg_open(width, height, "The handshake ladder: the steps kclient takes with "
                     "each kind of peer, as recorded by kclient.negotiation.ladder")]
    for node in nodes:
        for child in node.children:
            x1, y1 = node.x + _BOX_W, node.y + _box_h(node) / 2
            x2, y2 = child.x, child.y + _box_h(child) / 2
            mid = (x1 + x2) / 2
            out.append(f'<path d="M{x1:.1f},{y1:.1f} C{mid:.1f},{y1:.1f} {mid:.1f},{y2:.1f} '
                       f'{x2 - 6:.1f},{y2:.1f}" fill="none" stroke="#7f8c8d" '
                       'stroke-width="1.3" marker-end="url(#arrow)"/>')
    for node in nodes:
        out.append(f'<g class="step step-{node.kind}">')
        out.append(f"<title>{escape(node.step)}</title>")
        out.append(f'<rect x="{node.x:.1f}" y="{node.y:.1f}" width="{_BOX_W}" '
                   f'height="{_box_h(node):.1f}" rx="5" fill="{_KIND_FILL[node.kind]}" '
                   f'stroke="{_KIND_STROKE[node.kind]}" stroke-width="1.4"/>')
        for i, line in enumerate(node.lines):
            out.append(f'<text x="{node.x + _PAD:.1f}" '
                       f'y="{node.y + _PAD + (i + 0.8) * _LINE_H:.1f}" font-size="12" '
                       f'fill="#2c3e50">{escape(line)}</text>')
        if node.peer is not None:
            label = f"{node.kind}: {node.peer}"
            for i, line in enumerate(textwrap.wrap(label, _WRAP + 6)[:2]):
                out.append(f'<text x="{node.x + 2:.1f}" '
                           f'y="{node.y + _box_h(node) + (i + 1) * _LINE_H - 2:.1f}" '
                           f'font-size="11" font-style="italic" '
                           f'fill="{_KIND_STROKE[node.kind]}">{escape(line)}</text>')
        out.append("</g>")
    out.append("</svg>")
    return "\n".join(out) + "\n"


def _svg_open(width: float, height: float, title: str) -> str:
    return (f'<svg xmlns="http://www.w3.org/2000/svg" width="{width:.0f}" '
            f'height="{height:.0f}" viewBox="0 0 {width:.0f} {height:.0f}" role="img" '
            f'{_FONT}>\n<title>{escape(title)}</title>\n'
            '<defs><marker id="arrow" viewBox="0 0 10 10" refX="9" refY="5" markerWidth="7" '
            'markerHeight="7" orient="auto-start-reverse"><path d="M0,0 L10,5 L0,10 z" '
            'fill="#7f8c8d"/></marker></defs>\n'
            f'<rect width="{width:.0f}" height="{height:.0f}" fill="#ffffff"/>')


# -- broker ranges and the KIP-35 intersection ----------------------------------

#: The example cluster of the ranges figure: one broker per release (node ids 1, 2, ...).
RANGE_RELEASES: tuple[str, ...] = ("2.0", "3.9", "4.0")
#: The APIs drawn: the intersection is a range, narrowed from below, or empty.
RANGE_APIS: tuple[str, ...] = ("Produce", "Fetch", "ListOffsets", "OffsetCommit",
                               "OffsetForLeaderEpoch")


def example_cluster(releases: Sequence[str] = RANGE_RELEASES) -> ClusterView:
    """A cluster with one broker per release, each advertising that release's ranges."""
    return ClusterView([fallback_broker(release, node_id, f"broker{node_id}", 9092)
                        for node_id, release in enumerate(releases, start=1)])


def ranges_svg(releases: Sequence[str] = RANGE_RELEASES,
               apis: Sequence[str] = RANGE_APIS) -> str:
    """Per API: each broker's advertised range as a bar, and the KIP-35 intersection.

    The intersection bar is :attr:`ApiSupport.cluster` of the example cluster's
    :class:`~kclient.negotiation.ClusterView`; its versions are written on the
    bar and in ``data-min``/``data-max`` attributes.
    """
    view = example_cluster(releases)
    supports = [view.api_support(api) for api in apis]
    top = max((r.max for s in supports for r in s.brokers.values() if r is not None),
              default=0)
    label_w, cell, row_h, bar_h = 190, 34, 20, 13
    plot_x = label_w + 10
    width = plot_x + (top + 1) * cell + 20
    rows_per_api = len(releases) + 1
    block_h = rows_per_api * row_h + 40
    axis_h = 34
    height = axis_h + len(supports) * block_h + 36
    out = [_svg_open(width, height, "Version ranges each broker advertises per API, and "
                     "the KIP-35 intersection (the versions every broker accepts)")]
    # The version axis, shared by every API.
    for version in range(top + 1):
        x = plot_x + version * cell
        out.append(f'<text x="{x + cell / 2:.1f}" y="20" font-size="11" text-anchor="middle" '
                   f'fill="#555">v{version}</text>')
        out.append(f'<line x1="{x:.1f}" y1="26" x2="{x:.1f}" y2="{height - 36:.1f}" '
                   'stroke="#eceff1" stroke-width="1"/>')
    for index, support in enumerate(supports):
        y0 = axis_h + index * block_h
        out.append(f'<g class="api" data-api={quoteattr(support.name)}>')
        out.append(f'<text x="8" y="{y0 + 12:.1f}" font-size="13" font-weight="bold" '
                   f'fill="#2c3e50">{escape(support.name)} (key {support.key})</text>')
        common = support.cluster
        if common is not None:
            out.append(f'<rect x="{plot_x + common.min * cell:.1f}" y="{y0 + 20:.1f}" '
                       f'width="{len(common) * cell:.1f}" height="{rows_per_api * row_h:.1f}" '
                       'fill="#27ae60" fill-opacity="0.10"/>')
        for row, (node_id, rng) in enumerate(support.brokers.items()):
            y = y0 + 22 + row * row_h
            release = releases[node_id - 1]
            out.append(f'<text x="{label_w:.1f}" y="{y + bar_h - 2:.1f}" font-size="11" '
                       f'text-anchor="end" fill="#555">broker {node_id} (Kafka {release})'
                       '</text>')
            if rng is None:
                out.append(f'<text x="{plot_x + 4:.1f}" y="{y + bar_h - 2:.1f}" '
                           'font-size="11" fill="#c0392b">does not have it</text>')
                continue
            out.append(f'<rect class="broker" data-node="{node_id}" data-min="{rng.min}" '
                       f'data-max="{rng.max}" x="{plot_x + rng.min * cell + 1:.1f}" '
                       f'y="{y:.1f}" width="{len(rng) * cell - 2:.1f}" height="{bar_h}" '
                       'rx="3" fill="#5d9cec"/>')
            out.append(f'<text x="{plot_x + rng.min * cell + 5:.1f}" y="{y + bar_h - 3:.1f}" '
                       f'font-size="10" fill="#ffffff">{rng}</text>')
        y = y0 + 22 + len(releases) * row_h
        out.append(f'<text x="{label_w:.1f}" y="{y + bar_h - 2:.1f}" font-size="11" '
                   'text-anchor="end" font-weight="bold" fill="#1e8449">every broker (KIP-35)'
                   '</text>')
        if common is None:
            out.append(f'<text class="intersection" data-empty="true" x="{plot_x + 4:.1f}" '
                       f'y="{y + bar_h - 2:.1f}" font-size="11" font-weight="bold" '
                       'fill="#c0392b">no version every broker accepts</text>')
        else:
            out.append(f'<rect class="intersection" data-min="{common.min}" '
                       f'data-max="{common.max}" x="{plot_x + common.min * cell + 1:.1f}" '
                       f'y="{y:.1f}" width="{len(common) * cell - 2:.1f}" height="{bar_h}" '
                       'rx="3" fill="#1e8449"/>')
            out.append(f'<text x="{plot_x + common.min * cell + 5:.1f}" '
                       f'y="{y + bar_h - 3:.1f}" font-size="10" font-weight="bold" '
                       f'fill="#ffffff">{common}</text>')
        out.append("</g>")
    out.append(f'<text x="8" y="{height - 14:.1f}" font-size="11" fill="#555">Ranges from '
               "kclient's release data; the intersection is ClusterView.api_support(api)"
               ".cluster.</text>")
    out.append("</svg>")
    return "\n".join(out) + "\n"
