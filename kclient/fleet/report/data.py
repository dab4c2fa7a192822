"""What a fleet report shows: :class:`ReportData` and its rows, and the words both texts share.

Both engines bring their results to this small form (a few hundred values
at most); :mod:`~kclient.fleet.report.markdown`, :mod:`~kclient.fleet.report.html`
and :mod:`~kclient.fleet.report.charts` render it.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from datetime import UTC, datetime

import attrs

from kclient.negotiation.releases import MODE_LABELS, ReleaseGuess
from kclient.negotiation.verdict import Verdict

__all__ = [
    "BLOCKING_HEAD",
    "HEATMAP_ROWS",
    "HISTORY_HEAD",
    "HISTORY_TABLE_ROWS",
    "PATTERN_HEAD",
    "READINESS_WORDS",
    "SECTIONS",
    "SOFTWARE_BARS",
    "SOFTWARE_HEAD",
    "BadLine",
    "BlockedCluster",
    "BlockingSoftware",
    "ClusterPattern",
    "FeatureCount",
    "ReadinessSummary",
    "ReleaseCount",
    "ReportData",
    "SoftwareBar",
    "blocking_rows",
    "broker_ids",
    "brokers_of",
    "history_table",
    "left_text",
    "pattern_intro",
    "pattern_rows",
    "readiness_lists",
    "software_rows",
    "window_text",
]

#: The most groups of clusters (rows) the heatmap draws; the rest are counted below it.
HEATMAP_ROWS = 40
#: The most client software (per verdict) the upgrade readiness section lists and draws.
SOFTWARE_BARS = 20


@attrs.frozen
class FeatureCount:
    """How many clusters are in each verdict state for a feature."""

    feature: str
    available: int
    unavailable: int = 0
    unknown: int = 0

    @property
    def clusters(self) -> int:
        """Clusters evaluated (every state)."""
        return self.available + self.unavailable + self.unknown

    @property
    def share(self) -> float:
        """The available fraction (0 when there are no clusters)."""
        return self.available / self.clusters if self.clusters else 0.0


@attrs.frozen
class BlockedCluster:
    """A cluster where a feature is not available: why, and which brokers.

    ``state`` is ``unavailable`` (``blocking`` names the brokers that rule it
    out) or ``unknown`` (``unknown`` names the brokers that never answered).
    """

    feature: str
    cluster: str
    blocking: tuple[int, ...]
    reason: str
    state: str = Verdict.UNAVAILABLE.value
    unknown: tuple[int, ...] = ()


@attrs.frozen
class BadLine:
    """An input line that was skipped."""

    file: str
    line: int
    reason: str


@attrs.frozen
class ReleaseCount:
    """How many brokers got one release guess (the core's :class:`ReleaseGuess`)."""

    guess: ReleaseGuess
    count: int

    @property
    def release(self) -> str:
        """The guess as the tables print it (``3.9 (KRaft)``)."""
        return self.guess.text

    @property
    def mode(self) -> str:
        """``ZooKeeper``, ``KRaft`` or empty (an unknown set of APIs)."""
        return MODE_LABELS.get(self.guess.mode or "", "")

    @property
    def bar(self) -> str:
        """The guess without its mode: one histogram bar holds both modes of a release."""
        return attrs.evolve(self.guess, mode=None).text


@attrs.frozen
class ClusterPattern:
    """Clusters that share one verdict state per feature.

    ``states`` follow the order of :attr:`ReportData.features` (``available``,
    ``unavailable``, ``unknown``, or empty where a cluster has no row for the
    feature); ``example`` is the first of the clusters by name.
    """

    states: tuple[str, ...]
    clusters: int
    example: str


@attrs.frozen
class BlockingSoftware:
    """A client software that breaks on the target release, on one blocked cluster.

    ``software`` is its label (``unknown (no name sent)``; ``unattributed`` for
    requests no named software accounts for); ``observed`` is true when the
    brokers saw it send a version the target refuses (the reason says which).
    """

    cluster: str
    software: str
    connections: int | None
    observed: bool
    reason: str


@attrs.frozen
class SoftwareBar:
    """One client software across the fleet in one verdict: clusters and connections."""

    software: str
    state: str
    clusters: int
    connections: int


@attrs.frozen
class ReadinessSummary:
    """The upgrade readiness section: clusters by state, the blocking client software.

    ``ready``, ``blocked`` and ``unknown`` count clusters (``unknown`` includes the
    ``no_inventory`` clusters of the snapshots no inventory names; ``outside`` counts
    the inventory's clusters the snapshots lack).  ``blocking`` lists the blocking
    software of the first blocked clusters by name (``blocked_names``); ``software``
    every client software of the fleet per verdict, most connections first (at most
    :data:`SOFTWARE_BARS`).  ``undecided`` lists the software that cannot be judged on
    the first clusters whose readiness is unknown (``undecided_names``, the inventory's
    own; those without an inventory are ``no_inventory_names``).  ``notes`` say what
    the inventory reader read.
    """

    target: str
    ready: int
    blocked: int
    unknown: int
    no_inventory: int = 0
    no_inventory_names: tuple[str, ...] = ()
    outside: int = 0
    outside_names: tuple[str, ...] = ()
    blocked_names: tuple[str, ...] = ()
    blocking: tuple[BlockingSoftware, ...] = ()
    undecided_names: tuple[str, ...] = ()
    undecided: tuple[BlockingSoftware, ...] = ()
    software: tuple[SoftwareBar, ...] = ()
    software_total: int = 0
    disagreements: int = 0
    notes: tuple[str, ...] = ()

    @property
    def clusters(self) -> int:
        """Every cluster judged or left without an inventory."""
        return self.ready + self.blocked + self.unknown

    def summary(self) -> str:
        """``20 cluster(s) on Kafka 4.0: 12 ready, 5 blocked, 3 unknown (...)``."""
        extra = []
        if self.no_inventory:
            extra.append(f"{self.no_inventory} with no client inventory")
        if self.outside:
            extra.append(f"{self.outside} of the inventory not in the snapshots")
        return (f"{self.clusters} cluster(s) on {self.target}: {self.ready} ready, "
                f"{self.blocked} blocked, {self.unknown} unknown"
                + (f" ({'; '.join(extra)})" if extra else ""))


#: What the states of the upgrade readiness section mean (both texts).
READINESS_WORDS = (
    "A cluster is *ready* when every client software its brokers saw works on the target, "
    "*blocked* when one breaks (observed: the brokers saw it send a version the target "
    "refuses; predicted: its library's profile says so), and *unknown* otherwise: a client "
    "that sent no software name, a release kclient does not profile, or no client inventory "
    "for the cluster.")
#: The columns of :func:`software_rows`.
SOFTWARE_HEAD = ("Client software", "Verdict", "Clusters", "Connections")


def software_rows(readiness: ReadinessSummary) -> list[list[str]]:
    """Every client software listed, per verdict: breaks first, then most connections."""
    return [[bar.software, bar.state, str(bar.clusters), f"{bar.connections:,}"]
            for bar in readiness.software]


def readiness_lists(readiness: ReadinessSummary) -> list[str]:
    """The sentences under the tables: clusters left out of the inventory or the snapshots,
    the blocked clusters not listed, software not listed, disagreements."""
    lines = []
    if readiness.blocked > len(readiness.blocked_names):
        lines.append(f"{readiness.blocked} cluster(s) are blocked; the first "
                     f"{len(readiness.blocked_names)} by name are listed (every one is in the "
                     "upgrade_readiness table).")
    judged_unknown = readiness.unknown - readiness.no_inventory
    if judged_unknown > len(readiness.undecided_names):
        lines.append(f"{judged_unknown} cluster(s) of the inventory are unknown; the first "
                     f"{len(readiness.undecided_names)} by name are listed.")
    for count, names, what in (
            (readiness.no_inventory, readiness.no_inventory_names,
             "of the snapshots have no client inventory (unknown)"),
            (readiness.outside, readiness.outside_names,
             "of the client inventory are not in the snapshots")):
        if count:
            more = f" and {count - len(names)} more" if count > len(names) else ""
            lines.append(f"{count} cluster(s) {what}: {', '.join(names)}{more}.")
    left = readiness.software_total - len(readiness.software)
    if left:
        lines.append(f"+ {left} more client software (every one is in the upgrade_readiness "
                     "table).")
    if readiness.disagreements:
        lines.append(f"{readiness.disagreements} disagreement(s) between what the brokers saw "
                     "and the library profiles: see the disagreements column of the "
                     "upgrade_readiness table.")
    return lines


#: The columns of :func:`blocking_rows`.
BLOCKING_HEAD = ("Cluster", "Client software", "Connections", "Evidence", "Why")


def blocking_rows(readiness: ReadinessSummary, undecided: bool = False) -> list[list[str]]:
    """The blocking client software of the listed blocked clusters, observed first (with
    ``undecided``: the software that cannot be judged on the listed unknown clusters)."""
    listed = readiness.undecided if undecided else readiness.blocking
    return [[b.cluster, b.software, "-" if b.connections is None else f"{b.connections:,}",
             "observed" if b.observed else "predicted", b.reason] for b in listed]


@attrs.frozen
class ReportData:
    """Everything the report shows (a few hundred values at most).

    ``stale_brokers`` are unreachable brokers counted with their last answer,
    ``unknown_brokers`` those that never answered (in the latest view of each
    cluster).  ``releases`` may come in any order (the report sorts them by
    release).  ``patterns`` are the largest groups of clusters in the same
    states (at most :data:`HEATMAP_ROWS` are drawn); ``pattern_total`` counts
    every group and ``pattern_clusters`` every cluster in one.  ``history_rows``
    are ``(day, feature, available, unavailable, unknown)``.  ``observed_from``
    and ``observed_to`` bound the times of the records the views use (UTC,
    ``2026-11-22 10:00``; empty when unknown).  ``silent_clusters`` counts the
    clusters with a broker that never answered, where what the other brokers
    allow is unknown (``silent_names``: the first of them by name); the report
    says so once instead of under every feature.  ``readiness`` is the upgrade
    readiness section (``None``: no client inventory was given).
    """

    snapshots: str
    history: bool
    clusters: int
    brokers: int
    stale_brokers: int
    unknown_brokers: int
    fallback_brokers: int
    features: tuple[FeatureCount, ...]
    blocked: tuple[BlockedCluster, ...]
    releases: tuple[ReleaseCount, ...]
    upgrading: int
    upgrading_names: tuple[str, ...]
    bad_records: int
    bad_lines: tuple[BadLine, ...]
    history_rows: tuple[tuple[str, str, int, int, int], ...] = ()
    elapsed: float = 0.0
    patterns: tuple[ClusterPattern, ...] = ()
    pattern_total: int = 0
    pattern_clusters: int = 0
    observed_from: str = ""
    observed_to: str = ""
    silent_clusters: int = 0
    silent_names: tuple[str, ...] = ()
    readiness: ReadinessSummary | None = None

    @property
    def failed_brokers(self) -> int:
        """Brokers whose latest negotiation failed (stale and unknown)."""
        return self.stale_brokers + self.unknown_brokers

    def blocked_for(self, feature: str, state: str = Verdict.UNAVAILABLE.value
                    ) -> list[BlockedCluster]:
        """The listed clusters where ``feature`` is in ``state`` (unavailable or unknown)."""
        return [b for b in self.blocked if b.feature == feature and b.state == state]

    def releases_by_version(self) -> list[ReleaseCount]:
        """The release counts, oldest release first (the core's order), ZooKeeper before KRaft."""
        return sorted(self.releases, key=lambda r: r.guess.order)

    def shown_patterns(self) -> list[ClusterPattern]:
        """The groups of clusters the heatmap draws: the largest, at most :data:`HEATMAP_ROWS`."""
        ranked = sorted(self.patterns, key=lambda p: (-p.clusters, p.example))
        return ranked[:HEATMAP_ROWS]

    def pattern_totals(self) -> tuple[int, int]:
        """``(clusters, groups)`` of every group of clusters in the same states.

        ``pattern_clusters`` and ``pattern_total``, or what ``patterns`` holds
        when they were left at 0.
        """
        return (max(self.pattern_clusters, sum(p.clusters for p in self.patterns)),
                max(self.pattern_total, len(self.patterns)))

    def patterns_left(self) -> tuple[int, int]:
        """``(clusters, groups)`` not drawn in the heatmap."""
        shown = self.shown_patterns()
        clusters, total = self.pattern_totals()
        return clusters - sum(p.clusters for p in shown), total - len(shown)

    def window(self) -> str:
        """``Observed between A and B (UTC)``, or empty when the times are unknown."""
        if not self.observed_from:
            return ""
        if self.observed_from == self.observed_to:
            return f"Observed at {self.observed_from} (UTC)"
        return f"Observed between {self.observed_from} and {self.observed_to} (UTC)"

    def silent_text(self, escape: Callable[[str], str] = str) -> str:
        """One sentence for the clusters where no broker ever answered (empty: none).

        ``escape`` writes each cluster name for the output (Markdown, HTML).
        """
        if not self.silent_clusters:
            return ""
        more = (f" and {self.silent_clusters - len(self.silent_names)} more"
                if self.silent_clusters > len(self.silent_names) else "")
        names = ", ".join(escape(name) for name in self.silent_names)
        return (f"{self.silent_clusters} cluster(s) have brokers that never answered "
                "ApiVersions, so what their other brokers allow cannot be promised there "
                "(unknown in the table above; the feature_availability table names the "
                f"brokers): {names}{more}.")

    def broker_summary(self) -> str:
        """``12 (1 stale: unreachable, last answer used; ...)``: the brokers line."""
        return (f"{self.brokers} ({self.stale_brokers} stale: unreachable, last answer used; "
                f"{self.unknown_brokers} unknown: never answered; {self.fallback_brokers} "
                "described by a fallback profile)")


def window_text(seconds: int) -> str:
    """An instant (seconds since the epoch) as the report prints it: ``2026-11-22 10:00``."""
    return datetime.fromtimestamp(seconds, UTC).strftime("%Y-%m-%d %H:%M")


_UNAVAILABLE = Verdict.UNAVAILABLE.value
_UNKNOWN = Verdict.UNKNOWN.value


def broker_ids(ids: Sequence[int]) -> str:
    """Broker ids as a table cell: ``1, 3``, or ``-`` for none."""
    return ", ".join(str(i) for i in ids) or "-"


def brokers_of(blocked: BlockedCluster) -> tuple[int, ...]:
    """The brokers a listed cluster names: those that never answered, or those that block."""
    return blocked.unknown if blocked.state == Verdict.UNKNOWN.value else blocked.blocking


#: Per state listed under a feature: the state, the FeatureCount field, the words,
#: the broker column.
SECTIONS = (
    (Verdict.UNAVAILABLE.value, "unavailable", "cannot use", "Blocking brokers"),
)


def _pattern_features(data: ReportData, pattern: ClusterPattern, state: str) -> str:
    names = [f.feature for f, s in zip(data.features, pattern.states, strict=False)
             if s == state]
    return ", ".join(names) or "-"


def pattern_intro(data: ReportData) -> str:
    """The sentence above the table of groups of clusters in the same states."""
    shown = data.shown_patterns()
    clusters, total = data.pattern_totals()
    return (f"Clusters with the same state for every feature form one row: {clusters} "
            f"cluster(s) in {total} pattern(s)"
            + (f"; the {len(shown)} largest:" if len(shown) < total else ":"))


def pattern_rows(data: ReportData) -> list[list[str]]:
    """The table of the groups drawn (:data:`PATTERN_HEAD`'s columns), largest first."""
    return [[str(p.clusters), p.example, _pattern_features(data, p, _UNAVAILABLE),
             _pattern_features(data, p, _UNKNOWN)] for p in data.shown_patterns()]


def left_text(data: ReportData) -> str:
    """``+ N more cluster(s) in M other pattern(s)``, or empty when every group is drawn."""
    clusters, groups = data.patterns_left()
    return f"+ {clusters} more cluster(s) in {groups} other pattern(s)" if groups else ""


#: The columns of :func:`pattern_rows`.
PATTERN_HEAD = ("Clusters", "Like", "Unavailable features", "Unknown features")

#: The most rows the table of availability by day lists.
HISTORY_TABLE_ROWS = 200
#: Its columns (:func:`history_table`).
HISTORY_HEAD = ("Day", "Feature", "Available", "Unavailable", "Unknown")


def history_table(data: ReportData) -> tuple[str, list[list[str]]]:
    """The sentence above the table of availability by day, and its rows.

    A row per feature on its first day and on each day its counts changed
    (a long history of a steady fleet stays a few rows), in day order, at
    most :data:`HISTORY_TABLE_ROWS`; every day's counts are in the
    ``feature_availability`` table.
    """
    seen: dict[str, tuple[int, int, int]] = {}
    changes = []
    for day, feature, ok, no, unknown in data.history_rows:  # by day, then feature
        if seen.get(feature) != (ok, no, unknown):
            seen[feature] = (ok, no, unknown)
            changes.append([day, feature, f"{ok} / {ok + no + unknown}", str(no), str(unknown)])
    days = len({row[0] for row in data.history_rows})
    shown = changes[:HISTORY_TABLE_ROWS]
    intro = (f"Each feature's counts on its first day and on every day they changed: "
             f"{len(changes)} row(s) over {days} day(s)"
             + (f", the first {len(shown)} listed" if len(shown) < len(changes) else "")
             + " (every day's counts per cluster: the feature_availability table).")
    return intro, shown
