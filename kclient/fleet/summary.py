"""The report's figures from a fleet's view shapes: one home for both engines (pure).

Every figure of the report but the observation window and the bad lines
depends only on each cluster's view *shape* (:class:`~kclient.fleet.judge.Shape`)
and its verdicts, on how many clusters share the shape, on the first of them
by name (with their own sentence about brokers that never answered) and on
how many of their brokers answered through a fallback.  Each engine groups
its views by shape (the in-process engine in memory, the Spark engine in one
small job over its cached views) and :func:`summarise` turns the groups into
the report's counts and lists (and :func:`history_rows` the views counted per
day and shape into the history chart's rows).
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable, Sequence

import attrs

from kclient.fleet.judge import Shape, ShapeVerdicts
from kclient.fleet.report import (
    HEATMAP_ROWS,
    BadLine,
    BlockedCluster,
    ClusterPattern,
    FeatureCount,
    ReleaseCount,
    ReportData,
)
from kclient.negotiation.features import FeatureSet
from kclient.negotiation.releases import ReleaseGuess
from kclient.negotiation.verdict import Verdict

__all__ = ["REPORT_LIMIT", "ShapeGroup", "history_rows", "summarise"]

#: How many clusters the report names under each heading (blocked per feature,
#: brokers in several releases, brokers that never answered), and bad lines.
REPORT_LIMIT = 25

_AVAILABLE = Verdict.AVAILABLE.value
_UNAVAILABLE = Verdict.UNAVAILABLE.value
_UNKNOWN = Verdict.UNKNOWN.value


@attrs.frozen
class ShapeGroup:
    """The clusters (each on its last day, with history) whose views share one shape.

    ``first``: the first :data:`REPORT_LIMIT` of them by name (or more), each
    with the core's sentence about its brokers that never answered (``None``
    when all answered); ``fallback``: how many of their brokers' answers came
    from a ``fallback:<release>`` record.
    """

    shape: Shape
    verdicts: ShapeVerdicts
    clusters: int
    first: tuple[tuple[str, str | None], ...]
    fallback: int


def summarise(groups: Iterable[ShapeGroup], features: FeatureSet,
              guesses: Sequence[ReleaseGuess], *, snapshots: str, history: bool,
              window: tuple[str, str], bad_records: int, bad_lines: Sequence[BadLine],
              days: Iterable[tuple[str, ShapeVerdicts, int]] = (), elapsed: float = 0.0
              ) -> ReportData:
    """The report's data: its figures over ``groups``, with what the engine found itself.

    ``guesses``: the release guess of each signature; ``window``: the
    observation window's text (:func:`~kclient.fleet.report.window_text`);
    ``days``: the views counted per day and shape, for the history chart
    (:func:`history_rows`, with ``history`` only).

    A cluster is *upgrading* when its brokers whose ranges count are guessed
    as more than one release, *silent* when one of its brokers never
    answered.  The heat map's groups are the clusters with the same state for
    every feature, largest first (ties: the first cluster by name).
    """
    names = features.names()
    counts = {name: Counter[str]() for name in names}
    blocked: dict[str, list[BlockedCluster]] = {}
    patterns: dict[tuple[str, ...], tuple[int, str]] = {}
    releases = Counter[ReleaseGuess]()
    totals = Counter[str]()
    upgrading: list[str] = []
    silent: list[str] = []
    for group in groups:
        n = group.clusters
        known, unknown = group.shape.known, group.shape.unknown
        totals["clusters"] += n
        totals["brokers"] += n * (len(known) + len(unknown))
        totals["stale"] += n * sum(1 for *_, stale in known if stale)
        totals["unknown"] += n * len(unknown)
        totals["fallback"] += group.fallback
        shown = [cluster for cluster, _sentence in group.first]
        mine = Counter(guesses[sig] for _broker, sig, _levels, _stale in known)
        for guess, brokers in mine.items():
            releases[guess] += n * brokers
        if len({guess.text for guess in mine}) > 1:
            totals["upgrading"] += n
            upgrading.extend(shown)
        if unknown:
            totals["silent"] += n
            silent.extend(shown)
        rows = group.verdicts.features
        for row in rows:
            counts[row.name][row.state] += n
            if row.state == _UNAVAILABLE:
                blocked.setdefault(row.name, []).extend(
                    BlockedCluster(row.name, cluster, row.blocking,
                                   ((sentence if row.flagged else row.reason) or ""),
                                   row.state, row.unknown)
                    for cluster, sentence in group.first)
        key = tuple(row.state for row in rows)
        size, example = patterns.get(key, (0, shown[0]))
        patterns[key] = (size + n, min(example, shown[0]))
    listed = sorted((b for found in blocked.values()
                     for b in sorted(found, key=lambda b: b.cluster)[:REPORT_LIMIT]),
                    key=lambda b: (b.feature, b.state, b.cluster))
    ordered = sorted((ClusterPattern(key, size, example)
                      for key, (size, example) in patterns.items()),
                     key=lambda p: (-p.clusters, p.example))
    return ReportData(
        snapshots=snapshots, history=history,
        clusters=totals["clusters"], brokers=totals["brokers"],
        stale_brokers=totals["stale"], unknown_brokers=totals["unknown"],
        fallback_brokers=totals["fallback"],
        features=tuple(FeatureCount(name, counts[name][_AVAILABLE],
                                    counts[name][_UNAVAILABLE], counts[name][_UNKNOWN])
                       for name in names),
        blocked=tuple(listed),
        releases=tuple(sorted((ReleaseCount(g, n) for g, n in releases.items()),
                              key=lambda r: r.guess.order)),
        upgrading=totals["upgrading"], upgrading_names=tuple(sorted(upgrading)[:REPORT_LIMIT]),
        bad_records=bad_records, bad_lines=tuple(bad_lines),
        history_rows=history_rows(days) if history else (), elapsed=elapsed,
        patterns=tuple(ordered[:HEATMAP_ROWS]), pattern_total=len(ordered),
        pattern_clusters=sum(p.clusters for p in ordered),
        observed_from=window[0], observed_to=window[1],
        silent_clusters=totals["silent"], silent_names=tuple(sorted(silent)[:REPORT_LIMIT]))


def history_rows(days: Iterable[tuple[str, ShapeVerdicts, int]]
                 ) -> tuple[tuple[str, str, int, int, int], ...]:
    """``(day, feature, available, unavailable, unknown)`` from views counted per day and shape.

    ``days``: ``(day, the shape's verdicts, views of that day with that shape)``.
    """
    states = Counter[tuple[str, str, str]]()
    for day, verdicts, n in days:
        for row in verdicts.features:
            states[day, row.name, row.state] += n
    return tuple(sorted(
        (day, feature, states[day, feature, _AVAILABLE], states[day, feature, _UNAVAILABLE],
         states[day, feature, _UNKNOWN])
        for day, feature in {(d, f) for d, f, _ in states}))
