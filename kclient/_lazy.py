"""Public names a package resolves on first use, so that importing it stays cheap."""

from __future__ import annotations

import importlib
from collections.abc import Mapping, MutableMapping
from typing import Any

__all__ = ["resolve"]


def resolve(package: str, table: Mapping[str, str], namespace: MutableMapping[str, Any],
            name: str) -> Any:
    """``name`` from the module ``table`` names for it, cached in ``namespace``.

    For a package's module-level ``__getattr__``: raises :class:`AttributeError`
    (as Python expects) for a name the table does not list.
    """
    module = table.get(name)
    if module is None:
        raise AttributeError(f"module {package!r} has no attribute {name!r}")
    value = getattr(importlib.import_module(module), name)
    namespace[name] = value
    return value
