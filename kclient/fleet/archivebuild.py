"""The child process that builds the class archive (see :mod:`kclient.fleet.classarchive`).

Run as ``python -m kclient.fleet.archivebuild TARGET WORKDIR`` by
:func:`~kclient.fleet.classarchive.build_archive`: it writes two small
synthetic fleets into WORKDIR, reports on both in one Spark session whose
driver JVM was started with ``-XX:ArchiveClassesAtExit=TARGET``, and waits
for that JVM to exit, which is when HotSpot writes the archive.
"""

from __future__ import annotations

import subprocess
import sys
from collections.abc import Sequence
from pathlib import Path

from kclient.errors import FleetError
from kclient.fleet.classarchive import BUILD_TIMEOUT, dump_options
from kclient.fleet.pipeline import run_report
from kclient.fleet.session import build_session
from kclient.fleet.synth import write_fleet

__all__ = ["BUILD_CLUSTERS", "dump", "main"]

#: Clusters of each synthetic fleet the build reports on.
BUILD_CLUSTERS = 40


def dump(target: Path, work: Path) -> None:
    """The build child: small reports in a JVM that archives its classes when it exits."""
    from pyspark import SparkContext

    text = write_fleet(work / "fleet.jsonl", BUILD_CLUSTERS)
    table = write_fleet(work / "history.parquet", BUILD_CLUSTERS, history=2)
    spark = build_session(class_archive=None, jvm_options=dump_options(target))
    run_report(spark, text.path, str(work / "report"))
    run_report(spark, table.path, str(work / "history"), history=True)
    spark.stop()
    # The JVM writes the archive as it exits, which it does when its stdin closes.
    gateway = SparkContext._gateway
    jvm: subprocess.Popen[bytes] | None = getattr(gateway, "proc", None)
    if gateway is None or jvm is None or jvm.stdin is None:
        raise FleetError("this PySpark does not expose its driver JVM's process; the class "
                         "archive cannot be built")
    gateway.shutdown()
    jvm.stdin.close()
    status = jvm.wait(timeout=BUILD_TIMEOUT)
    if status != 0:
        raise FleetError(f"the driver JVM exited with status {status} while writing the "
                         "class archive")


def main(argv: Sequence[str]) -> int:
    """Entry of the build child: ``python -m kclient.fleet.archivebuild TARGET WORKDIR``."""
    dump(Path(argv[0]), Path(argv[1]))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
