"""The driver JVM's stderr, passed on to ours without the lines that only alarm users.

Spark's launcher starts every driver JVM with ``--add-modules=jdk.incubator.vector``
and the JVM answers that, on every start, with a line on stderr saying it uses
an incubator module.  Nothing is wrong and a user can do nothing about it, yet
it is the first thing ``kclient fleet report`` would show.  When kclient starts
the JVM itself, the JVM's stderr is a pipe: :class:`LineFilter` drops the lines
in :data:`NOISE_PREFIXES` and :func:`forward` copies everything else to our own
stderr as it comes, progress bars (which redraw one line with ``\\r``) included.
"""

from __future__ import annotations

import contextlib
import os
import threading

__all__ = ["NOISE_PREFIXES", "LineFilter", "forward"]

#: Lines starting with one of these are dropped.
NOISE_PREFIXES: tuple[bytes, ...] = (b"WARNING: Using incubator modules: ",)
#: A line that starts like noise is held back until its end, up to this many bytes.
_LONGEST_HELD = 4096
#: Bytes read from the pipe at a time.
_CHUNK = 1 << 16


class LineFilter:
    """Drops noise lines from a byte stream fed in arbitrary pieces.

    A line is held back only while it still may turn out to be noise (it is a
    beginning of, or begins with, a noise prefix); any other line is passed on
    at once, even before its newline arrives.
    """

    def __init__(self, prefixes: tuple[bytes, ...] = NOISE_PREFIXES) -> None:
        self._prefixes = prefixes
        self._held = b""
        self._mid_line = False  # inside a line already known not to be noise

    def _may_be_noise(self, start: bytes) -> bool:
        return any(prefix.startswith(start) or (start.startswith(prefix)
                                                and len(start) < _LONGEST_HELD)
                   for prefix in self._prefixes)

    def _is_noise(self, line: bytes) -> bool:
        return line.startswith(self._prefixes)

    def feed(self, data: bytes) -> bytes:
        """The bytes of ``data`` to pass on now (some may be held for the next call)."""
        data, self._held = self._held + data, b""
        out: list[bytes] = []
        start = 0
        while start < len(data):
            end = data.find(b"\n", start)
            piece = data[start:] if end < 0 else data[start:end + 1]
            start += len(piece)
            if self._mid_line:
                out.append(piece)
                self._mid_line = end < 0
            elif end >= 0:
                if not self._is_noise(piece):
                    out.append(piece)
            elif self._may_be_noise(piece):
                self._held = piece
            else:
                out.append(piece)
                self._mid_line = True
        return b"".join(out)

    def close(self) -> bytes:
        """What is still held at the end of the stream: a last line without a newline."""
        held, self._held = self._held, b""
        return b"" if self._is_noise(held) else held


def _write_all(fd: int, data: bytes) -> None:
    while data:
        written = os.write(fd, data)
        data = data[written:]


def forward(source: int, target: int = 2) -> threading.Thread:
    """Copy file descriptor ``source`` to ``target`` through a :class:`LineFilter`.

    A daemon thread does the copying until ``source`` reaches its end (the
    JVM exited), then closes ``source``.  It never stops reading early: a
    write that fails (our stderr closed) drops that piece, so the JVM never
    blocks on a full pipe.
    """
    def run() -> None:
        lines = LineFilter()
        try:
            while chunk := os.read(source, _CHUNK):
                with contextlib.suppress(OSError):
                    _write_all(target, lines.feed(chunk))
            with contextlib.suppress(OSError):
                _write_all(target, lines.close())
        finally:
            os.close(source)

    thread = threading.Thread(target=run, name="kclient-jvm-stderr", daemon=True)
    thread.start()
    return thread
