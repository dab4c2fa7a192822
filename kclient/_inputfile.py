"""Files a user names as input: regular files only, read with a size cap.

The one rule for every file kclient reads because a user named it (client
configurations, password files, features files, snapshots, request and message
bodies, message specs, TLS CA bundles, certificates and keys): it must be a
*regular* file, no larger than the cap for its kind.  ``/dev/zero`` would
otherwise be read until memory runs out, a FIFO with no writer would block
forever and a directory fails with an error that is not kclient's.  A FIFO or
device is refused from its ``stat`` alone: it is never opened (opening it
could block or have effects), and the file that is opened is checked again, so
a path swapped in between is refused too.

A file another library opens by its path (:mod:`ssl` loading a CA bundle, a
certificate or a key; pyarrow a Parquet file) is opened here first and handed
over as the descriptor's own path (:func:`opened_input_path`), so the library
reads the very file that was checked.

Every refusal is a typed error naming the file and what to do:
:class:`~kclient.errors.ConfigError` by default, or the class the caller
gives (``SnapshotError``, ``FeatureFileError``: errors located in a file).
"""

from __future__ import annotations

import contextlib
import io
import os
import stat
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import BinaryIO, Literal, overload

from kclient.errors import ConfigError, KClientError
from kclient.options import Text

__all__ = [
    "MAX_MESSAGE_INPUT",
    "MAX_SETTINGS_INPUT",
    "ErrorFactory",
    "check_input_file",
    "decode_input",
    "open_input",
    "opened_input_path",
    "read_input_bytes",
    "read_input_stream",
    "read_input_text",
]

#: The most bytes read from a file people write by hand: a client configuration,
#: a password file, a features file, a CA bundle or certificate.  Real ones are a
#: few KiB (a CA bundle of every public root: about 200 KiB).
MAX_SETTINGS_INPUT = 16 * 1024 * 1024
#: The most bytes read as one message or request body (JSON, hex text or raw
#: bytes): the hex text of the largest frame kclient accepts (100 MiB), with
#: room for spacing.
MAX_MESSAGE_INPUT = 256 * 1024 * 1024

#: Builds the error for a refused file from ``(message, path)``: the message
#: names the kind of file and the problem.  Classes such as
#: :class:`~kclient.errors.SnapshotError` fit (they print ``path: message``).
ErrorFactory = Callable[[str, str], KClientError]

_KINDS = (
    (stat.S_ISFIFO, "a FIFO (named pipe)"),
    (stat.S_ISCHR, "a character device"),
    (stat.S_ISBLK, "a block device"),
    (stat.S_ISSOCK, "a socket"),
    (stat.S_ISDIR, "a directory"),
)
_PIECE = 64 * 1024  # bytes read at a time
# Opening never blocks (a FIFO swapped in after the check) nor takes a terminal.
_OPEN_FLAGS = os.O_RDONLY | getattr(os, "O_NONBLOCK", 0) | getattr(os, "O_NOCTTY", 0)


def _refuse(what: str, path: str, problem: str, error: ErrorFactory | None) -> KClientError:
    if error is None:
        return ConfigError(Text(what, f" {path} {problem}"))
    return error(Text(what, f" {problem}"), path)


def _size_text(size: int) -> str:
    return f"{size:,} bytes" if size < 1024 * 1024 else f"{size / (1024 * 1024):,.1f} MiB"


def _kind_problem(mode: int, size: int, limit: int | None) -> str | None:
    if not stat.S_ISREG(mode):
        kind = next((name for test, name in _KINDS if test(mode)), "not a regular file")
        return (f"is {kind}, not a regular file; kclient reads input only from regular "
                "files: save the content to a file and give its path")
    if limit is not None and size > limit:
        return _too_large(size, limit)
    return None


def _too_large(size: int | None, limit: int) -> str:
    shown = f"{_size_text(size)}, " if size is not None else ""
    return (f"is too large ({shown}more than the {_size_text(limit)} kclient reads from such "
            "a file); check that it is the right file")


def check_input_file(path: str | os.PathLike[str], what: str, *, limit: int | None,
                     error: ErrorFactory | None = None) -> str:
    """``path`` as text when it names a regular file of at most ``limit`` bytes.

    For files another library opens (a CA bundle for :mod:`ssl`).  ``what``
    names the file in errors (``"--ca"``, ``"the snapshot file"``); ``limit``
    ``None`` means any size.
    """
    shown = str(path)
    try:
        found = os.stat(path)
    except FileNotFoundError:
        raise _refuse(what, shown, "does not exist; check the path", error) from None
    except (OSError, ValueError) as exc:  # ValueError: a NUL byte in the path
        raise _refuse(what, shown, f"cannot be read: {_reason(exc)}", error) from None
    problem = _kind_problem(found.st_mode, found.st_size, limit)
    if problem is not None:
        raise _refuse(what, shown, problem, error)
    return shown


def _reason(exc: BaseException) -> str:
    return (getattr(exc, "strerror", None) or str(exc) or type(exc).__name__)


@overload
def open_input(path: str | os.PathLike[str], what: str, *, limit: int | None,
               error: ErrorFactory | None = None,
               buffered: Literal[True] = True) -> io.BufferedReader: ...
@overload
def open_input(path: str | os.PathLike[str], what: str, *, limit: int | None,
               error: ErrorFactory | None = None, buffered: Literal[False]) -> io.FileIO: ...
def open_input(path: str | os.PathLike[str], what: str, *, limit: int | None,
               error: ErrorFactory | None = None,
               buffered: bool = True) -> io.BufferedReader | io.FileIO:
    """Open the regular file ``path`` for reading bytes (the caller closes it).

    Refuses, with a typed error naming ``what`` and the path, a missing file,
    a FIFO, device, socket or directory (never opened), and a file larger than
    ``limit`` bytes (``None``: any size; the caller then reads it in bounded
    pieces).  ``buffered=True`` reads it through a 64 KiB buffer (line by
    line); ``buffered=False`` gives the file without one (for reading it whole,
    in pieces of a known size).
    """
    shown = check_input_file(path, what, limit=limit, error=error)
    try:
        fd = os.open(path, _OPEN_FLAGS)
    except OSError as exc:
        raise _refuse(what, shown, f"cannot be read: {_reason(exc)}", error) from None
    try:
        found = os.fstat(fd)
        problem = _kind_problem(found.st_mode, found.st_size, limit)
        if problem is not None:
            raise _refuse(what, shown, problem, error)
        raw = io.FileIO(fd, "rb")
        return io.BufferedReader(raw, buffer_size=_PIECE) if buffered else raw
    except BaseException:
        os.close(fd)
        raise


@contextlib.contextmanager
def opened_input_path(path: str | os.PathLike[str], what: str, *, limit: int | None,
                      error: ErrorFactory | None = None) -> Iterator[str]:
    """A path for another library to open that names the regular file ``path``, as checked.

    The file is opened here under the rule of :func:`open_input` (a FIFO or
    device is refused, never opened) and, while the block runs, the library is
    given ``/proc/self/fd/N``, the descriptor opened here: a file swapped in
    after the check is not the one it reads.  Where there is no ``/proc``, the
    checked path itself.
    """
    with open_input(path, what, limit=limit, error=error, buffered=False) as handle:
        own = f"/proc/self/fd/{handle.fileno()}"
        yield own if os.path.exists(own) else str(path)


def read_input_stream(stream: BinaryIO, what: str, *, limit: int,
                      path: str = "stdin", error: ErrorFactory | None = None,
                      expected: int | None = None) -> bytes:
    """At most ``limit`` bytes from ``stream`` (standard input); more is refused.

    Read in pieces: asking for ``limit`` bytes at once would allocate that
    much whatever the stream holds.  ``expected`` (a file's size) sizes the
    first piece, so a small file costs a small buffer.
    """
    pieces: list[bytes] = []
    total = 0
    piece_size = _PIECE if expected is None else max(1, min(_PIECE, expected + 1))
    try:
        while total <= limit:
            asked = min(piece_size, limit + 1 - total)
            piece = stream.read(asked)
            if not piece:
                break
            pieces.append(piece)
            total += len(piece)
            if expected is not None and len(piece) < asked:
                break  # a regular file: a short read is its end
            piece_size = _PIECE
    except OSError as exc:
        raise _refuse(what, path, f"cannot be read: {_reason(exc)}", error) from None
    if total > limit:
        raise _refuse(what, path, _too_large(None, limit), error)
    return b"".join(pieces)


def read_input_bytes(path: str | os.PathLike[str], what: str, *, limit: int,
                     error: ErrorFactory | None = None) -> bytes:
    """The bytes of the regular file ``path`` (at most ``limit``; see :func:`open_input`)."""
    with open_input(path, what, limit=limit, error=error, buffered=False) as handle:
        size = os.fstat(handle.fileno()).st_size
        return read_input_stream(handle, what, limit=limit, path=str(path), error=error,
                                 expected=size)


def read_input_text(path: str | os.PathLike[str], what: str, *, limit: int,
                    error: ErrorFactory | None = None) -> str:
    """The UTF-8 text of the regular file ``path``; see :func:`read_input_bytes`.

    Text that is not UTF-8 is refused naming the byte offset, never the content
    (the file may hold a secret).
    """
    return decode_input(read_input_bytes(path, what, limit=limit, error=error), what,
                        str(Path(path)), error)


def decode_input(data: bytes, what: str, path: str, error: ErrorFactory | None = None) -> str:
    """``data`` read from ``path`` as UTF-8 text; else a typed error naming the byte."""
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise _refuse(what, path, f"is not UTF-8 text (byte {exc.start}); save it as UTF-8",
                      error) from None
