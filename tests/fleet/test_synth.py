"""The synthetic fleet: valid §5 records, deterministic, and as varied as promised."""

from __future__ import annotations

import tracemalloc
from collections import Counter
from datetime import date
from itertools import pairwise
from pathlib import Path

import pytest

from kclient.errors import ConfigError
from kclient.fleet.synth import synth_records, write_fleet
from kclient.negotiation import brokers_by_cluster, guess_release, read_snapshots
from kclient.negotiation.snapshot import SnapshotRecord, record_from_json
from kclient.negotiation.verdict import BrokerState
from tests.extras import needs_extra


def test_every_record_reads_back_with_the_core(tmp_path: Path) -> None:
    path = tmp_path / "fleet.jsonl"
    summary = write_fleet(path, 120, seed=7)
    records = read_snapshots(path)
    assert summary.records == len(records)
    assert summary.clusters == 120
    assert summary.api_rows == sum(len(r.api_versions) for r in records)
    assert summary.brokers == len({(r.cluster, r.broker_id) for r in records})


def test_same_seed_same_fleet_other_seed_other_fleet() -> None:
    first = list(synth_records(30, seed=1))
    assert first == list(synth_records(30, seed=1))
    assert first != list(synth_records(30, seed=2))


def test_fleet_has_the_situations_the_pipeline_must_handle(tmp_path: Path) -> None:
    path = tmp_path / "fleet.jsonl"
    write_fleet(path, 400, seed=11)
    records = read_snapshots(path)
    sources = Counter(r.source.partition(":")[0] for r in records)
    assert sources["api_versions"] > 0 and sources["error"] > 0 and sources["fallback"] > 0
    assert any(1000 in r.api_versions for r in records), "a custom build with an unknown key"
    clusters = brokers_by_cluster(records)
    guesses_per_cluster = [
        {guess_release(b.apis).text for b in brokers if b.error is None}
        for brokers in clusters.values()
    ]
    assert sum(1 for g in guesses_per_cluster if len(g) > 1) > 0, "a rolling upgrade"
    assert any(len(brokers) == 1 for brokers in clusters.values()), "a one-broker cluster"
    releases = Counter(g for gs in guesses_per_cluster for g in gs)
    assert len(releases) >= 10
    seen = Counter(r.cluster for r in records)
    assert any(seen[c] > len(clusters[c]) for c in clusters), "earlier observations"
    assert any(r.finalized_features.get("group.version") for r in records)
    states = Counter(b.state for brokers in clusters.values() for b in brokers)
    assert states[BrokerState.STALE] > 0, "an unreachable broker that answered the day before"
    assert states[BrokerState.UNKNOWN] > 0, "an unreachable broker never heard from"


def test_fixed_broker_count_and_parquet_output(tmp_path: Path) -> None:
    pq = needs_extra("fleet", "pyarrow.parquet")
    path = tmp_path / "fleet.parquet"
    summary = write_fleet(path, 10, seed=3, brokers_per_cluster=4)
    assert summary.brokers == 40
    table = pq.read_table(path)
    assert table.num_rows == summary.records
    assert "api_versions" in table.column_names


def test_bad_arguments_are_config_errors() -> None:
    with pytest.raises(ConfigError, match="--clusters"):
        list(synth_records(0))
    with pytest.raises(ConfigError, match="brokers per cluster"):
        list(synth_records(3, brokers_per_cluster=0))


def _day(record: SnapshotRecord) -> date:
    """The UTC day of a synthetic record (synth writes ``YYYY-MM-DDTHH:MM:SSZ``)."""
    return date.fromisoformat(record.observed_at[:10])


def test_history_gives_every_broker_one_record_per_day(tmp_path: Path) -> None:
    path = tmp_path / "history.jsonl"
    summary = write_fleet(path, 120, seed=5, brokers_per_cluster=3, history=5)
    records = read_snapshots(path)
    assert summary.records == len(records) == 120 * 3 * 5
    assert summary.brokers == 360 and summary.clusters == 120
    days = sorted({_day(r) for r in records})
    assert len(days) == 5 and all((b - a).days == 1 for a, b in pairwise(days))
    # The window ends on the day the plain fleet is observed.
    plain = synth_records(120, seed=5, brokers_per_cluster=3)
    plain_days = {_day(record_from_json(r)) for r in plain}
    assert days[-1] == max(plain_days)
    per_day = Counter((r.cluster, r.broker_id, _day(r)) for r in records)
    assert set(per_day.values()) == {1} and len(per_day) == 360 * 5
    assert any(r.source == "error" for r in records), "a broker unreachable some day"
    assert any(r.source.startswith("fallback:") for r in records)


def test_history_has_rolling_upgrades_that_progress_over_the_days(tmp_path: Path) -> None:
    path = tmp_path / "history.jsonl"
    write_fleet(path, 150, seed=9, brokers_per_cluster=4, history=8)
    records = read_snapshots(path)
    guesses: dict[tuple[str, date], set[str]] = {}
    for record in records:
        if record.error is None:
            guesses.setdefault((record.cluster, _day(record)), set()).add(
                guess_release(record.api_versions).text)
    by_cluster: dict[str, list[tuple[date, set[str]]]] = {}
    for (cluster, day), found in sorted(guesses.items()):
        by_cluster.setdefault(cluster, []).append((day, found))
    changed = {c for c, days in by_cluster.items() if days[0][1] != days[-1][1]}
    mixed = {c for c, days in by_cluster.items() if any(len(g) > 1 for _, g in days)}
    finished = {c for c in changed if len(by_cluster[c][-1][1]) == 1}
    assert changed, "a cluster whose releases change within the window"
    assert mixed, "a cluster seen mid-upgrade on some day"
    assert finished, "a cluster that finished its upgrade within the window"
    # Per-day views with the core: an unreachable broker that day is unknown.
    day = max(d for _, d in guesses)
    that_day = [r for r in records if _day(r) == day]
    states = Counter(b.state for brokers in brokers_by_cluster(that_day).values()
                     for b in brokers)
    assert states[BrokerState.ANSWERED] > 0 and states[BrokerState.UNKNOWN] > 0


def test_history_is_deterministic_and_checks_its_argument() -> None:
    first = list(synth_records(20, seed=4, history=3))
    assert first == list(synth_records(20, seed=4, history=3))
    assert first != list(synth_records(20, seed=5, history=3))
    with pytest.raises(ConfigError, match="--history"):
        list(synth_records(3, history=0))


def _peak_bytes(path: Path, days: int) -> int:
    tracemalloc.start()
    try:
        write_fleet(path, 2, seed=2, brokers_per_cluster=5, history=days)
        return tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()


@pytest.mark.parametrize("suffix", [".jsonl", ".parquet"])
def test_history_is_streamed_memory_does_not_grow_with_the_days(
        tmp_path: Path, suffix: str) -> None:
    if suffix == ".parquet":
        needs_extra("fleet", "pyarrow")
    path = tmp_path / f"fleet{suffix}"
    _peak_bytes(path, 1)  # imports and caches (release profiles) loaded outside the count
    # Both sizes are past the Python-side buffers (500 records for Parquet):
    # records held in memory would make the larger peak about 4x the smaller.
    few = _peak_bytes(path, 100)  # 1,000 records
    many = _peak_bytes(path, 400)  # 4,000 records
    assert many < 1.3 * few, (few, many)
