"""Helpers of the fleet tests (their SparkSession is the shared ``spark`` fixture)."""

from __future__ import annotations

import shutil
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from kclient._version import install_hint
from tests.extras import extra_missing


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_makereport(item: pytest.Item, call: pytest.CallInfo[None]
                              ) -> Iterator[None]:
    """The fleet is the ``spark`` extra's: a fleet test that failed on importing one of
    its modules, missing here, is reported skipped, naming the extra (the typed error
    users get without it is tests/test_extras.py's).  With the extra installed, or for
    any other error, the report stands."""
    outcome: Any = yield
    report = outcome.get_result()
    excinfo = call.excinfo
    if report.failed and excinfo is not None and excinfo.errisinstance(ModuleNotFoundError):
        module = (excinfo.value.name or "").partition(".")[0]
        if module in extra_missing("spark"):
            report.outcome = "skipped"
            report.longrepr = (str(item.path), item.location[1] or 0,
                               f"Skipped: needs {module}, from the 'spark' extra, not "
                               f"installed here ({install_hint('spark')})")


def needs_spark() -> Any:
    """The ``pyspark`` module; skips, saying why, without PySpark or a Java runtime."""
    pyspark = pytest.importorskip(
        "pyspark", reason="the fleet pipeline needs PySpark (kclient-kafka[spark])")
    if shutil.which("java") is None:
        pytest.skip("Spark needs a Java runtime and none is on PATH")
    return pyspark


def pyspark_launcher(name: str) -> Path:
    """The installed PySpark's ``bin/<name>`` script; skips without PySpark, Java or the script."""
    pyspark = needs_spark()
    launcher = Path(pyspark.__file__).parent / "bin" / name
    if not launcher.exists():
        pytest.skip(f"{launcher} is missing from the installed PySpark")
    return launcher
