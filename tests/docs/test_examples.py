"""Every code example in docs/ runs, so the documentation cannot rot.

Conventions (an HTML comment on the line before a fenced block changes how it is
treated; it is invisible on the site):

- ``python`` blocks run as scripts with the venv's interpreter.
- ``shell``/``console``/``bash`` blocks hold one command per line (``\\`` joins
  lines, ``#`` starts a comment); each must start with ``kclient`` and runs through
  the installed console script.  ``kclient emulate`` runs until it prints its
  bootstrap address, then gets SIGINT and must exit 0.
- ``localhost:9092`` in any example is replaced by the address of an emulated
  mixed-version cluster (Kafka 2.8 and 3.9) started by the test session.
- ``<!-- docs-test: skip REASON -->`` leaves a block out (use sparingly; a reason
  is required); ``<!-- docs-test: exit N -->`` expects exit code N;
  ``<!-- docs-test: file NAME -->`` writes the block to NAME in the page's working
  directory (for files the next commands read).
- ``<!-- docs-test: serve -->`` before a block holding one ``kclient emulate ...
  --port PORT`` keeps that emulator running (on a free port) until the page is
  done; the page's later blocks reach it: ``127.0.0.1:PORT`` in them is replaced
  by its real address.
- The blocks of one page run in order, in one temporary directory.

Output samples (``text``, ``json``, unmarked ``yaml``) are not executed.
"""

from __future__ import annotations

import os
import re
import shlex
import signal
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import attrs
import pytest

from kclient._version import install_hint
from tests.conftest import REPO_ROOT, read_until_bootstrap
from tests.extras import EXTRAS, extra_missing

DOCS = Path(__file__).resolve().parents[2] / "docs"
KCLIENT = Path(sys.executable).with_name("kclient")
PLACEHOLDER = "localhost:9092"
RUN_LANGS = {"python", "shell", "console", "bash", "sh"}
MARKER = re.compile(r"<!--\s*docs-test:\s*(\w+)\s*(.*?)\s*-->")
FENCE = re.compile(r"^(\s*)```\s*([\w-]*)")
# A page may leave out at most this many runnable blocks: skipping is the exception.
MAX_SKIPS = 12


@attrs.frozen
class Block:
    page: Path
    line: int
    lang: str
    code: str
    marker: str | None = None
    argument: str = ""

    @property
    def where(self) -> str:
        return f"{self.page.relative_to(DOCS)}:{self.line}"


def extract_blocks(page: Path) -> list[Block]:
    """Fenced code blocks of a Markdown page, with the marker before each."""
    lines = page.read_text(encoding="utf-8").splitlines()
    blocks: list[Block] = []
    i = 0
    while i < len(lines):
        match = FENCE.match(lines[i])
        if not match:
            i += 1
            continue
        indent, lang = match.group(1), match.group(2).lower()
        start = i
        body: list[str] = []
        i += 1
        while i < len(lines) and not lines[i].strip().startswith("```"):
            line = lines[i]
            body.append(line[len(indent):] if line.startswith(indent) else line.lstrip())
            i += 1
        i += 1
        previous = next((lines[j] for j in range(start - 1, -1, -1) if lines[j].strip()), "")
        marker = MARKER.search(previous)
        blocks.append(Block(page, start + 1, lang, "\n".join(body) + "\n",
                            marker.group(1) if marker else None,
                            marker.group(2) if marker else ""))
    return blocks


def all_blocks() -> list[Block]:
    return [b for page in sorted(DOCS.rglob("*.md")) for b in extract_blocks(page)]


def shell_commands(code: str) -> Iterator[str]:
    pending = ""
    for raw in code.splitlines():
        line = raw.strip()
        if not pending and (not line or line.startswith("#")):
            continue
        if line.endswith("\\"):
            pending += line[:-1] + " "
            continue
        yield pending + line
        pending = ""
    if pending:
        yield pending


def _pages_with_runnable_blocks() -> list[Path]:
    pages = []
    for page in sorted(DOCS.rglob("*.md")):
        if any(b.lang in RUN_LANGS or b.marker == "file" for b in extract_blocks(page)):
            pages.append(page)
    return pages


@pytest.fixture(scope="session")
def docs_cluster() -> Iterator[str]:
    """A mixed 2.8 + 3.9 emulated cluster run by the real ``kclient emulate``."""
    proc = subprocess.Popen(
        [str(KCLIENT), "emulate", "--release", "2.8,3.9", "--port", "0"],
        stdout=subprocess.PIPE, stderr=subprocess.DEVNULL,
    )
    try:
        address = _bootstrap_of(proc, 30.0)
        yield address
    finally:
        proc.send_signal(signal.SIGINT)
        try:
            proc.wait(timeout=15)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()


def _bootstrap_of(proc: subprocess.Popen[bytes], timeout: float) -> str:
    try:
        return read_until_bootstrap(proc, timeout)[0]
    except TimeoutError as exc:
        raise AssertionError(f"kclient emulate printed no bootstrap address: {exc}") from None


def _substitute(text: str, bootstrap: str | None) -> str:
    if PLACEHOLDER in text:
        assert bootstrap is not None
        text = text.replace(PLACEHOLDER, bootstrap)
    return text


def _env() -> dict[str, str]:
    env = dict(os.environ)
    env["PATH"] = f"{KCLIENT.parent}{os.pathsep}{env.get('PATH', '')}"
    env["PYTHONPATH"] = str(REPO_ROOT)  # kclient from this source tree (see tests/cli)
    return env


def _run_emulate(argv: list[str], cwd: Path, where: str) -> None:
    previous = ["", *argv[:-1]]
    argv = [("0" if prev == "--port" else a) for prev, a in zip(previous, argv, strict=True)]
    proc = subprocess.Popen(argv, cwd=cwd, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL,
                            env=_env())
    try:
        _bootstrap_of(proc, 30.0)
    finally:
        _stop(proc, where)


def _serve(block: Block, cwd: Path) -> tuple[subprocess.Popen[bytes], str, str]:
    """Start the block's ``kclient emulate`` on a free port: (process, written, real address)."""
    (command,) = list(shell_commands(block.code))
    argv = shlex.split(command)
    assert argv[:2] == ["kclient", "emulate"] and "--port" in argv, (
        f"{block.where}: a served block is one 'kclient emulate ... --port PORT' command")
    port_at = argv.index("--port") + 1
    written = f"127.0.0.1:{argv[port_at]}"
    argv[0], argv[port_at] = str(KCLIENT), "0"
    proc = subprocess.Popen(argv, cwd=cwd, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL,
                            env=_env())
    try:
        return proc, written, _bootstrap_of(proc, 30.0)
    except BaseException:
        proc.kill()
        proc.wait()
        raise


def _stop(proc: subprocess.Popen[bytes], where: str) -> None:
    proc.send_signal(signal.SIGINT)
    try:
        code = proc.wait(timeout=15)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.wait()
        raise AssertionError(f"{where}: kclient emulate did not stop on SIGINT") from None
    assert code == 0, f"{where}: kclient emulate exited {code} after SIGINT"


# Seconds one example may take: a Spark run (the fleet guide) needs over 120 s when
# the machine's two cores are shared with other work.
COMMAND_TIMEOUT = 240


def _skip_without_an_extra(where: str, output: str) -> None:
    """Skip the page when its example failed because an optional extra is not installed
    here: kclient's error named the extra's pip command, or Python found no module of it."""
    for extra, modules in EXTRAS.items():
        absent = extra_missing(extra)
        if absent and (install_hint(extra) in output or any(
                re.search(rf"No module named '{re.escape(m)}[.']", output) for m in modules)):
            pytest.skip(f"{where} needs {', '.join(absent)} from the {extra!r} extra, not "
                        f"installed here ({install_hint(extra)})")


def run_block(block: Block, cwd: Path, bootstrap: str | None) -> None:
    expected = int(block.argument) if block.marker == "exit" else 0
    if block.lang == "python":
        script = cwd / f"example_{block.line}.py"
        script.write_text(_substitute(block.code, bootstrap), encoding="utf-8")
        result = subprocess.run([sys.executable, str(script)], cwd=cwd, capture_output=True,
                                text=True, timeout=COMMAND_TIMEOUT, env=_env())
        if result.returncode != expected:
            _skip_without_an_extra(block.where, result.stderr)
        assert result.returncode == expected, (
            f"{block.where}: python example exited {result.returncode}, expected {expected}\n"
            f"{result.stdout}\n{result.stderr}"
        )
        return
    for command in shell_commands(block.code):
        argv = shlex.split(_substitute(command, bootstrap))
        assert argv[0] == "kclient", (
            f"{block.where}: shell examples run kclient commands only; mark other blocks "
            "with <!-- docs-test: skip REASON -->"
        )
        argv[0] = str(KCLIENT)
        if argv[1:2] == ["emulate"]:
            _run_emulate(argv, cwd, block.where)
            continue
        result = subprocess.run(argv, cwd=cwd, capture_output=True, text=True,
                                timeout=COMMAND_TIMEOUT,
                                env=_env())
        if result.returncode != expected:
            _skip_without_an_extra(block.where, result.stderr)
        assert result.returncode == expected, (
            f"{block.where}: `{command}` exited {result.returncode}, expected {expected}\n"
            f"{result.stdout}\n{result.stderr}"
        )


@pytest.mark.integration
@pytest.mark.timeout(600)
@pytest.mark.parametrize("page", _pages_with_runnable_blocks(),
                         ids=lambda p: str(p.relative_to(DOCS)))
def test_page_examples_run(page: Path, tmp_path: Path, request: pytest.FixtureRequest) -> None:
    blocks = extract_blocks(page)
    needs_cluster = any(PLACEHOLDER in b.code for b in blocks
                        if b.lang in RUN_LANGS and b.marker != "skip")
    bootstrap = request.getfixturevalue("docs_cluster") if needs_cluster else None
    ran = 0
    served: list[tuple[subprocess.Popen[bytes], Block]] = []
    addresses: dict[str, str] = {}
    try:
        for block in blocks:
            if block.marker == "skip":
                continue
            if block.marker == "file":
                (tmp_path / block.argument).write_text(block.code, encoding="utf-8")
                continue
            if block.marker == "serve":
                proc, written, real = _serve(block, tmp_path)
                served.append((proc, block))
                addresses[written] = real
                ran += 1
                continue
            if block.lang in RUN_LANGS:
                code = block.code
                for written, real in addresses.items():
                    code = code.replace(written, real)
                run_block(attrs.evolve(block, code=code), tmp_path, bootstrap)
                ran += 1
    finally:
        for proc, block in served:
            _stop(proc, block.where)
    assert ran or any(b.marker == "file" for b in blocks)


def test_markers_are_well_formed() -> None:
    skips = 0
    for block in all_blocks():
        if block.marker is None:
            continue
        assert block.marker in {"skip", "exit", "file", "serve"}, (
            f"{block.where}: unknown marker")
        if block.marker == "skip":
            skips += 1
            assert block.argument, f"{block.where}: a skipped example needs a reason"
            assert block.lang in RUN_LANGS, f"{block.where}: only runnable blocks are skipped"
        elif block.marker == "serve":
            assert block.code.strip().startswith("kclient emulate"), block.where
        elif block.marker == "exit":
            assert block.argument.isdigit(), f"{block.where}: exit needs a number"
        else:
            assert re.fullmatch(r"[\w.-]+", block.argument), f"{block.where}: bad file name"
    assert skips <= MAX_SKIPS, f"{skips} skipped examples; run them instead"


def test_extractor_reads_markers_and_commands(tmp_path: Path) -> None:
    page = tmp_path / "page.md"
    page.write_text(
        "Intro\n\n<!-- docs-test: exit 1 -->\n```shell\nkclient features \\\n"
        "  --require X\n# note\n```\n\n```text\nout\n```\n", encoding="utf-8")
    blocks = extract_blocks(page)
    assert [(b.lang, b.marker, b.argument) for b in blocks] == [
        ("shell", "exit", "1"), ("text", None, "")]
    assert list(shell_commands(blocks[0].code)) == ["kclient features  --require X"]
