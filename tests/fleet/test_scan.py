"""``fleet scan`` against emulated clusters on loopback, probed from Spark tasks.

Several releases, one cluster that nobody answers, one whose brokers predate
ApiVersions and need the fallback ladder.  The emulators run on an event loop
in a background thread for the length of the test.
"""

from __future__ import annotations

import asyncio
import json
import socket
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

import kclient.protocol
from kclient.fleet.scan import read_targets, run_scan
from kclient.negotiation import guess_release, read_snapshots
from kclient.negotiation.snapshot import unreachable_records

pytestmark = [pytest.mark.spark, pytest.mark.integration]

if not hasattr(kclient.protocol, "encode_request"):
    pytest.skip("fleet scan needs the protocol codec (kclient.protocol.encode_request), "
                "which is not in this build yet", allow_module_level=True)


def _closed_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


@pytest.fixture
def emulated() -> Iterator[dict[str, str]]:
    from kclient.emulator import EmulatedCluster

    loop = asyncio.new_event_loop()
    thread = threading.Thread(target=loop.run_forever, daemon=True)
    thread.start()
    clusters = {
        "mixed": EmulatedCluster(["2.8", "3.0", "3.0"]),
        "modern": EmulatedCluster(["3.9", "4.1"]),
        "legacy": EmulatedCluster(["0.9.0:legacy"]),
    }

    def run(coro: Any) -> Any:
        return asyncio.run_coroutine_threadsafe(coro, loop).result(timeout=30)

    try:
        for cluster in clusters.values():
            run(cluster.start())
        yield {name: c.bootstrap_servers for name, c in clusters.items()}
    finally:
        for cluster in clusters.values():
            run(cluster.stop())
        loop.call_soon_threadsafe(loop.stop)
        thread.join(timeout=10)
        loop.close()


def test_scan_probes_every_cluster_and_reports(spark: Any, emulated: dict[str, str],
                                               tmp_path: Path) -> None:
    targets = tmp_path / "targets.jsonl"
    lines = [
        {"cluster": "mixed", "bootstrap_servers": emulated["mixed"]},
        {"cluster": "modern", "bootstrap_servers": emulated["modern"]},
        {"cluster": "legacy", "bootstrap_servers": emulated["legacy"], "fallback": "0.9.0"},
        {"cluster": "gone", "bootstrap_servers": f"127.0.0.1:{_closed_port()}"},
    ]
    targets.write_text("".join(json.dumps(t) + "\n" for t in lines))
    assert [t.cluster for t in read_targets(targets)] == ["mixed", "modern", "legacy", "gone"]
    out = tmp_path / "out"
    data = run_scan(spark, str(targets), str(out), timeout=15.0, concurrency=2)

    records = [r for f in sorted((out / "snapshots").glob("part-*"))
               for r in read_snapshots(f)]
    by_cluster: dict[str, list[Any]] = {}
    for record in records:
        by_cluster.setdefault(record.cluster, []).append(record)
    assert sorted(by_cluster) == ["gone", "legacy", "mixed", "modern"]
    assert [r.source for r in by_cluster["gone"]] == ["error"]
    (gone,) = by_cluster["gone"]
    assert gone.error is not None
    assert [gone] == unreachable_records("gone", lines[3]["bootstrap_servers"], gone.error,
                                         gone.observed_at)
    assert {r.source for r in by_cluster["legacy"]} == {"fallback:0.9.0"}
    assert {r.source for r in by_cluster["mixed"]} == {"api_versions"}
    assert len(by_cluster["mixed"]) == 3 and len(by_cluster["modern"]) == 2
    assert data.clusters == 4 and data.failed_brokers == 1 and data.fallback_brokers == 1

    releases = spark.read.parquet(str(out / "broker_releases"))
    guesses = {(r["cluster"], r["broker_id"]): r["release_guess"] for r in releases.collect()}
    assert guesses == {(r.cluster, r.broker_id): guess_release(r.api_versions).text
                       for r in records}
    assert sorted(guesses[k] for k in guesses if k[0] == "mixed") == [
        "2.8 (ZooKeeper)", "3.0 (ZooKeeper)", "3.0 (ZooKeeper)"]
    assert sorted(guesses[k] for k in guesses if k[0] == "modern")[0] == "3.9 (ZooKeeper)"
