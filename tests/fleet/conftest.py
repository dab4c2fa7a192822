"""Helpers of the fleet tests (their SparkSession is the shared ``spark`` fixture)."""

from __future__ import annotations

import shutil
from pathlib import Path

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
