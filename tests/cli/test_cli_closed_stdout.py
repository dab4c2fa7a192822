"""``kclient COMMAND | head -1``: every command that prints ends quietly when its reader goes.

The reader closes the pipe after the first line; the command must exit 0 with
nothing on stderr about it (no traceback, no "Exception ignored" at exit).
``kclient emulate`` is left out (it serves until interrupted), and so is ``kclient
encode``, whose output is one line.
"""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

from kclient.negotiation import SnapshotRecord, release_profile, write_snapshots
from kclient.negotiation.model import BrokerVersions
from tests.cli.conftest import KCLIENT, Emulator, kclient_env
from tests.conftest import REPO_ROOT

pytestmark = [pytest.mark.integration, pytest.mark.timeout(120)]


def _first_line_then_close(argv: list[str], cwd: Path) -> tuple[int, str]:
    """Run ``kclient ARGV | head -1``: read one line, close the pipe, wait."""
    proc = subprocess.Popen([str(KCLIENT), *argv], stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, env=kclient_env(), cwd=cwd)
    assert proc.stdout is not None and proc.stderr is not None
    try:
        first = proc.stdout.readline()
        assert first, f"kclient {' '.join(argv)} printed nothing"
        proc.stdout.close()
        code = proc.wait(90)
        return code, proc.stderr.read().decode()
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
        proc.stderr.close()


@pytest.mark.parametrize("command", [
    "decode-hex", "decode-show-codec", "api-versions-json", "features-wide",
    "probe", "watch", "request", "demo",
])
def test_every_command_ends_quietly_on_a_closed_stdout(
        command: str, mixed_cluster: Emulator, tmp_path: Path) -> None:
    hex_text = (REPO_ROOT / "tests" / "data" / "tansu_apiversions_v3_response.hex").read_text()
    records = [SnapshotRecord.from_broker("big", BrokerVersions(
        n, f"h{n}", 9092, release_profile("3.9")), "2026-11-22T10:00:00Z") for n in range(200)]
    write_snapshots(tmp_path / "big.jsonl", records)
    argv = {
        "decode-hex": ["decode", "response", "--api", "ApiVersions", "--version", "3",
                       "--header", "--hex", hex_text.strip()],
        "decode-show-codec": ["decode", "response", "--api", "Fetch", "--version", "16",
                              "--show-codec"],
        "api-versions-json": ["api-versions", "--snapshot", "big.jsonl", "--format", "json"],
        "features-wide": ["features", "--snapshot", "big.jsonl", "--wide"],
        "probe": ["probe", "-b", mixed_cluster.bootstrap, "--cluster", "c"],
        "watch": ["watch", "-b", mixed_cluster.bootstrap, "--duration", "2"],
        "request": ["request", "-b", mixed_cluster.bootstrap, "Metadata"],
        "demo": ["demo", "--no-tansu"],
    }[command]
    code, errors = _first_line_then_close(argv, tmp_path)
    assert code == 0, errors
    assert "Traceback" not in errors and "BrokenPipe" not in errors, errors
    assert "Exception ignored" not in errors, errors
