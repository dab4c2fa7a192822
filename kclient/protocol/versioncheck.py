"""Fields a request sets that the version being sent does not have.

A codec writes only the fields of the version it encodes, so a value for a
field that version lacks would vanish from the wire.  Kafka's Java client
refuses that for every field not marked ``ignorable`` in the spec (its
generated ``write`` throws "Attempted to write a non-default X at version Y")
and drops ignorable fields without a word.  kclient applies the same rule and
reports the dropped ignorable fields as well:

* a non-ignorable field holding a non-default value raises
  :class:`~kclient.errors.FieldVersionError`, unless the caller opted in to
  dropping it (``drop=True``, or ``drop`` naming the field);
* an ignorable one is dropped, as in Java;
* everything dropped is returned, so the caller can record it
  (``Connection.request`` puts it on the response as ``dropped_fields``).

"Non-default" compares with the field's spec default (an empty list for an
array, a fresh struct for a struct, ``None`` where the default is null).
"""

from __future__ import annotations

from collections.abc import Collection, Mapping
from typing import TYPE_CHECKING, Any

import attrs

from kclient.errors import FieldVersionError
from kclient.options import Option, Setting, Text
from kclient.protocol.message import Message
from kclient.protocol.registry import Registry, default_registry
from kclient.protocol.schema import FieldSpec, StructSpec

if TYPE_CHECKING:
    from kclient.protocol.headers import Route

__all__ = ["UnsupportedField", "check_request", "unsupported_fields"]


@attrs.frozen
class UnsupportedField:
    """A field set in a message that the version encoded does not have."""

    #: Where it is: ``topics[0].assignments`` (snake_case names, list indexes).
    path: str
    #: The field's name in Kafka's spec (``Assignments``).
    name: str
    #: The versions that have the field, as the spec writes them (``"2+"``).
    versions: str
    #: The oldest version above the one encoded that has it, or ``None``.
    first_version: int | None
    #: Marked ``ignorable`` in the spec (Kafka drops those silently).
    ignorable: bool


# (id of struct spec, version) -> whether any field of it, or of its children, is
# absent at that version.  Specs live as long as their registry, which keeps them.
_MAY_LACK: dict[tuple[int, int], bool] = {}


def _may_lack(struct: StructSpec, version: int, seen: frozenset[int] = frozenset()) -> bool:
    key = (id(struct), version)
    known = _MAY_LACK.get(key)
    if known is not None:
        return known
    if id(struct) in seen:
        return False
    inner = seen | {id(struct)}
    result = any(version not in f.versions
                 or (f.struct is not None and _may_lack(f.struct, version, inner))
                 for f in struct.fields)
    _MAY_LACK[key] = result
    return result


def _is_default(field: FieldSpec, value: Any, cls: type[Message]) -> bool:
    if field.kind == "array":
        return value is None if field.default_null else (value is None or len(value) == 0)
    if field.kind == "struct":
        if field.default_null or value is None:
            return value is None
        child = cls.child(field.attr)
        return child is not None and bool(value == child())
    return bool(value == field.default)


def _walk(obj: Message, version: int, path: str, out: list[UnsupportedField]) -> None:
    cls = type(obj)
    for field in cls._field_specs:
        value = getattr(obj, field.attr)
        where = f"{path}{field.attr}"
        if version not in field.versions:
            if not _is_default(field, value, cls):
                first = field.versions.lo if field.versions.lo > version else None
                out.append(UnsupportedField(where, field.name, str(field.versions), first,
                                            field.ignorable))
            continue
        if field.struct is None or value is None or not _may_lack(field.struct, version):
            continue
        if isinstance(value, list):
            for index, item in enumerate(value):
                if isinstance(item, Message):
                    _walk(item, version, f"{where}[{index}].", out)
        elif isinstance(value, Message):
            _walk(value, version, f"{where}.", out)


def unsupported_fields(message: Message, version: int, struct: StructSpec
                       ) -> list[UnsupportedField]:
    """Every field set in ``message`` (of ``struct``) that ``version`` lacks, outermost
    first; fields inside an unsupported struct are not listed separately."""
    if not _may_lack(struct, version):
        return []
    out: list[UnsupportedField] = []
    _walk(message, version, "", out)
    return out


def _opted_in(item: UnsupportedField, drop: bool | Collection[str]) -> bool:
    if isinstance(drop, bool):
        return drop
    leaf = item.path.rsplit(".", 1)[-1]
    return bool({item.path, item.name, leaf} & set(drop))


def check_request(name: str, version: int, body: Mapping[str, Any] | Message | object, *,
                  drop: bool | Collection[str] = False, broker: str | None = None,
                  broker_max: int | None = None, registry: Registry | None = None,
                  route: Route | None = None,
                  ) -> tuple[Message, tuple[UnsupportedField, ...]]:
    """Build message ``name`` from ``body`` and apply the rule above at ``version``.

    Returns the message and what will not be sent.  ``drop`` is ``True`` to drop
    every unsupported field, or the names (snake_case, Kafka's, or paths like
    ``topics[0].assignments``) that may be dropped.  ``broker`` and
    ``broker_max`` (its highest version of the API) only make the error clearer;
    the error names ``version`` and ``drop_unsupported`` as options
    (:attr:`~kclient.KClientError.options`), which the command line prints as
    ``--version`` and ``--drop-unsupported``.  ``route``
    (the :class:`~kclient.protocol.headers.Route` of this request and version)
    spares looking the message up in ``registry``.
    """
    if route is not None:
        message_class, root = route.request.message_class, route.request_root
    else:
        registry = registry or default_registry()
        message_class, root = registry.message_class(name), registry.spec(name).root
    message = message_class.from_value(body)
    found = unsupported_fields(message, version, root)
    refused = [f for f in found if not f.ignorable and not _opted_in(f, drop)]
    if refused:
        raise _error(name, version, refused, broker, broker_max)
    return message, tuple(found)


def _error(name: str, version: int, refused: list[UnsupportedField], broker: str | None,
           broker_max: int | None) -> FieldVersionError:
    first = refused[0]
    if first.first_version is not None:
        has = f"exists from v{first.first_version} on"
        if broker is not None and broker_max is not None and broker_max < first.first_version:
            fix = (f"broker {broker} speaks {name} up to v{broker_max}: send it to a broker "
                   f"that supports v{first.first_version}, or ")
        else:
            fix = Text("send ", Setting("version", str(first.first_version)),
                       " or later, or ")
    else:
        has = f"exists in v{first.versions} only"
        fix = "leave it unset, or "
    others = "" if len(refused) == 1 else (
        f" (also {', '.join(f.path for f in refused[1:])})")
    where = f" for broker {broker}" if broker is not None else ""
    drop = Option("drop_unsupported", python=f"drop_unsupported=True (or drop_unsupported="
                                             f"[{first.path.rsplit('.', 1)[-1]!r}])")
    text = Text(f"{name} v{version}{where} has no field {first.path} ({first.name} "
                f"{has}), but the request sets it{others}; ", fix, "pass ", drop,
                " to send the request without it")
    return FieldVersionError(text, message=name, version=version, field=first.path,
                             first_version=first.first_version, broker=broker,
                             fields=tuple(f.path for f in refused))
