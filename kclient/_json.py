"""JSON text from outside (files, brokers): decoding that fails only with ValueError.

The standard decoder recurses once per nesting level, so a document nested a
thousand levels deep ends in ``RecursionError``, which callers do not expect from
"parse this text".  :func:`loads` reports it as :class:`JsonNestingError`, a
``ValueError`` like every other reason the text is not acceptable JSON (syntax,
integers longer than Python converts), so one ``except ValueError`` covers all.
"""

from __future__ import annotations

import json
import sys
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
    except ValueError as exc:
        if isinstance(exc, json.JSONDecodeError) or "integer string conversion" not in str(exc):
            raise
        # Python's own words advise a sys call, which means nothing to the file's author.
        raise ValueError(f"an integer of more than {sys.get_int_max_str_digits()} digits (no "
                         "field kclient reads holds one)") from None

