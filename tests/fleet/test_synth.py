"""The synthetic fleet: valid §5 records, deterministic, and as varied as promised."""

from __future__ import annotations

from collections import Counter
from pathlib import Path

import pytest

from kclient.errors import ConfigError
from kclient.fleet.synth import synth_records, write_fleet
from kclient.negotiation import brokers_by_cluster, guess_release, read_snapshots
from kclient.negotiation.verdict import BrokerState


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
    pq = pytest.importorskip("pyarrow.parquet")
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
