"""The README's first steps and the Makefile targets they name."""

from __future__ import annotations

import os
import shutil
import stat
import subprocess
from pathlib import Path

import pytest

from tests.conftest import REPO_ROOT

README = (REPO_ROOT / "README.md").read_text(encoding="utf-8")


def _recipe(target: str, *flags: str) -> str:
    make = shutil.which("make")
    if make is None:
        pytest.skip("make is not installed")
    done = subprocess.run([make, "-n", "-s", *flags, "-f", str(REPO_ROOT / "Makefile"), target,
                           "STAMP=/dev/null"], capture_output=True, text=True, timeout=30,
                          cwd=REPO_ROOT, check=True)
    return done.stdout


def test_readme_keeps_the_ci_command_and_says_how_to_reach_kclient() -> None:
    # .ci/run runs exactly the README's test command.
    assert "    make test\n" in README
    assert "make test" in (REPO_ROOT / ".ci" / "run").read_text(encoding="utf-8")
    assert "`.venv/bin/kclient`" in README and "`source .venv/bin/activate`" in README
    assert "    make test-fast\n" in README
    assert '-m "not spark and not slow"' in README
    assert "../shared" in README and "CI" in README
    demo = _recipe("demo")
    assert "source .venv/bin/activate" in demo and ".venv/bin/kclient" in demo


def test_test_fast_leaves_out_spark_and_slow_tests() -> None:
    lines = _recipe("test-fast").splitlines()
    assert lines[-1] == '.venv/bin/python -m pytest -q -ra -m "not spark and not slow"'
    assert ".venv/bin/ruff check kclient tests benchmarks tools" in lines


def test_test_noextras_runs_the_suite_in_a_venv_without_the_extras() -> None:
    lines = _recipe("test-noextras", "-B").splitlines()  # -B: as if not installed yet
    install = next(line for line in lines if " -m pip install -q -e " in line)
    assert install.startswith(".venv-noextras/bin/python ") and "[" not in install
    assert ".venv-noextras/bin/python -m pip uninstall -q -y cryptography" in lines
    assert lines[-1] == '.venv-noextras/bin/python -m pytest -q -ra -m "not slow"'
    assert ".venv-noextras" not in _recipe("test")
    assert ".venv-noextras/" in (REPO_ROOT / ".gitignore").read_text(encoding="utf-8")


def _fake(bin_dir: Path, name: str, body: str) -> None:
    path = bin_dir / name
    path.write_text("#!/bin/sh\n" + body, encoding="utf-8")
    path.chmod(path.stat().st_mode | stat.S_IEXEC)


@pytest.mark.parametrize("apt_status", [0, 1])
def test_installing_chromium_is_quiet_unless_it_fails(tmp_path: Path, apt_status: int) -> None:
    """The chromium target, run with a stand-in apt-get that prints debconf's noise."""
    recipe = _recipe("chromium").replace("/usr/bin/chromium", str(tmp_path / "no-chromium"))
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    seen = tmp_path / "seen"
    _fake(bin_dir, "apt-get", f'echo "$DEBIAN_FRONTEND $DEBCONF_NOWARNINGS $*" >> {seen}\n'
          'echo "debconf: delaying package configuration, since apt-utils is not '
          'installed" >&2\n'
          'echo "Selecting previously unselected package chromium."\n'
          f'[ "$1" = update ] || exit {apt_status}\n')
    _fake(bin_dir, "id", "echo 0\n")  # as root: no sudo
    env = {key: value for key, value in os.environ.items()
           if key not in ("DEBIAN_FRONTEND", "DEBCONF_NOWARNINGS")}
    env["PATH"] = f"{bin_dir}{os.pathsep}{env['PATH']}"
    done = subprocess.run(["sh", "-c", recipe], capture_output=True, text=True, timeout=30,
                          env=env, check=False)
    announced = "installing chromium (Debian package) for the documentation browser test\n"
    calls = seen.read_text(encoding="utf-8").splitlines()
    assert calls[0] == "  update -qq"
    assert calls[1] == "noninteractive yes install -y -qq chromium"
    if apt_status == 0:
        assert (done.returncode, done.stdout, done.stderr) == (0, announced, "")
    else:
        assert done.returncode == 1
        assert done.stdout.startswith(announced)
        assert "debconf: delaying package configuration" in done.stdout
        assert done.stdout.endswith("installing chromium failed (output above)\n")
