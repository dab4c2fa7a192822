"""Generated Python source: compiled under a unique name that tracebacks can show.

Every script the codec writes (a struct's ``__init__``, a class's ``from_value``
builder, the decoders and encoders of one message version) is compiled under
its own filename, ``<kclient generated WHAT #N>``, and its source is put in
:mod:`linecache`, so tracebacks, ``pdb`` and ``inspect.getsource`` show the
generated lines.  The registry also says which local of a script holds the
byte offset, which is how decode errors escaping generated code get an offset.
"""

from __future__ import annotations

import itertools
import linecache
from types import TracebackType
from typing import Any

__all__ = ["failure_offset", "generated_source", "is_generated", "run_generated"]

_counter = itertools.count(1)
# filename -> (source, name of the local holding the byte offset, or None)
_SCRIPTS: dict[str, tuple[str, str | None]] = {}


def run_generated(source: str, env: dict[str, Any], what: str,
                  offset_local: str | None = None) -> str:
    """Compile and run ``source`` in ``env`` under a fresh generated filename.

    ``what`` names the script in that filename (``decode/encode MetadataResponse
    v12``); ``offset_local`` is the local that holds the read position, if any.
    Returns the filename.
    """
    filename = f"<kclient generated {what} #{next(_counter)}>"
    _SCRIPTS[filename] = (source, offset_local)
    _register(filename, source)
    exec(compile(source, filename, "exec"), env)
    return filename


def _register(filename: str, source: str) -> None:
    linecache.cache[filename] = (len(source), None, source.splitlines(True), filename)


def is_generated(filename: str) -> bool:
    """True for the filename of a script made by :func:`run_generated`."""
    return filename in _SCRIPTS


def generated_source(filename: str) -> str:
    """The source of generated script ``filename`` (put back into
    :mod:`linecache` if something cleared it)."""
    source = _SCRIPTS[filename][0]
    if filename not in linecache.cache:
        _register(filename, source)
    return source


def failure_offset(tb: TracebackType | None) -> int | None:
    """The read position of the innermost generated frame of ``tb`` that has one."""
    pos = None
    while tb is not None:
        script = _SCRIPTS.get(tb.tb_frame.f_code.co_filename)
        if script is not None and script[1] is not None:
            pos = tb.tb_frame.f_locals.get(script[1], pos)
        tb = tb.tb_next
    return pos if isinstance(pos, int) else None
