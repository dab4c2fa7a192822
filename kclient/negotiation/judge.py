"""The one rule that judges an API for a set of brokers: the version, or who is in the way.

Both an API's cluster-wide verdict (:meth:`ClusterView.api_support
<kclient.negotiation.model.ClusterView.api_support>`) and every API requirement
of a feature (:func:`~kclient.negotiation.evaluation.evaluate_features`) call
:func:`judge_api`, so the two can never disagree about the version, the
brokers in the way or the words that explain it.

Which brokers are in the way (:func:`blocking_brokers`):

A broker's range is what it takes (:meth:`BrokerVersions.takes
<kclient.negotiation.model.BrokerVersions.takes>`: advertised, less what its
release is known to reject).

1. every broker that lacks the API or whose range shares no version with the
   wanted range (the application's, narrowed by a feature's requirement);
2. when every broker shares a version with the wanted range but not with one
   another, the brokers at the edges of the conflict: those whose lowest version
   is the highest of all the lowest versions, and those whose highest version is
   the lowest of all the highest.  The cluster's range is empty exactly because
   the first lie above the second, so these are the brokers to upgrade (or roll
   back); a broker whose range overlaps every other broker's is never named.
"""

from __future__ import annotations

from collections.abc import Callable, Collection, Iterable, Sequence
from typing import TYPE_CHECKING

import attrs

from kclient.negotiation.ranges import VersionRange, highest_allowed, intersect_all
from kclient.negotiation.releases import removed_in
from kclient.negotiation.verdict import avoided_text, offers_text
from kclient.protocol.constants import INT16_MAX

if TYPE_CHECKING:
    from kclient.negotiation.model import BrokerVersions

__all__ = ["ApiJudgement", "Named", "blocking_brokers", "judge_api", "named_in_order",
           "removal_note", "usable_version"]

#: Who the brokers a judgement names are: given the brokers (of those judged) in
#: the way, each broker they stand for as ``(node id, broker)``, in the view's order.
#: A view judges one broker per distinct answer and names every broker sharing it.
Named = Callable[[Collection["BrokerVersions"]], Sequence[tuple[int, "BrokerVersions"]]]


def named_in_order(brokers: Sequence[BrokerVersions]) -> Named:
    """The :data:`Named` of brokers judged one by one: each stands for itself, in order."""
    def named(chosen: Collection[BrokerVersions]) -> list[tuple[int, BrokerVersions]]:
        picked = {id(b) for b in chosen}
        return [(b.node_id, b) for b in brokers if id(b) in picked]
    return named


@attrs.frozen
class ApiJudgement:
    """The outcome of :func:`judge_api`.

    ``version`` is the version to send (``None`` when there is none);
    ``overlap`` the versions the wanted range and every broker share (it may
    be non-empty with no version when the application avoids them all);
    ``blocking`` the brokers in the way and ``reason`` the sentence, both only
    when there is no version.
    """

    version: int | None
    overlap: VersionRange | None
    blocking: tuple[int, ...] = ()
    reason: str | None = None

    @property
    def ok(self) -> bool:
        """True when a version can be sent."""
        return self.version is not None


def _in_the_way(brokers: Sequence[BrokerVersions], key: int, wanted: VersionRange
                ) -> list[BrokerVersions]:
    """The brokers in the way of ``wanted`` for API ``key`` (the rule in the module doc)."""
    outside = [b for b in brokers if (rng := b.takes(key)) is None or not rng.overlaps(wanted)]
    if outside:
        return outside
    ranges = [(b, rng) for b in brokers if (rng := b.takes(key)) is not None]
    if not ranges:
        return []
    lowest_max = min(r.max for _, r in ranges)
    highest_min = max(r.min for _, r in ranges)
    if highest_min <= lowest_max:
        return []
    return [b for b, r in ranges if r.max == lowest_max or r.min == highest_min]


def blocking_brokers(brokers: Sequence[BrokerVersions], key: int, wanted: VersionRange
                     ) -> tuple[int, ...]:
    """The brokers in the way of ``wanted`` for API ``key`` (the rule in the module doc).

    Empty when the brokers and ``wanted`` share a version.
    """
    return tuple(b.node_id for b in _in_the_way(brokers, key, wanted))


def usable_version(wanted: VersionRange, ranges: Iterable[VersionRange | None],
                   avoided: frozenset[int]) -> tuple[VersionRange | None, int | None]:
    """The versions ``wanted`` shares with every one of ``ranges`` (``None`` in them: a
    broker lacks the API), and the highest of those not ``avoided``.

    What :func:`judge_api` starts from; a cluster view keeps the distinct ranges of
    its brokers and asks this directly when only the verdict matters.
    """
    overlap = intersect_all([wanted, *ranges])
    return overlap, highest_allowed(overlap, avoided)


def removal_note(key: int, name: str, version: int) -> str | None:
    """``Fetch v3 removed in Kafka 4.0 (KIP-896)`` when brokers dropped ``version``.

    Added where a blocking broker's lowest version is above the wanted range, so
    the reason says the version was taken out of Kafka rather than never added.
    """
    if version >= INT16_MAX:
        return None
    removed = removed_in(key, version)
    return None if removed is None else f"{name} v{version} {removed}"


def judge_api(brokers: Sequence[BrokerVersions], key: int, name: str, wanted: VersionRange,
              avoided: frozenset[int], subject: str | Callable[[], str],
              named: Named | None = None) -> ApiJudgement:
    """The version of API ``key`` to send to every one of ``brokers``, or why there is none.

    ``wanted`` is the range the caller can use (the application's, narrowed by a
    requirement), ``avoided`` the versions never to send; ``subject`` starts the
    reason (``Produce: application speaks 3-13`` or ``Produce needs 9+``), or
    makes it when there is a reason to give.  With no brokers the answer is the
    highest version of ``wanted``.  ``named`` says which brokers the ones in the
    way stand for (default: themselves, see :data:`Named`); the reason names each.
    """
    overlap, version = usable_version(wanted, (b.takes(key) for b in brokers), avoided)
    if version is not None:
        return ApiJudgement(version, overlap)
    if not isinstance(subject, str):
        subject = subject()
    if overlap is not None:
        return ApiJudgement(None, overlap, (), avoided_text(subject, overlap))
    in_the_way = _in_the_way(brokers, key, wanted)
    each = (named or named_in_order(brokers))(in_the_way)
    parts = [offers_text(node, b.takes(key)) for node, b in each]
    if any((rng := b.takes(key)) is not None and rng.min > wanted.max for b in in_the_way):
        note = removal_note(key, name, wanted.max)
        if note is not None:
            parts.append(note)
    return ApiJudgement(None, None, tuple(node for node, _ in each),
                        f"{subject}; " + "; ".join(parts))
