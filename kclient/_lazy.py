"""Public names a package resolves on first use, so that importing it stays cheap."""

from __future__ import annotations

import importlib
from collections.abc import Mapping, MutableMapping
from typing import Any

__all__ = ["DeferredModule", "resolve"]


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


class DeferredModule:
    """A module that is imported on first attribute access.

    For a module-level name whose module is costly to import and needed only
    once an object does real work (``SyncClient`` and its asyncio engine).
    The import runs through :func:`importlib.import_module`, so it is as
    thread-safe as any import, and an import error surfaces at first use.
    """

    __slots__ = ("_name",)

    def __init__(self, name: str) -> None:
        self._name = name

    def __getattr__(self, attr: str) -> Any:
        return getattr(importlib.import_module(self._name), attr)

    def __repr__(self) -> str:
        return f"<deferred module {self._name!r}>"
