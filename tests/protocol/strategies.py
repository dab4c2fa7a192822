"""Hypothesis strategies that build message values from a spec.

``message_values(spec, version)`` draws a plain mapping (snake_case keys,
nested mappings for structs) holding a value for every field the message has
at ``version``, within what the wire format can carry at that version: ints in
range, strings with non-ASCII text, null only where the version allows it,
uuids, opaque record bytes, floats without NaN (NaN != NaN would make equality
meaningless).  Fields absent from the version are left out, so the codec's
defaults apply to them on both sides of a round trip.
"""

from __future__ import annotations

import uuid
from typing import Any

from hypothesis import strategies as st

from kclient.protocol.schema import FieldSpec, MessageSpec, StructSpec

__all__ = ["message_values", "primitive", "struct_values"]

_INT_RANGES: dict[str, tuple[int, int]] = {
    "int8": (-(2**7), 2**7 - 1),
    "int16": (-(2**15), 2**15 - 1),
    "uint16": (0, 2**16 - 1),
    "int32": (-(2**31), 2**31 - 1),
    "uint32": (0, 2**32 - 1),
    "int64": (-(2**63), 2**63 - 1),
}

# Short collections keep every (message, version) case fast; the codec's
# length handling does not change with size.
_MAX_ITEMS = 3
_MAX_TEXT = 12

# Letters from several scripts plus ASCII, so UTF-8 lengths differ from
# character counts (a classic length-prefix bug).
_TEXT = st.text(
    alphabet=st.one_of(
        st.characters(min_codepoint=0x20, max_codepoint=0x7E),
        st.sampled_from("éßøΩжक漢字🙂"),
        st.characters(codec="utf-8"),
    ),
    max_size=_MAX_TEXT,
)


def primitive(kind: str) -> st.SearchStrategy[Any]:
    """Values of one primitive spec type (never null)."""
    if kind in _INT_RANGES:
        lo, hi = _INT_RANGES[kind]
        return st.integers(min_value=lo, max_value=hi)
    if kind == "bool":
        return st.booleans()
    if kind == "float64":
        return st.floats(allow_nan=False)
    if kind == "uuid":
        return st.binary(min_size=16, max_size=16).map(lambda b: uuid.UUID(bytes=b))
    if kind == "string":
        return _TEXT
    if kind in ("bytes", "records"):
        return st.binary(max_size=16)
    raise AssertionError(f"no strategy for primitive type {kind!r}")


def _field_values(field: FieldSpec, version: int) -> st.SearchStrategy[Any]:
    if field.kind == "array":
        if field.element == "struct":
            assert field.struct is not None
            element = struct_values(field.struct, version)
        else:
            assert field.element is not None
            element = primitive(field.element)
        values: st.SearchStrategy[Any] = st.lists(element, max_size=_MAX_ITEMS)
    elif field.kind == "struct":
        assert field.struct is not None
        values = struct_values(field.struct, version)
    else:
        values = primitive(field.kind)
    if field.is_nullable(version):
        values = st.one_of(st.none(), values)
    return values


def struct_values(struct: StructSpec, version: int) -> st.SearchStrategy[dict[str, Any]]:
    """Mappings for ``struct`` at ``version``: one key per field present then."""
    present = [f for f in struct.fields if version in f.versions]
    return st.fixed_dictionaries({f.attr: _field_values(f, version) for f in present})


def message_values(spec: MessageSpec, version: int) -> st.SearchStrategy[dict[str, Any]]:
    """Mappings for the whole message ``spec`` at ``version``."""
    return struct_values(spec.root, version)
