"""Files kclient writes into a folder the user gives: never through a link.

The names kclient chooses inside an output folder (a fleet report's
``report.md``, ``report.html``, charts, tables and probed records) may exist
already, from an earlier run or placed there by someone else.  A link there is
never what the user meant: writing through it would overwrite whatever it
points at.  So a file is written to a new hidden file beside its name, created
exclusively (``O_EXCL | O_NOFOLLOW``), and then moved over the name
(:func:`os.replace` replaces a link, it never follows one), so a reader never
sees half a file either; and a folder to be filled anew is removed as it is (a
link is unlinked, not followed) and made again, empty, by this process.

A file the user names itself (``kclient encode --out FILE``, ``fleet synth
--out``, ``probe --record``) is not under this rule: it is written where its
name leads, links included, as ``cp`` and shells do (``--out /dev/stdout``).

Failures are :class:`OSError`, for the caller to report in its own words.
"""

from __future__ import annotations

import contextlib
import os
import secrets
import shutil
from collections.abc import Iterator
from pathlib import Path
from typing import BinaryIO

__all__ = ["fresh_folder", "output_stream", "remove_entry", "unlink_links", "write_output"]

# Created new, never through a link, not inherited by children.
_CREATE = (os.O_WRONLY | os.O_CREAT | os.O_EXCL | getattr(os, "O_NOFOLLOW", 0)
           | getattr(os, "O_CLOEXEC", 0))
#: Hidden (a report's folder check leaves hidden names alone) and unique.
_PARTIAL = ".{name}.{token}.partial"


@contextlib.contextmanager
def output_stream(path: str | os.PathLike[str]) -> Iterator[BinaryIO]:
    """A binary file whose content becomes ``path`` when the block ends without error.

    Written to a new hidden file in the same folder, then moved over ``path``
    (a link there is replaced, never followed); on an error the partial file
    is removed and ``path`` is left as it was.  The mode is the usual one for
    new files (``0o666`` less the umask).
    """
    target = Path(path)
    partial = target.with_name(_PARTIAL.format(name=target.name, token=secrets.token_hex(6)))
    fd = os.open(partial, _CREATE, 0o666)
    try:
        with os.fdopen(fd, "wb") as handle:
            yield handle
        os.replace(partial, target)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(partial)
        raise


def write_output(path: str | os.PathLike[str], data: bytes) -> None:
    """Make ``data`` the content of ``path`` (see :func:`output_stream`)."""
    with output_stream(path) as handle:
        handle.write(data)


def fresh_folder(path: str | os.PathLike[str]) -> Path:
    """``path`` as a new, empty folder made by this process.

    What was there is removed without following links: a link or a file is
    unlinked, a folder removed with what it holds (the links inside unlinked,
    not followed).  The folder is then created, failing if something took its
    name meanwhile.
    """
    folder = Path(path)
    remove_entry(folder)
    folder.mkdir(parents=True)
    return folder


def remove_entry(path: str | os.PathLike[str]) -> None:
    """Remove what ``path`` names, without following links: a link or a file is unlinked,
    a folder removed with what it holds (the links inside unlinked, not followed);
    nothing there is not an error."""
    entry = Path(path)
    if entry.is_symlink() or (entry.exists() and not entry.is_dir()):
        entry.unlink()
    elif entry.is_dir():
        shutil.rmtree(entry)


def unlink_links(folder: Path, names: frozenset[str] | set[str]) -> None:
    """Remove the entries of ``folder`` named in ``names`` that are links (not followed)."""
    for name in names:
        entry = folder / name
        if entry.is_symlink():
            entry.unlink()
