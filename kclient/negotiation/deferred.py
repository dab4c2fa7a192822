"""Parts of frozen values that are made when first read (pure).

A cluster view changes with every broker answer, and some of what a view or a
report holds names every broker (the list of brokers, a per-broker table of a
verdict).  Making those for each new value would cost the cluster's size per
answer even when nobody reads them, so they wait:

* :func:`fill_when_read` makes an attrs field of a slotted frozen class fill
  itself when first read, for values made without it (the class's own
  ``__init__`` sets it as usual);
* :class:`BrokerTable` is a read-only mapping built when first read.

What they hold is the same as if made at once: equality, ``repr`` and attrs'
generated methods read them like any other value.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Mapping
from typing import Any, TypeVar

__all__ = ["BrokerTable", "fill_when_read"]

T = TypeVar("T")


class _FilledWhenRead:
    """A slot that, read while empty, is filled with ``make(instance)``."""

    def __init__(self, slot: Any, make: Callable[[Any], Any]) -> None:
        self._slot = slot
        self._make = make

    def __get__(self, instance: Any, owner: type | None = None) -> Any:
        if instance is None:
            return self
        try:
            return self._slot.__get__(instance, owner)
        except AttributeError:
            value = self._make(instance)
            self._slot.__set__(instance, value)
            return value

    def __set__(self, instance: Any, value: Any) -> None:
        self._slot.__set__(instance, value)


def fill_when_read(cls: type, name: str, make: Callable[[Any], Any]) -> None:
    """Make field ``name`` of the slotted attrs class ``cls`` fill itself with
    ``make(instance)`` when read before it was set (an instance made with
    ``object.__new__`` that leaves it empty)."""
    setattr(cls, name, _FilledWhenRead(cls.__dict__[name], make))


class BrokerTable(Mapping[int, T]):
    """A table per broker (node id -> value, in the view's order), built when first read."""

    __slots__ = ("_build", "_table")

    def __init__(self, build: Callable[[], dict[int, T]]) -> None:
        self._build = build
        self._table: dict[int, T] | None = None

    def _read(self) -> dict[int, T]:
        table = self._table
        if table is None:  # two threads may both build it: the same table either way
            table = self._table = self._build()
        return table

    def __getitem__(self, key: int) -> T:
        return self._read()[key]

    def __iter__(self) -> Iterator[int]:
        return iter(self._read())

    def __len__(self) -> int:
        return len(self._read())

    def __repr__(self) -> str:
        return repr(self._read())
