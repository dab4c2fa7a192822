"""The contributor page's module map, written from the package's own docstrings.

Each module's docstring opens with one sentence saying what it holds; the map
is those sentences, grouped by package, so it cannot drift from the code.  The
mkdocs hook (``tools/docs_hooks.py``) puts it where the contributor page says
``<!-- module-map -->``; the docs tests check that every module is listed.
"""

from __future__ import annotations

import ast
import re
from pathlib import Path

PACKAGE = Path(__file__).resolve().parent.parent / "kclient"
MARKER = "<!-- module-map -->"

#: What each layer may do, shown above its modules (the rules the tests enforce).
LAYERS: dict[str, str] = {
    "kclient": "Top level: public names (loaded lazily), errors, small shared helpers.",
    "kclient.protocol": "Pure wire format: no sockets, no asyncio, no threads.",
    "kclient.negotiation": "Pure negotiation rules: ranges, views, verdicts, features, releases.",
    "kclient.sasl": "Pure SASL mechanisms as state machines.",
    "kclient.net": "The thin asyncio shell: connections, supervision, the clients.",
    "kclient.emulator": "An emulated Kafka broker on loopback, for tests and demos.",
    "kclient.adapters": "Settings for other Kafka libraries, from kclient's verdicts.",
    "kclient.contracts": "JSON Schemas of what kclient writes (snapshot records, JSON output).",
    "kclient.fleet": "The PySpark fleet pipeline (the `spark` extra).",
    "kclient.fleet.report": "The fleet report from either engine's aggregates: Markdown, "
                            "HTML and SVG charts, with no Spark or Arrow.",
    "kclient.commands": "The command line: flags to arguments, exceptions to exit codes.",
}


def module_name(path: Path) -> str:
    """``kclient.net.client`` for ``kclient/net/client.py``."""
    parts = list(path.relative_to(PACKAGE.parent).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


def summary(path: Path) -> str:
    """The first line of a module's docstring ('' when it has none)."""
    doc = ast.get_docstring(ast.parse(path.read_text(encoding="utf-8")))
    return doc.strip().splitlines()[0].strip() if doc else ""


def modules() -> dict[str, tuple[str, int]]:
    """Every module of the package, by name: its one-line summary and its line count."""
    return {module_name(p): (summary(p), len(p.read_text(encoding="utf-8").splitlines()))
            for p in sorted(PACKAGE.rglob("*.py"))}


def _package_of(name: str) -> str:
    if name in LAYERS:
        return name
    parent = name.rsplit(".", 1)[0]
    return parent if parent in LAYERS else "kclient"


_ROLE = re.compile(r":[a-z]+:`~?([^`]+)`")


def _cell(text: str) -> str:
    """A docstring line as a table cell: Sphinx roles become code, pipes are escaped."""
    return _ROLE.sub(lambda m: f"`{m.group(1)}`", text).replace("|", "\\|")


def module_map_markdown() -> str:
    """The map as Markdown: a heading and a table per package."""
    grouped: dict[str, list[tuple[str, str, int]]] = {name: [] for name in LAYERS}
    for name, (text, lines) in modules().items():
        grouped[_package_of(name)].append((name, text, lines))
    out: list[str] = []
    for package, rows in grouped.items():
        total = sum(lines for _, _, lines in rows)
        out.append(f"### `{package}`\n\n{LAYERS[package]} ({len(rows)} modules, "
                   f"{total:,} lines)\n")
        out.append("| module | what it holds | lines |\n|---|---|---:|")
        out.extend(f"| `{name}` | {_cell(text)} | {lines} |" for name, text, lines in rows)
        out.append("")
    return "\n".join(out)
