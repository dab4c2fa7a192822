"""Locate the data files kclient ships (``schemas/``, ``features.yaml``, release data).

In a source checkout or an editable install they sit at the repository root,
next to the package; in a wheel they are copied into ``kclient/_shipped/``.
When kclient is imported from a zip archive (a wheel or zip on Spark's
``--py-files``) the files it asks for are copied out of the archive once, into a
temporary directory removed when the process exits, so that every loader can
keep reading real paths.
"""

from __future__ import annotations

import atexit
from functools import cache
from pathlib import Path
from typing import TYPE_CHECKING

from kclient._lazy import DeferredModule

if TYPE_CHECKING:
    from importlib.resources.abc import Traversable

# Needed only when kclient is imported from an archive: loaded on first use.
_resources = DeferredModule("importlib.resources")
_shutil = DeferredModule("shutil")
_tempfile = DeferredModule("tempfile")

__all__ = ["package_path", "shipped_path"]

_PACKAGE_DIR = Path(__file__).resolve().parent


@cache
def _extraction_dir() -> Path:
    target = Path(_tempfile.mkdtemp(prefix="kclient-data-"))
    atexit.register(_shutil.rmtree, target, True)
    return target


def _copy_out(source: Traversable, target: Path) -> None:
    if source.is_dir():
        target.mkdir(parents=True, exist_ok=True)
        for child in source.iterdir():
            _copy_out(child, target / child.name)
    elif not target.exists():  # a file asked for earlier on its own is there already
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_bytes(source.read_bytes())


@cache
def package_path(relative: str) -> Path:
    """A real path for ``relative`` (``/``-separated) inside the kclient package.

    The package directory itself, unless kclient was imported from a zip
    archive: then the file or directory is copied out of it (once per
    process).  A name the package does not hold gives the path it would have,
    which does not exist.
    """
    direct = _PACKAGE_DIR.joinpath(*relative.split("/"))
    if _PACKAGE_DIR.is_dir():
        return direct
    source: Traversable = _resources.files(__package__ or "kclient").joinpath(*relative.split("/"))
    if not (source.is_file() or source.is_dir()):
        return direct
    target = _extraction_dir().joinpath(*relative.split("/"))
    _copy_out(source, target)
    return target


@cache
def shipped_path(relative: str) -> Path:
    """Return the path of a shipped data file such as ``"schemas/api_catalog.json"``.

    Raises :class:`FileNotFoundError` naming both places looked at when it is
    missing, which only happens with a broken installation.
    """
    candidates = (package_path(f"_shipped/{relative}"), _PACKAGE_DIR.parent / relative)
    for candidate in candidates:
        if candidate.exists():
            return candidate
    looked = ", ".join(str(c) for c in candidates)
    raise FileNotFoundError(f"kclient data file {relative!r} not found (looked in {looked}); "
                            "reinstall kclient")
