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


def test_importing_sync_client_defers_the_engine() -> None:
    """``from kclient import SyncClient`` loads no asyncio, attrs, YAML or negotiation core.

    The import budget (under 100 ms, ``python -m benchmarks imports``) rests on
    this: the engine loads when a SyncClient starts.
    """
    code = (
        "import sys, kclient\n"
        "from kclient import SyncClient\n"
        "heavy = sorted(m for m in sys.modules if m.split('.')[0] in ('asyncio', 'attr', "
        "'attrs', 'yaml', 'ssl') or m.startswith(('kclient.negotiation', 'kclient.protocol', "
        "'kclient.net.client', 'kclient.net.connection')))\n"
        "print(','.join(heavy))\n"
        "assert SyncClient.__name__ == 'SyncClient'\n"
    )
    result = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, timeout=60, check=True
    )
    assert result.stdout.strip() == "", f"SyncClient import pulled in: {result.stdout.strip()}"


def test_public_api_is_exported() -> None:
    import kclient

    for name in kclient.__all__:
        assert getattr(kclient, name) is not None, name
    assert issubclass(kclient.ProtocolError, kclient.KClientError)


# -- protocol constants: one home (kclient/protocol/constants.py) -------------------------

CONSTANTS_MODULE = PACKAGE / "protocol" / "constants.py"
# Names and attributes that hold an API key or an error code.
_KEY_OR_CODE = frozenset({"api_key", "error_code", "code", "error"})
_DICT_KEYS = frozenset({"api_key", "error_code", "request_api_key"})


def _int_literal(node: ast.AST) -> bool:
    if isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.USub):
        node = node.operand
    return (isinstance(node, ast.Constant) and isinstance(node.value, int)
            and not isinstance(node.value, bool))


def _names_key_or_code(node: ast.AST) -> bool:
    if isinstance(node, ast.Attribute):
        return node.attr in _KEY_OR_CODE
    return isinstance(node, ast.Name) and node.id in _KEY_OR_CODE


def _first_param_is_key(tree: ast.Module) -> set[str]:
    """Functions (and methods) whose first parameter is an API key."""
    found = set()
    for node in ast.walk(tree):
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
            params = [a.arg for a in node.args.posonlyargs + node.args.args
                      if a.arg not in ("self", "cls")]
            if params and params[0] in ("api_key", "api"):
                found.add(node.name)
    return found


def _kclient_trees() -> dict[Path, ast.Module]:
    return {path: ast.parse(path.read_text(encoding="utf-8"), filename=str(path))
            for path in sorted(PACKAGE.rglob("*.py")) if path != CONSTANTS_MODULE}


def bare_protocol_literals(tree: ast.Module, key_functions: set[str]) -> list[tuple[int, str]]:
    """Int literals used as an API key or error code: compared with ``api_key``,
    ``error_code`` or ``code`` (names or attributes), passed as such a keyword or
    as the first argument of a function taking an API key, or put under such a key
    in a dict display.  Version numbers never match these shapes."""
    found: list[tuple[int, str]] = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Compare):
            operands = [node.left, *node.comparators]
            equality = all(isinstance(op, (ast.Eq, ast.NotEq, ast.In, ast.NotIn))
                           for op in node.ops)
            if equality and any(_names_key_or_code(o) for o in operands):
                literals = [o for o in operands if _int_literal(o)]
                literals += [e for o in operands if isinstance(o, (ast.Tuple, ast.Set, ast.List))
                             for e in o.elts if _int_literal(e)]
                if literals:
                    found.append((node.lineno, f"comparison {ast.unparse(node)}"))
        elif isinstance(node, ast.Call):
            for kw in node.keywords:
                if kw.arg in _DICT_KEYS and _int_literal(kw.value):
                    found.append((node.lineno, f"{kw.arg}={ast.unparse(kw.value)}"))
            func = node.func
            name = func.attr if isinstance(func, ast.Attribute) else getattr(func, "id", "")
            if name in key_functions and node.args and _int_literal(node.args[0]):
                found.append((node.lineno, f"{name}({ast.unparse(node.args[0])}, ...)"))
        elif isinstance(node, ast.Dict):
            for key, value in zip(node.keys, node.values, strict=True):
                if (isinstance(key, ast.Constant) and key.value in _DICT_KEYS
                        and _int_literal(value)):
                    found.append((node.lineno, f"{key.value!r}: {ast.unparse(value)}"))
    return found


def test_no_bare_api_keys_or_error_codes() -> None:
    trees = _kclient_trees()
    key_functions = set().union(*(_first_param_is_key(t) for t in trees.values()))
    problems = [f"{path.relative_to(PACKAGE.parent)}:{line}: {what}"
                for path, tree in trees.items()
                for line, what in bare_protocol_literals(tree, key_functions)]
    assert not problems, ("use kclient.protocol.constants.ApiKey / ErrorCode instead of "
                          "numbers:\n" + "\n".join(problems))


@pytest.mark.parametrize("source", [
    "if response.error_code == 35: pass",
    "if api_key in (17, 36): pass",
    "body = {'error_code': 58}",
    "encode_response(18, 3, 0, body)",
    "x = Thing(api_key=3)",
])
def test_bare_literal_scan_flags(source: str) -> None:
    assert bare_protocol_literals(ast.parse(source), {"encode_response"})


@pytest.mark.parametrize("source", [
    "if version >= 3: pass",
    "encode_response(ApiKey.API_VERSIONS, 3, 0, body)",
    "if response.error_code == ErrorCode.UNSUPPORTED_VERSION: pass",
    "if api_version == 0: pass",
    "if api_key < 0: pass",
])
def test_bare_literal_scan_ignores_versions_and_members(source: str) -> None:
    assert not bare_protocol_literals(ast.parse(source), {"encode_response"})
