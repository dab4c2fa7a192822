"""The install commands the docs and messages give are the ones pyproject.toml makes true.

``kclient`` on the package index is an unrelated project: every ``pip install``
and every extra named anywhere must use the distribution name, with an extra
that pyproject.toml declares.
"""

from __future__ import annotations

import re
import tomllib
from pathlib import Path

from kclient._version import DISTRIBUTION, install_hint

ROOT = Path(__file__).resolve().parent.parent
PYPROJECT = tomllib.loads((ROOT / "pyproject.toml").read_text())
EXTRAS = set(PYPROJECT["project"]["optional-dependencies"])
# A distribution name and optional extras, as they follow "pip install" or stand quoted.
_NAMED = re.compile(r"(?<![\w/.-])(kclient(?:-[a-z]+)?)(\[(\w+)\])?(?![\w/.-])")
_INSTALL = re.compile(r"pip install\s+(?:-[-\w]+\s+)*['\"]?([^\s'\"`]+)")


def _texts() -> list[tuple[str, str]]:
    files = [ROOT / "README.md", *sorted((ROOT / "docs").rglob("*.md")),
             *sorted((ROOT / "kclient").rglob("*.py"))]
    return [(str(path.relative_to(ROOT)), path.read_text()) for path in files]


def test_the_distribution_name_is_pyprojects() -> None:
    assert PYPROJECT["project"]["name"] == DISTRIBUTION
    assert install_hint("spark") == f"pip install '{DISTRIBUTION}[spark]'"
    assert PYPROJECT["project"]["scripts"] == {"kclient": "kclient.cli:main"}


def test_every_documented_install_names_the_distribution_and_a_real_extra() -> None:
    wrong = []
    for name, text in _texts():
        for match in _INSTALL.finditer(text):
            target = match.group(1)
            if not target.startswith("kclient"):
                continue  # another package (venv-pack, a client library...)
            named = _NAMED.fullmatch(target)
            if named is None or named.group(1) != DISTRIBUTION or (
                    named.group(3) is not None and named.group(3) not in EXTRAS):
                wrong.append(f"{name}: {match.group(0)}")
        for extra in re.finditer(r"kclient(?:-kafka)?\[(\w+)\]", text):
            if not extra.group(0).startswith(DISTRIBUTION) or extra.group(1) not in EXTRAS:
                wrong.append(f"{name}: {extra.group(0)}")
    assert wrong == [], "install commands that pyproject.toml does not make true:\n" + \
        "\n".join(wrong)
