"""Helpers of the fleet tests (their SparkSession is the shared ``spark`` fixture)."""

from __future__ import annotations

import shutil
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from kclient._version import install_hint
from kclient.errors import FleetError
from kclient.extras import not_installed
from tests.extras import extra_missing


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_makereport(item: pytest.Item, call: pytest.CallInfo[None]
                              ) -> Iterator[None]:
    """The fleet is the ``spark`` extra's: a fleet test that failed on importing one of
    its modules, missing here, or on kclient's own refusal to start an engine without
    them (:func:`kclient.extras.require`), is reported skipped, naming the extra (that
    refusal is tested in tests/test_extras.py).  With the extra installed, or for any
    other error, the report stands."""
    outcome: Any = yield
    report = outcome.get_result()
    excinfo = call.excinfo
    if report.failed and excinfo is not None and extra_missing("spark"):
        module = ""
        if excinfo.errisinstance(ModuleNotFoundError):
            module = (excinfo.value.name or "").partition(".")[0]
        elif excinfo.errisinstance(FleetError) and str(excinfo.value).endswith(
                not_installed("spark")):  # kclient.extras.require refused to start
            module = ", ".join(extra_missing("spark"))
        if module and set(module.split(", ")) <= set(extra_missing("spark")):
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
