"""``fleet scan`` against emulated clusters on loopback, probed in-process.

(The Spark scan, probing from Python workers, runs through spark-submit in
``test_submit``.)

Several releases, one cluster that nobody answers, one whose brokers predate
ApiVersions and need the fallback ladder.  The emulators run on an event loop
in a background thread for the length of the test.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import socket
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

import kclient.protocol
from kclient.fleet.scan import read_targets, run_local_scan
from kclient.negotiation import guess_release, read_snapshots
from kclient.negotiation.snapshot import unreachable_records

pytestmark = [pytest.mark.integration]

if not hasattr(kclient.protocol, "encode_request"):
    pytest.skip("fleet scan needs the protocol codec (kclient.protocol.encode_request), "
                "which is not in this build yet", allow_module_level=True)


def _closed_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


@contextlib.contextmanager
def _serving(specs: dict[str, list[str]]) -> Iterator[dict[str, str]]:
    """Emulated clusters (name: broker specs) on one event loop in a background thread.

    Yields each cluster's bootstrap address; every server is stopped and the
    loop closed on the way out, whatever happened.
    """
    from kclient.emulator import EmulatedCluster

    loop = asyncio.new_event_loop()
    thread = threading.Thread(target=loop.run_forever, daemon=True)
    thread.start()
    clusters = {name: EmulatedCluster(brokers) for name, brokers in specs.items()}

    def run(coro: Any) -> Any:
        return asyncio.run_coroutine_threadsafe(coro, loop).result(timeout=30)

    async def start_all() -> None:
        for cluster in clusters.values():
            await cluster.start()

    async def stop_all() -> None:
        for cluster in clusters.values():
            if cluster.running:
                await cluster.stop()

    try:
        run(start_all())
        yield {name: c.bootstrap_servers for name, c in clusters.items()}
    finally:
        run(stop_all())
        loop.call_soon_threadsafe(loop.stop)
        thread.join(timeout=10)
        loop.close()


@pytest.fixture
def emulated() -> Iterator[dict[str, str]]:
    with _serving({"mixed": ["2.8", "3.0", "3.0"], "modern": ["3.9", "4.1"],
                   "legacy": ["0.9.0:legacy"]}) as addresses:
        yield addresses


def test_scan_probes_every_cluster_and_reports(emulated: dict[str, str],
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
    data = run_local_scan(str(targets), str(out), timeout=15.0, concurrency=2)

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

    import pyarrow.parquet as pq

    releases = pq.read_table(str(out / "broker_releases")).to_pylist()
    guesses = {(r["cluster"], r["broker_id"]): r["release_guess"] for r in releases}
    assert guesses == {(r.cluster, r.broker_id): guess_release(r.api_versions).text
                       for r in records}
    assert sorted(guesses[k] for k in guesses if k[0] == "mixed") == [
        "2.8 (ZooKeeper)", "3.0 (ZooKeeper)", "3.0 (ZooKeeper)"]
    assert sorted(guesses[k] for k in guesses if k[0] == "modern")[0] == "3.9 (ZooKeeper)"


# Releases of the many-cluster scan, one broker per cluster, in turn.
_MANY_RELEASES = ("2.8", "3.0", "3.5", "3.9", "4.0", "4.1")
_MANY = 200


def _open_fds() -> int:
    return len(os.listdir("/proc/self/fd"))


@pytest.mark.skipif(not Path("/proc/self/fd").is_dir(), reason="counts fds in /proc (Linux)")
def test_scan_of_two_hundred_clusters(tmp_path: Path) -> None:
    """200 emulated clusters (one loop, one thread), plus dead and silent targets.

    Every target gets records; the report counts what was probed; every
    emulator is stopped and no descriptor leaks.
    """
    specs: dict[str, list[str]] = {}
    expected: dict[str, str] = {}
    for index in range(_MANY):
        name = f"c{index:03d}"
        if index % 50 == 7:  # four clusters whose brokers predate ApiVersions
            specs[name], expected[name] = ["0.9.0:legacy"], "fallback:0.9.0"
        else:
            release = _MANY_RELEASES[index % len(_MANY_RELEASES)]
            specs[name], expected[name] = [release], release
    specs["silent"] = ["3.9:hang"]  # accepts, reads, never answers
    legacy = sorted(n for n, e in expected.items() if e.startswith("fallback:"))
    fds_before = _open_fds()
    started = time.monotonic()
    targets = tmp_path / "targets.jsonl"
    with _serving(specs) as addresses:
        lines = [{"cluster": name, "bootstrap_servers": addresses[name]}
                 | ({"fallback": "0.9.0"} if name in legacy else {})
                 for name in sorted(expected)]
        lines.append({"cluster": "silent", "bootstrap_servers": addresses["silent"]})
        lines += [{"cluster": f"gone{i}", "bootstrap_servers": f"127.0.0.1:{_closed_port()}"}
                  for i in (1, 2)]
        targets.write_text("".join(json.dumps(t) + "\n" for t in lines))
        said: list[tuple[float, str]] = []
        data = run_local_scan(str(targets), str(tmp_path / "out"), timeout=4.0,
                              concurrency=16,
                              log=lambda text: said.append((time.monotonic(), text)))
    elapsed = time.monotonic() - started
    # The probing job runs between the scan's first line and the report's first.
    probing = said[1][0] - said[0][0]

    assert said[0][1] == f"probing {len(lines)} cluster(s) in this process, 16 at a time"
    assert said[1][1].startswith("reading snapshot records")
    records = [r for f in sorted((tmp_path / "out" / "snapshots").glob("part-*"))
               for r in read_snapshots(f)]
    by_cluster: dict[str, list[Any]] = {}
    for record in records:
        by_cluster.setdefault(record.cluster, []).append(record)
    assert sorted(by_cluster) == sorted(t["cluster"] for t in lines)
    for name, release in expected.items():
        (record,) = by_cluster[name]
        if release.startswith("fallback:"):
            assert record.source == release
        else:
            assert record.source == "api_versions", (name, record.error)
            guess = guess_release(record.api_versions)
            assert (guess.kind, guess.low) == ("exact", release), (name, guess)
    for name in ("silent", "gone1", "gone2"):
        assert [r.source for r in by_cluster[name]] == ["error"], name

    assert data.clusters == len(lines) and data.brokers == len(lines)
    assert data.unknown_brokers == 3 and data.stale_brokers == 0
    assert data.fallback_brokers == len(legacy)
    assert data.silent_clusters == 3  # the three clusters nobody answered for
    for feature in data.features:
        assert feature.clusters == len(lines), feature
        # Nothing is available where nobody answered: unknown, or unavailable when the
        # application itself rules the feature out.
        assert feature.unknown + feature.unavailable >= 3, feature
    counted = {release: 0 for release in _MANY_RELEASES}
    for row in data.releases:
        if row.guess.kind == "exact" and row.guess.low in counted:
            counted[str(row.guess.low)] += row.count
    assert counted == {r: sum(1 for e in expected.values() if e == r) for r in _MANY_RELEASES}

    assert _open_fds() <= fds_before + 8, "emulator or client sockets left open"
    # Bounded: every probe ends within its 4 s timeout and 16 clusters are
    # probed at a time, so probing takes seconds; serial or hung probes would
    # take minutes.
    assert probing < 60, f"probing 200 clusters took {probing:.0f} s (all: {elapsed:.0f} s)"


@pytest.mark.skipif(not hasattr(os, "mkfifo"), reason="no FIFOs on this system")
@pytest.mark.timeout(30)  # waiting on the FIFO is the failure
def test_a_targets_file_is_read_as_every_named_file_is(tmp_path: Path) -> None:
    from kclient.errors import FleetError

    fifo = tmp_path / "targets.jsonl"
    os.mkfifo(fifo)  # no writer: reading it would wait forever
    with pytest.raises(FleetError, match=r"targets\.jsonl: the targets file is a FIFO"):
        read_targets(fifo)
    with pytest.raises(FleetError, match=r"^/dev/zero: the targets file is a character "
                                         r"device"):  # would never end
        read_targets("/dev/zero")
    wrong = tmp_path / "latin1.jsonl"
    wrong.write_bytes(b'{"cluster": "caf\xe9"}\n')
    with pytest.raises(FleetError, match=r"latin1\.jsonl: the targets file is not UTF-8 text "
                                         r"\(byte 16\)"):
        read_targets(wrong)


def test_an_unfit_out_is_refused_before_any_probing(tmp_path: Path,
                                                    monkeypatch: pytest.MonkeyPatch) -> None:
    import kclient.fleet.scan as scan
    from kclient.errors import FleetError

    targets = tmp_path / "targets.jsonl"
    targets.write_text(json.dumps({"cluster": "c", "bootstrap_servers":
                                   f"127.0.0.1:{_closed_port()}"}) + "\n", encoding="utf-8")
    out = tmp_path / "project"
    out.mkdir()
    (out / "notes.txt").write_text("mine", encoding="utf-8")
    probed: list[Any] = []
    monkeypatch.setattr(scan, "probe_targets", lambda *args: probed.append(args) or iter(()))
    with pytest.raises(FleetError, match="holds files a report does not write"):
        run_local_scan(str(targets), str(out))
    assert probed == [] and sorted(p.name for p in out.iterdir()) == ["notes.txt"]
