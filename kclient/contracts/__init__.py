"""The machine-readable contracts of kclient's output, as shipped JSON Schema files.

Other tools read what kclient writes: snapshot records (``kclient probe
--record``), inventory records (``kclient emulate --inventory``) and the JSON of
``kclient api-versions``, ``kclient features``, ``kclient watch`` and ``kclient
compat`` (``readiness`` with ``--inventory``).  Each shape has a JSON Schema (draft 2020-12) in this
package, and each command's JSON carries its version in ``"format"``
(:data:`FORMATS`); the page *Reference > Machine-readable contracts* of the
documentation describes them with examples.

A new version (``/2``) is made only for changes that could break a reader:
removing or renaming a field, or changing its meaning or type.  New fields may
appear in a version at any time; readers ignore keys they do not know.
"""

from __future__ import annotations

import json
from functools import cache
from pathlib import Path
from typing import Any

from kclient._resources import package_path

__all__ = ["FORMATS", "SCHEMA_NAMES", "load_schema", "schema_path"]

#: The ``"format"`` value of each command's JSON output.
FORMATS: dict[str, str] = {
    "api-versions": "kclient.api-versions/1",
    "features": "kclient.features/1",
    "watch": "kclient.watch/1",
    "compat": "kclient.compat/2",
    "readiness": "kclient.readiness/1",
}

#: Every schema shipped, by name: the records (``snapshot-record``, ``inventory-record``)
#: and one per output in :data:`FORMATS`.
SCHEMA_NAMES: tuple[str, ...] = ("snapshot-record", "inventory-record", *FORMATS)


def schema_path(name: str) -> Path:
    """The path of the shipped schema ``name`` (one of :data:`SCHEMA_NAMES`)."""
    if name not in SCHEMA_NAMES:
        raise KeyError(f"no contract named {name!r} (contracts: {', '.join(SCHEMA_NAMES)})")
    return package_path(f"contracts/{name}.schema.json")


@cache
def load_schema(name: str) -> dict[str, Any]:
    """The shipped JSON Schema ``name``, parsed (cached)."""
    data: dict[str, Any] = json.loads(schema_path(name).read_text(encoding="utf-8"))
    return data
