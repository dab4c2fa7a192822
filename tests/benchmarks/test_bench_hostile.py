"""The real-plus-hostile-clients harness (benchmarks/bench_hostile.py), briefly: a real
librdkafka producer and consumer group keep working while hostile clients hammer the
same emulated cluster, the emulator logs no failure and an innocent probe is answered."""

from __future__ import annotations

import pytest

from benchmarks import bench_hostile

pytestmark = [pytest.mark.slow, pytest.mark.integration, pytest.mark.timeout(240)]


def test_real_clients_keep_working_beside_hostile_ones() -> None:
    pytest.importorskip("confluent_kafka", reason="the harness's real client is librdkafka")
    lines: list[str] = []
    figures = bench_hostile.run(seconds=8, messages=200, say=lines.append)
    assert figures["busy_rounds"] >= 1  # every round produced and consumed all its messages
    assert figures["emulator_failures"] == []
    assert figures["stop_error"] is None
    assert all(figures["hostile"].get(name, 0) >= 1 for name in (
        "negative-size", "gzip-bomb", "fetch-200x", "create-2^31", "list-offsets-20k",
        "stalled-frame", "join-and-leave")), figures["hostile"]
    assert figures["probe_worst"] < 5.0  # bounded even on a loaded 2-core machine
    assert len(lines) == 4
