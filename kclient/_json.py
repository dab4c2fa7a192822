"""JSON text from outside (files, brokers): decoding that fails only with ValueError.

The standard decoder recurses once per nesting level, so a document nested a
thousand levels deep ends in ``RecursionError``, which callers do not expect from
"parse this text".  :func:`loads` reports it as :class:`JsonNestingError`, a
``ValueError`` like every other reason the text is not acceptable JSON (syntax,
integers longer than Python converts), so one ``except ValueError`` covers all.
"""

from __future__ import annotations

import json
from typing import Any

__all__ = ["JsonNestingError", "loads"]


class JsonNestingError(ValueError):
    """The JSON text nests arrays/objects deeper than the decoder can follow."""


def loads(text: str | bytes) -> Any:
    """``json.loads(text)``; every failure is a ``ValueError`` (see the module doc)."""
    try:
        return json.loads(text)
    except RecursionError:
        raise JsonNestingError("arrays/objects are nested too deeply (real documents nest a "
                               "few levels)") from None

