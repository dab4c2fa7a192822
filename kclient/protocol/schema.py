"""Load and validate message specs in Apache Kafka's JSON format.

A spec file is JSON with ``//`` line comments.  Loading turns it into
:class:`MessageSpec`: a tree of :class:`StructSpec` and :class:`FieldSpec` with
every version string parsed into a :class:`Versions` and every type resolved,
so the codec compiler never has to look at raw JSON.  Anything malformed raises
:class:`~kclient.errors.SchemaError` naming the file, the JSON path and why.
"""

from __future__ import annotations

import base64
import binascii
import json
import re
import uuid
from collections.abc import Iterator, Mapping
from typing import Any

import attrs

from kclient._json import loads as json_loads
from kclient.errors import SchemaError
from kclient.protocol.constants import INT16_MAX

__all__ = [
    "MAX_STRUCT_DEPTH",
    "PRIMITIVE_TYPES",
    "FieldSpec",
    "MessageSpec",
    "StructSpec",
    "Versions",
    "parse_spec",
    "parse_versions",
    "snake_case",
    "strip_comments",
    "version_problem",
]

# Largest version number a spec may mention; "N+" is open-ended up to this.
MAX_VERSION = INT16_MAX  # the highest version a range can name

PRIMITIVE_TYPES = frozenset(
    {"bool", "int8", "int16", "uint16", "int32", "uint32", "int64", "float64", "uuid",
     "string", "bytes", "records"}
)
NULLABLE_TYPES = frozenset({"string", "bytes", "records"})
MESSAGE_TYPES = frozenset(
    {"request", "response", "header", "data", "metadata", "coordinator-key", "coordinator-value"}
)
TOP_LEVEL_KEYS = frozenset(
    {"apiKey", "type", "listeners", "name", "validVersions", "flexibleVersions",
     "deprecatedVersions", "latestVersionUnstable", "fields", "commonStructs", "about",
     # kclient's shipped specs: which reference corpus each version comes from, the
     # first release with it stable, the decode-only versions (written by
     # tools/gen_schemas.py; read by tools/gen_data.py, not by the codec).
     "provenance"}
)
FIELD_KEYS = frozenset(
    {"name", "type", "versions", "nullableVersions", "taggedVersions", "tag", "default",
     "ignorable", "entityType", "mapKey", "about", "flexibleVersions", "zeroCopy", "fields"}
)
_VERSIONS_RE = re.compile(r"^(?:none|(\d+)(\+|-(\d+))?)$")
_NAME_RE = re.compile(r"^[A-Za-z][A-Za-z0-9]*$")


def version_problem(value: object) -> str | None:
    """What is wrong with ``value`` as an API version: a whole number from 0 to
    32767 (an int16 in every request header), or ``None``."""
    if isinstance(value, bool) or not isinstance(value, int) or not 0 <= value <= MAX_VERSION:
        return f"must be a whole number from 0 to {MAX_VERSION}; got {value!r}"
    return None


@attrs.frozen
class Versions:
    """An inclusive version interval; ``lo > hi`` means "no version"."""

    lo: int
    hi: int

    @classmethod
    def none(cls) -> Versions:
        return cls(1, 0)

    @property
    def empty(self) -> bool:
        return self.lo > self.hi

    def __contains__(self, version: object) -> bool:
        return (isinstance(version, int) and not isinstance(version, bool)
                and self.lo <= version <= self.hi)

    def intersect(self, other: Versions) -> Versions:
        return Versions(max(self.lo, other.lo), min(self.hi, other.hi))

    def covers(self, other: Versions) -> bool:
        """True when every version of ``other`` is in this interval."""
        return other.empty or (not self.empty and self.lo <= other.lo and other.hi <= self.hi)

    def __str__(self) -> str:
        if self.empty:
            return "none"
        if self.hi >= MAX_VERSION:
            return f"{self.lo}+"
        return str(self.lo) if self.lo == self.hi else f"{self.lo}-{self.hi}"


def parse_versions(text: object, path: str, where: str) -> Versions:
    """Parse ``"N"``, ``"N+"``, ``"N-M"`` or ``"none"``."""
    if not isinstance(text, str):
        raise SchemaError(path, where, f"version string expected, got {text!r}")
    match = _VERSIONS_RE.match(text.strip())
    if match is None:
        raise SchemaError(path, where, f"bad version string {text!r}: use N, N+, N-M or none")
    if match.group(1) is None:
        return Versions.none()
    lo = int(match.group(1))
    if match.group(2) == "+":
        hi = MAX_VERSION
    elif match.group(3) is not None:
        hi = int(match.group(3))
    else:
        hi = lo
    if lo > hi or hi > MAX_VERSION:
        raise SchemaError(path, where, f"bad version string {text!r}: empty or out of range")
    return Versions(lo, hi)


# Words Kafka spells with inner capitals that are one word in snake_case
# (KRaftVersion -> kraft_version, like the feature name kraft.version).
_ONE_WORD = {"KRaft": "Kraft"}


def snake_case(name: str) -> str:
    """Turn Kafka's PascalCase names into attributes: ThrottleTimeMs -> throttle_time_ms.

    Acronyms stay one word (ClusterID -> cluster_id, HTTPServer -> http_server).
    """
    for word, plain in _ONE_WORD.items():
        name = name.replace(word, plain)
    step = re.sub(r"([A-Z]+)([A-Z][a-z])", r"\1_\2", name)
    step = re.sub(r"([a-z0-9])([A-Z])", r"\1_\2", step)
    return step.lower()


#: The deepest nesting of structs a spec may have (Kafka's own specs nest four
#: levels or so); deeper specs are refused rather than compiled.
MAX_STRUCT_DEPTH = 16


def strip_comments(text: str) -> str:
    """Remove ``//`` comments outside JSON strings."""
    out: list[str] = []
    i, n = 0, len(text)
    in_string = False
    while i < n:
        ch = text[i]
        if in_string:
            out.append(ch)
            if ch == "\\" and i + 1 < n:
                out.append(text[i + 1])
                i += 2
                continue
            if ch == '"':
                in_string = False
            i += 1
        elif ch == '"':
            in_string = True
            out.append(ch)
            i += 1
        elif ch == "/" and i + 1 < n and text[i + 1] == "/":
            end = text.find("\n", i)
            i = n if end < 0 else end
        else:
            out.append(ch)
            i += 1
    return "".join(out)


@attrs.frozen
class FieldSpec:
    """One field of a struct, with its type fully resolved.

    ``kind`` is a primitive type name, ``"struct"`` or ``"array"``; arrays
    have ``element`` (a primitive name or ``"struct"``) and structs ``struct``.
    """

    name: str
    attr: str
    kind: str
    element: str | None
    struct: StructSpec | None
    versions: Versions
    nullable: Versions
    tagged: Versions
    tag: int | None
    default: Any
    default_null: bool
    ignorable: bool
    flexible_override: Versions | None
    entity_type: str | None
    map_key: bool
    about: str

    def is_nullable(self, version: int) -> bool:
        return version in self.nullable

    def is_tagged(self, version: int) -> bool:
        return version in self.tagged


@attrs.frozen
class StructSpec:
    """A named struct: the message itself, an inline struct or a common struct."""

    name: str
    versions: Versions
    fields: tuple[FieldSpec, ...]

    def fields_in(self, version: int) -> Iterator[FieldSpec]:
        return (f for f in self.fields if version in f.versions)


@attrs.frozen
class MessageSpec:
    """A whole spec file."""

    name: str
    type: str
    api_key: int | None
    valid: Versions
    flexible: Versions
    deprecated: Versions
    listeners: tuple[str, ...]
    latest_version_unstable: bool
    root: StructSpec
    structs: Mapping[str, StructSpec]
    source: str
    about: str

    @property
    def versions(self) -> range:
        return range(self.valid.lo, self.valid.hi + 1) if not self.valid.empty else range(0)

    def is_flexible(self, version: int) -> bool:
        return version in self.flexible


def _parse_default(raw: object, kind: str, nullable: Versions, path: str, where: str) -> Any:
    """Turn a spec ``default`` into the Python value the codec uses."""
    if raw is None:
        if kind in ("bool",):
            return False
        if kind in ("int8", "int16", "uint16", "int32", "uint32", "int64"):
            return 0
        if kind == "float64":
            return 0.0
        if kind == "string":
            return ""
        if kind in ("bytes", "records"):
            return b"" if kind == "bytes" else None
        if kind == "uuid":
            return uuid.UUID(int=0)
        return None  # arrays and structs: the codec builds fresh values
    if isinstance(raw, bool):
        raw = "true" if raw else "false"
    text = str(raw).strip()
    if text == "null":
        if nullable.empty:
            raise SchemaError(path, where, "default null on a field that is never nullable")
        return None
    try:
        if kind == "bool":
            if text not in ("true", "false"):
                raise ValueError(text)
            return text == "true"
        if kind in ("int8", "int16", "uint16", "int32", "uint32", "int64"):
            return int(text, 16) if text.lower().startswith("0x") else int(text)
        if kind == "float64":
            return float(text)
    except ValueError:
        raise SchemaError(path, where, f"default {raw!r} does not fit type {kind}") from None
    if kind == "string":
        return str(raw)
    if kind == "uuid":
        try:  # Kafka writes UUIDs as unpadded URL-safe base64
            data = base64.urlsafe_b64decode(text + "=" * (-len(text) % 4))
            return uuid.UUID(bytes=data)
        except (binascii.Error, ValueError):
            raise SchemaError(path, where, f"default {raw!r} is not a base64 UUID") from None
    if kind in ("array", "struct"):
        raise SchemaError(path, where, f"a {kind} field can only default to null")
    raise SchemaError(path, where, f"type {kind} cannot have a default")


class _Loader:
    """One pass over one spec file."""

    def __init__(self, path: str, raw: Mapping[str, Any]) -> None:
        self.path = path
        self.raw = raw
        self.structs: dict[str, StructSpec] = {}
        self.common_raw: dict[str, tuple[str, Mapping[str, Any]]] = {}
        self.nesting: list[str] = []  # the structs being loaded, outermost first

    def error(self, where: str, reason: str) -> SchemaError:
        return SchemaError(self.path, where, reason)

    def load(self) -> MessageSpec:
        raw = self.raw
        unknown = sorted(set(raw) - TOP_LEVEL_KEYS)
        if unknown:
            raise self.error(unknown[0], f"unknown top-level key {unknown[0]!r}")
        name = raw.get("name")
        if not isinstance(name, str) or not _NAME_RE.match(name):
            raise self.error("name", f"message name expected, got {name!r}")
        mtype = raw.get("type")
        if mtype not in MESSAGE_TYPES:
            raise self.error("type", f"type must be one of {sorted(MESSAGE_TYPES)}, got {mtype!r}")
        api_key = raw.get("apiKey")
        if api_key is not None and (not isinstance(api_key, int) or api_key < 0):
            raise self.error("apiKey", f"apiKey must be a non-negative integer, got {api_key!r}")
        if mtype in ("request", "response") and api_key is None:
            raise self.error("apiKey", f"a {mtype} needs an apiKey")
        valid = parse_versions(raw.get("validVersions"), self.path, "validVersions")
        flexible = parse_versions(raw.get("flexibleVersions", "none"), self.path,
                                  "flexibleVersions")
        deprecated = parse_versions(raw.get("deprecatedVersions", "none"), self.path,
                                    "deprecatedVersions")
        listeners = raw.get("listeners", [])
        if not isinstance(listeners, list) or not all(isinstance(x, str) for x in listeners):
            raise self.error("listeners", "listeners must be a list of strings")
        for index, common in enumerate(raw.get("commonStructs", []) or []):
            where = f"commonStructs[{index}]"
            if not isinstance(common, dict) or not isinstance(common.get("name"), str):
                raise self.error(where, "a common struct needs a name and fields")
            if common["name"] in self.common_raw:
                raise self.error(where, f"duplicate common struct {common['name']!r}")
            self.common_raw[common["name"]] = (where, common)
        fields = self.fields(raw.get("fields"), "fields", valid, flexible)
        root = StructSpec(name, valid, fields)
        for common_name, (where, common) in self.common_raw.items():
            if common_name not in self.structs:
                versions = parse_versions(common.get("versions", "0+"), self.path,
                                          f"{where}.versions")
                self.structs[common_name] = StructSpec(
                    common_name, versions,
                    self.fields(common.get("fields"), f"{where}.fields", versions, flexible))
        return MessageSpec(
            name=name, type=mtype, api_key=api_key, valid=valid, flexible=flexible,
            deprecated=deprecated, listeners=tuple(listeners),
            latest_version_unstable=bool(raw.get("latestVersionUnstable", False)),
            root=root, structs=dict(self.structs), source=self.path,
            about=str(raw.get("about", "")),
        )

    def fields(self, raw: object, where: str, parent: Versions,
               flexible: Versions) -> tuple[FieldSpec, ...]:
        if raw is None:
            return ()
        if not isinstance(raw, list):
            raise self.error(where, "fields must be a list")
        out: list[FieldSpec] = []
        tags: dict[int, str] = {}
        names: set[str] = set()
        for index, field_raw in enumerate(raw):
            spec = self.field(field_raw, f"{where}[{index}]", parent, flexible)
            if spec.attr in names:
                raise self.error(f"{where}[{index}].name", f"duplicate field name {spec.name!r}")
            names.add(spec.attr)
            if spec.tag is not None:
                if spec.tag in tags:
                    raise self.error(f"{where}[{index}].tag",
                                     f"tag {spec.tag} used by both {tags[spec.tag]!r} and "
                                     f"{spec.name!r}")
                tags[spec.tag] = spec.name
            out.append(spec)
        return tuple(out)

    def field(self, raw: object, where: str, parent: Versions, flexible: Versions) -> FieldSpec:
        if not isinstance(raw, dict):
            raise self.error(where, "a field must be an object")
        unknown = sorted(set(raw) - FIELD_KEYS)
        if unknown:
            raise self.error(f"{where}.{unknown[0]}", f"unknown field key {unknown[0]!r}")
        name = raw.get("name")
        if not isinstance(name, str) or not _NAME_RE.match(name):
            raise self.error(f"{where}.name", f"field name expected, got {name!r}")
        type_text = raw.get("type")
        if not isinstance(type_text, str) or not type_text:
            raise self.error(f"{where}.type", "field type expected")
        if "versions" not in raw and "taggedVersions" in raw:
            versions_text = raw["taggedVersions"]  # Kafka: a tagged-only field exists when tagged
        else:
            versions_text = raw.get("versions")
        versions = parse_versions(versions_text, self.path, f"{where}.versions")
        nullable = parse_versions(raw.get("nullableVersions", "none"), self.path,
                                  f"{where}.nullableVersions")
        tagged = parse_versions(raw.get("taggedVersions", "none"), self.path,
                                f"{where}.taggedVersions")
        override = None
        if "flexibleVersions" in raw:
            override = parse_versions(raw["flexibleVersions"], self.path,
                                      f"{where}.flexibleVersions")
        tag = raw.get("tag")
        if isinstance(tag, str) and tag.isdigit():
            tag = int(tag)
        if tag is not None and (not isinstance(tag, int) or tag < 0):
            raise self.error(f"{where}.tag", f"tag must be a non-negative integer, got {tag!r}")
        if not tagged.empty:
            if tag is None:
                raise self.error(f"{where}.tag", "taggedVersions set but no tag")
            if not versions.covers(tagged):
                raise self.error(f"{where}.taggedVersions",
                                 f"taggedVersions {tagged} outside versions {versions}")
            if not flexible.covers(tagged):
                raise self.error(f"{where}.taggedVersions",
                                 f"taggedVersions {tagged} outside flexibleVersions {flexible}")
        elif tag is not None:
            raise self.error(f"{where}.taggedVersions", "tag set but no taggedVersions")

        element: str | None = None
        struct: StructSpec | None = None
        if type_text.startswith("[]"):
            kind = "array"
            inner = type_text[2:]
            if inner in PRIMITIVE_TYPES:
                element = inner
                if "fields" in raw:
                    raise self.error(f"{where}.fields", f"an array of {inner} has no fields")
            else:
                element = "struct"
                struct = self.struct(inner, raw, where, versions, flexible)
        elif type_text in PRIMITIVE_TYPES:
            kind = type_text
        else:
            kind = "struct"
            struct = self.struct(type_text, raw, where, versions, flexible)
        if not nullable.empty:
            if kind not in NULLABLE_TYPES and kind not in ("array", "struct"):
                raise self.error(f"{where}.nullableVersions",
                                 f"type {type_text} cannot be nullable")
            if not versions.covers(nullable.intersect(versions)):
                raise self.error(f"{where}.nullableVersions", "nullableVersions outside versions")
        if override is not None and kind not in ("string", "bytes"):
            raise self.error(f"{where}.flexibleVersions",
                             "flexibleVersions is only allowed on string and bytes fields")
        default = _parse_default(raw.get("default"), kind, nullable, self.path,
                                 f"{where}.default")
        return FieldSpec(
            name=name, attr=snake_case(name), kind=kind, element=element, struct=struct,
            versions=versions, nullable=nullable, tagged=tagged, tag=tag, default=default,
            default_null=str(raw.get("default", "")).strip() == "null",
            ignorable=bool(raw.get("ignorable", False)), flexible_override=override,
            entity_type=raw.get("entityType"), map_key=bool(raw.get("mapKey", False)),
            about=str(raw.get("about", "")),
        )

    def struct(self, type_name: str, raw: Mapping[str, Any], where: str, versions: Versions,
               flexible: Versions) -> StructSpec:
        if len(self.nesting) >= MAX_STRUCT_DEPTH:
            raise self.error(f"{where}.type", f"structs nest more than {MAX_STRUCT_DEPTH} "
                             "levels deep; Kafka's own specs nest a few")
        if type_name in self.nesting and "fields" not in raw:
            raise self.error(f"{where}.type", f"struct {type_name!r} contains itself; a "
                             "message cannot nest a struct inside the same struct")
        self.nesting.append(type_name)
        try:
            return self.nested_struct(type_name, raw, where, versions, flexible)
        finally:
            self.nesting.pop()

    def nested_struct(self, type_name: str, raw: Mapping[str, Any], where: str,
                      versions: Versions, flexible: Versions) -> StructSpec:
        if not _NAME_RE.match(type_name):
            raise self.error(f"{where}.type", f"unknown type {type_name!r}")
        if "fields" in raw:
            if type_name in self.structs or type_name in self.common_raw:
                raise self.error(f"{where}.type", f"struct {type_name!r} is defined twice")
            spec = StructSpec(type_name, versions,
                              self.fields(raw["fields"], f"{where}.fields", versions, flexible))
            self.structs[type_name] = spec
            return spec
        if type_name in self.structs:
            return self.structs[type_name]
        if type_name in self.common_raw:
            common_where, common = self.common_raw[type_name]
            common_versions = parse_versions(common.get("versions", "0+"), self.path,
                                             f"{common_where}.versions")
            spec = StructSpec(type_name, common_versions,
                              self.fields(common.get("fields"), f"{common_where}.fields",
                                          common_versions, flexible))
            self.structs[type_name] = spec
            return spec
        raise self.error(f"{where}.type",
                         f"unknown type {type_name!r}: not a primitive, an inline struct or "
                         "a common struct of this file")


def parse_spec(text: str, path: str = "<spec>") -> MessageSpec:
    """Parse the text of one spec file (``//`` comments allowed)."""
    try:
        raw = json_loads(strip_comments(text))
    except json.JSONDecodeError as exc:
        raise SchemaError(path, f"line {exc.lineno} column {exc.colno}",
                          f"invalid JSON: {exc.msg}") from None
    except ValueError as exc:  # nested too deeply, integers too long
        raise SchemaError(path, "", f"invalid JSON: {exc}") from None
    if not isinstance(raw, dict):
        raise SchemaError(path, "", "a spec must be a JSON object")
    return _Loader(path, raw).load()
