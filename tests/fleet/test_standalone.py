"""``kclient fleet report --master spark://...`` on a real Spark standalone cluster.

A master and two workers are started from the installed PySpark as separate
JVMs on 127.0.0.1 (free ports, small memory); the command runs in a subprocess
against them; every process started here is stopped at the end.
"""

from __future__ import annotations

import contextlib
import os
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from kclient.fleet.synth import write_fleet
from kclient.negotiation import ClusterView, brokers_by_cluster, read_snapshots
from kclient.negotiation.featurefile import default_features
from tests.fleet.conftest import pyspark_launcher

pytestmark = [pytest.mark.spark, pytest.mark.integration, pytest.mark.slow]

START_TIMEOUT = 90.0


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def _wait_for(check: object, what: str, timeout: float = START_TIMEOUT) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if callable(check) and check():
            return
        time.sleep(0.3)
    raise AssertionError(f"timed out after {timeout:.0f} s waiting for {what}")


def _listening(port: int) -> bool:
    try:
        with socket.create_connection(("127.0.0.1", port), timeout=0.5):
            return True
    except OSError:
        return False


def _stop(process: subprocess.Popen[bytes]) -> None:
    if process.poll() is not None:
        return
    try:
        os.killpg(process.pid, signal.SIGTERM)
        process.wait(timeout=15)
    except (ProcessLookupError, subprocess.TimeoutExpired):
        with contextlib.suppress(ProcessLookupError):
            os.killpg(process.pid, signal.SIGKILL)
        process.wait(timeout=15)


@pytest.fixture
def standalone(tmp_path: Path) -> Iterator[tuple[str, dict[str, str], list[Path]]]:
    spark_class = pyspark_launcher("spark-class")
    home = spark_class.parent.parent
    env = dict(os.environ, SPARK_HOME=str(home), SPARK_LOCAL_IP="127.0.0.1",
               SPARK_DAEMON_MEMORY="256m", SPARK_LOG_DIR=str(tmp_path / "logs"),
               SPARK_NO_DAEMONIZE="1", PYSPARK_PYTHON=sys.executable)
    started: list[subprocess.Popen[bytes]] = []
    logs: list[Path] = []

    def launch(name: str, *args: str) -> None:
        log = tmp_path / f"{name}.log"
        logs.append(log)
        with log.open("wb") as out:
            started.append(subprocess.Popen([str(spark_class), *args], env=env, stdout=out,
                                            stderr=subprocess.STDOUT, start_new_session=True))

    try:
        port = _free_port()
        launch("master", "org.apache.spark.deploy.master.Master", "--host", "127.0.0.1",
               "--port", str(port), "--webui-port", str(_free_port()))
        _wait_for(lambda: _listening(port), "the Spark master")
        url = f"spark://127.0.0.1:{port}"
        work_dirs = []
        for index in (1, 2):
            work = tmp_path / f"worker{index}"
            work.mkdir()
            work_dirs.append(work)
            launch(f"worker{index}", "org.apache.spark.deploy.worker.Worker",
                   "--host", "127.0.0.1", "--port", str(_free_port()),
                   "--webui-port", str(_free_port()), "--cores", "1", "--memory", "1g",
                   "--work-dir", str(work), url)
        _wait_for(lambda: logs[0].read_text(errors="replace").count("Registering worker") >= 2,
                  "two workers to register with the master")
        yield url, env, work_dirs
    finally:
        for process in reversed(started):
            _stop(process)


def test_fleet_report_runs_on_a_standalone_cluster(
        standalone: tuple[str, dict[str, str], list[Path]], tmp_path: Path) -> None:
    pq = pytest.importorskip("pyarrow.parquet")
    url, env, work_dirs = standalone
    fleet = tmp_path / "fleet.jsonl"
    write_fleet(fleet, 30, seed=21)
    out = tmp_path / "out"
    command = [sys.executable, "-c", "import sys; from kclient.cli import main; "
               "sys.exit(main())", "fleet", "report", "--snapshots", str(fleet),
               "--out", str(out), "--master", url]
    result = subprocess.run(command, env=env, capture_output=True, text=True, timeout=240)
    assert result.returncode == 0, result.stderr[-3000:]
    assert f"starting Spark ({url})" in result.stderr
    assert result.stdout.strip() == f"{out}/report.md"

    table = pq.read_table(out / "feature_availability").to_pylist()
    clusters = brokers_by_cluster(read_snapshots(fleet))
    expected = {(name, r.name): r.available for name, brokers in clusters.items()
                for r in ClusterView(brokers, name=name).evaluate(default_features())}
    assert {(r["cluster"], r["feature"]): r["available"] for r in table} == expected
    assert (out / "report.md").read_text().startswith("# kclient fleet report")
    # Executors ran in both workers' JVMs, not in the driver.
    for work in work_dirs:
        assert list(work.glob("app-*/*/stderr")), f"no executor ran in {work}"
