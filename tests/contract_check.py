"""A small JSON Schema validator for the subset kclient's contracts use.

jsonschema is not among the test dependencies, and the contracts
(``kclient/contracts/*.schema.json``) use only: ``type`` (one or a list),
``properties``, ``required``, ``additionalProperties``, ``items``,
``minItems``/``maxItems``, ``minLength``, ``enum``, ``const``, ``pattern``,
``minimum``/``maximum`` and local ``$ref`` (``#/$defs/...``).  A keyword outside
that subset is an error, so a schema cannot silently ask for more than is checked.

``strict=True`` also rejects properties a schema does not declare: the tests use
it so that every field kclient writes is documented (the shipped schemas allow
unknown keys, as readers must ignore them).
"""

from __future__ import annotations

import re
from typing import Any

_KNOWN = {"$schema", "$id", "$defs", "title", "description", "type", "properties", "required",
          "additionalProperties", "items", "minItems", "maxItems", "minLength", "enum",
          "const", "pattern", "minimum", "maximum", "$ref", "examples"}

_TYPES: dict[str, Any] = {
    "object": lambda v: isinstance(v, dict),
    "array": lambda v: isinstance(v, list),
    "string": lambda v: isinstance(v, str),
    "integer": lambda v: isinstance(v, int) and not isinstance(v, bool),
    "number": lambda v: isinstance(v, int | float) and not isinstance(v, bool),
    "boolean": lambda v: isinstance(v, bool),
    "null": lambda v: v is None,
}


def validate(value: Any, schema: dict[str, Any], *, strict: bool = False) -> list[str]:
    """Every violation of ``schema`` by ``value``, as ``path: message`` (empty: valid)."""
    errors: list[str] = []
    _check(value, schema, schema, "$", strict, errors)
    return errors


def _check(value: Any, schema: dict[str, Any], root: dict[str, Any], path: str, strict: bool,
           errors: list[str]) -> None:
    unknown = set(schema) - _KNOWN
    if unknown:
        raise ValueError(f"{path}: schema keywords outside the checked subset: {unknown}")
    if "$ref" in schema:
        ref = schema["$ref"]
        if not ref.startswith("#/$defs/"):
            raise ValueError(f"{path}: only local $defs references are supported, got {ref}")
        _check(value, root["$defs"][ref.removeprefix("#/$defs/")], root, path, strict, errors)
    if "type" in schema:
        types = schema["type"] if isinstance(schema["type"], list) else [schema["type"]]
        if not any(_TYPES[t](value) for t in types):
            errors.append(f"{path}: expected {'/'.join(types)}, got {type(value).__name__} "
                          f"{value!r:.60}")
            return
    if "const" in schema and value != schema["const"]:
        errors.append(f"{path}: expected {schema['const']!r}, got {value!r:.60}")
    if "enum" in schema and value not in schema["enum"]:
        errors.append(f"{path}: {value!r:.60} is not one of {schema['enum']}")
    if isinstance(value, str):
        if "pattern" in schema and re.search(schema["pattern"], value) is None:
            errors.append(f"{path}: {value!r:.60} does not match {schema['pattern']}")
        if len(value) < schema.get("minLength", 0):
            errors.append(f"{path}: shorter than {schema['minLength']}")
    if isinstance(value, int | float) and not isinstance(value, bool):
        if "minimum" in schema and value < schema["minimum"]:
            errors.append(f"{path}: {value} < {schema['minimum']}")
        if "maximum" in schema and value > schema["maximum"]:
            errors.append(f"{path}: {value} > {schema['maximum']}")
    if isinstance(value, list):
        if len(value) < schema.get("minItems", 0):
            errors.append(f"{path}: fewer than {schema['minItems']} items")
        if "maxItems" in schema and len(value) > schema["maxItems"]:
            errors.append(f"{path}: more than {schema['maxItems']} items")
        if "items" in schema:
            for index, item in enumerate(value):
                _check(item, schema["items"], root, f"{path}[{index}]", strict, errors)
    if isinstance(value, dict):
        for key in schema.get("required", ()):
            if key not in value:
                errors.append(f"{path}: missing required {key!r}")
        properties = schema.get("properties", {})
        extra = schema.get("additionalProperties")
        for key, item in value.items():
            if key in properties:
                _check(item, properties[key], root, f"{path}.{key}", strict, errors)
            elif isinstance(extra, dict):
                _check(item, extra, root, f"{path}.{key}", strict, errors)
            elif extra is False or (strict and "$ref" not in schema and properties):
                errors.append(f"{path}: property {key!r} is not in the schema")
