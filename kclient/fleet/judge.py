"""The core's verdicts on one view *shape*, for the in-process engine (pure: no I/O).

A view's verdicts depend on its brokers whose ranges count (their ids,
signatures, finalized feature levels, and whether each is stale), on the ids
of its brokers that never answered, and, in the texts only, on the one
sentence naming those (with host, port and last error).  Views alike in the
first two are one *shape*: :func:`judge_shape` asks the core
(:meth:`~kclient.negotiation.ClusterView.api_ranges`,
:func:`~kclient.negotiation.evaluate_features`) once per shape, over stand-in
brokers, and marks the rows whose reason is the core's sentence about silent
brokers, which each view then gets in its own words (:func:`unknown_sentence`,
the core's :func:`~kclient.negotiation.verdict.unknown_text`).  No rule is
restated here.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from datetime import UTC, datetime
from typing import Any

import attrs

from kclient.negotiation.evaluation import evaluate_features
from kclient.negotiation.features import FeatureSet
from kclient.negotiation.model import ApplicationVersions, BrokerVersions, ClusterView
from kclient.negotiation.ranges import VersionRange
from kclient.negotiation.verdict import BROKER_NAME, broker_label, unknown_text

__all__ = ["FeatureRow", "Shape", "ShapeVerdicts", "StandIns", "judge_shape",
           "unknown_sentence"]

#: What a stand-in for a broker that never answered is called and failed with;
#: the core's sentence about it is swapped for each view's own.
_SILENT_HOST = "\x00silent"
_SILENT_ERROR = "\x00never answered"
#: When a stand-in for a stale broker last answered (only "some time" matters).
_ANSWERED_AT = datetime(1970, 1, 1, tzinfo=UTC)


@attrs.frozen
class Shape:
    """What a view's verdicts depend on, beyond the words naming its silent brokers.

    ``known``: ``(broker id, signature id, finalized levels, stale)`` of each
    broker whose ranges count, by id; ``unknown``: the ids of those that never
    answered.
    """

    known: tuple[tuple[int, int, tuple[tuple[str, tuple[int, int]], ...], bool], ...]
    unknown: tuple[int, ...]


@attrs.frozen
class FeatureRow:
    """One feature's verdict for a shape: the table row (``template``) and what the report uses."""

    template: tuple[Any, ...]
    name: str
    state: str
    reason: str | None
    blocking: tuple[int, ...]
    unknown: tuple[int, ...]
    flagged: bool


@attrs.frozen
class ShapeVerdicts:
    """The core's verdicts for one shape, as table rows without cluster and day.

    ``apis`` rows follow :func:`kclient.fleet.local`'s ``cluster_api_versions``
    columns after ``cluster, day``, then a flag: the reason is the sentence
    about silent brokers.  ``features`` likewise for ``feature_availability``.
    ``ids``: the shape's broker ids, in order.
    """

    apis: tuple[tuple[Any, ...], ...]
    features: tuple[FeatureRow, ...]
    ids: tuple[int, ...] = ()


class StandIns:
    """Stand-in brokers, one per distinct (id, signature, levels, stale): shapes share them.

    ``alone`` remembers, across the shapes, whether each feature is usable with
    one broker's answer alone (:func:`~kclient.negotiation.evaluate_features`).
    """

    def __init__(self, ranges: Sequence[dict[int, VersionRange]]) -> None:
        self._ranges = ranges
        self._brokers: dict[Any, BrokerVersions] = {}
        self.alone: dict[Any, bool] = {}

    def known(self, broker: int, sig: int, levels: tuple[tuple[str, tuple[int, int]], ...],
              stale: bool) -> BrokerVersions:
        """A broker whose ranges count: the signature's ranges, the levels; stale or answered."""
        key = (broker, sig, levels, stale)
        found = self._brokers.get(key)
        if found is None:
            found = self._brokers[key] = BrokerVersions(
                node_id=broker, host="shape", port=1, apis=self._ranges[sig],
                finalized_features={name: VersionRange(*rng) for name, rng in levels},
                error=_SILENT_ERROR if stale else None,
                answered_at=_ANSWERED_AT if stale else None)
        return found

    def silent(self, broker: int) -> BrokerVersions:
        """A broker that never answered."""
        found = self._brokers.get(broker)
        if found is None:
            found = self._brokers[broker] = BrokerVersions(
                node_id=broker, host=_SILENT_HOST, port=1, error=_SILENT_ERROR)
        return found


def _bounds(rng: VersionRange | None) -> tuple[int | None, int | None]:
    return (None, None) if rng is None else (rng.min, rng.max)


#: How the core names a broker in its texts (``broker 7``: :data:`BROKER_NAME`, the
#: only way its verdicts mention a broker), to name another view's own.
_NAMED = re.compile(re.escape(BROKER_NAME).replace("%d", r"(\d+)"))
#: What every such name starts with: a text without it names no broker.
_NAME_START = BROKER_NAME.split("%d")[0]


def _canonical(shape: Shape) -> tuple[Shape, tuple[int, ...]]:
    """``shape`` with its broker ids replaced by their ranks, and its ids in that order.

    Views alike but for their brokers' ids (one cluster numbers its brokers
    from 0, another from 100) share one canonical shape: the core judges the
    first such view once, and the others get their own ids put in (:func:`_named`).
    """
    ids = tuple(sorted([known[0] for known in shape.known] + list(shape.unknown)))
    rank = {broker: index for index, broker in enumerate(ids)}
    canonical = Shape(tuple((rank[i], sig, levels, stale) for i, sig, levels, stale in shape.known),
                      tuple(rank[i] for i in shape.unknown))
    return canonical, ids


def _named(verdicts: ShapeVerdicts, ids_now: tuple[int, ...]) -> ShapeVerdicts:
    """``verdicts`` of a view alike but for its ids, with the ids of another (``ids_now``).

    Both views' ids are in the same order, so the lists stay sorted; in the
    texts, each ``broker N`` is renamed.
    """
    real = dict(zip(verdicts.ids, ids_now, strict=True))

    def ids(values: Any) -> Any:
        return tuple([real[v] for v in values]) if values else ()

    def text(value: str | None) -> str | None:
        if value is None or _NAME_START not in value:
            return value
        return _NAMED.sub(lambda m: BROKER_NAME % real.get(int(m.group(1)), int(m.group(1))),
                          value)

    apis = tuple((*row[:12], ids(row[12]), ids(row[13]), ids(row[14]), text(row[15]), row[16])
                 for row in verdicts.apis)
    rows = []
    for row in verdicts.features:
        t = row.template
        reasons = None if t[8] is None else tuple([text(r) for r in t[8]])
        template = (*t[:5], ids(t[5]), ids(t[6]), ids(t[7]), reasons, text(t[9]), *t[10:13],
                    ids(t[13]), t[14])
        rows.append(FeatureRow(template, row.name, row.state, text(row.reason),
                               ids(row.blocking), ids(row.unknown), row.flagged))
    return ShapeVerdicts(apis, tuple(rows), ids_now)


def judge_shape(shape: Shape, features: FeatureSet, stand_ins: StandIns,
                application: ApplicationVersions,
                judged: dict[Shape, ShapeVerdicts] | None = None) -> ShapeVerdicts:
    """Every API and feature verdict of ``shape``, as the core gives them.

    The core is asked once per canonical shape (:func:`_canonical`), on the
    first view of it; ``judged`` keeps those answers between calls (the
    caller's, for one run: the features and the application must not
    change).  A view with the same ids as the judged one (most clusters
    number their brokers alike) takes its verdicts as they are.
    """
    canonical, ids = _canonical(shape)
    found = None if judged is None else judged.get(canonical)
    if found is None:
        found = _judge(shape, features, stand_ins, application, ids)
        if judged is not None:
            judged[canonical] = found
    return found if found.ids == ids else _named(found, ids)


def _judge(shape: Shape, features: FeatureSet, stand_ins: StandIns,
           application: ApplicationVersions, ids: tuple[int, ...]) -> ShapeVerdicts:
    """Ask the core once for every API and feature verdict of ``shape``."""
    brokers = [stand_ins.known(*known) for known in shape.known]
    brokers += [stand_ins.silent(broker) for broker in shape.unknown]
    brokers.sort(key=lambda b: b.node_id)
    view = ClusterView(brokers, application=application)
    silent = view.unknown_reason()
    apis = []
    for key, support in view.api_ranges().items():
        reason = support.reason
        flagged = silent is not None and reason == silent
        apis.append((key, support.name, support.state.value, *_bounds(support.application),
                     *_bounds(support.cluster), *_bounds(support.usable), support.version,
                     len(support.brokers),
                     sum(1 for rng in support.brokers.values() if rng is not None),
                     support.blocking, support.unknown, support.stale,
                     None if flagged else reason, flagged))
    live = len(view.live_brokers)
    known = len(view.known_brokers)
    rows = []
    for index, result in enumerate(evaluate_features(view, features, alone=stand_ins.alone)):
        flagged = silent is not None and result.reasons == (silent,)
        reasons = None if flagged else result.reasons
        reason = None if result.available or flagged else "; ".join(result.reasons)
        template = (index, result.name, result.state.value, result.available,
                    tuple(result.versions.items()), result.blocking,
                    result.unknown, result.stale, reasons, reason,
                    len(view.brokers), live, known,
                    tuple(broker for broker, ok in result.brokers.items() if ok), flagged)
        rows.append(FeatureRow(template, result.name, result.state.value, reason,
                               result.blocking, result.unknown, flagged))
    return ShapeVerdicts(tuple(apis), tuple(rows), ids)


def unknown_sentence(silent: Sequence[tuple[int, str, int, str | None]]) -> str | None:
    """The core's sentence about brokers that never answered: ``(id, host, port, error)`` each."""
    if not silent:
        return None
    return unknown_text((broker_label(i, host, port), error) for i, host, port, error in silent)

