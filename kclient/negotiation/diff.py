"""What changed between two cluster views (for refresh-on-reconnect notices).

A diff reads the way ``kclient watch`` prints a change: the API changes clients
notice (:data:`EVERY_CLIENT` and the APIs of the features that changed), the
others counted in one line, then the features; the full list is one attribute
away (:attr:`ViewDiff.apis`, :attr:`ViewDiff.detail`).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Literal

import attrs

from kclient.negotiation.model import ClusterView
from kclient.negotiation.persistent import MISSING
from kclient.negotiation.ranges import VersionRange
from kclient.negotiation.verdict import Verdict
from kclient.protocol.constants import ApiKey

if TYPE_CHECKING:
    from kclient.negotiation.features import FeatureSet

__all__ = ["EVERY_CLIENT", "OTHER_APIS", "ApiChange", "ViewDiff", "diff_views"]

#: The APIs every producer and consumer sends: a change of the version kclient
#: sends of one of them is always one that clients notice.
EVERY_CLIENT = (ApiKey.PRODUCE, ApiKey.FETCH, ApiKey.METADATA)
_EVERY_CLIENT_KEYS = frozenset(int(key) for key in EVERY_CLIENT)
#: The line counting the API changes clients do not notice (the count, then where
#: the full list is).
OTHER_APIS = "%d other API range(s) changed (admin or broker-internal APIs; %s)"
#: Where a Python diff's full list is.
_DETAIL = "diff.detail lists them"

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
    """Differences between two views of a cluster; empty when nothing changed.

    ``str(diff)`` (and :meth:`lines`) lists the brokers that changed, the API
    changes clients notice (``noticed``) with a count of the others, and the
    features gained, lost or now unknown; :attr:`detail` lists every API change
    too, and :attr:`apis` holds them all.  ``noticed`` holds the keys of the
    noticed changes (:func:`diff_views` fills it in); ``None``, in a diff made by
    hand, counts every change as noticed.
    """

    apis: tuple[ApiChange, ...] = ()
    features_gained: tuple[str, ...] = ()
    features_lost: tuple[str, ...] = ()
    brokers_added: tuple[int, ...] = ()
    brokers_removed: tuple[int, ...] = ()
    brokers_changed: tuple[int, ...] = ()
    features_unknown: tuple[str, ...] = ()
    noticed: tuple[int, ...] | None = None

    def __bool__(self) -> bool:
        return bool(self.apis or self.features_gained or self.features_lost
                    or self.brokers_added or self.brokers_removed or self.brokers_changed
                    or self.features_unknown)

    @property
    def client_changes(self) -> tuple[ApiChange, ...]:
        """The API changes clients notice (every change when ``noticed`` is ``None``)."""
        if self.noticed is None:
            return self.apis
        keys = set(self.noticed)
        return tuple(change for change in self.apis if change.key in keys)

    def api_lines(self, verbose: bool = False, elsewhere: str = _DETAIL) -> list[str]:
        """The API changes clients notice, a line each, then one line counting the others
        (saying ``elsewhere`` lists them); every change with ``verbose``."""
        if verbose:
            return [str(change) for change in self.apis]
        noticed = self.client_changes
        out = [str(change) for change in noticed]
        if len(self.apis) > len(noticed):
            out.append(OTHER_APIS % (len(self.apis) - len(noticed), elsewhere))
        return out

    def lines(self, verbose: bool = False) -> list[str]:
        """The changes as sentences, one per line (every API change with ``verbose``)."""
        out: list[str] = []
        if self.brokers_added:
            out.append("brokers added: " + ", ".join(map(str, self.brokers_added)))
        if self.brokers_removed:
            out.append("brokers removed: " + ", ".join(map(str, self.brokers_removed)))
        if self.brokers_changed:
            out.append("brokers with a new answer: " + ", ".join(map(str, self.brokers_changed)))
        out.extend(self.api_lines(verbose))
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

    @property
    def detail(self) -> str:
        """Every change, every API included, one per line (``"no change"`` when none)."""
        return "\n".join(self.lines(verbose=True)) if self else "no change"

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

    Views made one from the other (:meth:`ClusterView.with_broker`, as the client
    makes them) share their unchanged parts, and the comparison skips those: it
    costs what changed, not the cluster's size.
    """
    before, after = old._state(), new._state()
    added: list[int] = []
    removed: list[int] = []
    changed: list[int] = []
    for node, was, now in before.members.changes(after.members):
        if was is MISSING:
            added.append(node)
        elif now is MISSING:
            removed.append(node)
        elif was[1] != now[1]:
            changed.append(node)

    changes: list[ApiChange] = []
    for key in after.changed_keys(before):
        was_api = before.verdict(key) if before.knows(key) else None
        now_api = after.verdict(key) if after.knows(key) else None
        if was_api is now_api:
            continue
        old_rng = was_api.cluster if was_api else None
        new_rng = now_api.cluster if now_api else None
        old_ver = was_api.version if was_api else None
        new_ver = now_api.version if now_api else None
        kind = _kind(old_rng, new_rng)
        if kind is None and old_ver != new_ver:
            kind = "shifted"
        if kind is None:
            continue
        name = (new if now_api else old).application.name_of(key)
        changes.append(ApiChange(key, name, kind, old_rng, new_rng, old_ver, new_ver))

    was_states, now_states = before.feature_states(features), after.feature_states(features)
    gained: list[str] = []
    lost: list[str] = []
    unknown: list[str] = []
    if was_states is not now_states:
        for feature, was_state, now_state in zip(features, was_states, now_states,
                                                 strict=True):
            if now_state is Verdict.AVAILABLE and was_state is not Verdict.AVAILABLE:
                gained.append(feature.name)
            if was_state is Verdict.AVAILABLE and now_state is not Verdict.AVAILABLE:
                lost.append(feature.name)
            if now_state is Verdict.UNKNOWN and was_state is not Verdict.UNKNOWN:
                unknown.append(feature.name)
    noticed: tuple[int, ...] = ()
    if changes:
        moved = {*gained, *lost, *unknown}
        keys = set(_EVERY_CLIENT_KEYS)
        keys.update(key for feature in features if feature.name in moved
                    for key in feature.api_keys())
        noticed = tuple(c.key for c in changes
                        if c.key in keys and c.old_version != c.new_version)
    return ViewDiff(tuple(changes), tuple(gained), tuple(lost), tuple(sorted(added)),
                    tuple(sorted(removed)), tuple(sorted(changed)), tuple(unknown), noticed)
