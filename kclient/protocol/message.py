"""The runtime of decoded messages: :class:`Message` and its builders.

Each struct of a spec becomes a generated subclass of :class:`Message` (see
:mod:`kclient.protocol.classgen`) with one slot per field; ``from_value``
builds one from a mapping through a builder generated on first use.
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Mapping
from typing import Any, ClassVar

from kclient.errors import EncodeError
from kclient.protocol.generated import run_generated
from kclient.protocol.response_errors import raise_for_error
from kclient.protocol.schema import FieldSpec

__all__ = ["MISSING", "UNKNOWN_TAGS_KEY", "Message"]

#: Marks an argument or tagged field that was not given.
MISSING: Any = type("_Missing", (), {"__repr__": lambda self: "<missing>"})()


class _MessageType(type):
    """Metaclass of :class:`Message`: ``Cls(**fields)`` runs the generated ``_init``.

    Message classes have no ``__init__`` of their own, so a decoder can allocate
    an instance with ``type.__call__`` bound to the class (no Python frame per
    object, about a quarter cheaper than ``object.__new__``) and fill its slots.
    """

    _init: Callable[..., None]

    def __call__(cls, *args: Any, **kwargs: Any) -> Any:
        obj = type.__call__(cls)
        cls._init(obj, *args, **kwargs)
        return obj


#: The key under which ``to_dict`` shows tagged fields the schema does not know.
UNKNOWN_TAGS_KEY = "unknown_tags"


class Message(metaclass=_MessageType):
    """Base class of every decoded (or built) message and struct.

    Attributes are the snake_case field names of the spec.  ``to_dict()``
    gives plain Python values; equality compares every field.
    """

    __slots__ = ()
    _fields: ClassVar[tuple[str, ...]] = ()
    _field_specs: ClassVar[tuple[FieldSpec, ...]] = ()
    _children: ClassVar[dict[str, type[Message]]] = {}
    _by_name: ClassVar[dict[str, str]] = {}
    # The generated from_value of this very class (see _compile_builder), made on first use.
    _build: ClassVar[Callable[[object], Message]]
    # Structs with tagged fields also have a ``_tags_seen`` slot: the known tags
    # that were on the wire when decoded, so that re-encoding writes them again
    # even where they hold their default (as some brokers send them).
    _has_tagged: ClassVar[bool] = False
    _unknown_tags: dict[int, bytes] | None

    def _init(self, _unknown_tags: dict[int, bytes] | None = None) -> None:
        """Set the fields (generated per struct; the base has none)."""

    def __eq__(self, other: object) -> bool:
        if type(other) is not type(self):
            return NotImplemented
        return all(getattr(self, f) == getattr(other, f) for f in self._fields) and (
            (self._unknown_tags or None) == (other._unknown_tags or None)
        )

    __hash__ = None  # type: ignore[assignment]

    def __repr__(self) -> str:
        inner = ", ".join(f"{f}={getattr(self, f)!r}" for f in self._fields)
        return f"{type(self).__name__}({inner})"

    @property
    def dropped_fields(self) -> tuple[Any, ...]:
        """On a response: the request fields that were not sent because the version
        used lacks them (:class:`~kclient.protocol.versioncheck.UnsupportedField`
        items; empty when nothing was dropped)."""
        return getattr(self, "_dropped", ())

    def raise_for_error(self) -> None:
        """Raise :class:`~kclient.errors.KafkaResponseError` when this response carries a
        non-zero error code, at the top level or in one of its items (topics,
        partitions...); return quietly otherwise."""
        raise_for_error(self)

    @property
    def unknown_tags(self) -> Mapping[int, bytes]:
        """Tagged fields this schema does not know, kept to be written back."""
        return dict(self._unknown_tags or {})

    def to_dict(self) -> dict[str, Any]:
        """The message as plain dicts, lists and scalars (snake_case keys).

        Tagged fields the schema does not know appear under ``"unknown_tags"``
        (tag -> raw bytes), only when there are some, so that building a message
        from the dict writes them back.
        """
        out = {f: _plain(getattr(self, f)) for f in self._fields}
        if self._unknown_tags:
            out[UNKNOWN_TAGS_KEY] = dict(sorted(self._unknown_tags.items()))
        return out

    @classmethod
    def fields(cls, version: int | None = None) -> tuple[FieldSpec, ...]:
        """The field specs of this struct in wire order (frozen values); with
        ``version``, only the fields that version carries."""
        if version is None:
            return cls._field_specs
        return tuple(f for f in cls._field_specs if version in f.versions)

    @classmethod
    def field(cls, name: str) -> FieldSpec | None:
        """The spec of field ``name`` (snake_case or Kafka's name), or None."""
        attr = cls._by_name.get(name)
        return None if attr is None else next(f for f in cls._field_specs if f.attr == attr)

    @classmethod
    def child(cls, name: str) -> type[Message] | None:
        """The class of struct field ``name`` (or of its array elements), or None."""
        attr = cls._by_name.get(name)
        return None if attr is None else cls._children.get(attr)

    @classmethod
    def from_value(cls, value: object) -> Message:
        """Build from an instance, a mapping (snake_case or Kafka names) or keyword data."""
        build = cls.__dict__.get("_build") or _compile_builder(cls)
        return build(value)


def _child_value(child: type[Message], item: Any) -> Any:
    if isinstance(item, (list, tuple)):
        return [child.from_value(x) for x in item]
    return child.from_value(item)


def _build_any(cls: type[Message], value: object) -> Message:
    """``from_value`` for every input; the generated builder calls it off its fast path."""
    if isinstance(value, cls):
        return value
    if isinstance(value, Message):
        raise EncodeError(f"expected {cls.__name__}, got {type(value).__name__}")
    if not isinstance(value, Mapping):
        raise EncodeError(f"{cls.__name__} must be built from a mapping, got "
                          f"{type(value).__name__}")
    kwargs: dict[str, Any] = {}
    for key, item in value.items():
        if key == UNKNOWN_TAGS_KEY:
            kwargs["_unknown_tags"] = _unknown_tags_from(cls.__name__, item)
            continue
        attr = cls._by_name.get(key)
        if attr is None:
            known = ", ".join(cls._fields) or "none"
            raise EncodeError(f"{cls.__name__} has no field {key!r} (fields: {known})")
        child = cls._children.get(attr)
        if child is not None and item is not None:
            item = _child_value(child, item)
        kwargs[attr] = item
    return cls(**kwargs)


def _compile_builder(cls: type[Message]) -> Callable[[object], Message]:
    """Generate ``from_value`` for ``cls``: a plain dict of snake_case fields (what
    programs and ``to_dict`` produce) is read field by field with no per-key
    lookups; anything else goes through :func:`_build_any`."""
    # A placeholder first, so that a struct that (through others) contains itself
    # does not compile forever; the generated code looks ``_build`` up per call.
    cls._build = functools.partial(_build_any, cls)
    for child in cls._children.values():
        if "_build" not in child.__dict__:
            _compile_builder(child)
    env: dict[str, Any] = {
        "_Cls": cls, "_M": MISSING, "_new": type.__call__, "_init": cls._init,
        "_K": frozenset(cls._fields), "_any": _build_any, "_child": _child_value,
    }
    lines = ["def _build(value):",
             "    if type(value) is _Cls:",
             "        return value",
             "    if type(value) is not dict or not _K.issuperset(value):",
             "        return _any(_Cls, value)",
             "    g = value.get"]
    args = []
    for i, attr in enumerate(cls._fields):
        var = f"a{i}"
        lines.append(f"    {var} = g({attr!r}, _M)")
        field_child = cls._children.get(attr)
        if field_child is not None:
            env[f"_C{i}"] = field_child
            lines += [f"    if type({var}) is list:",
                      f"        {var} = [e if type(e) is _C{i} else _C{i}._build(e) "
                      f"for e in {var}]",
                      f"    elif {var} is not _M and {var} is not None:",
                      f"        {var} = _child(_C{i}, {var})"]
        args.append(var)
    lines += ["    o = _new(_Cls)",
              f"    _init(o{''.join(', ' + a for a in args)})",
              "    return o"]
    run_generated("\n".join(lines) + "\n", env, f"{cls.__qualname__}.from_value")
    builder: Callable[[object], Message] = env["_build"]
    cls._build = builder
    return builder


def _unknown_tags_from(owner: str, value: object) -> dict[int, bytes] | None:
    if value is None:
        return None
    if not isinstance(value, Mapping):
        raise EncodeError(f"{owner}.{UNKNOWN_TAGS_KEY} must map tag numbers to bytes, got "
                          f"{type(value).__name__}")
    tags: dict[int, bytes] = {}
    for tag, data in value.items():
        try:
            number = int(tag)
        except (TypeError, ValueError):
            number = -1
        if number < 0 or number > 0x7FFFFFFF:
            raise EncodeError(f"{owner}.{UNKNOWN_TAGS_KEY}: {tag!r} is not a tag number "
                              "(0 to 2147483647)")
        if not isinstance(data, (bytes, bytearray)):
            raise EncodeError(f"{owner}.{UNKNOWN_TAGS_KEY}[{number}] must be bytes, got "
                              f"{type(data).__name__}")
        tags[number] = bytes(data)
    return tags or None


def _plain(value: Any) -> Any:
    if isinstance(value, Message):
        return value.to_dict()
    if isinstance(value, list):
        return [_plain(v) for v in value]
    return value

