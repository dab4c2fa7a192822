"""Inclusive version ranges and the algebra negotiation is built on.

A :class:`VersionRange` is never empty: an intersection with nothing in common is
``None``, so "no usable version" cannot be mistaken for a range.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Mapping, Sequence
from typing import Any

import attrs

from kclient.protocol.constants import INT16_MAX

__all__ = ["MAX_VERSION", "VersionRange", "highest_allowed", "intersect_all", "parse_range"]

#: The largest version an API can have (versions are int16 on the wire).
MAX_VERSION = INT16_MAX


def _check_version(instance: Any, attribute: attrs.Attribute[int], value: int) -> None:
    if isinstance(value, bool) or not isinstance(value, int):
        raise TypeError(f"{attribute.name} must be an int, not {type(value).__name__}")
    if value < 0:
        raise ValueError(f"{attribute.name} must be 0 or more, got {value}")


@attrs.frozen(order=False)
class VersionRange:
    """The inclusive range ``[min, max]`` of versions of one API (never empty)."""

    min: int = attrs.field(validator=_check_version)
    max: int = attrs.field(validator=_check_version)

    def __attrs_post_init__(self) -> None:
        if self.min > self.max:
            raise ValueError(
                f"empty version range {self.min}-{self.max}: min must not exceed max"
            )

    @classmethod
    def single(cls, version: int) -> VersionRange:
        """The range holding exactly ``version``."""
        return cls(version, version)

    def __contains__(self, version: object) -> bool:
        return isinstance(version, int) and self.min <= version <= self.max

    def __iter__(self) -> Iterator[int]:
        return iter(range(self.min, self.max + 1))

    def __len__(self) -> int:
        return self.max - self.min + 1

    def __str__(self) -> str:
        return str(self.min) if self.min == self.max else f"{self.min}-{self.max}"

    def intersection(self, other: VersionRange) -> VersionRange | None:
        """The versions in both ranges, or ``None`` when they do not overlap."""
        low = max(self.min, other.min)
        high = min(self.max, other.max)
        return trusted_range(low, high) if low <= high else None

    __and__ = intersection

    def overlaps(self, other: VersionRange) -> bool:
        """True when at least one version is in both ranges."""
        return self.min <= other.max and other.min <= self.max

    def contains_range(self, other: VersionRange) -> bool:
        """True when every version of ``other`` is in this range."""
        return self.min <= other.min and other.max <= self.max

    def to_list(self) -> list[int]:
        """``[min, max]``, the form used in JSON snapshots."""
        return [self.min, self.max]


def intersect_all(ranges: Iterable[VersionRange | None]) -> VersionRange | None:
    """Intersect any number of ranges (KIP-35: max of the mins, min of the maxes).

    ``None`` in the input (a party without the API) makes the result ``None``,
    and so does an empty input: with nobody to ask there is nothing usable.
    """
    low = high = None
    first: VersionRange | None = None
    for item in ranges:
        if item is None:
            return None
        if first is None:
            first, low, high = item, item.min, item.max
            continue
        assert low is not None and high is not None
        low = max(low, item.min)
        high = min(high, item.max)
        if low > high:
            return None
    if first is None or (low == first.min and high == first.max):
        return first
    assert low is not None and high is not None
    return trusted_range(low, high)


def trusted_range(low: int, high: int) -> VersionRange:
    """The range ``low``-``high`` cut from ranges already checked (``0 <= low <= high``).

    For the algebra's own results (an intersection, a range less its lowest
    versions), made without the checks a range from outside gets: a verdict
    builds tens of thousands of them.
    """
    made = object.__new__(VersionRange)
    object.__setattr__(made, "min", low)
    object.__setattr__(made, "max", high)
    return made


def highest_allowed(usable: VersionRange | None, avoid: Iterable[int] = ()) -> int | None:
    """The highest version of ``usable`` not listed in ``avoid``, or ``None``."""
    if usable is None:
        return None
    if not avoid:
        return usable.max
    excluded = set(avoid)
    for version in range(usable.max, usable.min - 1, -1):
        if version not in excluded:
            return version
    return None


def parse_range(value: VersionRange | Sequence[int] | Mapping[str, int]) -> VersionRange:
    """Build a range from ``[min, max]``, ``{"min": .., "max": ..}`` or a range."""
    if isinstance(value, VersionRange):
        return value
    if isinstance(value, Mapping):
        return VersionRange(int(value["min"]), int(value["max"]))
    if isinstance(value, str | bytes) or len(value) != 2:
        raise ValueError(f"a version range is [min, max], got {value!r}")
    low, high = value
    return VersionRange(low, high)
