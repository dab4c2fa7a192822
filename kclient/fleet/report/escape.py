"""Text from the input (names, hosts, errors, paths) made safe for each output.

Names come from brokers and from whoever wrote the targets: every output
shows them as text.  :func:`visible` writes out what could recolour a
terminal, hide text or reorder a line; :func:`markdown_text` and
:func:`html_text` (also used for the charts' SVG) keep markup from starting.
"""

from __future__ import annotations

import html
import re

__all__ = ["html_text", "markdown_text", "visible"]


#: Characters that must not reach a reader as they are: C0 and C1 controls (ANSI
#: escapes, NUL...), DEL, and the bidirectional controls and line separators
#: that reorder or break text ("Trojan source").
_UNSAFE = re.compile("[\x00-\x1f\x7f-\x9f\u061c\u200e\u200f\u2028\u2029"
                     "\u202a-\u202e\u2066-\u2069]")
#: Markdown punctuation that could start markup (emphasis, code, links and
#: images, tables, strike-through, math, headings' closing), escaped with a backslash.
_MARKDOWN = re.compile(r"([\\`*_\[\]{}|~!#$])")
#: What HTML-aware Markdown renderers (mkdocs, pandoc, wikis) would take as markup.
_MARKDOWN_HTML = {"&": "&amp;", "<": "&lt;", ">": "&gt;"}


def _visible_char(found: re.Match[str]) -> str:
    char = found.group()
    if char in "\t\n\r":
        return " "
    code = ord(char)
    return f"\\x{code:02x}" if code < 0x100 else f"\\u{code:04x}"


def visible(text: str) -> str:
    """``text`` with every control, bidirectional or line-separator character written out.

    Tabs and line breaks become spaces; the others their escape (``\\x1b``,
    ``\\u202e``): a report shows what the input held, and cannot recolour a
    terminal, hide text or reorder a line.
    """
    return _UNSAFE.sub(_visible_char, text)


def markdown_text(text: str) -> str:
    """``text`` (from the input: names, errors, paths) as literal Markdown text.

    Controls are written out (:func:`visible`); ``& < >`` become entities, so
    renderers that pass HTML through show them as text; the punctuation that
    starts Markdown markup is backslash-escaped, so ``[a](javascript:...)`` is
    no link and ``|`` does not end a table cell.
    """
    escaped = _MARKDOWN.sub(r"\\\1", visible(text))
    return "".join(_MARKDOWN_HTML.get(char, char) for char in escaped)


def html_text(text: str) -> str:
    """``text`` as literal HTML text (quotes too): controls written out, markup escaped."""
    return html.escape(visible(text), quote=True)

