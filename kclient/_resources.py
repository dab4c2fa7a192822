"""Locate the data files kclient ships (``schemas/``, ``features.yaml``).

In a source checkout or an editable install they sit at the repository root,
next to the package; in a wheel they are copied into ``kclient/_shipped/``.
"""

from __future__ import annotations

from functools import cache
from pathlib import Path

_PACKAGE_DIR = Path(__file__).resolve().parent


@cache
def shipped_path(relative: str) -> Path:
    """Return the path of a shipped data file such as ``"schemas/api_catalog.json"``.

    Raises :class:`FileNotFoundError` naming both places looked at when it is
    missing, which only happens with a broken installation.
    """
    candidates = (_PACKAGE_DIR / "_shipped" / relative, _PACKAGE_DIR.parent / relative)
    for candidate in candidates:
        if candidate.exists():
            return candidate
    looked = ", ".join(str(c) for c in candidates)
    raise FileNotFoundError(f"kclient data file {relative!r} not found (looked in {looked}); "
                            "reinstall kclient")
