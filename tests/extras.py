"""Tests of kclient's optional extras: they skip, naming the extra, where it is not installed.

The extras are pyproject.toml's ``[project.optional-dependencies]``; ``make
test`` installs them all, and ``make test-noextras`` runs the suite in a
virtual environment without any, where each of these tests skips with its
reason and the tests of what a user without an extra sees run instead.
"""

from __future__ import annotations

import re
import tomllib
from pathlib import Path
from types import ModuleType

import pytest

from kclient._version import DISTRIBUTION, install_hint
from kclient.extras import missing

__all__ = ["EXTRAS", "extra_missing", "needs_extra", "needs_trustme"]

PYPROJECT = Path(__file__).resolve().parent.parent / "pyproject.toml"


def _import_name(requirement: str) -> str:
    """``prometheus_client`` for ``prometheus-client>=0.20`` (true of every extra's package)."""
    found = re.match(r"[A-Za-z0-9][A-Za-z0-9._-]*", requirement)
    assert found is not None, requirement
    return found.group(0).lower().replace("-", "_")


def _modules(extra: str, table: dict[str, list[str]]) -> tuple[str, ...]:
    """The import names ``extra`` brings; an extra that names others of kclient's
    (``kclient-kafka[fleet]``) brings theirs too."""
    found: list[str] = []
    for requirement in table[extra]:
        own = re.fullmatch(re.escape(DISTRIBUTION) + r"\[([^\]]+)\]", requirement)
        if own is None:
            found.append(_import_name(requirement))
        else:
            for inner in own.group(1).split(","):
                found.extend(_modules(inner.strip(), table))
    return tuple(dict.fromkeys(found))


_TABLE: dict[str, list[str]] = tomllib.loads(PYPROJECT.read_text(encoding="utf-8"))[
    "project"]["optional-dependencies"]
#: The modules each extra brings, by import name, read from pyproject.toml.
EXTRAS: dict[str, tuple[str, ...]] = {extra: _modules(extra, _TABLE) for extra in _TABLE}


def extra_missing(extra: str) -> list[str]:
    """The modules of ``extra`` that are not installed here."""
    return missing(EXTRAS[extra])


def needs_extra(extra: str, module: str | None = None) -> ModuleType:
    """Import ``module`` (by default the extra's first) or skip the calling test, naming
    the extra and the command that installs it."""
    name = module or EXTRAS[extra][0]
    return pytest.importorskip(
        name, reason=f"{name} comes with the {extra!r} extra, not installed here "
                     f"({install_hint(extra)})")


def needs_trustme() -> ModuleType:
    """trustme, the test certificate authority, or a skip: it runs on cryptography,
    which is also the ``pkcs12`` extra and so may be absent where the extras are."""
    return pytest.importorskip(
        "trustme", reason="trustme (the test certificate authority) needs cryptography, "
                          f"absent here; it comes with the test tools or {install_hint('pkcs12')}")
