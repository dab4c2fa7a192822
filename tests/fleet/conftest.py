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

#: The fleet's extras, the smaller first: a module both bring is named with ``fleet``.
_FLEET_EXTRAS = ("fleet", "spark")


def _refused_by(excinfo: pytest.ExceptionInfo[BaseException]) -> tuple[str, str] | None:
    """``(modules, extra)`` when ``excinfo`` is a missing fleet module: an import of one
    that is absent here, or kclient's own refusal to start without them
    (:func:`kclient.extras.require`)."""
    for extra in _FLEET_EXTRAS:
        absent = extra_missing(extra)
        if not absent:
            continue
        if excinfo.errisinstance(ModuleNotFoundError):
            module = (getattr(excinfo.value, "name", None) or "").partition(".")[0]
            if module in absent:
                return module, extra
        elif excinfo.errisinstance(FleetError) and str(excinfo.value).endswith(
                not_installed(extra)):
            return ", ".join(absent), extra
    return None


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_makereport(item: pytest.Item, call: pytest.CallInfo[None]
                              ) -> Iterator[None]:
    """The fleet is the ``fleet`` and ``spark`` extras': a fleet test that failed on
    importing one of their modules, missing here, or on kclient's own refusal to start
    an engine without them, is reported skipped, naming the extra (that refusal is
    tested in tests/test_extras.py).  With the extras installed, or for any other
    error, the report stands."""
    outcome: Any = yield
    report = outcome.get_result()
    excinfo = call.excinfo
    if report.failed and excinfo is not None:
        refused = _refused_by(excinfo)
        if refused is not None:
            module, extra = refused
            report.outcome = "skipped"
            report.longrepr = (str(item.path), item.location[1] or 0,
                               f"Skipped: needs {module}, from the {extra!r} extra, not "
                               f"installed here ({install_hint(extra)})")


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
