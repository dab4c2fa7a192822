"""The typed front door: ``from kclient import Client`` is typed for mypy and IDEs.

The public names load lazily (``import kclient`` stays fast), so each package
that defers names also imports them under ``TYPE_CHECKING``; these tests keep
the two lists equal and run mypy on a small user file with typical mistakes.
"""

from __future__ import annotations

import ast
import importlib
import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
LAZY_PACKAGES = ("kclient", "kclient.net", "kclient.protocol")

USER_FILE = '''
from kclient import Client, SyncClient, ClusterView

def main() -> None:
    with SyncClient("localhost:9092", request_timeot=3) as client:
        version: str = client.version_for("Produce")
    Client("localhost:9092", strict="yes")
    ClusterView(brokers=()).api_suport("Produce")
'''


def _type_checking_names(package: str) -> set[str]:
    module = importlib.import_module(package)
    assert module.__file__ is not None
    tree = ast.parse(Path(module.__file__).read_text())
    names: set[str] = set()
    for node in tree.body:
        if isinstance(node, ast.If) and "TYPE_CHECKING" in ast.unparse(node.test):
            for stmt in ast.walk(node):
                if isinstance(stmt, ast.ImportFrom):
                    names.update(alias.asname or alias.name for alias in stmt.names)
    return names


@pytest.mark.parametrize("package", LAZY_PACKAGES)
def test_every_lazy_name_is_visible_to_type_checkers(package: str) -> None:
    module = importlib.import_module(package)
    lazy = set(module._LAZY)
    assert lazy <= _type_checking_names(package), sorted(lazy - _type_checking_names(package))
    assert lazy <= set(module.__all__)


def test_mypy_catches_a_users_typos(tmp_path: Path) -> None:
    user = tmp_path / "app.py"
    user.write_text(USER_FILE)
    result = subprocess.run(
        [sys.executable, "-m", "mypy", "--strict", "--no-incremental", str(user)],
        capture_output=True, text=True, cwd=tmp_path, timeout=300,
        env={**os.environ, "MYPYPATH": str(ROOT)})
    out = result.stdout
    assert result.returncode == 1, out
    assert 'Unexpected keyword argument "request_timeot" for "SyncClient"' in out
    assert 'did you mean "request_timeout"' in out
    assert 'Argument "strict" to "Client" has incompatible type "str"; expected "bool"' in out
    assert 'Incompatible types in assignment (expression has type "int"' in out
    assert '"ClusterView" has no attribute "api_suport"' in out
    assert "does not explicitly export" not in out
