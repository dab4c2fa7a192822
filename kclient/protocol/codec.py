"""Compile message specs into specialised encoders and decoders.

For every (struct, version) the compiler writes the Python source of one
encode and one decode function — consecutive fixed-width fields packed with a
single :class:`struct.Struct`, lengths checked against the remaining bytes
before anything is allocated — executes it once and caches the result.
Decoded values are instances of a generated :class:`Message` subclass per
struct with snake_case attributes.
"""

from __future__ import annotations

import functools
import gc
import keyword
import re
import struct
import uuid
from collections.abc import Callable, Iterator, Mapping
from typing import Any, ClassVar

from kclient.errors import (
    EncodeError,
    InvalidLengthError,
    InvalidTaggedFieldsError,
    InvalidVarintError,
    ProtocolError,
    TruncatedMessageError,
)
from kclient.protocol.schema import FieldSpec, MessageSpec, StructSpec

__all__ = ["CompiledMessage", "Message", "compile_message", "read_uvarint", "write_uvarint"]

_FIXED: dict[str, tuple[str, int]] = {
    "bool": ("?", 1),
    "int8": ("b", 1),
    "int16": ("h", 2),
    "uint16": ("H", 2),
    "int32": ("i", 4),
    "uint32": ("I", 4),
    "int64": ("q", 8),
    "float64": ("d", 8),
}
_MISSING: Any = type("_Missing", (), {"__repr__": lambda self: "<missing>"})()
_CODE_FILENAME = "<kclient-codec>"


# ---------------------------------------------------------------- varints


_UVARINT_SMALL = tuple(bytes([i]) for i in range(128))


def write_uvarint(value: int) -> bytes:
    """Encode an unsigned varint (7 bits a byte, low group first)."""
    if value < 128:
        if value < 0:
            raise EncodeError(f"unsigned varint cannot hold {value}")
        return _UVARINT_SMALL[value]
    out = bytearray()
    while value >= 0x80:
        out.append((value & 0x7F) | 0x80)
        value >>= 7
    out.append(value)
    return bytes(out)


def read_uvarint(buf: bytes, pos: int, max_bytes: int = 5) -> tuple[int, int]:
    """Decode an unsigned varint at ``pos``; returns ``(value, new_pos)``."""
    result = 0
    shift = 0
    start = pos
    end = len(buf)
    while True:
        if pos >= end:
            raise TruncatedMessageError("data ended inside a varint", start)
        byte = buf[pos]
        pos += 1
        result |= (byte & 0x7F) << shift
        if not byte & 0x80:
            return result, pos
        shift += 7
        if pos - start >= max_bytes:
            raise InvalidVarintError(f"varint longer than {max_bytes} bytes", start)


# ---------------------------------------------------------------- messages


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
        "_Cls": cls, "_M": _MISSING, "_new": type.__call__, "_init": cls._init,
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
    exec(compile("\n".join(lines) + "\n", _CODE_FILENAME, "exec"), env)
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


def _uuid_bytes(value: object, field: str) -> bytes:
    """The 16 bytes of a uuid field's value: a :class:`uuid.UUID` or its text form only.

    Anything else is refused, even an object with a ``bytes`` attribute: its
    length and meaning are unknown, and a wrong length would shift every later
    field on the wire.
    """
    if isinstance(value, uuid.UUID):
        return value.bytes
    if isinstance(value, str):
        try:
            return uuid.UUID(value).bytes
        except ValueError:
            raise EncodeError(f"uuid field {field}: {value[:60]!r} is not a UUID (write it "
                              "as 8-4-4-4-12 hex digits)") from None
    raise EncodeError(f"uuid field {field} takes a uuid.UUID or its text form, not "
                      f"{type(value).__name__}")


def _plain(value: Any) -> Any:
    if isinstance(value, Message):
        return value.to_dict()
    if isinstance(value, list):
        return [_plain(v) for v in value]
    return value


# ---------------------------------------------------------------- class generation


def _struct_class(owner: str, spec: StructSpec, cache: dict[str, type[Message]]) -> type[Message]:
    existing = cache.get(spec.name)
    if existing is not None:
        return existing
    attrs_ = tuple(f.attr for f in spec.fields)
    for attr in attrs_:
        if keyword.iskeyword(attr) or attr in ("to_dict", "from_value", "unknown_tags"):
            raise EncodeError(f"field {attr!r} of {spec.name} clashes with a Python name")
    has_tagged = any(not f.tagged.empty for f in spec.fields)
    namespace: dict[str, Any] = {
        "__slots__": (*attrs_, "_unknown_tags", *(("_tags_seen",) if has_tagged else ())),
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
    env: dict[str, Any] = {"_MISSING": _MISSING}
    params, body = [], []
    for i, f in enumerate(spec.fields):
        params.append(f"{f.attr}=_MISSING")
        if f.kind == "array":
            fresh = "None" if _default_is_null(f) else "[]"
            body.append(f"    self.{f.attr} = {fresh} if {f.attr} is _MISSING else {f.attr}")
        elif f.kind == "struct":
            env[f"_C{i}"] = children[f.attr]
            fresh = "None" if _default_is_null(f) else f"_C{i}()"
            body.append(f"    self.{f.attr} = {fresh} if {f.attr} is _MISSING else {f.attr}")
        else:
            env[f"_D{i}"] = f.default
            body.append(f"    self.{f.attr} = _D{i} if {f.attr} is _MISSING else {f.attr}")
    params.append("_unknown_tags=None")
    body.append("    self._unknown_tags = _unknown_tags")
    if has_tagged:
        body.append("    self._tags_seen = None")
    src = f"def _init(self, {', '.join(params)}):\n" + "\n".join(body) + "\n"
    exec(compile(src, _CODE_FILENAME, "exec"), env)
    cls._init = env["_init"]  # type: ignore[method-assign]
    return cls


def _default_is_null(f: FieldSpec) -> bool:
    return f.default_null


# ---------------------------------------------------------------- code generation


class _Gen:
    """Writes the source of the encode/decode functions of one message version."""

    def __init__(self, spec: MessageSpec, version: int, classes: dict[str, type[Message]]):
        self.spec = spec
        self.version = version
        self.flexible = spec.is_flexible(version)
        self.classes = classes
        self.env: dict[str, Any] = {
            "_unpack_from": struct.unpack_from,
            "_pack": struct.pack,
            "_ruv": read_uvarint,
            "_wuv": write_uvarint,
            "_UV": _UVARINT_SMALL,
            "_UUID": uuid.UUID,
            "_Trunc": TruncatedMessageError,
            "_BadLen": InvalidLengthError,
            "_BadTags": InvalidTaggedFieldsError,
            "_ProtoErr": ProtocolError,
            "_EncErr": EncodeError,
            "_MISSING": _MISSING,
            "_new": object.__new__,
            "_osa": object.__setattr__,
            "_from_bytes": int.from_bytes,
            "_UUID_SAFE": uuid.SafeUUID.unknown,
            "_uuid_bytes": _uuid_bytes,
        }
        self.structs: dict[int, Callable[..., Any]] = {}
        self.lines: list[str] = []
        self.done: set[str] = set()
        self.counter = 0

    def fresh(self, prefix: str) -> str:
        self.counter += 1
        return f"{prefix}{self.counter}"

    def const(self, value: object, prefix: str = "_K") -> str:
        name = self.fresh(prefix)
        self.env[name] = value
        return name

    # -- helpers

    def string_flexible(self, f: FieldSpec) -> bool:
        if f.flexible_override is not None:
            return self.version in f.flexible_override
        return self.flexible

    def emit_struct(self, s: StructSpec) -> str:
        """Generate enc/dec functions for struct ``s`` at this version; return their suffix."""
        suffix = s.name
        if suffix in self.done:
            return suffix
        self.done.add(suffix)
        self.env[f"_Cls_{suffix}"] = self.classes[s.name]
        # nested structs first
        for f in s.fields:
            if self.version in f.versions and f.struct is not None:
                self.emit_struct(f.struct)
        self.emit_function(f"_dec_{suffix}", "buf, pos, end_buf",
                           self.decode_body(s, "o", "    "), "o, pos")
        self.emit_function(f"_enc_{suffix}", "o, out", self.encode_body(s, "o", "    "), "")
        return suffix

    def emit_function(self, name: str, params: str, body: list[str], result: str) -> None:
        """Append ``def name(params): body; return result`` to the module source."""
        # Bind the module-level helpers the body uses as default arguments, so
        # the hot loops read fast locals instead of globals.
        used = sorted({ident for ident in _IDENTIFIER.findall("\n".join(body))
                       if ident in self.env})
        bound = "".join(f", {ident}={ident}" for ident in used)
        self.lines.append(f"def {name}({params}{bound}):")
        self.lines.extend(body)
        self.lines.append(f"    return {result}".rstrip())
        self.lines.append("")

    # -- decoding

    def decode_body(self, s: StructSpec, target: str, pad: str) -> list[str]:
        """Statements decoding struct ``s`` at ``pos`` into a new object ``target``.

        Used both as a function body and inlined into the loop of an array of
        ``s``; every local name it introduces is unique to this emission so
        nested inlined bodies cannot clobber each other.
        """
        cls = self.classes[s.name]
        self.env[f"_Cls_{s.name}"] = cls
        fields = [f for f in s.fields if self.version in f.versions]
        regular = [f for f in fields if not f.is_tagged(self.version)]
        tagged = sorted((f for f in fields if f.is_tagged(self.version)),
                        key=lambda f: f.tag if f.tag is not None else 0)
        tagged_attrs = {f.attr for f in tagged}
        k = self.fresh("")
        out: list[str] = []
        values: dict[str, str] = {}
        tag_byte = ""
        for group, last_group in _field_runs(regular):
            if group[0].kind in _FIXED:
                fmt = ">" + "".join(_FIXED[g.kind][0] for g in group)
                names = [self.fresh("v") for _ in group]
                extra = ""
                if self.flexible and last_group:
                    # Read the tag-count byte with the trailing fixed fields.
                    fmt += "B"
                    tag_byte = self.fresh("tb")
                    extra = f", {tag_byte}"
                size = struct.calcsize(fmt)
                unpacker = self.const(struct.Struct(fmt).unpack_from, "_U")
                unpacked = ", ".join(names) + extra + ("," if len(names) == 1 and not extra
                                                       else "")
                out.append(f"{pad}{unpacked} = {unpacker}(buf, pos)")
                out.append(f"{pad}pos += {size}")
                for g, n in zip(group, names, strict=True):
                    values[g.attr] = n
                continue
            f = group[0]
            name = self.fresh("v")
            out.extend(self.decode_value(f, name, pad))
            values[f.attr] = name
        unknown = seen_expr = "None"
        if self.flexible:
            ntags, unk, last, tag = f"ntags{k}", f"unknown{k}", f"last{k}", f"tag{k}"
            if tag_byte:
                test, rewind = f"{tag_byte} == 0", "pos -= 1"
            else:
                test, rewind = "buf[pos] == 0", ""
            tsize, tag_end, tag_pos = f"size{k}", f"tag_end{k}", f"tag_pos{k}"
            for f in tagged:
                values[f.attr] = self.fresh("t")
                out.append(f"{pad}{values[f.attr]} = _MISSING")
            out.append(f"{pad}{unk} = None")
            seen = f"seen{k}" if tagged else "None"
            if tagged:
                out.append(f"{pad}{seen} = None")
            p2 = pad + "    "
            if tag_byte:
                out.append(f"{pad}if not {test}:")
                out.append(f"{p2}{rewind}")
            else:
                out.append(f"{pad}if {test}:")
                out.append(f"{pad}    pos += 1")
                out.append(f"{pad}else:")
            out.append(f"{p2}{ntags}, pos = _ruv(buf, pos)")
            if tagged:
                out.append(f"{p2}{seen} = []")
            out.append(f"{p2}{last} = -1")
            out.append(f"{p2}for _ in range({ntags}):")
            p3 = p2 + "    "
            out.append(f"{p3}{tag_pos} = pos")
            out.append(f"{p3}{tag}, pos = _ruv(buf, pos)")
            out.append(f"{p3}{tsize}, pos = _ruv(buf, pos)")
            out.append(f"{p3}if {tag} <= {last}:")
            out.append(f"{p3}    raise _BadTags('tag ' + str({tag}) + ' after tag ' + str({last}) "
                       f"+ ': tags must be strictly ascending', {tag_pos})")
            out.append(f"{p3}{last} = {tag}")
            out.append(f"{p3}{tag_end} = pos + {tsize}")
            out.append(f"{p3}if {tag_end} > end_buf:")
            out.append(f"{p3}    raise _Trunc('tagged field ' + str({tag}) + ' of ' + str({tsize}) "
                       f"+ ' bytes runs past the end of the data', {tag_pos})")
            first = True
            for f in tagged:
                kw = "if" if first else "elif"
                first = False
                out.append(f"{p3}{kw} {tag} == {f.tag}:")
                out.append(f"{p3}    {seen}.append({tag})")
                out.extend(self.decode_value(f, values[f.attr], p3 + "    "))
                out.append(f"{p3}    if pos != {tag_end}:")
                out.append(f"{p3}        raise _ProtoErr('tagged field {f.name} declared ' + "
                           f"str({tsize}) + ' bytes but used ' + str(pos - {tag_end} + {tsize}), "
                           f"{tag_pos})")
            p4 = p3
            if tagged:
                out.append(f"{p3}else:")
                p4 = p3 + "    "
            out.append(f"{p4}if {unk} is None:")
            out.append(f"{p4}    {unk} = {{}}")
            out.append(f"{p4}{unk}[{tag}] = buf[pos:{tag_end}]")
            out.append(f"{p4}pos = {tag_end}")
            unknown = unk
            seen_expr = seen
        out.extend(self.construct(s, target, pad, values, tagged_attrs, unknown, seen_expr))
        return out

    def allocator(self, s: StructSpec) -> str:
        """Name of a zero-argument callable returning a blank instance of ``s``'s class."""
        name = f"_A_{s.name}"
        if name not in self.env:
            self.env[name] = _allocator(self.classes[s.name])
        return name

    def construct(self, s: StructSpec, target: str, pad: str, values: dict[str, str],
                  tagged_attrs: set[str], unknown: str, seen: str = "None") -> list[str]:
        """Statements building ``target`` from decoded locals (defaults for the rest)."""
        cls = self.classes[s.name]
        out = [f"{pad}{target} = {self.allocator(s)}()"]
        for index, f in enumerate(s.fields):
            value = values.get(f.attr)
            if value is None:
                value = self.fresh_default(f, index, cls)
            elif f.attr in tagged_attrs:
                value = (f"({self.fresh_default(f, index, cls)} if {value} is _MISSING "
                         f"else {value})")
            out.append(f"{pad}{target}.{f.attr} = {value}")
        out.append(f"{pad}{target}._unknown_tags = {unknown}")
        if cls._has_tagged:
            out.append(f"{pad}{target}._tags_seen = {seen}")
        return out

    def fixed_struct_fast_path(self, f: FieldSpec, target: str, append: str,
                               pad: str) -> tuple[list[str], str] | None:
        """Decode an array of all-fixed-width structs with one ``iter_unpack``.

        Applies when every regular field of the element struct is fixed-width.
        In flexible versions each element ends with its tag-section count; the
        fast path handles the usual case of all counts being 0 and otherwise
        leaves the returned flag variable false so the general loop re-reads the
        array.  Returns ``None`` when the struct does not qualify.
        """
        s = f.struct
        if s is None:
            return None
        fields = [g for g in s.fields if self.version in g.versions]
        regular = [g for g in fields if not g.is_tagged(self.version)]
        if not regular or any(g.kind not in _FIXED for g in regular):
            return None
        fmt = ">" + "".join(_FIXED[g.kind][0] for g in regular) + ("B" if self.flexible else "")
        size = struct.calcsize(fmt)
        iter_unpack = self.const(struct.Struct(fmt).iter_unpack, "_IU")
        names = [self.fresh("f") for _ in regular]
        tag_byte = self.fresh("tb") if self.flexible else ""
        targets = ", ".join(names + ([tag_byte] if tag_byte else []))
        if len(names) == 1 and not tag_byte:
            targets += ","
        item = self.fresh("item")
        done = self.fresh("done")
        inner = pad + "    "
        lines = [f"{pad}if pos + n * {size} > end_buf:",
                 f"{pad}    raise _BadLen('array {f.name} claims ' + str(n) + ' elements "
                 "but only ' + str(end_buf - pos) + ' bytes are left', len_pos)",
                 f"{pad}{done} = True",
                 f"{pad}for {targets} in {iter_unpack}(buf[pos:pos + n * {size}]):"]
        if tag_byte:
            lines += [f"{inner}if {tag_byte}:",
                      f"{inner}    {done} = False",
                      f"{inner}    break"]
        values = dict(zip((g.attr for g in regular), names, strict=True))
        # Tagged fields are absent (count 0): passing no local makes them defaults.
        lines += self.construct(s, item, inner, values, set(), "None")
        lines.append(f"{inner}{append}({item})")
        lines.append(f"{pad}if {done}:")
        lines.append(f"{pad}    pos += n * {size}")
        return lines, done

    def decode_value(self, f: FieldSpec, target: str, pad: str) -> list[str]:
        """Statements that decode field ``f`` at ``pos`` into ``target``."""
        nullable = f.is_nullable(self.version)
        if f.kind in _FIXED:
            code, size = _FIXED[f.kind]
            unpacker = self.const(struct.Struct(">" + code).unpack_from, "_U")
            return [f"{pad}{target}, = {unpacker}(buf, pos)", f"{pad}pos += {size}"]
        if f.kind == "uuid":
            return [f"{pad}if pos + 16 > end_buf:",
                    f"{pad}    raise _Trunc('data ended inside uuid {f.name}', pos)",
                    # uuid.UUID(bytes=...) runs ~0.7 us of Python; filling its two
                    # slots directly builds an equal, immutable UUID in half the time.
                    f"{pad}{target} = _new(_UUID)",
                    f"{pad}_osa({target}, 'int', _from_bytes(buf[pos:pos + 16], 'big'))",
                    f"{pad}_osa({target}, 'is_safe', _UUID_SAFE)",
                    f"{pad}pos += 16"]
        if f.kind in ("string", "bytes", "records"):
            compact = self.string_flexible(f) if f.kind != "records" else self.flexible
            lines = self.read_length(f, compact, "n", pad, int16=(f.kind == "string"))
            lines.append(f"{pad}if n < 0:")
            if nullable:
                lines.append(f"{pad}    {target} = None")
            else:
                lines.append(f"{pad}    raise _BadLen('null {f.name} where null is not "
                             "allowed', len_pos)")
            lines.append(f"{pad}else:")
            lines.append(f"{pad}    if pos + n > end_buf:")
            lines.append(f"{pad}        raise _BadLen('length ' + str(n) + ' of {f.name} exceeds "
                         "the ' + str(end_buf - pos) + ' bytes left', len_pos)")
            if f.kind == "string":
                lines.append(f"{pad}    {target} = buf[pos:pos + n].decode('utf-8')")
            else:
                lines.append(f"{pad}    {target} = bytes(buf[pos:pos + n])")
            lines.append(f"{pad}    pos += n")
            return lines
        if f.kind == "struct":
            assert f.struct is not None
            suffix = f.struct.name
            if nullable:
                return [f"{pad}if buf[pos] == 0xFF:",
                        f"{pad}    {target} = None",
                        f"{pad}    pos += 1",
                        f"{pad}else:",
                        f"{pad}    pos += 1",
                        f"{pad}    {target}, pos = _dec_{suffix}(buf, pos, end_buf)"]
            return [f"{pad}{target}, pos = _dec_{suffix}(buf, pos, end_buf)"]
        # arrays
        lines = self.read_length(f, self.flexible, "n", pad, int16=False)
        lines.append(f"{pad}if n < 0:")
        if nullable:
            lines.append(f"{pad}    {target} = None")
        else:
            lines.append(f"{pad}    raise _BadLen('null array {f.name} where null is not "
                         "allowed', len_pos)")
        lines.append(f"{pad}else:")
        lines.append(f"{pad}    if n > end_buf - pos:")
        lines.append(f"{pad}        raise _BadLen('array {f.name} claims ' + str(n) + ' "
                     "elements but only ' + str(end_buf - pos) + ' bytes are left', len_pos)")
        elem = f.element
        inner = pad + "    "
        if elem in _FIXED:
            code, size = _FIXED[elem]
            table = self.const(_array_unpackers(code), "_AU")
            lines[-2:] = []  # the element-count check below is stricter
            lines.append(f"{inner}if pos + n * {size} > end_buf:")
            lines.append(f"{inner}    raise _BadLen('array {f.name} claims ' + str(n) + ' elements "
                         "but only ' + str(end_buf - pos) + ' bytes are left', len_pos)")
            lines.append(f"{inner}{target} = list({table}[n](buf, pos) if n < {_SMALL_ARRAY} "
                         f"else _unpack_from('>' + str(n) + '{code}', buf, pos))")
            lines.append(f"{inner}pos += n * {size}")
            return lines
        append = self.fresh("append")
        lines.append(f"{inner}{target} = []")
        lines.append(f"{inner}{append} = {target}.append")
        if elem == "struct":
            assert f.struct is not None
            item = self.fresh("item")
            fast = self.fixed_struct_fast_path(f, target, append, inner)
            loop_pad = inner
            if fast is not None:
                fast_lines, done = fast
                lines.extend(fast_lines)
                if not self.flexible:
                    return lines
                lines.append(f"{inner}if not {done}:")
                loop_pad = inner + "    "
                lines.append(f"{loop_pad}{target} = []")
                lines.append(f"{loop_pad}{append} = {target}.append")
            lines.append(f"{loop_pad}for _ in range(n):")
            lines.extend(self.decode_body(f.struct, item, loop_pad + "    "))
            lines.append(f"{loop_pad}    {append}({item})")
            return lines
        # arrays of strings, bytes, uuids, records
        assert elem is not None
        element_field = _element_field(f, elem)
        lines.append(f"{inner}for _ in range(n):")
        item = self.fresh("item")
        lines.extend(self.decode_value(element_field, item, inner + "    "))
        lines.append(f"{inner}    {append}({item})")
        return lines

    def fresh_default(self, f: FieldSpec, index: int, cls: type[Message]) -> str:
        """An expression for the default of a field the wire did not carry."""
        if f.kind == "array":
            return "None" if f.default_null else "[]"
        if f.kind == "struct":
            if f.default_null:
                return "None"
            return f"{self.const(cls._children[f.attr], '_C')}()"
        return self.const(f.default, "_D")

    def read_length(self, f: FieldSpec, compact: bool, var: str, pad: str,
                    int16: bool) -> list[str]:
        if compact:
            return [f"{pad}len_pos = pos",
                    f"{pad}{var} = buf[pos] - 1",
                    f"{pad}if {var} < 127:",
                    f"{pad}    pos += 1",
                    f"{pad}else:",
                    f"{pad}    {var}, pos = _ruv(buf, pos)",
                    f"{pad}    {var} -= 1"]
        unpacker = self.const(struct.Struct(">h" if int16 else ">i").unpack_from, "_U")
        return [f"{pad}len_pos = pos",
                f"{pad}{var}, = {unpacker}(buf, pos)",
                f"{pad}pos += {2 if int16 else 4}",
                f"{pad}if {var} < -1:",
                f"{pad}    raise _BadLen('negative length ' + str({var}) + ' for {f.name}', "
                "len_pos)"]

    # -- encoding

    def encode_body(self, s: StructSpec, obj: str, pad: str) -> list[str]:
        """Statements appending struct ``s`` (the object in local ``obj``) to ``out``.

        Like :meth:`decode_body` it is inlined into the loops of struct arrays,
        so every local it introduces is unique to this emission.
        """
        fields = [f for f in s.fields if self.version in f.versions]
        regular = [f for f in fields if not f.is_tagged(self.version)]
        tagged = sorted((f for f in fields if f.is_tagged(self.version)),
                        key=lambda f: f.tag if f.tag is not None else 0)
        out: list[str] = []
        for group, _ in _field_runs(regular):
            if group[0].kind in _FIXED:
                fmt = ">" + "".join(_FIXED[g.kind][0] for g in group)
                packer = self.const(struct.Struct(fmt).pack, "_P")
                args = ", ".join(f"{obj}.{g.attr}" for g in group)
                out.append(f"{pad}out += {packer}({args})")
                continue
            out.extend(self.encode_value(group[0], f"{obj}.{group[0].attr}", pad))
        if not self.flexible:
            return out
        k = self.fresh("")
        unknown, items, saved = f"unknown{k}", f"items{k}", f"out_saved{k}"
        tag, data = f"tag{k}", f"data{k}"
        p2 = pad + "    "
        if not tagged:
            out.append(f"{pad}{unknown} = {obj}._unknown_tags")
            out.append(f"{pad}if not {unknown}:")
            out.append(f"{p2}out.append(0)")
            out.append(f"{pad}else:")
            out.append(f"{p2}{items} = sorted({unknown}.items())")
            tail = p2
        else:
            out.append(f"{pad}{items} = []")
            # A tag is written when it differs from its default, or when it was
            # on the wire of the message this one was decoded from.
            out.append(f"{pad}seen{k} = {obj}._tags_seen or ()")
            for f in tagged:
                var = self.fresh("t")
                out.append(f"{pad}{var} = {obj}.{f.attr}")
                out.append(f"{pad}if {self.non_default(f, var)} or {f.tag} in seen{k}:")
                out.append(f"{p2}{saved} = out")
                out.append(f"{p2}out = bytearray()")
                out.extend(self.encode_value(f, var, p2))
                out.append(f"{p2}{items}.append(({f.tag}, out))")
                out.append(f"{p2}out = {saved}")
            out.append(f"{pad}{unknown} = {obj}._unknown_tags")
            out.append(f"{pad}if {unknown}:")
            out.append(f"{p2}known{k} = {{t for t, _ in {items}}}")
            out.append(f"{p2}{items}.extend(kv for kv in {unknown}.items() if kv[0] not in "
                       f"known{k})")
            out.append(f"{p2}{items}.sort()")
            tail = pad
        out.append(f"{tail}out += _wuv(len({items}))")
        out.append(f"{tail}for {tag}, {data} in {items}:")
        out.append(f"{tail}    out += _wuv({tag})")
        out.append(f"{tail}    out += _wuv(len({data}))")
        out.append(f"{tail}    out += {data}")
        return out

    def non_default(self, f: FieldSpec, var: str) -> str:
        # A tagged field is omitted only when it equals its default; null differs
        # from a non-null default and an empty struct from a null default.
        if f.kind == "array":
            return f"{var} is not None" if f.default_null else f"({var} is None or {var})"
        if f.kind == "struct":
            if f.default_null:
                return f"{var} is not None"
            cls_name = self.const(self.classes[f.struct.name] if f.struct else None, "_C")
            return f"({var} is None or {var} != {cls_name}())"
        default = self.const(f.default, "_D")
        return f"{var} != {default}"

    def encode_value(self, f: FieldSpec, expr: str, pad: str) -> list[str]:
        nullable = f.is_nullable(self.version)
        if f.kind in _FIXED:
            packer = self.const(struct.Struct(">" + _FIXED[f.kind][0]).pack, "_P")
            return [f"{pad}out += {packer}({expr})"]
        if f.kind == "uuid":
            return [f"{pad}out += ({expr}.bytes if type({expr}) is _UUID else "
                    f"_uuid_bytes({expr}, {f.name!r}))"]
        if f.kind in ("string", "bytes", "records"):
            compact = self.string_flexible(f) if f.kind != "records" else self.flexible
            var = self.fresh("s")
            lines = self.null_guard(f, var, expr, pad,
                                    self.null_marker(compact, f.kind == "string"), "")
            if f.kind == "string":
                lines.append(f"{pad}    {var} = {var}.encode('utf-8')")
            length = self.fresh("n")
            lines.append(f"{pad}    {length} = len({var})")
            lines.extend(self.write_length(length, compact, pad + "    ",
                                           int16=(f.kind == "string")))
            lines.append(f"{pad}    out += {var}")
            return lines
        if f.kind == "struct":
            assert f.struct is not None
            if nullable:
                var = self.fresh("s")
                return [f"{pad}{var} = {expr}",
                        f"{pad}if {var} is None:",
                        f"{pad}    out.append(0xFF)",
                        f"{pad}else:",
                        f"{pad}    out.append(1)",
                        f"{pad}    _enc_{f.struct.name}({var}, out)"]
            return [f"{pad}_enc_{f.struct.name}({expr}, out)"]
        var = self.fresh("a")
        lines = self.null_guard(f, var, expr, pad, self.null_marker(self.flexible, False),
                                "array ")
        inner = pad + "    "
        count = self.fresh("n")
        lines.append(f"{inner}{count} = len({var})")
        lines.extend(self.write_length(count, self.flexible, inner, int16=False))
        elem = f.element
        if elem in _FIXED:
            code = _FIXED[elem][0]
            table = self.const(_array_packers(code), "_AP")
            lines.append(f"{inner}out += ({table}[{count}](*{var}) if {count} < {_SMALL_ARRAY} "
                         f"else _pack('>' + str({count}) + '{code}', *{var}))")
            return lines
        item = self.fresh("item")
        lines.append(f"{inner}for {item} in {var}:")
        if elem == "struct":
            assert f.struct is not None
            lines.extend(self.encode_body(f.struct, item, inner + "    "))
            return lines
        assert elem is not None
        lines.extend(self.encode_value(_element_field(f, elem), item, inner + "    "))
        return lines

    def null_guard(self, f: FieldSpec, var: str, expr: str, pad: str, marker: str,
                   what: str) -> list[str]:
        """``var = expr``; write ``marker`` for None (or refuse it), then open ``else:``."""
        if f.is_nullable(self.version):
            on_null = f"out += {marker}"
        else:
            on_null = f"raise _EncErr('{what}{f.name} cannot be null in version {self.version}')"
        return [f"{pad}{var} = {expr}", f"{pad}if {var} is None:", f"{pad}    {on_null}",
                f"{pad}else:"]

    def null_marker(self, compact: bool, int16: bool) -> str:
        if compact:
            return "b'\\x00'"
        return "b'\\xff\\xff'" if int16 else "b'\\xff\\xff\\xff\\xff'"

    def write_length(self, expr: str, compact: bool, pad: str, int16: bool) -> list[str]:
        if compact:
            # ``expr`` is a local name; one-byte varints (the usual case) inline.
            return [f"{pad}if {expr} < 127:",
                    f"{pad}    out.append({expr} + 1)",
                    f"{pad}else:",
                    f"{pad}    out += _wuv({expr} + 1)"]
        packer = self.const(struct.Struct(">h" if int16 else ">i").pack, "_P")
        return [f"{pad}out += {packer}({expr})"]


_SMALL_ARRAY = 64


def _field_runs(fields: list[FieldSpec]) -> Iterator[tuple[list[FieldSpec], bool]]:
    """Split fields into runs: consecutive fixed-width fields together (one struct
    call packs or unpacks them), every other field alone.  The flag marks the last run.
    """
    i = 0
    while i < len(fields):
        j = i + 1
        if fields[i].kind in _FIXED:
            while j < len(fields) and fields[j].kind in _FIXED:
                j += 1
        yield fields[i:j], j == len(fields)
        i = j

_IDENTIFIER = re.compile(r"\b_[A-Za-z][A-Za-z0-9_]*\b")
_PAUSE_GC_ABOVE = 64 * 1024


def _allocator(cls: type[Message]) -> Callable[[], Message]:
    """``type.__call__`` bound to ``cls``: a blank instance, skipping ``_MessageType.__call__``."""
    call: Callable[[], Message] = type.__dict__["__call__"].__get__(cls)
    return call


def _array_packers(code: str) -> tuple[Callable[..., bytes], ...]:
    """``table[n]`` packs ``n`` values of struct code ``code`` (precompiled, n < 64)."""
    return tuple(struct.Struct(f">{n}{code}").pack for n in range(_SMALL_ARRAY))


def _array_unpackers(code: str) -> tuple[Callable[..., tuple[Any, ...]], ...]:
    """``table[n]`` unpacks ``n`` values of struct code ``code`` (precompiled, n < 64)."""
    return tuple(struct.Struct(f">{n}{code}").unpack_from for n in range(_SMALL_ARRAY))


def _element_field(f: FieldSpec, elem: str) -> FieldSpec:
    """A pseudo-field describing one element of an array of non-struct values."""
    from kclient.protocol.schema import Versions

    return FieldSpec(
        name=f"{f.name}[]", attr=f.attr, kind=elem, element=None, struct=None,
        versions=f.versions, nullable=Versions.none(), tagged=Versions.none(), tag=None,
        default=None, default_null=False, ignorable=False, flexible_override=f.flexible_override,
        entity_type=None, map_key=False, about="",
    )


# ---------------------------------------------------------------- compiled messages


def _failure_offset(tb: Any) -> int | None:
    """Where generated code was reading when a low-level error escaped it."""
    pos = None
    while tb is not None:
        frame = tb.tb_frame
        if frame.f_code.co_filename == _CODE_FILENAME:
            pos = frame.f_locals.get("pos", pos)
        tb = tb.tb_next
    return pos if isinstance(pos, int) else None


class CompiledMessage:
    """The specialised encoder and decoder of one message at one version."""

    __slots__ = ("_decode", "_encode", "message_class", "name", "source", "version")

    def __init__(self, spec: MessageSpec, version: int, classes: dict[str, type[Message]]):
        if version not in spec.valid:
            from kclient.errors import UnknownMessageError

            raise UnknownMessageError(f"{spec.name} has no version {version} (valid: "
                                      f"{spec.valid})")
        self.name = spec.name
        self.version = version
        gen = _Gen(spec, version, classes)
        root = gen.emit_struct(spec.root)
        self.source = "\n".join(gen.lines)
        exec(compile(self.source, _CODE_FILENAME, "exec"), gen.env)
        self._decode: Callable[[bytes, int, int], tuple[Message, int]] = gen.env[f"_dec_{root}"]
        self._encode: Callable[[Message, bytearray], None] = gen.env[f"_enc_{root}"]
        self.message_class = classes[spec.root.name]

    def decode_from(self, data: bytes, pos: int = 0) -> tuple[Message, int]:
        """Decode one message starting at ``pos``; returns it and the offset after it."""
        try:
            return self._decode(data, pos, len(data))
        except (struct.error, IndexError) as exc:
            offset = _failure_offset(exc.__traceback__)
            raise TruncatedMessageError(
                f"{self.name} v{self.version}: data ended early ({len(data)} bytes)", offset
            ) from None
        except UnicodeDecodeError as exc:
            offset = _failure_offset(exc.__traceback__)
            raise ProtocolError(f"{self.name} v{self.version}: string is not valid UTF-8",
                                offset) from None
        except ValueError as exc:
            if isinstance(exc, ProtocolError):
                raise
            raise ProtocolError(f"{self.name} v{self.version}: {exc}",
                                _failure_offset(exc.__traceback__)) from None

    def decode(self, data: bytes | bytearray | memoryview) -> Message:
        """Decode exactly one message; trailing bytes are an error."""
        buf = bytes(data)
        if len(buf) >= _PAUSE_GC_ABOVE and gc.isenabled():
            # Decoding allocates many small objects that all survive; letting the
            # cyclic collector scan them mid-decode costs ~20% and frees nothing.
            gc.disable()
            try:
                message, end = self.decode_from(buf, 0)
            finally:
                gc.enable()
        else:
            message, end = self.decode_from(buf, 0)
        if end != len(buf):
            raise ProtocolError(f"{self.name} v{self.version}: {len(buf) - end} unexpected "
                                "trailing bytes", end)
        return message

    def encode_into(self, value: object, out: bytearray) -> None:
        """Append the encoding of ``value`` to ``out``."""
        message = self.message_class.from_value(value)
        try:
            self._encode(message, out)
        except (struct.error, TypeError, AttributeError, OverflowError,
                UnicodeEncodeError) as exc:
            raise EncodeError(f"cannot encode {self.name} v{self.version}: {exc}") from None

    def encode(self, value: object) -> bytes:
        """Encode a message (instance or mapping) to bytes."""
        out = bytearray()
        self.encode_into(value, out)
        return bytes(out)


def message_classes(spec: MessageSpec) -> dict[str, type[Message]]:
    """Generate (once per spec) the Message subclasses of every struct in ``spec``."""
    classes: dict[str, type[Message]] = {}
    _struct_class(spec.name, spec.root, classes)
    for s in spec.structs.values():
        _struct_class(spec.name, s, classes)
    return classes


def compile_message(spec: MessageSpec, version: int,
                    classes: dict[str, type[Message]] | None = None) -> CompiledMessage:
    """Compile ``spec`` at ``version`` (callers cache the result)."""
    return CompiledMessage(spec, version, classes if classes is not None else
                           message_classes(spec))
