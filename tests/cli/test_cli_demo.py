"""``kclient demo`` end to end: exit 0, every step shown, bounded in time."""

from __future__ import annotations

import time

import pytest

from kclient.commands.demo import find_tansu

from .conftest import run_kclient

pytestmark = [pytest.mark.integration, pytest.mark.timeout(120)]


def test_demo_runs_every_step() -> None:
    started = time.monotonic()
    result = run_kclient("demo", timeout=90)
    elapsed = time.monotonic() - started
    assert result.returncode == 0, result.stderr
    out = result.stdout
    for release in ("2.0", "2.8", "3.9", "4.1"):
        assert f"Kafka {release} on 127.0.0.1:" in out
    assert "(id: 1 rack: null) -> (" in out and "\tProduce(0): " in out
    assert "cluster-wide usable versions" in out
    assert "FEATURE" in out
    assert "rolling upgrade: broker 1 restarts on Kafka 4.1" in out
    assert "on_change #1:" in out and "what changed overall:" in out
    assert "features gained: " in out and "ZSTD" in out.split("what changed overall:")[1]
    if find_tansu() is not None:
        assert "a real broker: tansu on 127.0.0.1:" in out
    assert "Traceback" not in result.stderr
    assert elapsed < 20, f"kclient demo took {elapsed:.1f} s"


def test_demo_without_tansu() -> None:
    result = run_kclient("demo", "--no-tansu", timeout=90)
    assert result.returncode == 0, result.stderr
    assert "tansu: turned off with --no-tansu, skipped" in result.stdout
    assert "tansu" not in result.stdout.split("== 2.")[1].split("== 5.")[0]
