"""Input files that are not regular files: refused at once, one typed line, exit 2.

``/dev/zero`` would be read until memory runs out and a FIFO with no writer would
block forever; every option that names an input file refuses both (the rule of
:mod:`kclient._inputfile`, the one home), naming the option or file and the fix.
Each run is bounded by the subprocess timeout of ``fails_cleanly``.
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from tests.cli.test_cli_hostile import fails_cleanly

pytestmark = pytest.mark.skipif(not hasattr(os, "mkfifo") or not Path("/dev/zero").exists(),
                                reason="needs POSIX FIFOs and /dev/zero")

# Each command names the input file through FILE; an unreachable broker is never
# contacted, since the input fails first.
_COMMANDS = {
    "--command-config": ["api-versions", "-b", "127.0.0.1:9", "--command-config", "FILE"],
    "--sasl-password-file": ["api-versions", "-b", "127.0.0.1:9", "--security-protocol",
                             "SASL_PLAINTEXT", "--sasl-mechanism", "PLAIN",
                             "--sasl-username", "u", "--sasl-password-file", "FILE"],
    "--features": ["features", "--snapshot", "snap.jsonl", "--features", "FILE"],
    "--snapshot": ["api-versions", "--snapshot", "FILE"],
    "request --json @": ["request", "Metadata", "-b", "127.0.0.1:9", "--json", "@FILE"],
    "decode --file": ["decode", "request", "--api", "Metadata", "--version", "1",
                      "--file", "FILE"],
    "encode --json": ["encode", "request", "--api", "Metadata", "--version", "1",
                      "--json", "FILE"],
    "--ca": ["api-versions", "-b", "127.0.0.1:9", "--ca", "FILE"],
    "--key-password-file": ["api-versions", "-b", "127.0.0.1:9", "--cert", "snap.jsonl",
                            "--key-password-file", "FILE"],
}
_NAMED = {"--command-config": "properties file", "--sasl-password-file": "SASL password file",
          "--features": "the features file", "--snapshot": "the snapshot file",
          "request --json @": "--json:", "decode --file": "--file:",
          "encode --json": "--json:", "--ca": "--ca:",
          "--key-password-file": "--key-password-file"}


def _argv(option: str, path: str) -> list[str]:
    return [path if a == "FILE" else "@" + path if a == "@FILE" else a
            for a in _COMMANDS[option]]


@pytest.fixture
def workdir(tmp_path: Path) -> Path:
    (tmp_path / "snap.jsonl").write_text(
        '{"cluster": "c", "broker_id": 1, "host": "h", "port": 9092, "observed_at": '
        '"2026-11-22T10:00:00Z", "source": "api_versions", "api_versions": []}\n')
    os.mkfifo(tmp_path / "fifo")  # nothing ever writes to it
    return tmp_path


@pytest.mark.parametrize("option", list(_COMMANDS))
def test_dev_zero_is_refused(workdir: Path, option: str) -> None:
    line = fails_cleanly(*_argv(option, "/dev/zero"), cwd=workdir,
                         expected="/dev/zero")
    assert "is a character device, not a regular file" in line
    assert "save the content to a file and give its path" in line
    assert _NAMED[option] in line


@pytest.mark.parametrize("option", list(_COMMANDS))
def test_fifo_without_writer_is_refused_without_blocking(workdir: Path, option: str) -> None:
    line = fails_cleanly(*_argv(option, "fifo"), cwd=workdir, expected="fifo")
    assert "is a FIFO (named pipe), not a regular file" in line
    assert _NAMED[option] in line


def test_directory_is_refused(workdir: Path) -> None:
    line = fails_cleanly(*_argv("--snapshot", str(workdir)), cwd=workdir,
                         expected="is a directory, not a regular file")
    assert str(workdir) in line
