"""One SparkSession for every fleet test: local[2], few partitions, loopback only."""

from __future__ import annotations

import shutil
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest


def pyspark_launcher(name: str) -> Path:
    """The installed PySpark's ``bin/<name>`` script; skips without PySpark, Java or the script."""
    pyspark = pytest.importorskip("pyspark")
    if shutil.which("java") is None:
        pytest.skip("Spark needs a Java runtime and none is on PATH")
    launcher = Path(pyspark.__file__).parent / "bin" / name
    if not launcher.exists():
        pytest.skip(f"{launcher} is missing from the installed PySpark")
    return launcher


@pytest.fixture(scope="session")
def spark() -> Iterator[Any]:
    """A local Spark session shared by the whole test run (skips without Java)."""
    pytest.importorskip("pyspark", reason="the fleet pipeline needs PySpark (kclient[spark])")
    if shutil.which("java") is None:
        pytest.skip("Spark needs a Java runtime and none is on PATH")
    from kclient.fleet.session import build_session

    # Every test input is a few kB: the driver gets the small-input JVM options.
    settings = {
        "spark.sql.shuffle.partitions": "4",
        "spark.default.parallelism": "2",
        "spark.driver.memory": "1g",
        "spark.sql.adaptive.enabled": "false",
    }
    session = build_session("local[2]", app_name="kclient-fleet-tests", input_bytes=1 << 20,
                            extra_conf=settings)
    yield session
    session.stop()
