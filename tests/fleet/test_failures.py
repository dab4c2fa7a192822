"""A Spark that fails under the pipeline: one typed error naming the fix, no traceback."""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
from pathlib import Path
from typing import Any

import pytest

from kclient.errors import ConfigError, FleetError
from kclient.fleet.session import (
    build_session,
    check_driver_memory,
    spark_errors,
    spark_failure,
)
from tests.extras import needs_extra
from tests.fleet.conftest import needs_spark


def _env(**more: str) -> dict[str, str]:
    """This process's environment as it is now, plus ``more``."""
    return {**os.environ, "PYTHONPATH": str(Path(__file__).resolve().parents[2]), **more}


def _kclient(*args: str, timeout: float = 180,
             env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "kclient.cli", *args], capture_output=True,
                          text=True, timeout=timeout, env=_env(**(env or {})), check=False)


def test_a_jvm_that_stopped_answering_names_more_driver_memory() -> None:
    Py4JNetworkError = needs_extra("spark", "py4j.protocol").Py4JNetworkError
    try:
        raise ConnectionRefusedError(111, "Connection refused")
    except ConnectionRefusedError as refused:
        try:
            raise Py4JNetworkError("Answer from Java side is empty") from refused
        except Py4JNetworkError as gone:
            error = spark_failure(gone, "writing out/cluster_api_versions")
    assert isinstance(error, FleetError)
    text = str(error)
    assert text.startswith("Spark's driver JVM stopped while writing out/cluster_api_versions")
    assert "--driver-memory" in text and "\n" not in text
    assert isinstance(Py4JNetworkError("x"), spark_errors())


def test_another_spark_failure_keeps_its_first_line() -> None:
    Py4JError = needs_extra("spark", "py4j.protocol").Py4JError
    error = spark_failure(Py4JError("\n  the task failed: disk full\n\tat org.apache.Foo(x)\n"),
                          "reading in.jsonl")
    assert str(error) == "Spark failed while reading in.jsonl: the task failed: disk full"
    assert "OutOfMemoryError" not in str(error)
    heap = spark_failure(Py4JError("java.lang.OutOfMemoryError: Java heap space"), "reading x")
    assert "--driver-memory" in str(heap)
    assert not issubclass(TypeError, spark_errors())  # kclient's own bugs are not wrapped


def test_driver_memory_is_checked_before_spark_starts() -> None:
    with pytest.raises(ConfigError, match=r"'1\.5g' is not a memory size"):
        build_session("local[1]", driver_memory="1.5g")
    # Spark refuses a heap under 450 MiB only once its JVM runs, with a Java
    # stack trace: kclient says so first.  Without a unit the JVM reads bytes.
    for small in ("64m", "449m", "471859199", "460799k"):
        with pytest.raises(ConfigError, match=f"'{small}' is less than the 450m Spark needs"):
            check_driver_memory(small)
    for enough in ("450m", "471859200", "460800k", "1g", "1t"):
        assert check_driver_memory(enough) == enough


def test_a_too_small_driver_memory_is_one_line_and_exit_2(tmp_path: Path) -> None:
    snapshots = tmp_path / "fleet.jsonl"
    assert _kclient("fleet", "synth", "--clusters", "2", "--out", str(snapshots)).returncode == 0
    done = _kclient("fleet", "report", "--snapshots", str(snapshots), "--out",
                    str(tmp_path / "out"), "--quiet", "--driver-memory", "64m", timeout=60)
    assert done.returncode == 2, done.stderr
    assert done.stderr.splitlines() == [
        "kclient: error: --driver-memory: '64m' is less than the 450m Spark needs at the "
        "least; give 1g or more, e.g. 2g"]


@pytest.mark.spark
@pytest.mark.integration
def test_a_file_spark_cannot_read_is_one_fleet_error(spark: Any, tmp_path: Path) -> None:
    from kclient.fleet.pipeline import run_report

    broken = tmp_path / "fleet.parquet"
    broken.write_bytes(b"PAR1" + bytes(range(256)) * 8)  # no Parquet footer
    with pytest.raises(FleetError) as raised:
        run_report(spark, str(broken), str(tmp_path / "out"))
    # Spark's message, on one line, not its trace.
    text = str(raised.value)
    assert text.startswith(f"Spark failed while reading {broken}: ")
    assert "FAILED_READ_FILE" in text and "\n" not in text


def test_spark_without_java_is_one_line_after_the_engine_is_said(tmp_path: Path) -> None:
    pytest.importorskip("pyspark", reason="the fleet pipeline needs PySpark (kclient-kafka[spark])")
    no_java = tmp_path / "no-java"
    no_java.mkdir()
    snapshots = tmp_path / "fleet.jsonl"
    assert _kclient("fleet", "synth", "--clusters", "2", "--out", str(snapshots)).returncode == 0
    done = _kclient("fleet", "report", "--snapshots", str(snapshots), "--out",
                    str(tmp_path / "out"), "--master", "local[1]",
                    env={"JAVA_HOME": str(no_java)})
    assert done.returncode == 2, done.stderr[-2000:]
    lines = done.stderr.splitlines()
    # kclient's own progress lines, then one error line naming the fix.
    assert "kclient fleet: engine: spark (--master local[1] given)" in lines
    assert "kclient fleet: starting Spark (local[1])" in lines
    assert lines[-1] == ("kclient: error: Spark needs a Java runtime (17 or newer) and none "
                         "was found; install one or set JAVA_HOME")


_KILLED = textwrap.dedent("""
    import os, signal, sys, time
    from kclient.errors import FleetError
    from kclient.fleet.pipeline import run_report
    from kclient.fleet.session import build_session, stop_session
    from py4j.protocol import Py4JError

    class Odd:  # what stopping a JVM out of heap answered once
        def stop(self):
            raise Py4JError("org.apache.spark.sql.classic.SparkSession does not exist in the JVM")

    spark = build_session("local[1]")
    # The driver JVM is this process's child running Java.
    def java_children():
        found = []
        for entry in os.listdir("/proc"):
            if entry.isdigit():
                try:
                    stat = open(f"/proc/{entry}/stat").read().rsplit(")", 1)[1].split()
                    command = open(f"/proc/{entry}/cmdline", "rb").read()
                except OSError:
                    continue
                if int(stat[1]) == os.getpid() and b"java" in command:
                    found.append(int(entry))
        return found
    [pid] = java_children()
    os.kill(pid, signal.SIGKILL)
    for _ in range(100):  # bounded: the JVM is gone within a second
        try:
            os.kill(pid, 0)
        except ProcessLookupError:
            break
        time.sleep(0.05)
    try:
        run_report(spark, sys.argv[1], sys.argv[2])
    except FleetError as exc:
        print("FleetError:", exc)
    stop_session(spark)
    print("stopped")
    stop_session(Odd())
    print("an odd error while stopping: quiet")
""")


@pytest.mark.spark
@pytest.mark.integration
def test_a_driver_jvm_that_dies_is_one_fleet_error_and_stops_quietly(tmp_path: Path) -> None:
    needs_spark()
    snapshots = tmp_path / "fleet.jsonl"
    assert _kclient("fleet", "synth", "--clusters", "2", "--out", str(snapshots)).returncode == 0
    # A JVM killed outright cannot remove its scratch folders: they go in the
    # test's own folder, not the machine's /tmp.
    scratch = tmp_path / "spark-local"
    scratch.mkdir()
    done = subprocess.run([sys.executable, "-c", _KILLED, str(snapshots), str(tmp_path / "out")],
                          capture_output=True, text=True, timeout=180,
                          env=_env(SPARK_LOCAL_DIRS=str(scratch),
                                   JAVA_TOOL_OPTIONS=f"-Djava.io.tmpdir={scratch}"),
                          check=False)
    assert done.returncode == 0, done.stderr[-2000:]
    lines = done.stdout.strip().splitlines()
    assert lines[-2:] == ["stopped", "an odd error while stopping: quiet"]
    assert lines[-3].startswith(f"FleetError: Spark's driver JVM stopped while reading "
                                f"{snapshots}, most likely out of memory")
    assert "--driver-memory" in lines[-3]
