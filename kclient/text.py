"""Text from outside (brokers, snapshot and features files) made safe to print.

Host, cluster and feature names and broker error messages come from the network
or from files kclient did not write.  Printed as they are, an ANSI escape
sequence in a host name would recolour or rewrite the user's terminal, a newline
would forge an extra output line and a bidirectional override would reorder
what is shown.  :func:`printable` is the one place that neutralises them; every
place that prints such text on a terminal calls it.
"""

from __future__ import annotations

__all__ = ["printable"]


_SHORT = {"\n": "\\n", "\r": "\\r", "\t": "\\t"}


def _escape(char: str) -> str:
    if char in _SHORT:
        return _SHORT[char]
    code = ord(char)
    if code <= 0xFF:
        return f"\\x{code:02x}"
    if code <= 0xFFFF:
        return f"\\u{code:04x}"
    return f"\\U{code:08x}"


def printable(value: object) -> str:
    """``str(value)`` with every non-printable character escaped (``\\n``, ``\\xNN``, ``\\uNNNN``).

    Non-printable is Python's :meth:`str.isprintable` notion: control characters
    (ESC, newline, tab, DEL, C1 controls such as CSI U+009B), format characters
    (bidirectional overrides), line/paragraph separators, lone surrogates and
    unassigned code points.  Spaces and printable non-ASCII letters are kept, and
    a backslash is left as is, so ordinary text prints unchanged.
    """
    text = str(value)
    if text.isprintable():
        return text
    return "".join(ch if ch.isprintable() else _escape(ch) for ch in text)
