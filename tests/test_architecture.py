"""Guards for the layering rules of DESIGN.md §2."""

from __future__ import annotations

import ast
import subprocess
import sys
from pathlib import Path

import pytest

PACKAGE = Path(__file__).resolve().parent.parent / "kclient"
PURE_LAYERS = ("protocol", "negotiation", "sasl")
FORBIDDEN_IN_PURE = (
    "asyncio",
    "socket",
    "ssl",
    "selectors",
    "threading",
    "kclient.net",
    "kclient.emulator",
    "kclient.fleet",
    "pyspark",
)


def _imports(path: Path) -> set[str]:
    tree = ast.parse(path.read_text(encoding="utf-8"), filename=str(path))
    names: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            names.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            names.add(node.module)
    return names


def _pure_files() -> list[Path]:
    files: list[Path] = []
    for layer in PURE_LAYERS:
        files.extend(sorted((PACKAGE / layer).rglob("*.py")))
    return files


@pytest.mark.parametrize("path", _pure_files(), ids=lambda p: str(p.relative_to(PACKAGE)))
def test_pure_layers_do_no_io(path: Path) -> None:
    bad = {
        name
        for name in _imports(path)
        for forbidden in FORBIDDEN_IN_PURE
        if name == forbidden or name.startswith(forbidden + ".")
    }
    assert not bad, f"{path.name} imports {sorted(bad)}; protocol/negotiation must stay sans-I/O"


def test_import_kclient_is_light() -> None:
    code = (
        "import sys, kclient\n"
        "heavy = [m for m in ('pyspark', 'asyncio', 'kclient.net', 'kclient.fleet', "
        "'matplotlib', 'pandas') if m in sys.modules]\n"
        "print(','.join(heavy))\n"
    )
    result = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, timeout=60, check=True
    )
    assert result.stdout.strip() == "", f"import kclient pulled in: {result.stdout.strip()}"


def test_public_api_is_exported() -> None:
    import kclient

    for name in kclient.__all__:
        assert getattr(kclient, name) is not None, name
    assert issubclass(kclient.ProtocolError, kclient.KClientError)
