"""Write the Python source of the decoder and encoder of one message version.

:class:`SourceEmitter` walks a :class:`~kclient.protocol.schema.MessageSpec` at
one version and appends one ``_dec_<Struct>`` and one ``_enc_<Struct>`` function
per struct to :attr:`SourceEmitter.lines`; the constants they use are in
:attr:`SourceEmitter.env`.  See :mod:`kclient.protocol.codec` for the key to
the generated names.
"""

from __future__ import annotations

import re
import struct
import uuid
from collections.abc import Callable, Iterator
from typing import Any

from kclient.errors import (
    EncodeError,
    InvalidLengthError,
    InvalidTaggedFieldsError,
    ProtocolError,
    TruncatedMessageError,
)
from kclient.protocol.message import MISSING, Message
from kclient.protocol.schema import FieldSpec, MessageSpec, StructSpec, Versions
from kclient.protocol.varint import UVARINT_SMALL, read_uvarint, write_uvarint


def uuid_bytes(value: object, field: str) -> bytes:
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

__all__ = ["FIXED", "OFFSET_LOCAL", "SourceEmitter"]

#: Fixed-width kinds: struct format code and size.
FIXED: dict[str, tuple[str, int]] = {
    "bool": ("?", 1),
    "int8": ("b", 1),
    "int16": ("h", 2),
    "uint16": ("H", 2),
    "int32": ("i", 4),
    "uint32": ("I", 4),
    "int64": ("q", 8),
    "float64": ("d", 8),
}
#: The local of every generated decoder that holds the read position.
OFFSET_LOCAL = "pos"


class SourceEmitter:
    """Writes the source of the encode/decode functions of one message version.

    ``lines`` is the source so far, ``env`` the globals it runs in (helpers and
    the constants :meth:`const` made); every local name a body introduces comes
    from :meth:`fresh`, so bodies inlined into each other cannot clash.
    """

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
            "_UV": UVARINT_SMALL,
            "_UUID": uuid.UUID,
            "_Trunc": TruncatedMessageError,
            "_BadLen": InvalidLengthError,
            "_BadTags": InvalidTaggedFieldsError,
            "_ProtoErr": ProtocolError,
            "_EncErr": EncodeError,
            "_MISSING": MISSING,
            "_new": object.__new__,
            "_osa": object.__setattr__,
            "_from_bytes": int.from_bytes,
            "_UUID_SAFE": uuid.SafeUUID.unknown,
            "_uuid_bytes": uuid_bytes,
        }
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
            if group[0].kind in FIXED:
                fmt = ">" + "".join(FIXED[g.kind][0] for g in group)
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
        for f in s.fields:
            value = values.get(f.attr)
            if value is None:
                value = self.fresh_default(f, cls)
            elif f.attr in tagged_attrs:
                value = (f"({self.fresh_default(f, cls)} if {value} is _MISSING "
                         f"else {value})")
            out.append(f"{pad}{target}.{f.attr} = {value}")
        out.append(f"{pad}{target}._unknown_tags = {unknown}")
        if cls._has_tagged:
            out.append(f"{pad}{target}._tags_seen = {seen}")
        return out

    def fixed_struct_fast_path(self, f: FieldSpec, append: str,
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
        if not regular or any(g.kind not in FIXED for g in regular):
            return None
        fmt = ">" + "".join(FIXED[g.kind][0] for g in regular) + ("B" if self.flexible else "")
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
        if f.kind in FIXED:
            code, size = FIXED[f.kind]
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
            lines += self.null_length_guard(f.name, target, nullable, pad)
            lines.append(f"{pad}    if pos + n > end_buf:")
            lines.append(f"{pad}        raise _BadLen('length ' + str(n) + ' of {f.name} exceeds "
                         "the ' + str(end_buf - pos) + ' bytes left', len_pos)")
            if f.kind == "string":
                # bytes.decode() is strict UTF-8 and ~10 ns quicker than decode('utf-8').
                lines.append(f"{pad}    {target} = buf[pos:pos + n].decode()")
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
        lines += self.null_length_guard(f"array {f.name}", target, nullable, pad)
        lines.append(f"{pad}    if n > end_buf - pos:")
        lines.append(f"{pad}        raise _BadLen('array {f.name} claims ' + str(n) + ' "
                     "elements but only ' + str(end_buf - pos) + ' bytes are left', len_pos)")
        elem = f.element
        inner = pad + "    "
        if elem in FIXED:
            code, size = FIXED[elem]
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
            fast = self.fixed_struct_fast_path(f, append, inner)
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

    def fresh_default(self, f: FieldSpec, cls: type[Message]) -> str:
        """An expression for the default of a field the wire did not carry."""
        if f.kind == "array":
            return "None" if f.default_null else "[]"
        if f.kind == "struct":
            if f.default_null:
                return "None"
            return f"{self.const(cls._children[f.attr], '_C')}()"
        return self.const(f.default, "_D")

    @staticmethod
    def null_length_guard(what: str, target: str, nullable: bool, pad: str) -> list[str]:
        """After a length ``n`` is read: null (``n < 0``) sets None or fails; ``else:`` follows."""
        on_null = (f"{pad}    {target} = None" if nullable else
                   f"{pad}    raise _BadLen('null {what} where null is not allowed', len_pos)")
        return [f"{pad}if n < 0:", on_null, f"{pad}else:"]

    def read_length(self, f: FieldSpec, compact: bool, var: str, pad: str,
                    int16: bool) -> list[str]:
        if compact:
            # Lengths below 127 take one varint byte, below 16383 two: both inline
            # (a two-byte one adds its second byte's 7 bits above the first's);
            # longer, truncated or overlong ones go to _ruv and its errors.
            return [f"{pad}len_pos = pos",
                    f"{pad}{var} = buf[pos] - 1",
                    f"{pad}if {var} < 127:",
                    f"{pad}    pos += 1",
                    f"{pad}elif pos + 1 < end_buf and buf[pos + 1] < 128:",
                    f"{pad}    {var} += (buf[pos + 1] << 7) - 128",
                    f"{pad}    pos += 2",
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
            if group[0].kind in FIXED:
                fmt = ">" + "".join(FIXED[g.kind][0] for g in group)
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
        if f.kind in FIXED:
            packer = self.const(struct.Struct(">" + FIXED[f.kind][0]).pack, "_P")
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
        if elem in FIXED:
            code = FIXED[elem][0]
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
        if fields[i].kind in FIXED:
            while j < len(fields) and fields[j].kind in FIXED:
                j += 1
        yield fields[i:j], j == len(fields)
        i = j

_IDENTIFIER = re.compile(r"\b_[A-Za-z][A-Za-z0-9_]*\b")


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
    return FieldSpec(
        name=f"{f.name}[]", attr=f.attr, kind=elem, element=None, struct=None,
        versions=f.versions, nullable=Versions.none(), tagged=Versions.none(), tag=None,
        default=None, default_null=False, ignorable=False, flexible_override=f.flexible_override,
        entity_type=None, map_key=False, about="",
    )


