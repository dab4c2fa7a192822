"""Generate the :class:`~kclient.protocol.message.Message` subclass of each struct.

A class has one slot per field (plus ``_unknown_tags``, and ``_tags_seen`` when
the struct has tagged fields) and a generated ``_init`` that takes the fields
by keyword or position and gives missing ones their defaults.
"""

from __future__ import annotations

import keyword
from typing import Any

from kclient.errors import EncodeError
from kclient.protocol.generated import run_generated
from kclient.protocol.message import MISSING, Message
from kclient.protocol.schema import MessageSpec, StructSpec

__all__ = ["message_classes"]


def _struct_class(owner: str, spec: StructSpec, cache: dict[str, type[Message]],
                  extra_slots: tuple[str, ...] = ()) -> type[Message]:
    existing = cache.get(spec.name)
    if existing is not None:
        return existing
    attrs_ = tuple(f.attr for f in spec.fields)
    for attr in attrs_:
        if keyword.iskeyword(attr) or attr in ("to_dict", "from_value", "unknown_tags",
                                                   "dropped_fields", "raise_for_error"):
            raise EncodeError(f"field {attr!r} of {spec.name} clashes with a Python name")
    has_tagged = any(not f.tagged.empty for f in spec.fields)
    namespace: dict[str, Any] = {
        "__slots__": (*attrs_, "_unknown_tags", *(("_tags_seen",) if has_tagged else ()),
                      *extra_slots),
        "_has_tagged": has_tagged,
        "__module__": "kclient.protocol.messages",
        "__qualname__": f"{owner}.{spec.name}" if owner != spec.name else spec.name,
        "_fields": attrs_,
        "_field_specs": spec.fields,
    }
    cls: type[Message] = type(spec.name, (Message,), namespace)
    cache[spec.name] = cls
    children: dict[str, type[Message]] = {}
    for f in spec.fields:
        if f.struct is not None:
            children[f.attr] = _struct_class(owner, f.struct, cache)
    cls._children = children
    by_name = {f.attr: f.attr for f in spec.fields}
    by_name.update({f.name: f.attr for f in spec.fields})
    cls._by_name = by_name
    # __init__: keyword or positional, fresh containers for array/struct defaults.
    env: dict[str, Any] = {"_MISSING": MISSING}
    params, body = [], []
    for i, f in enumerate(spec.fields):
        params.append(f"{f.attr}=_MISSING")
        if f.kind == "array":
            fresh = "None" if f.default_null else "[]"
            body.append(f"    self.{f.attr} = {fresh} if {f.attr} is _MISSING else {f.attr}")
        elif f.kind == "struct":
            env[f"_C{i}"] = children[f.attr]
            fresh = "None" if f.default_null else f"_C{i}()"
            body.append(f"    self.{f.attr} = {fresh} if {f.attr} is _MISSING else {f.attr}")
        else:
            env[f"_D{i}"] = f.default
            body.append(f"    self.{f.attr} = _D{i} if {f.attr} is _MISSING else {f.attr}")
    params.append("_unknown_tags=None")
    body.append("    self._unknown_tags = _unknown_tags")
    if has_tagged:
        body.append("    self._tags_seen = None")
    src = f"def _init(self, {', '.join(params)}):\n" + "\n".join(body) + "\n"
    run_generated(src, env, f"{namespace['__qualname__']}.__init__")
    cls._init = env["_init"]  # type: ignore[method-assign]
    return cls



def message_classes(spec: MessageSpec) -> dict[str, type[Message]]:
    """Generate (once per spec) the Message subclasses of every struct in ``spec``."""
    classes: dict[str, type[Message]] = {}
    # A response records the request fields not sent (Message.dropped_fields).
    _struct_class(spec.name, spec.root, classes,
                  ("_dropped",) if spec.type == "response" else ())
    for s in spec.structs.values():
        _struct_class(spec.name, s, classes)
    return classes
