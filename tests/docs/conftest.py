"""The documentation site, built once per test session (mkdocs build --strict)."""

from __future__ import annotations

import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
MKDOCS = Path(sys.executable).with_name("mkdocs")


@dataclass(frozen=True)
class BuiltSite:
    """Where the site was built, and what mkdocs said."""

    path: Path
    returncode: int
    stderr: str

    def pages(self) -> list[Path]:
        """Every HTML page of the site but the 404 page, sorted."""
        return sorted(p for p in self.path.rglob("*.html") if p.name != "404.html")


@pytest.fixture(scope="session")
def built_site(tmp_path_factory: pytest.TempPathFactory) -> BuiltSite:
    """The site built from docs/ by ``mkdocs build --strict`` (once per session)."""
    site = tmp_path_factory.mktemp("docs") / "site"
    # Without --quiet: mkdocs hides warnings (and so strict failures) when quiet.
    result = subprocess.run(
        [str(MKDOCS), "build", "--strict", "--site-dir", str(site)],
        cwd=REPO, capture_output=True, text=True, timeout=120,
    )
    return BuiltSite(site, result.returncode, result.stderr)
