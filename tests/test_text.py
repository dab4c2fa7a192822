"""kclient.text.printable: outside text cannot reach the terminal with control characters."""

from __future__ import annotations

import pytest

from kclient.text import printable


@pytest.mark.parametrize(("raw", "shown"), [
    ("10.0.0.5", "10.0.0.5"),
    ("brøker-ü 1", "brøker-ü 1"),                       # printable non-ASCII is kept
    ("C:\\path", "C:\\path"),                           # backslashes are kept
    ("\x1b[31mred\x1b[0m", "\\x1b[31mred\\x1b[0m"),     # ANSI colour
    ("\x1b]0;title\x07", "\\x1b]0;title\\x07"),         # OSC: set the window title
    ("a\nkclient: forged", "a\\nkclient: forged"),      # no extra output line
    ("tab\there\rcr", "tab\\there\\rcr"),
    ("\x9b2J", "\\x9b2J"),                              # C1 CSI
    ("\x7f", "\\x7f"),
    ("abc\u202edef", "abc\\u202edef"),                  # bidi override
    ("\u2028", "\\u2028"),
    ("lone \ud800", "lone \\ud800"),                    # would not encode as UTF-8
    ("\U000e0001", "\\U000e0001"),                      # format character beyond the BMP
])
def test_printable_escapes_what_a_terminal_would_act_on(raw: str, shown: str) -> None:
    assert printable(raw) == shown
    assert printable(raw).isprintable()
    printable(raw).encode("utf-8")


def test_printable_takes_any_object() -> None:
    assert printable(ValueError("bad\x1b")) == "bad\\x1b"
    assert printable(None) == "None"
