"""ReportData for the rendering tests: built from the core's names, sized at will (no Spark)."""

from __future__ import annotations

import datetime
import random

from kclient.fleet.report import (
    BadLine,
    BlockedCluster,
    ClusterPattern,
    FeatureCount,
    ReleaseCount,
    ReportData,
)
from kclient.fleet.report.data import (
    SOFTWARE_BARS,
    BlockingSoftware,
    ReadinessSummary,
    SoftwareBar,
)
from kclient.negotiation.featurefile import default_features
from kclient.negotiation.releases import ReleaseGuess, known_releases, release_mode
from kclient.negotiation.verdict import Verdict

STATES = (Verdict.AVAILABLE.value, Verdict.UNAVAILABLE.value, Verdict.UNKNOWN.value)
STATES_READINESS = ("breaks", "unknown", "works")


def every_release_guess() -> list[ReleaseGuess]:
    """One exact guess per release profile, plus between, at least and unknown guesses."""
    guesses = [ReleaseGuess("exact", n, mode=release_mode(n)) for n in known_releases()]
    newest = known_releases()[-1]
    return [*guesses, ReleaseGuess("between", "3.8", "3.9", mode="zookeeper"),
            ReleaseGuess("at_least", newest, mode=release_mode(newest)),
            ReleaseGuess("unknown")]


def rich_report(*, patterns: int = 60, clusters_per_pattern: int = 7, days: int = 14,
                seed: int = 5, long_names: bool = True) -> ReportData:
    """A fleet report with every release, every default feature and many cluster groups.

    ``patterns`` groups of distinct state vectors (the first ``patterns`` ones a
    seeded generator draws), of decreasing size; ``days`` of history (none for 0).
    """
    rng = random.Random(seed)
    names = [f.name for f in default_features()]
    if long_names:
        names.append("AVeryLongFeatureNameThatMustNotOverlapItsNeighbours")
    vectors: list[tuple[str, ...]] = []
    while len(vectors) < patterns:
        vector = tuple(rng.choices(STATES, weights=(8, 2, 1))[0] for _ in names)
        if vector not in vectors:
            vectors.append(vector)
    groups = tuple(ClusterPattern(v, clusters_per_pattern * (patterns - i) // 3 + 1,
                                  f"prod-{'eu-west-' if long_names else ''}{i:04d}")
                   for i, v in enumerate(vectors))
    total = sum(g.clusters for g in groups)
    counts = tuple(
        FeatureCount(name, *(sum(g.clusters for g in groups if g.states[i] == s)
                             for s in STATES))
        for i, name in enumerate(names))
    guesses = every_release_guess()
    rng.shuffle(guesses)
    releases = tuple(ReleaseCount(g, rng.randint(1, 400)) for g in guesses)
    history: list[tuple[str, str, int, int, int]] = []
    for day in range(days):
        for index, count in enumerate(counts):
            # Every other feature becomes available in more clusters day by day.
            moved = count.unavailable * day // max(days, 1) if index % 2 else 0
            date = datetime.date(2026, 1, 1) + datetime.timedelta(days=day)
            history.append((date.isoformat(), count.feature, count.available + moved,
                            count.unavailable - moved, count.unknown))
    blocked = tuple(BlockedCluster(names[0], f"prod-eu-west-{i:04d}-" + "x" * 60, (1, 2, 3),
                                   "Produce needs 7+; broker 2 offers 0-6 " * 4)
                    for i in range(3))
    return ReportData(
        snapshots="/data/snapshots/fleet-" + "y" * 80 + ".jsonl", history=days > 0,
        clusters=total, brokers=sum(r.count for r in releases), stale_brokers=3,
        unknown_brokers=2, fallback_brokers=1, features=counts, blocked=blocked,
        releases=releases, upgrading=2, upgrading_names=("prod-eu-west-0001",),
        bad_records=1, bad_lines=(BadLine("fleet.jsonl", 7, "malformed JSON"),),
        history_rows=tuple(history), patterns=groups, pattern_total=patterns + 12,
        pattern_clusters=total + 30)


def rich_readiness(*, software: int = 30, blocked: int = 30) -> ReadinessSummary:
    """An upgrade readiness section with more of everything than the report lists."""
    bars = tuple(SoftwareBar(f"client-{i:03d}-" + "v" * (i % 3) * 20 + " 1.2.3",
                             STATES_READINESS[i % 3], 1 + i % 7, 10_000 // (i + 1))
                 for i in range(software))
    names = tuple(f"prod-eu-west-{i:04d}" for i in range(blocked))
    blocking = tuple(BlockingSoftware(
        name, "unknown (no name sent)", 12, True,
        "the brokers saw it send Produce v2 (340 requests): removed in Kafka 4.0 (KIP-896) "
        + "and more " * 20) for name in names[:25])
    return ReadinessSummary(
        target="Kafka 4.0", ready=40, blocked=blocked, unknown=12, no_inventory=3,
        no_inventory_names=("dev-1", "dev-2", "dev-3"), outside=1,
        outside_names=("elsewhere",), blocked_names=names[:25], blocking=blocking,
        software=bars[:SOFTWARE_BARS], software_total=software, disagreements=2,
        notes=("read 120 client software entries on 82 cluster(s) from 1 file(s)",))
