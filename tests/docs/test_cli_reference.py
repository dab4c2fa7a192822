"""docs/reference/cli.md documents every sub-command and every long option."""

from __future__ import annotations

import argparse
import re
from pathlib import Path

from kclient.cli import build_parser

DOCS = Path(__file__).resolve().parents[2] / "docs"


def _subcommands() -> dict[str, argparse.ArgumentParser]:
    parser = build_parser()
    found: dict[str, argparse.ArgumentParser] = {}

    def walk(prefix: str, p: argparse.ArgumentParser) -> None:
        for action in p._actions:
            if isinstance(action, argparse._SubParsersAction):
                for name, sub in action.choices.items():
                    full = f"{prefix} {name}".strip()
                    found[full] = sub
                    walk(full, sub)

    walk("", parser)
    return found


def test_cli_reference_documents_every_command_and_option() -> None:
    text = (DOCS / "reference" / "cli.md").read_text(encoding="utf-8")
    sections = re.split(r"^## ", text, flags=re.MULTILINE)
    by_command = {}
    for section in sections[1:]:
        title = section.splitlines()[0]
        found = re.match(r"`?kclient ([\w -]+?)`?\s*$", title)
        if found:
            by_command[found.group(1).strip()] = section
    shared = ""
    for section in sections[1:]:
        if section.splitlines()[0].strip() == "Connection options":
            shared = section
    missing: list[str] = []
    for command, sub in _subcommands().items():
        leaf = not any(isinstance(a, argparse._SubParsersAction) for a in sub._actions)
        if not leaf:
            continue
        section = by_command.get(command)
        if section is None:
            missing.append(f"section '## kclient {command}'")
            continue
        for action in sub._actions:
            longs = [o for o in action.option_strings if o.startswith("--")]
            if not longs or longs[0] == "--help":
                continue
            if not any(f"`{o}" in section or f"`{o}" in shared for o in longs):
                missing.append(f"{command}: {longs[0]}")
    assert not missing, "docs/reference/cli.md lacks: " + ", ".join(missing)


def _section(title: str) -> str:
    text = (DOCS / "reference" / "cli.md").read_text(encoding="utf-8")
    for section in re.split(r"^## ", text, flags=re.MULTILINE)[1:]:
        if section.splitlines()[0].strip() == title:
            return section
    raise AssertionError(f"docs/reference/cli.md has no section '## {title}'")


def test_exit_code_table_lists_every_exit_code_the_commands_use() -> None:
    import importlib

    from kclient.cli import COMMAND_MODULES

    table = {int(m.group(1)) for m in re.finditer(r"^\| (\d+) \|", _section("Exit codes"),
                                                 flags=re.MULTILINE)}
    used: dict[int, str] = {}
    for name in ("kclient.cli", *COMMAND_MODULES):
        module = importlib.import_module(name)
        for attr, value in vars(module).items():
            if attr.startswith("EXIT_") and isinstance(value, int):
                used.setdefault(value, f"{name}.{attr}")
    missing = {code: where for code, where in used.items() if code not in table}
    assert not missing, f"the exit-code table lacks {missing}"


def test_connection_defaults_are_the_library_defaults() -> None:
    from kclient.net.defaults import (
        DEFAULT_CONNECT_TIMEOUT,
        DEFAULT_MAX_BROKERS,
        DEFAULT_REQUEST_TIMEOUT,
    )

    rows = {m.group(1): m.group(2) for m in re.finditer(
        r"^\| `(--[\w-]+)[^|]*\| (.*) \|$", _section("Connection options"), flags=re.MULTILINE)}
    assert rows["--timeout"].endswith(
        f"connecting waits at most {DEFAULT_CONNECT_TIMEOUT:g} s of it (default: "
        f"`request.timeout.ms` of the client configuration, else "
        f"{DEFAULT_REQUEST_TIMEOUT:g})"), rows["--timeout"]
    assert f"(default {DEFAULT_MAX_BROKERS:,}," in rows["--max-brokers"]
