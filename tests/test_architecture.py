"""Guards for the layering rules of DESIGN.md §2."""

from __future__ import annotations

import ast
import re
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


def heavy_modules_after(statement: str, heavy: tuple[str, ...]) -> list[str]:
    """Modules named by (or under) ``heavy`` that ``statement`` loads in a fresh interpreter."""
    code = (
        f"import sys\n{statement}\n"
        f"heavy = {heavy!r}\n"
        "print(','.join(sorted(m for m in sys.modules "
        "if m in heavy or m.startswith(tuple(h + '.' for h in heavy)))))\n"
    )
    result = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, timeout=60, check=True
    )
    return [m for m in result.stdout.strip().split(",") if m]


def test_heavy_module_check_sees_what_is_loaded() -> None:
    assert "kclient.net.client" in heavy_modules_after("import kclient.net.client",
                                                       ("kclient.net",))


def test_import_kclient_is_light() -> None:
    loaded = heavy_modules_after("import kclient", (
        "pyspark", "asyncio", "kclient.net", "kclient.fleet", "matplotlib", "pandas"))
    assert loaded == [], f"import kclient pulled in: {loaded}"


def test_importing_sync_client_defers_the_engine() -> None:
    """``from kclient import SyncClient`` loads no asyncio, attrs, YAML or negotiation core.

    The import budget (under 100 ms, ``python -m benchmarks imports``) rests on
    this: the engine loads when a SyncClient starts.
    """
    loaded = heavy_modules_after("import kclient\nfrom kclient import SyncClient", (
        "asyncio", "attr", "attrs", "yaml", "ssl", "kclient.negotiation", "kclient.protocol",
        "kclient.net.client", "kclient.net.connection"))
    assert loaded == [], f"SyncClient import pulled in: {loaded}"


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


# -- the import graph: no cycles, no imports hidden in functions, no borrowed privates ----

#: Third-party packages behind an optional extra (or a peer library an adapter
#: wraps): a function may import them, so kclient works without them installed.
OPTIONAL_PACKAGES = frozenset({
    # py4j comes with pyspark (the Spark extra): its error types are Spark's.
    "pyspark", "py4j", "pyarrow", "matplotlib", "pandas", "prometheus_client",
    "kafka", "confluent_kafka", "aiokafka",
})
#: Command-line modules load what one subcommand runs when it runs, so that
#: ``kclient --help`` and ``kclient decode`` never import asyncio or Spark.
CLI_MODULES = ("kclient.cli", "kclient.commands")


def _module_name(path: Path) -> str:
    parts = list(path.relative_to(PACKAGE.parent).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


def _is_type_checking(node: ast.If) -> bool:
    test = node.test
    return (isinstance(test, ast.Name) and test.id == "TYPE_CHECKING") or (
        isinstance(test, ast.Attribute) and test.attr == "TYPE_CHECKING")


class ImportScan:
    """Every import of one module: where it sits and what it names."""

    def __init__(self, name: str, tree: ast.Module, modules: set[str]) -> None:
        self.name = name
        self.runtime: set[str] = set()  # kclient modules imported at module level
        self.in_functions: list[tuple[int, str]] = []
        self.privates: list[tuple[int, str]] = []
        self._modules = modules
        self._visit(tree, in_function=False, type_checking=False)

    def _targets(self, node: ast.Import | ast.ImportFrom) -> list[str]:
        if isinstance(node, ast.Import):
            return [alias.name for alias in node.names]
        if node.level or not node.module:
            return []
        found = [node.module]
        found += [f"{node.module}.{a.name}" for a in node.names
                  if f"{node.module}.{a.name}" in self._modules]
        return found

    def _visit(self, node: ast.AST, *, in_function: bool, type_checking: bool) -> None:
        for child in ast.iter_child_nodes(node):
            if isinstance(child, (ast.Import, ast.ImportFrom)):
                self._record(child, in_function, type_checking)
                continue
            self._visit(
                child,
                in_function=in_function or isinstance(
                    child, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda)),
                type_checking=type_checking or (
                    isinstance(child, ast.If) and _is_type_checking(child)))

    def _record(self, node: ast.Import | ast.ImportFrom, in_function: bool,
                type_checking: bool) -> None:
        targets = self._targets(node)
        if isinstance(node, ast.ImportFrom) and node.module and node.module.startswith(
                "kclient"):
            own = self.name.split(".")[:2]
            for alias in node.names:
                private = alias.name.startswith("_") and not alias.name.startswith("__")
                if private and node.module.split(".")[:2] != own:
                    self.privates.append((node.lineno, f"{node.module}.{alias.name}"))
        if type_checking:
            return
        if in_function:
            self.in_functions.extend((node.lineno, t) for t in targets[:1])
        else:
            self.runtime.update(t for t in targets if t in self._modules and t != self.name)


def _scan_package() -> dict[str, ImportScan]:
    trees = {_module_name(p): ast.parse(p.read_text(encoding="utf-8"), filename=str(p))
             for p in sorted(PACKAGE.rglob("*.py"))}
    modules = set(trees)
    return {name: ImportScan(name, tree, modules) for name, tree in trees.items()}


def import_cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """Strongly connected groups of more than one module (Tarjan, iteratively)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    cycles: list[list[str]] = []
    for root in sorted(graph):
        if root in index:
            continue
        work = [(root, iter(sorted(graph[root])))]
        index[root] = low[root] = len(index)
        stack.append(root)
        on_stack.add(root)
        while work:
            node, edges = work[-1]
            child = next(edges, None)
            if child is not None:
                if child not in index:
                    index[child] = low[child] = len(index)
                    stack.append(child)
                    on_stack.add(child)
                    work.append((child, iter(sorted(graph.get(child, ())))))
                elif child in on_stack:
                    low[node] = min(low[node], index[child])
                continue
            work.pop()
            if work:
                low[work[-1][0]] = min(low[work[-1][0]], low[node])
            if low[node] == index[node]:
                group = []
                while True:
                    member = stack.pop()
                    on_stack.discard(member)
                    group.append(member)
                    if member == node:
                        break
                if len(group) > 1:
                    cycles.append(sorted(group))
    return cycles


def test_cycle_finder_finds_cycles() -> None:
    graph = {"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}, "e": {"e"}}
    assert import_cycles(graph) == [["a", "b", "c"]]
    assert import_cycles({"a": {"b"}, "b": set()}) == []


def test_no_import_cycles() -> None:
    scans = _scan_package()
    cycles = import_cycles({name: scan.runtime for name, scan in scans.items()})
    assert cycles == [], f"module-level import cycles: {cycles}"


def test_no_imports_hidden_in_functions() -> None:
    """Library code imports at module level; laziness goes through kclient._lazy.

    A function-level import hides a cycle or a slow import from readers and from
    the cycle test.  Allowed: optional extras (Spark, Prometheus, the peer
    libraries adapters wrap) and the command-line modules (see CLI_MODULES).
    """
    hidden = [
        f"{name}:{line} imports {target}"
        for name, scan in _scan_package().items()
        if not name.startswith(CLI_MODULES)
        for line, target in scan.in_functions
        if target.split(".")[0] not in OPTIONAL_PACKAGES
    ]
    assert hidden == [], "imports inside functions:\n" + "\n".join(hidden)


def test_no_private_names_from_other_packages() -> None:
    borrowed = [f"{name}:{line} imports {target}"
                for name, scan in _scan_package().items() for line, target in scan.privates]
    assert borrowed == [], "private names used across packages:\n" + "\n".join(borrowed)


def test_import_scan_sees_hidden_and_private_imports() -> None:
    source = (
        "from typing import TYPE_CHECKING\n"
        "from kclient.protocol.codec import _private\n"
        "if TYPE_CHECKING:\n    from kclient.net import client\n"
        "def f():\n    import kclient.fleet.pipeline\n"
    )
    scan = ImportScan("kclient.negotiation.x", ast.parse(source),
                      {"kclient.protocol.codec", "kclient.fleet.pipeline", "kclient.net.client"})
    assert scan.runtime == {"kclient.protocol.codec"}
    assert scan.in_functions == [(6, "kclient.fleet.pipeline")]
    assert scan.privates == [(2, "kclient.protocol.codec._private")]


def test_no_asyncio_wait_for() -> None:
    """Timeouts use ``asyncio.timeout``: on Python 3.11 ``asyncio.wait_for`` returns
    the result when the cancellation arrives together with it, and the cancelled
    task carries on (close() and refresh() then waited for it forever)."""
    found = [f"{path.relative_to(PACKAGE.parent)}:{number}"
             for path in sorted(PACKAGE.rglob("*.py"))
             for number, line in enumerate(path.read_text().splitlines(), 1)
             if "asyncio.wait_for(" in line]
    assert found == [], "asyncio.wait_for in library code:\n" + "\n".join(found)


def test_defaults_have_one_home() -> None:
    """Client, SyncClient and Connection take every default from kclient.net.defaults:
    no literal default is written in their signatures."""
    import inspect

    from kclient.net import Client, Connection, SyncClient

    for cls in (Client, SyncClient, Connection):
        source = inspect.getsource(cls.__init__)
        signature = source[:source.index(") -> None:")]
        # node_id=-1 is Kafka's "no broker id yet", a sentinel rather than a setting.
        literals = [line.strip() for line in signature.splitlines()
                    if re.search(r"=\s*(-?\d|\"[^\"]+\")", line) and "node_id" not in line]
        assert literals == [], f"{cls.__name__}: literal defaults {literals}"


# -- modules in their layer: the command line's own modules stay under commands/ --------

def _every_import(tree: ast.Module) -> set[str]:
    """Every module ``tree`` imports anywhere (functions and TYPE_CHECKING blocks too);
    ``from a import b`` counts as ``a`` and ``a.b``."""
    found: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            found.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module and not node.level:
            found.add(node.module)
            found.update(f"{node.module}.{alias.name}" for alias in node.names)
    return found


def test_modules_sit_in_their_layer() -> None:
    """The text tables and JSON documents of the command line (``render``) live under
    ``commands/`` and nothing else imports them; the client-configuration reader, which
    builds TLS settings and which the client imports, lives in ``net/``."""
    modules = {_module_name(path) for path in PACKAGE.rglob("*.py")}
    assert {"kclient.commands.render", "kclient.net.config"} <= modules
    assert not {"kclient.render", "kclient.config"} & modules
    importers = [
        _module_name(path) for path in sorted(PACKAGE.rglob("*.py"))
        if not _module_name(path).startswith(CLI_MODULES)
        and "kclient.commands.render" in _every_import(
            ast.parse(path.read_text(encoding="utf-8")))]
    assert importers == [], f"library modules importing the CLI's render: {importers}"


def test_every_import_sees_functions_and_type_checking_blocks() -> None:
    source = ("from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n"
              "    from kclient.commands import render\n"
              "def f():\n    import kclient.net.config\n")
    assert {"kclient.commands.render", "kclient.net.config"} <= _every_import(
        ast.parse(source))


# -- command-line words stay in the command line -------------------------------------------

def vocabulary_identifiers(tree: ast.Module) -> list[tuple[int, str]]:
    """Every identifier of ``tree`` (names, parameters, attributes, keywords, imports,
    definitions) that mentions a vocabulary, case-insensitively."""
    found = []
    for node in ast.walk(tree):
        names: list[str | None] = []
        if isinstance(node, ast.Name):
            names = [node.id]
        elif isinstance(node, ast.arg):
            names = [node.arg]
        elif isinstance(node, ast.Attribute):
            names = [node.attr]
        elif isinstance(node, ast.keyword):
            names = [node.arg]
        elif isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef):
            names = [node.name]
        elif isinstance(node, ast.alias):
            names = [node.name, node.asname]
        elif isinstance(node, ast.ImportFrom):
            names = [node.module]
        found += [(getattr(node, "lineno", 0), name) for name in names
                  if name is not None and "vocabulary" in name.lower()]
    return found


def test_no_vocabulary_outside_the_command_line() -> None:
    """Library errors keep the options they name as facts (``KClientError.options``);
    only the command line turns them into its flags, so no ``vocabulary`` parameter,
    attribute or import exists outside ``kclient/commands`` and ``kclient/cli.py``."""
    found = [f"{_module_name(path)}:{line} {name}"
             for path in sorted(PACKAGE.rglob("*.py"))
             if not _module_name(path).startswith(CLI_MODULES)
             for line, name in vocabulary_identifiers(
                 ast.parse(path.read_text(encoding="utf-8")))]
    assert found == [], "vocabulary outside the command line:\n" + "\n".join(found)


def test_vocabulary_scan_sees_every_kind_of_identifier() -> None:
    source = ("from kclient.commands.vocabulary import CLI_VOCABULARY as words\n"
              "def f(vocabulary=None):\n    return g(vocabulary=x._vocabulary)\n"
              "class Vocabulary: pass\n")
    names = {name for _, name in vocabulary_identifiers(ast.parse(source))}
    assert names == {"kclient.commands.vocabulary", "CLI_VOCABULARY", "vocabulary",
                     "_vocabulary", "Vocabulary"}
    assert vocabulary_identifiers(ast.parse("text = 'a vocabulary in a string'\n")) == []


# -- one store of what each broker said -------------------------------------------------

#: The places a broker's ApiVersions answer may be kept, and why.  Anything else in the
#: I/O shell that holds one (an attribute, a class field, a module-level container) is a
#: second copy that can disagree with the client's view.
ANSWER_HOLDERS = {
    ("net/client.py", "Client", "_members"): "the client's one member store",
    ("net/client.py", "Client", "_report"): "the feature report of the published view",
    ("net/client.py", "Client", "_events"): "on_change's queue of (diff, view) pairs",
    ("net/connection.py", "Connection", "_versions"): "one connection's own handshake result",
    ("net/supervisor.py", "Answered", "versions"): "an event carrying an answer to the client",
    ("net/supervisor.py", "Failed", "answer"): "an event carrying a failed connection's answer",
}


def _answer_holders(tree: ast.Module, relative: str) -> set[tuple[str, str, str]]:
    """(file, class, attribute) of every annotated attribute or field whose type names
    BrokerVersions or ClusterView, in classes and at module level of ``tree``."""
    found: set[tuple[str, str, str]] = set()

    def names_answer(annotation: ast.expr) -> bool:
        return bool(re.search(r"\b(BrokerVersions|ClusterView)\b", ast.unparse(annotation)))

    def visit(node: ast.AST, owner: str) -> None:
        for child in ast.iter_child_nodes(node):
            if isinstance(child, ast.ClassDef):
                visit(child, child.name)
                continue
            if isinstance(child, ast.AnnAssign) and names_answer(child.annotation):
                target = child.target
                if isinstance(target, ast.Attribute):
                    found.add((relative, owner, target.attr))
                elif isinstance(target, ast.Name):
                    found.add((relative, owner, target.id))
            visit(child, owner)

    visit(tree, "<module>")
    return found


def test_answer_scan_finds_a_second_store() -> None:
    tree = ast.parse("class Cache:\n    def __init__(self) -> None:\n"
                     "        self.seen: dict[int, BrokerVersions] = {}\n"
                     "LAST: ClusterView | None = None\n")
    assert _answer_holders(tree, "x.py") == {("x.py", "Cache", "seen"),
                                             ("x.py", "<module>", "LAST")}


def test_one_member_store() -> None:
    """The I/O shell keeps each broker's answer in one place, the client's member store;
    the rest are events carrying an answer, or values derived from the published view."""
    found: set[tuple[str, str, str]] = set()
    for path in sorted((PACKAGE / "net").rglob("*.py")):
        relative = path.relative_to(PACKAGE).as_posix()
        found |= _answer_holders(ast.parse(path.read_text(encoding="utf-8")), relative)
    extra = sorted(found - set(ANSWER_HOLDERS))
    assert extra == [], f"broker answers kept outside the member store: {extra}"
    assert found == set(ANSWER_HOLDERS), "the allowed holders changed: update ANSWER_HOLDERS"


def test_one_publish_path() -> None:
    """The published view is set in two places only: the empty view of ``__init__`` and
    ``_publish``, which builds it from the member store."""
    tree = ast.parse((PACKAGE / "net" / "client.py").read_text(encoding="utf-8"))
    setters = sorted({function.name for function in ast.walk(tree)
                      if isinstance(function, ast.FunctionDef | ast.AsyncFunctionDef)
                      for node in ast.walk(function)
                      if isinstance(node, ast.Assign | ast.AnnAssign)
                      for target in (node.targets if isinstance(node, ast.Assign)
                                     else [node.target])
                      if isinstance(target, ast.Attribute) and target.attr == "_view"})
    assert setters == ["__init__", "_publish"]
