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
