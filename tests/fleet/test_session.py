"""The command line's own Spark session: minimal, quiet through Spark's log4j configuration."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from kclient.errors import ConfigError
from kclient.fleet.session import SESSION_CONF, _quiet_log_config, build_session
from tests.extras import needs_extra


def test_the_session_settings_are_the_minimal_ones() -> None:
    # UTC days, no web UI; nothing that tunes Spark's planner or the JVM.
    assert SESSION_CONF == {"spark.sql.session.timeZone": "UTC", "spark.ui.enabled": "false",
                            "spark.ui.showConsoleProgress": "false"}


def test_the_quiet_log_configuration_goes_when_the_process_ends() -> None:
    # One temp file per Spark start used to stay in /tmp for good.
    code = "from kclient.fleet.session import _quiet_log_config as c; print(c())"
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                          timeout=60, check=True,
                          env={**os.environ, "PYTHONPATH": str(Path(__file__).parents[2])})
    path = Path(done.stdout.strip())
    assert path.name.startswith("kclient-log4j2-")
    assert not path.exists()


def test_the_log_configuration_names_one_level_for_spark_and_its_python_gateway() -> None:
    lines = Path(_quiet_log_config("off")).read_text(encoding="utf-8").splitlines()
    assert "rootLogger.level = off" in lines
    assert "logger.shell.name = org.apache.spark.api.python.PythonGatewayServer" in lines
    assert "logger.shell.level = off" in lines
    assert _quiet_log_config("error") != _quiet_log_config("off")


def test_a_bad_driver_memory_is_refused_before_spark_starts() -> None:
    with pytest.raises(ConfigError, match=r"'lots' is not a memory size"):
        build_session("local[1]", driver_memory="lots")


def test_the_libraries_pyspark_wants_are_imported_ahead_and_failures_stay_quiet(
        tmp_path: Path) -> None:
    for module in ("pandas", "pyarrow"):
        needs_extra("spark", module)
    # A fresh interpreter, so that the imports are really done by the thread.
    (tmp_path / "kclient_broken_module.py").write_text("raise RuntimeError('broken')\n")
    script = (
        "import sys, threading\n"
        "from kclient.fleet.session import _SESSION_IMPORTS, _import_ahead\n"
        "assert not any(name in sys.modules for name in _SESSION_IMPORTS)\n"
        "thread = _import_ahead(('kclient_no_such_module', 'kclient_broken_module',"
        " *_SESSION_IMPORTS))\n"
        "assert thread is not threading.current_thread() and thread.daemon\n"
        "thread.join(60)\n"
        "assert not thread.is_alive()\n"
        "print(sorted(name for name in _SESSION_IMPORTS if name in sys.modules))\n"
        "print('kclient_broken_module' in sys.modules)\n")
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(tmp_path), *sys.path])}
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True,
                          env=env, timeout=120, check=False)
    assert done.returncode == 0, done.stderr
    assert done.stdout.splitlines() == [str(sorted(("pandas", "pyarrow"))), "False"]
    assert done.stderr == ""
