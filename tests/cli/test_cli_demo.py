"""``kclient demo`` end to end: exit 0, every step shown, bounded in time."""

from __future__ import annotations

import re
import time

import pytest

from kclient.commands.demo import find_tansu

from .conftest import run_kclient

pytestmark = [pytest.mark.integration, pytest.mark.timeout(120)]


def test_demo_tells_the_short_story() -> None:
    started = time.monotonic()
    result = run_kclient("demo", timeout=90)
    elapsed = time.monotonic() - started
    assert result.returncode == 0, result.stderr
    out = result.stdout
    for release in ("2.0", "2.8", "3.9", "4.1"):
        assert f"Kafka {release} on 127.0.0.1:" in out
    assert "looks like Kafka 2.0" in out and "Produce 0-6" in out
    assert "ZSTD                    no       Produce needs 7+; broker 1 offers 0-6" in out
    assert "broker 1 is stale" in out and "ZSTD stays unavailable" in out
    assert "rolling upgrade: broker 1 restarts on Kafka 4.1" in out
    assert "features gained: ZSTD" in out
    assert "(id: 1 rack: null isFenced: false) -> (" not in out  # the full tables only with --full
    sections = re.findall(r"^== (\d+)\. ", out, flags=re.MULTILINE)
    assert sections == [str(n) for n in range(1, len(sections) + 1)]
    if find_tansu() is not None:
        assert "a real broker: tansu on 127.0.0.1:" in out
    assert len(out.splitlines()) < 80
    assert "Traceback" not in result.stderr
    assert elapsed < 20, f"kclient demo took {elapsed:.1f} s"


@pytest.mark.parametrize("full", ["--full", "-v"])  # -v after the command reaches it too
def test_demo_full_tables_and_without_tansu(full: str) -> None:
    result = run_kclient("demo", "--no-tansu", full, timeout=90)
    assert result.returncode == 0, result.stderr
    out = result.stdout
    assert "tansu: turned off with --no-tansu, skipped" in out
    assert "(id: 1 rack: null isFenced: false) -> (" in out
    assert "cluster-wide usable versions" in out
    assert "FEATURE" in out and "on_change #1:" in out
    sections = re.findall(r"^== (\d+)\. ", out, flags=re.MULTILINE)
    assert sections == [str(n) for n in range(1, len(sections) + 1)]
    assert "a real broker: tansu" not in out
