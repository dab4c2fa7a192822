"""One ``spark-submit`` of ``kclient fleet scan`` against a real Spark standalone cluster.

A master and a worker are started from the installed PySpark as separate
JVMs on 127.0.0.1 (free ports, small memory); the guide's driver script runs
through spark-submit against the master, kclient shipped as a zip on
``--py-files`` (``test_submit``).  One run covers both paths the fleet guide
documents: the spark-submit driver, and a cluster whose executors (in the
worker's JVM, not the driver's) probe the targets from Python workers that
import kclient and its data files from the zip, then report on the records.
Every process started here is stopped at the end.
"""

from __future__ import annotations

import contextlib
import json
import os
import signal
import socket
import subprocess
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from kclient.negotiation import ClusterView, brokers_by_cluster, read_snapshots
from kclient.negotiation.featurefile import default_features
from tests.extras import needs_extra
from tests.fleet.conftest import pyspark_launcher
from tests.fleet.test_scan import _closed_port, _serving
from tests.fleet.test_submit import spark_submit

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
def standalone(tmp_path: Path) -> Iterator[tuple[str, Path]]:
    """A master and one worker (2 cores), as JVMs of their own; the master's URL, the worker's
    work directory."""
    spark_class = pyspark_launcher("spark-class")
    home = spark_class.parent.parent
    env = dict(os.environ, SPARK_HOME=str(home), SPARK_LOCAL_IP="127.0.0.1",
               SPARK_DAEMON_MEMORY="256m", SPARK_LOG_DIR=str(tmp_path / "logs"),
               SPARK_NO_DAEMONIZE="1")
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
        work = tmp_path / "worker"
        work.mkdir()
        launch("worker", "org.apache.spark.deploy.worker.Worker",
               "--host", "127.0.0.1", "--port", str(_free_port()),
               "--webui-port", str(_free_port()), "--cores", "2", "--memory", "1g",
               "--work-dir", str(work), url)
        _wait_for(lambda: "Registering worker" in logs[0].read_text(errors="replace"),
                  "the worker to register with the master")
        yield url, work
    finally:
        for process in reversed(started):
            _stop(process)


def test_fleet_scan_through_spark_submit_on_a_standalone_cluster(
        standalone: tuple[str, Path], tmp_path: Path) -> None:
    pq = needs_extra("fleet", "pyarrow.parquet")
    url, work = standalone
    out = tmp_path / "out"
    targets = tmp_path / "targets.jsonl"
    with _serving({"old": ["2.8"], "new": ["4.1", "4.1"]}) as addresses:
        lines = [{"cluster": name, "bootstrap_servers": address}
                 for name, address in addresses.items()]
        lines.append({"cluster": "gone", "bootstrap_servers": f"127.0.0.1:{_closed_port()}"})
        targets.write_text("".join(json.dumps(t) + "\n" for t in lines), encoding="utf-8")
        # spark_submit checks that kclient came from the shipped zip only.
        _, said = spark_submit(tmp_path, "scan", "--targets", str(targets), "--out", str(out),
                               "--timeout", "10", master=url)
    assert said[-1] == f"{out}/report.md"
    assert (out / "report.md").read_text().startswith("# kclient fleet report")
    records = [r for f in sorted((out / "snapshots").glob("part-*")) for r in read_snapshots(f)]
    sources = {(r.cluster, r.broker_id): r.source for r in records}
    assert sorted(sources.values()) == ["api_versions"] * 3 + ["error"]
    assert {c for c, _ in sources} == {"old", "new", "gone"}
    # The report's table says what the core says of the scanned records.
    table = pq.read_table(out / "feature_availability").to_pylist()
    expected = {(name, r.name): r.state.value
                for name, brokers in brokers_by_cluster(records).items()
                for r in ClusterView(brokers, name=name).evaluate(default_features())}
    assert {(r["cluster"], r["feature"]): r["state"] for r in table} == expected
    # The probes ran in an executor of the worker, not in the driver.
    assert list(work.glob("app-*/*/stderr")), f"no executor ran in {work}"
