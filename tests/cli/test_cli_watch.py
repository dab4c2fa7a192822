"""``kclient watch`` follows an emulated rolling upgrade, through the console script."""

from __future__ import annotations

import json
import os
import re
import selectors
import subprocess
import sys
import time
from collections.abc import Iterator
from typing import Any

import pytest

from kclient.contracts import load_schema
from kclient.emulator import EmulatedCluster, ThreadedEmulator
from tests.cli.conftest import kclient_env, start_emulator
from tests.contract_check import validate

pytestmark = [pytest.mark.timeout(120)]


def _watch(*args: str) -> subprocess.Popen[bytes]:
    return subprocess.Popen([sys.executable, "-m", "kclient.cli", "watch", *args],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=kclient_env())


class _Lines:
    """JSON Lines of a child's stdout, read with a deadline."""

    def __init__(self, proc: subprocess.Popen[bytes]) -> None:
        assert proc.stdout is not None
        self.fd = proc.stdout.fileno()
        self.selector = selectors.DefaultSelector()
        self.selector.register(self.fd, selectors.EVENT_READ)
        self.buffer = b""

    def next(self, timeout: float = 20.0) -> dict[str, Any]:
        deadline = time.monotonic() + timeout
        while b"\n" not in self.buffer:
            left = deadline - time.monotonic()
            if left <= 0 or not self.selector.select(left):
                raise AssertionError(f"no line within {timeout} s (have {self.buffer!r})")
            chunk = os.read(self.fd, 65536)
            if not chunk:
                raise AssertionError(f"watch exited early (have {self.buffer!r})")
            self.buffer += chunk
        line, self.buffer = self.buffer.split(b"\n", 1)
        record: dict[str, Any] = json.loads(line)
        # Every line kclient watch prints follows its published contract.
        assert validate(record, load_schema("watch"), strict=True) == [], record
        return record

    def until(self, predicate: Any, timeout: float = 20.0) -> dict[str, Any]:
        deadline = time.monotonic() + timeout
        while True:
            record = self.next(max(0.1, deadline - time.monotonic()))
            if predicate(record):
                return record


@pytest.fixture
def old_cluster() -> Iterator[ThreadedEmulator]:
    with ThreadedEmulator(EmulatedCluster(["2.0", "2.0"])) as emulator:
        yield emulator


def _stop(proc: subprocess.Popen[bytes]) -> None:
    if proc.poll() is None:
        proc.kill()
    proc.wait(timeout=10)


def test_rolling_upgrade_until_zstd(old_cluster: ThreadedEmulator) -> None:
    proc = _watch("-b", old_cluster.bootstrap_servers, "--format", "json",
                  "--until-available", "ZSTD", "--duration", "60")
    try:
        lines = _Lines(proc)
        summary = lines.next()
        assert summary["event"] == "summary"
        assert [b["release_guess"] for b in summary["brokers"]] == ["2.0", "2.0"]
        assert "ZSTD" in summary["features"]["unavailable"]
        old_cluster.restart(1, release="3.9")
        first = lines.until(lambda r: any(b["broker_id"] == 1 and b["release_guess"] and
                                          b["release_guess"].startswith("3.9")
                                          for b in r["brokers"]))
        assert first["event"] == "change" and "ZSTD" not in first["features_gained"]
        old_cluster.restart(2, release="3.9")
        gained = lines.until(lambda r: "ZSTD" in r["features_gained"])
        assert any(c["name"] == "Produce" and c["kind"] == "widened" for c in gained["apis"])
        assert proc.wait(timeout=20) == 0
    finally:
        _stop(proc)


def test_text_output_and_timeout_exit_codes(old_cluster: ThreadedEmulator) -> None:
    result = subprocess.run(
        [sys.executable, "-m", "kclient.cli", "watch", "-b", old_cluster.bootstrap_servers,
         "--until-available", "ZSTD", "--duration", "1.5"],
        capture_output=True, text=True, timeout=60, env=kclient_env())
    assert result.returncode == 1, result.stderr
    assert "features unavailable:" in result.stdout and "ZSTD" in result.stdout
    assert "ZSTD is unavailable" in result.stderr
    with ThreadedEmulator(EmulatedCluster(["3.9", "3.9:hang"])) as silent:
        result = subprocess.run(
            [sys.executable, "-m", "kclient.cli", "watch", "-b",
             silent.cluster.brokers[0].address, "--until-available", "ZSTD",
             "--duration", "2", "--timeout", "0.5"],
            capture_output=True, text=True, timeout=60, env=kclient_env())
    assert result.returncode == 3, result.stdout + result.stderr
    silent_broker = silent.cluster.brokers[1]
    assert result.stderr.startswith(
        "kclient watch: ZSTD is unknown after 2 s: 1 broker has not answered ApiVersions "
        f"yet: broker 2 ({silent_broker.address}) (no answer to ApiVersions "), result.stderr
    assert result.stderr.endswith(
        "; the verdicts they could change are unknown (to ignore them: --lenient)\n")
    assert "strict=False" not in result.stderr


def test_duration_bounds_the_first_connection() -> None:
    # The bootstrap broker accepts TCP and never answers: the default timeouts are 30 s
    # (10 s to connect), yet --duration 3 ends the whole run, connection included.
    with ThreadedEmulator(EmulatedCluster(["3.9", "3.9:hang"])) as silent:
        result = subprocess.run(
            [sys.executable, "-m", "kclient.cli", "watch", "-b",
             silent.cluster.brokers[1].address, "--duration", "3"],
            capture_output=True, text=True, timeout=9, env=kclient_env())
    assert result.returncode == 3, result.stdout + result.stderr
    assert result.stdout == ""
    assert result.stderr == "kclient watch: no broker answered within --duration 3 s\n"


class _TextLines:
    """Text lines of a child's stdout without their timestamps, read with a deadline."""

    def __init__(self, proc: subprocess.Popen[bytes]) -> None:
        assert proc.stdout is not None
        self.fd = proc.stdout.fileno()
        self.selector = selectors.DefaultSelector()
        self.selector.register(self.fd, selectors.EVENT_READ)
        self.buffer = b""

    def next(self, timeout: float = 20.0) -> str:
        deadline = time.monotonic() + timeout
        while b"\n" not in self.buffer:
            left = deadline - time.monotonic()
            if left <= 0 or not self.selector.select(left):
                raise AssertionError(f"no line within {timeout} s (have {self.buffer!r})")
            chunk = os.read(self.fd, 65536)
            if not chunk:
                raise AssertionError(f"watch exited early (have {self.buffer!r})")
            self.buffer += chunk
        line, self.buffer = self.buffer.split(b"\n", 1)
        stamp, _, text = line.decode().partition(" ")
        assert stamp.endswith("Z"), line
        return text

    def until(self, prefix: str, timeout: float = 20.0) -> list[str]:
        """Lines up to and including the first that starts with ``prefix``."""
        seen: list[str] = []
        deadline = time.monotonic() + timeout
        while not seen or not seen[-1].startswith(prefix):
            seen.append(self.next(max(0.1, deadline - time.monotonic())))
        return seen


def test_outage_and_upgrade_in_words(old_cluster: ThreadedEmulator) -> None:
    proc = _watch("-b", old_cluster.bootstrap_servers, "--duration", "60")
    try:
        lines = _TextLines(proc)
        summary = lines.until("features unknown:")
        assert summary[1:3] == [
            f"broker {b.node_id} ({b.address}) answered, release 2.0"
            for b in old_cluster.cluster.brokers]
        old_cluster.call(old_cluster.cluster.broker(2).stop())
        down = lines.next()
        assert down.startswith("broker 2: unreachable, last answer (2.0) still counts ("), down
        old_cluster.restart(2, release="3.9")
        back = lines.until("broker 2: answered")
        assert back[-1] == "broker 2: answered, release 3.9 (ZooKeeper)"
        assert lines.next() == "brokers with a new answer: 2"
        # The last broker of the upgrade: what changed for clients, the rest counted.
        old_cluster.restart(1, release="3.9")
        upgraded = lines.until("features gained:")
        assert upgraded[:2] == ["broker 1: answered, release 3.9 (ZooKeeper)",
                                "brokers with a new answer: 1"]
        changes = upgraded[2:-1]
        assert "Produce(0) widened: 0-6 -> 0-11 (sends v6 -> v11)" in changes, changes
        assert not any(c.startswith(("LeaderAndIsr", "StopReplica")) for c in changes)
        assert re.fullmatch(r"[1-9][0-9]* other API range\(s\) changed \(admin or "
                            r"broker-internal APIs; -v or --format json lists them\)",
                            changes[-1]), changes[-1]
        assert all(" (sends " in c for c in changes[:-1]), changes
        assert "ZSTD" in upgraded[-1].removeprefix("features gained: ").split(", ")
    finally:
        _stop(proc)


def test_watch_follows_the_rolling_upgrade_of_kclient_emulate() -> None:
    """The recipe's two terminals: ``kclient emulate --upgrade-to`` restarts one broker per
    Enter (the --every pause is long), and ``kclient watch`` prints each broker's change."""
    emu = start_emulator("--release", "3.6-kraft", "--brokers", "3", "--port", "0",
                         "--upgrade-to", "4.0", "--every", "600", stdin=subprocess.PIPE)
    assert emu.proc.stdin is not None
    assert "rolling upgrade to Kafka 4.0: broker by broker, one every 600 s (Enter restarts " \
        "the next one now)\n" in emu.output
    proc = _watch("-b", emu.bootstrap, "--until-available", "LeaderDiscovery",
                  "--duration", "60")
    try:
        lines = _TextLines(proc)
        summary = lines.until("features unknown:")
        assert [line.split(") ", 1)[1] for line in summary[1:4]] == [
            "answered, release 3.6 (KRaft)"] * 3
        assert "LeaderDiscovery" in next(line for line in summary
                                         if line.startswith("features unavailable:"))
        for node in (1, 2, 3):
            emu.proc.stdin.write(b"\n")
            emu.proc.stdin.flush()
            change = lines.until(f"broker {node}: answered")
            assert change[-1] == f"broker {node}: answered, release 4.0", change
            assert lines.next() == f"brokers with a new answer: {node}"
        assert lines.until("features gained:")[-1] == "features gained: LeaderDiscovery"
        assert proc.wait(timeout=20) == 0
    finally:
        _stop(proc)
        code, out, err = emu.stop()
    assert code == 0, err
    assert [line for line in out.splitlines() if "restarted" in line] == [
        f"broker {node} restarted: Kafka 3.6-kraft -> 4.0 ({node} of 3)" for node in (1, 2, 3)]
    assert "rolling upgrade to Kafka 4.0 done\n" in out
