"""What changed between two cluster views (for refresh-on-reconnect notices)."""

from __future__ import annotations

from typing import TYPE_CHECKING, Literal

import attrs

from kclient.negotiation.model import ClusterView
from kclient.negotiation.ranges import VersionRange
from kclient.negotiation.verdict import Verdict

if TYPE_CHECKING:
    from kclient.negotiation.features import FeatureSet

__all__ = ["ApiChange", "ViewDiff", "diff_views"]

ChangeKind = Literal["appeared", "disappeared", "narrowed", "widened", "shifted"]


@attrs.frozen
class ApiChange:
    """A change of the cluster-wide range of one API.

    ``old`` and ``new`` are the ranges every broker offers (the KIP-35
    intersection of the brokers, ``None`` when not on every broker or empty);
    ``old_version`` / ``new_version`` the version kclient sends before and after.
    """

    key: int
    name: str
    kind: ChangeKind
    old: VersionRange | None
    new: VersionRange | None
    old_version: int | None
    new_version: int | None

    def __str__(self) -> str:
        def show(rng: VersionRange | None) -> str:
            return "none" if rng is None else str(rng)

        def use(version: int | None) -> str:
            return "unusable" if version is None else f"v{version}"

        return (f"{self.name}({self.key}) {self.kind}: {show(self.old)} -> {show(self.new)} "
                f"(sends {use(self.old_version)} -> {use(self.new_version)})")


@attrs.frozen
class ViewDiff:
    """Differences between two views of a cluster; empty when nothing changed."""

    apis: tuple[ApiChange, ...] = ()
    features_gained: tuple[str, ...] = ()
    features_lost: tuple[str, ...] = ()
    brokers_added: tuple[int, ...] = ()
    brokers_removed: tuple[int, ...] = ()
    brokers_changed: tuple[int, ...] = ()
    features_unknown: tuple[str, ...] = ()

    def __bool__(self) -> bool:
        return bool(self.apis or self.features_gained or self.features_lost
                    or self.brokers_added or self.brokers_removed or self.brokers_changed
                    or self.features_unknown)

    def lines(self) -> list[str]:
        """The changes as sentences, one per line."""
        out: list[str] = []
        if self.brokers_added:
            out.append("brokers added: " + ", ".join(map(str, self.brokers_added)))
        if self.brokers_removed:
            out.append("brokers removed: " + ", ".join(map(str, self.brokers_removed)))
        if self.brokers_changed:
            out.append("brokers with a new answer: " + ", ".join(map(str, self.brokers_changed)))
        out.extend(str(change) for change in self.apis)
        out.extend(self.feature_lines())
        return out

    def feature_lines(self) -> list[str]:
        """The features gained, lost and now unknown, a line each (none when none)."""
        out = []
        if self.features_gained:
            out.append("features gained: " + ", ".join(self.features_gained))
        if self.features_lost:
            out.append("features lost: " + ", ".join(self.features_lost))
        if self.features_unknown:
            out.append("features now unknown (a broker has not answered): "
                       + ", ".join(self.features_unknown))
        return out

    def __str__(self) -> str:
        return "\n".join(self.lines()) if self else "no change"


def _kind(old: VersionRange | None, new: VersionRange | None) -> ChangeKind | None:
    if old == new:
        return None
    if old is None:
        return "appeared"
    if new is None:
        return "disappeared"
    if old.contains_range(new):
        return "narrowed"
    if new.contains_range(old):
        return "widened"
    return "shifted"


def diff_views(old: ClusterView, new: ClusterView, features: FeatureSet) -> ViewDiff:
    """Compare two views of one cluster: brokers, API ranges and features.

    An API whose range every broker offers is unchanged but whose chosen version
    moved (because the application changed) is reported as ``shifted``.  A
    feature is *gained* only when it becomes available (from unavailable or
    unknown) and *lost* when it stops being available; one that turns unknown
    is also listed in ``features_unknown``.  A stale broker keeps its last
    answer, so a broker that goes away and comes back with the same answer
    changes no range and no feature.  ``features`` are the named features to
    compare (``default_features()`` for the shipped features.yaml).
    """

    old_ids = {b.node_id: b for b in old.brokers}
    new_ids = {b.node_id: b for b in new.brokers}
    added = tuple(sorted(set(new_ids) - set(old_ids)))
    removed = tuple(sorted(set(old_ids) - set(new_ids)))
    changed = tuple(sorted(k for k in set(old_ids) & set(new_ids) if old_ids[k] != new_ids[k]))

    changes: list[ApiChange] = []
    old_support = old.api_ranges()
    new_support = new.api_ranges()
    for key in sorted(set(old_support) | set(new_support)):
        before = old_support.get(key)
        after = new_support.get(key)
        old_rng = before.cluster if before else None
        new_rng = after.cluster if after else None
        old_ver = before.version if before else None
        new_ver = after.version if after else None
        kind = _kind(old_rng, new_rng)
        if kind is None and old_ver != new_ver:
            kind = "shifted"
        if kind is None:
            continue
        name = after.name if after else before.name if before else new.application.name_of(key)
        changes.append(ApiChange(key, name, kind, old_rng, new_rng, old_ver, new_ver))

    before_report = old.evaluate(features)
    after_report = new.evaluate(features)
    was = set(before_report.available_names())
    now = set(after_report.available_names())
    was_unknown = set(before_report.names_in(Verdict.UNKNOWN))
    gained = tuple(n for n in after_report.available_names() if n not in was)
    lost = tuple(n for n in before_report.available_names() if n not in now)
    unknown = tuple(n for n in after_report.names_in(Verdict.UNKNOWN) if n not in was_unknown)
    return ViewDiff(tuple(changes), gained, lost, added, removed, changed, unknown)
