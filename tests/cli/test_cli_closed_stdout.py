"""``kclient COMMAND | head -1``: every command that prints ends quietly when its reader goes.

The reader is gone before the command writes (the harshest case of ``| head
-1``); the command must exit 0 with nothing on stderr about it (no traceback, no
"Exception ignored" at exit).  tests/cli/test_cli_errors.py covers the
read-one-line-then-close case with a large output.
``kclient emulate`` is left out: it serves until interrupted.
"""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

import pytest

from kclient.negotiation import SnapshotRecord, release_profile, write_snapshots
from kclient.negotiation.model import BrokerVersions
from tests.cli.conftest import KCLIENT, Emulator, kclient_env
from tests.conftest import REPO_ROOT

pytestmark = [pytest.mark.integration, pytest.mark.timeout(120)]


def _closed_stdout(argv: list[str], cwd: Path) -> tuple[int, str]:
    """Run ``kclient ARGV`` with a stdout pipe nobody reads: its first write fails (EPIPE).

    Deterministic, unlike reading one line and closing, where a small output may
    already sit whole in the pipe's buffer before the reader goes.
    """
    read_end, write_end = os.pipe()
    os.close(read_end)
    try:
        proc = subprocess.run([str(KCLIENT), *argv], stdout=write_end, stderr=subprocess.PIPE,
                              env=kclient_env(), cwd=cwd, timeout=90, check=False)
    finally:
        os.close(write_end)
    return proc.returncode, proc.stderr.decode()


@pytest.mark.parametrize("command", [
    "decode-hex", "decode-show-codec", "encode", "api-versions-json", "features-wide",
    "probe", "watch", "request", "demo",
])
def test_every_command_ends_quietly_on_a_closed_stdout(
        command: str, mixed_cluster: Emulator, tmp_path: Path) -> None:
    hex_text = (REPO_ROOT / "tests" / "data" / "tansu_apiversions_v3_response.hex").read_text()
    records = [SnapshotRecord.from_broker("big", BrokerVersions(
        n, f"h{n}", 9092, release_profile("3.9")), "2026-11-22T10:00:00Z") for n in range(200)]
    write_snapshots(tmp_path / "big.jsonl", records)
    (tmp_path / "meta.json").write_text('{"topics": null}', encoding="utf-8")
    argv = {
        "decode-hex": ["decode", "response", "--api", "ApiVersions", "--version", "3",
                       "--header", "--hex", hex_text.strip()],
        "decode-show-codec": ["decode", "response", "--api", "Fetch", "--version", "16",
                              "--show-codec"],
        "encode": ["encode", "request", "--api", "Metadata", "--version", "12", "--json",
                   "meta.json"],
        "api-versions-json": ["api-versions", "--snapshot", "big.jsonl", "--format", "json"],
        "features-wide": ["features", "--snapshot", "big.jsonl", "--wide"],
        "probe": ["probe", "-b", mixed_cluster.bootstrap, "--cluster", "c"],
        "watch": ["watch", "-b", mixed_cluster.bootstrap, "--duration", "2"],
        "request": ["request", "-b", mixed_cluster.bootstrap, "Metadata"],
        "demo": ["demo", "--no-tansu"],
    }[command]
    code, errors = _closed_stdout(argv, tmp_path)
    assert code == 0, errors
    assert "Traceback" not in errors and "BrokenPipe" not in errors, errors
    assert "Exception ignored" not in errors, errors
