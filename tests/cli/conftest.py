"""Helpers for the CLI tests: run the installed console script, run emulated clusters."""

from __future__ import annotations

import os
import re
import signal
import subprocess
import sys
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from tests.conftest import REPO_ROOT, read_until_bootstrap

KCLIENT = Path(sys.executable).with_name("kclient")


def kclient_env() -> dict[str, str]:
    """The console script's environment: it imports kclient from this source tree.

    (The editable install may point at another checkout, e.g. from a git worktree.)
    """
    env = dict(os.environ)
    env["PYTHONPATH"] = str(REPO_ROOT)
    env["PYTHONUNBUFFERED"] = "1"
    return env


def run_kclient(*args: str, timeout: float = 60.0, cwd: Path | None = None
                ) -> subprocess.CompletedProcess[str]:
    """Run ``kclient ARGS`` through the installed console script."""
    return subprocess.run([str(KCLIENT), *args], capture_output=True, text=True,
                          timeout=timeout, cwd=cwd, env=kclient_env())


class Emulator:
    """A ``kclient emulate`` process and the lines it printed before serving."""

    def __init__(self, proc: subprocess.Popen[bytes], bootstrap: str, output: list[str]) -> None:
        self.proc = proc
        self.bootstrap = bootstrap
        self.output = output

    @property
    def ports(self) -> list[int]:
        return [int(m.group(1)) for line in self.output
                for m in [re.search(r"broker \d+\s+\S+:(\d+)", line)] if m]

    def stop(self, sig: int = signal.SIGINT) -> tuple[int, str, str]:
        """Send ``sig`` and wait; returns (exit code, all stdout, stderr)."""
        if self.proc.poll() is None:
            self.proc.send_signal(sig)
        try:
            out, err = self.proc.communicate(timeout=15)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.communicate()
            raise AssertionError("kclient emulate did not stop within 15 s") from None
        return (self.proc.returncode, "".join(self.output) + out.decode(),
                err.decode())


def start_emulator(*args: str, timeout: float = 30.0, stdin: int | None = None) -> Emulator:
    """Start ``kclient emulate ARGS`` and wait until it prints the bootstrap address
    (``stdin=subprocess.PIPE``: the test types on its stdin through ``proc.stdin``)."""
    proc = subprocess.Popen([str(KCLIENT), "emulate", *args], stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, stdin=stdin, env=kclient_env())
    try:
        bootstrap, output = read_until_bootstrap(proc, timeout)
    except TimeoutError as exc:
        proc.kill()
        _, err = proc.communicate()
        raise AssertionError(f"kclient emulate {' '.join(args)} did not start:\n{exc}\n"
                             f"{err.decode()}") from None
    return Emulator(proc, bootstrap, output)


@pytest.fixture
def emulator() -> Iterator[Callable[..., Emulator]]:
    """Factory: ``emulator("--release", "2.8")``; every emulator is stopped afterwards."""
    started: list[Emulator] = []

    def start(*args: str) -> Emulator:
        emu = start_emulator(*args)
        started.append(emu)
        return emu

    yield start
    for emu in started:
        if emu.proc.poll() is None:
            emu.stop()


@pytest.fixture(scope="module")
def mixed_cluster() -> Iterator[Emulator]:
    """A Kafka 2.0 + 3.9 cluster, shared by the tests of one module."""
    emu = start_emulator("--release", "2.0,3.9", "--port", "0")
    try:
        yield emu
    finally:
        emu.stop()
