"""Did you mean ...?  The one rule for suggesting a known name for a mistyped one.

Feature names (``explain("zstdd")``), API names (``version_for("Metdata")``) and the
API names of a features file all suggest through :func:`closest_name`, so they
suggest alike: letter case ignored, the nearest name by :mod:`difflib`'s ratio.
"""

from __future__ import annotations

import difflib
from collections.abc import Iterable

__all__ = ["closest_name"]

#: How alike (difflib's ratio, 0 to 1) a known name must be to be suggested.
CUTOFF = 0.5


def closest_name(name: str, known: Iterable[str]) -> str | None:
    """The name of ``known`` closest to ``name`` (letter case ignored), as ``known``
    spells it, or ``None`` when none is close."""
    lowered = {k.lower(): k for k in known}
    close = difflib.get_close_matches(name.strip().lower(), list(lowered), n=1, cutoff=CUTOFF)
    return lowered[close[0]] if close else None
