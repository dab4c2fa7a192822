"""The contributor page: its module map matches the code, its rules name real tests."""

from __future__ import annotations

import ast
import re
import sys
from pathlib import Path

import pytest

from tests.docs.conftest import BuiltSite

REPO = Path(__file__).resolve().parents[2]
PAGE = REPO / "docs" / "contributing.md"
sys.path.insert(0, str(REPO / "tools"))
import module_map  # noqa: E402  (tools/ is not a package)


def test_every_module_says_what_it_holds() -> None:
    silent = [name for name, (text, _) in module_map.modules().items() if not text]
    assert silent == [], f"modules without a docstring: {silent}"


def test_every_package_has_a_layer_description() -> None:
    packages = {p.parent for p in module_map.PACKAGE.rglob("__init__.py")}
    names = {module_map.module_name(p / "__init__.py") for p in packages}
    assert names <= set(module_map.LAYERS), sorted(names - set(module_map.LAYERS))


@pytest.mark.timeout(150)
def test_module_map_lists_every_module(built_site: BuiltSite) -> None:
    html = (built_site.path / "contributing" / "index.html").read_text(encoding="utf-8")
    assert module_map.MARKER not in html
    listed = set(re.findall(r"<code>(kclient(?:\.[a-z_]+)*)</code>", html))
    modules = set(module_map.modules())
    assert modules <= listed, f"missing from the map: {sorted(modules - listed)}"
    stale = {name for name in listed - modules
             if re.search(rf"<td><code>{re.escape(name)}</code></td>", html)}
    assert not stale, f"the map lists modules that do not exist: {sorted(stale)}"


def test_every_rule_names_a_test_that_exists() -> None:
    text = PAGE.read_text(encoding="utf-8")
    cited = re.findall(r"`(tests/[\w/]+\.py)::(\w+)`", text)
    assert len(cited) >= 10
    for path, name in cited:
        tree = ast.parse((REPO / path).read_text(encoding="utf-8"))
        functions = {n.name for n in ast.walk(tree)
                     if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef))}
        assert name in functions, f"docs/contributing.md cites {path}::{name}, which is gone"


def test_every_tool_named_exists() -> None:
    for tool in re.findall(r"`(tools/\w+\.py)`", PAGE.read_text(encoding="utf-8")):
        assert (REPO / tool).is_file(), tool
