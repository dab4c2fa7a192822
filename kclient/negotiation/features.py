"""Named features: what each needs from a cluster (the data of features.yaml).

A feature is usable when all of its requirements hold and, if it lists
alternatives (``any_of``), when at least one alternative holds entirely.  An API
requirement is KIP-35's (ApiKey, MinVersion, MaxVersion); a feature-level
requirement is KIP-584's (a finalized feature level within bounds).  Reading
the YAML file lives in :mod:`kclient.negotiation.featurefile`; judging a
cluster view lives in :mod:`kclient.negotiation.evaluation`.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Sequence

import attrs

from kclient.errors import UnknownFeatureError
from kclient.negotiation.ranges import VersionRange
from kclient.protocol.constants import INT16_MAX
from kclient.spelling import closest_name

__all__ = [
    "ApiRequirement",
    "Feature",
    "FeatureSet",
    "LevelRequirement",
    "Requirement",
    "unknown_feature",
]



def _bounds(low: int, high: int | None) -> str:
    if high is None and low == 0:
        return "any version"
    if high is None:
        return f"{low}+"
    return str(low) if low == high else f"{low}-{high}"


@attrs.frozen
class ApiRequirement:
    """The feature needs a version of API ``key`` within ``min``..``max`` (no max: open)."""

    key: int
    name: str
    min: int = 0
    max: int | None = None
    line: int | None = attrs.field(default=None, eq=False)
    #: The required versions as a range (an open maximum becomes INT16_MAX).
    range: VersionRange = attrs.field(init=False, eq=False, repr=False)

    @range.default
    def _range(self) -> VersionRange:
        return VersionRange(self.min, INT16_MAX if self.max is None else self.max)

    def describe(self) -> str:
        """``Produce needs 7+`` and the like."""
        return f"{self.name} needs {_bounds(self.min, self.max)}"


@attrs.frozen
class LevelRequirement:
    """The feature needs KIP-584 feature ``feature`` finalized at ``min``..``max``."""

    feature: str
    min: int
    max: int | None = None
    line: int | None = attrs.field(default=None, eq=False)

    def accepts(self, level: int | None) -> bool:
        """True when a finalized ``level`` satisfies the requirement."""
        if level is None:
            return False
        return self.min <= level and (self.max is None or level <= self.max)

    def describe(self) -> str:
        """``group.version needs 1+`` and the like."""
        return f"{self.feature} needs {_bounds(self.min, self.max)}"


Requirement = ApiRequirement | LevelRequirement


@attrs.frozen(cache_hash=True)
class Feature:
    """A named capability and what it needs from the cluster."""

    name: str
    description: str = ""
    reference: str | None = None
    requires: tuple[Requirement, ...] = ()
    any_of: tuple[tuple[Requirement, ...], ...] = ()
    where: str | None = attrs.field(default=None, eq=False)

    def api_keys(self) -> list[int]:
        """Every API key named anywhere in the feature's requirements."""
        keys: list[int] = []
        for req in [*self.requires, *(r for alt in self.any_of for r in alt)]:
            if isinstance(req, ApiRequirement) and req.key not in keys:
                keys.append(req.key)
        return keys


def _features(value: Iterable[Feature]) -> tuple[Feature, ...]:
    return tuple(value)


def _strings(value: Iterable[str]) -> tuple[str, ...]:
    return tuple(str(v) for v in value)


@attrs.frozen
class FeatureSet:
    """An ordered collection of features, looked up by name case-insensitively."""

    features: tuple[Feature, ...] = attrs.field(converter=_features)
    sources: tuple[str, ...] = attrs.field(default=(), converter=_strings)

    def __iter__(self) -> Iterator[Feature]:
        return iter(self.features)

    def __len__(self) -> int:
        return len(self.features)

    def __contains__(self, name: object) -> bool:
        return isinstance(name, str) and self.get(name) is not None

    def get(self, name: str) -> Feature | None:
        """The feature called ``name`` (any case), or ``None`` (also when it is not text)."""
        if not isinstance(name, str):
            return None
        wanted = name.lower()
        for feature in self.features:
            if feature.name.lower() == wanted:
                return feature
        return None

    def __getitem__(self, name: str) -> Feature:
        feature = self.get(name)
        if feature is None:
            raise unknown_feature(name, self.names())
        return feature

    def names(self) -> list[str]:
        """Feature names in file order."""
        return [f.name for f in self.features]

    def merged(self, override: FeatureSet) -> FeatureSet:
        """This set with ``override``'s features replacing same-named ones, new ones appended."""
        replaced = {f.name.lower(): f for f in override.features}
        result = [replaced.pop(f.name.lower(), f) for f in self.features]
        result.extend(f for f in override.features if f.name.lower() in replaced)
        return FeatureSet(tuple(result), (*self.sources, *override.sources))


def unknown_feature(name: str, known: Sequence[str]) -> UnknownFeatureError:
    """The error for a feature name that is not in ``known``, suggesting the closest one."""
    suggestion = closest_name(name, known) if isinstance(name, str) else None
    hint = f"; did you mean {suggestion!r}?" if suggestion else ""
    return UnknownFeatureError(
        f"unknown feature {name!r}{hint} (known: {', '.join(known)}); feature names come "
        "from the features file (features.yaml)", name, suggestion)
