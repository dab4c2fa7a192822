"""Locate the data files kclient ships (``schemas/``, ``features.yaml``, release data).

In a source checkout or an editable install they sit at the repository root,
next to the package; in a wheel they are copied into ``kclient/_shipped/``.
When kclient is imported from a zip archive (a wheel or zip on Spark's
``--py-files``) the files it asks for are copied out of the archive, so that
every loader can keep reading real paths.  They go to one directory per user
and archive content (named after a digest of the archive: Spark copies
``--py-files`` into a new folder for every application) in the temporary
directory, which every process importing such an archive shares and keeps:
Spark's Python workers end without running exit handlers, so a directory per
process would pile up, one per worker and run.  Files are written under a temporary
name and renamed, so a process never reads another's half-written copy.  When
that directory cannot be used safely (it exists but is not a private directory
of this user), a private one is made instead, removed when the process exits.
"""

from __future__ import annotations

import atexit
import os
import stat
from functools import cache
from pathlib import Path
from typing import TYPE_CHECKING

from kclient._lazy import DeferredModule

if TYPE_CHECKING:
    from importlib.resources.abc import Traversable

# Needed only when kclient is imported from an archive: loaded on first use.
_hashlib = DeferredModule("hashlib")
_resources = DeferredModule("importlib.resources")
_shutil = DeferredModule("shutil")
_tempfile = DeferredModule("tempfile")

__all__ = ["package_path", "shared_extraction_dir", "shipped_path"]

_PACKAGE_DIR = Path(__file__).resolve().parent


def _archive_file() -> Path | None:
    """The zip archive kclient was imported from (the nearest parent that is a file)."""
    return next((parent for parent in _PACKAGE_DIR.parents if parent.is_file()), None)


def shared_extraction_dir(archive: Path, temp_dir: Path) -> Path | None:
    """This user's directory for the files of ``archive`` in ``temp_dir``, made if needed.

    ``None`` when it cannot be used safely: not a directory (a symbolic link,
    say), another user's, or open to others.
    """
    uid = getattr(os, "getuid", lambda: None)()
    if uid is None:
        return None  # no owners to check (Windows): a private directory per process
    digest = _hashlib.sha256()
    try:
        with archive.open("rb") as data:
            for block in iter(lambda: data.read(1 << 20), b""):
                digest.update(block)
    except OSError:
        return None
    target = temp_dir / f"kclient-data-{uid}-{digest.hexdigest()[:16]}"
    try:
        target.mkdir(mode=0o700)
    except FileExistsError:
        pass
    except OSError:
        return None
    try:
        found = target.lstat()
    except OSError:
        return None
    if not stat.S_ISDIR(found.st_mode) or found.st_uid != uid or found.st_mode & 0o077:
        return None
    return target


@cache
def _extraction_dir() -> Path:
    archive = _archive_file()
    if archive is not None:
        shared = shared_extraction_dir(archive, Path(_tempfile.gettempdir()))
        if shared is not None:
            return shared
    target = Path(_tempfile.mkdtemp(prefix="kclient-data-"))
    atexit.register(_shutil.rmtree, target, True)
    return target


def _copy_out(source: Traversable, target: Path) -> None:
    if source.is_dir():
        target.mkdir(parents=True, exist_ok=True)
        for child in source.iterdir():
            _copy_out(child, target / child.name)
    elif not target.exists():  # copied earlier, by this process or another
        target.parent.mkdir(parents=True, exist_ok=True)
        staged = target.with_name(f".{target.name}.{os.getpid()}.partial")
        staged.write_bytes(source.read_bytes())
        os.replace(staged, target)


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
