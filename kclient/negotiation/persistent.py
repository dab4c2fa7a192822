"""An immutable hash map whose changed copies share what did not change (pure).

A cluster view is a frozen value that an application may keep while the client
makes the next one, and every broker answer makes a new view.  Copying a table
of every broker for each answer would cost time linear in the cluster's size, so
the view's tables are :class:`PMap` values: a hash array mapped trie (Bagwell's
HAMT, as in Clojure and the ``contextvars`` module) of nodes of at most 32
slots.  :meth:`PMap.set` and :meth:`PMap.delete` copy the nodes on one path
(``log32`` of the size: 3 for 10,000 brokers) and share every other node with
the map they came from, which stays as it was.  :meth:`PMap.changes` walks two
maps and skips the nodes they share, so comparing a map with its changed copy
costs the change, not the size.

Keys must be hashable; two keys with the same 64 hash bits share a collision
bucket (compared with ``==``).  Iteration order is that of the hashes, not of
insertion.
"""

from __future__ import annotations

from collections.abc import Hashable, Iterable, Iterator, Mapping
from typing import Any, Generic, TypeVar, cast

__all__ = ["MISSING", "PMap"]

K = TypeVar("K", bound=Hashable)
V = TypeVar("V")

_BITS = 5
_MASK = (1 << _BITS) - 1
_HASH_MASK = (1 << 64) - 1


class _Missing:
    """What :meth:`PMap.changes` reports for a key absent from one side."""

    __slots__ = ()

    def __repr__(self) -> str:
        return "MISSING"


#: A key absent from one of the two maps :meth:`PMap.changes` compares.
MISSING: Any = _Missing()


class _Entry:
    __slots__ = ("hash", "key", "value")

    def __init__(self, hashed: int, key: Any, value: Any) -> None:
        self.hash = hashed
        self.key = key
        self.value = value


class _Bucket:
    """Entries whose keys share all 64 hash bits."""

    __slots__ = ("entries", "hash")

    def __init__(self, hashed: int, entries: tuple[_Entry, ...]) -> None:
        self.hash = hashed
        self.entries = entries


# A node maps a slot (5 bits of the hash) to an _Entry, a _Bucket or a node.
_Node = dict[int, Any]


def _hash(key: Any) -> int:
    return hash(key) & _HASH_MASK


def _split(shift: int, first: Any, second: _Entry) -> _Node:
    """A node holding two leaves whose hashes differ (somewhere at ``shift`` or above)."""
    a, b = (first.hash >> shift) & _MASK, (second.hash >> shift) & _MASK
    if a == b:
        return {a: _split(shift + _BITS, first, second)}
    return {a: first, b: second}


def _merged(shift: int, child: Any, entry: _Entry) -> tuple[Any, bool]:
    """What a slot holding the leaf ``child`` holds once ``entry`` is set; whether its key
    is new."""
    if child.hash != entry.hash:
        return _split(shift + _BITS, child, entry), True
    if type(child) is _Entry:
        if child.key == entry.key:  # as a dict does, the first key object stays
            if child.value is entry.value:
                return child, False
            return _Entry(entry.hash, child.key, entry.value), False
        return _Bucket(entry.hash, (child, entry)), True
    for index, old in enumerate(child.entries):
        if old.key == entry.key:
            if old.value is entry.value:
                return child, False
            kept = _Entry(entry.hash, old.key, entry.value)
            return _Bucket(entry.hash, (*child.entries[:index], kept,
                                        *child.entries[index + 1:])), False
    return _Bucket(entry.hash, (*child.entries, entry)), True


def _with(node: _Node, shift: int, entry: _Entry) -> tuple[_Node, bool]:
    """``node`` with ``entry`` set, path-copied (``node`` itself when its key already
    has that very value); and whether its key is new."""
    slot = (entry.hash >> shift) & _MASK
    child = node.get(slot)
    if child is None:
        made: Any = entry
        added = True
    elif type(child) is dict:
        made, added = _with(child, shift + _BITS, entry)
    else:
        made, added = _merged(shift, child, entry)
    if made is child:
        return node, False
    copy = dict(node)
    copy[slot] = made
    return copy, added


def _insert(node: _Node, entry: _Entry) -> bool:
    """Set ``entry`` in ``node`` in place (a map being built, shared with nobody)."""
    shift = 0
    while True:
        slot = (entry.hash >> shift) & _MASK
        child = node.get(slot)
        if child is None:
            node[slot] = entry
            return True
        if type(child) is not dict:
            node[slot], added = _merged(shift, child, entry)
            return added
        node, shift = child, shift + _BITS


def _without(node: _Node, shift: int, hashed: int, key: Any) -> _Node | None:
    """``node`` without ``key``, path-copied; ``None`` when the key is absent.

    A node left with one leaf and no sub-node is replaced by that leaf in its
    parent, so deletions leave no chains of nearly empty nodes behind.
    """
    slot = (hashed >> shift) & _MASK
    child = node.get(slot)
    if child is None:
        return None
    kind = type(child)
    replacement: Any
    if kind is dict:
        smaller = _without(child, shift + _BITS, hashed, key)
        if smaller is None:
            return None
        replacement = smaller
        if len(smaller) == 1:
            (only,) = smaller.values()
            if type(only) is not dict:
                replacement = only
        elif not smaller:
            replacement = None
    elif child.hash != hashed:
        return None
    elif kind is _Entry:
        if child.key != key:
            return None
        replacement = None
    else:
        left = tuple(e for e in child.entries if e.key != key)
        if len(left) == len(child.entries):
            return None
        replacement = left[0] if len(left) == 1 else _Bucket(hashed, left)
    copy = dict(node)
    if replacement is None:
        del copy[slot]
    else:
        copy[slot] = replacement
    return copy


def _leaves(item: Any) -> Iterator[_Entry]:
    if item is None:
        return
    kind = type(item)
    if kind is _Entry:
        yield item
    elif kind is _Bucket:
        yield from item.entries
    else:
        stack = [item]
        while stack:
            for child in stack.pop().values():
                kind = type(child)
                if kind is dict:
                    stack.append(child)
                elif kind is _Entry:
                    yield child
                else:
                    yield from child.entries


def _changes(old: Any, new: Any) -> Iterator[tuple[Any, Any, Any]]:
    """(key, old value, new value) where two different subtrees differ; shared nodes
    skipped."""
    if type(old) is dict and type(new) is dict:
        for slot in old.keys() | new.keys():
            before, after = old.get(slot), new.get(slot)
            if before is not after:
                yield from _changes(before, after)
        return
    before = {e.key: e.value for e in _leaves(old)}
    for entry in _leaves(new):
        value = before.pop(entry.key, MISSING)
        if value is not entry.value:
            yield entry.key, value, entry.value
    for key, value in before.items():
        yield key, value, MISSING


class PMap(Mapping[K, V], Generic[K, V]):
    """An immutable mapping; :meth:`set` and :meth:`delete` return changed copies.

    Both cost ``O(log n)`` and share every unchanged node with the original.
    """

    __slots__ = ("_root", "_size")

    def __init__(self, items: Mapping[K, V] | Iterable[tuple[K, V]] = ()) -> None:
        root: _Node = {}
        size = 0
        pairs = items.items() if isinstance(items, Mapping) else items
        for key, value in pairs:
            size += _insert(root, _Entry(_hash(key), key, value))
        self._root = root
        self._size = size

    @classmethod
    def _made(cls, root: _Node, size: int) -> PMap[K, V]:
        made = object.__new__(cls)
        made._root = root
        made._size = size
        return made

    def __len__(self) -> int:
        return self._size

    def __iter__(self) -> Iterator[K]:
        return (entry.key for entry in _leaves(self._root))

    def get(self, key: K, default: Any = None) -> Any:
        """The value of ``key``, or ``default``."""
        hashed = _hash(key)
        node: Any = self._root
        shift = 0
        while True:
            node = node.get((hashed >> shift) & _MASK)
            kind = type(node)
            if kind is dict:
                shift += _BITS
                continue
            if node is not None and node.hash == hashed:
                if kind is _Entry:
                    if node.key is key or node.key == key:
                        return node.value
                else:
                    for entry in node.entries:
                        if entry.key is key or entry.key == key:
                            return entry.value
            return default

    def __getitem__(self, key: K) -> V:
        found = self.get(key, MISSING)
        if found is MISSING:
            raise KeyError(key)
        return cast("V", found)

    def __contains__(self, key: object) -> bool:
        return self.get(key, MISSING) is not MISSING  # type: ignore[arg-type]

    def __repr__(self) -> str:
        return f"PMap({dict(self.items())!r})"

    def pairs(self) -> Iterator[tuple[K, V]]:
        """``(key, value)`` pairs, read straight off the trie."""
        return ((entry.key, entry.value) for entry in _leaves(self._root))

    def set(self, key: K, value: V) -> PMap[K, V]:
        """A copy with ``key`` mapped to ``value`` (this map itself when it already is)."""
        root, added = _with(self._root, 0, _Entry(_hash(key), key, value))
        if root is self._root:
            return self
        return self._made(root, self._size + added)

    def delete(self, key: K) -> PMap[K, V]:
        """A copy without ``key`` (this map itself when the key is absent)."""
        root = _without(self._root, 0, _hash(key), key)
        if root is None:
            return self
        return self._made(root, self._size - 1)

    def changes(self, other: PMap[K, V]) -> Iterator[tuple[K, Any, Any]]:
        """``(key, value here, value in other)`` for every key whose value is not the
        same object in both (:data:`MISSING` for a side without the key).

        Nodes the two maps share are skipped: a map and its changed copy compare
        in time proportional to the change.
        """
        return _changes(self._root, other._root)
