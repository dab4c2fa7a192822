"""The documentation site builds cleanly and covers what the code offers."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

import pytest

import kclient.errors

REPO = Path(__file__).resolve().parents[2]
DOCS = REPO / "docs"
MKDOCS = Path(sys.executable).with_name("mkdocs")


@pytest.mark.timeout(120)
def test_mkdocs_build_is_strict_clean(tmp_path: Path) -> None:
    # Without --quiet: mkdocs hides warnings (and so strict failures) when quiet.
    result = subprocess.run(
        [str(MKDOCS), "build", "--strict", "--site-dir", str(tmp_path / "site")],
        cwd=REPO, capture_output=True, text=True, timeout=120,
    )
    warnings = [line for line in result.stderr.splitlines() if "WARNING" in line]
    assert result.returncode == 0 and not warnings, result.stderr
    assert (tmp_path / "site" / "reference" / "python-api" / "index.html").is_file()
    api_page = (tmp_path / "site" / "reference" / "python-api" / "index.html").read_text()
    assert "ClusterView" in api_page and "version_for" in api_page


def test_troubleshooting_covers_every_error_class() -> None:
    text = (DOCS / "troubleshooting.md").read_text(encoding="utf-8")
    headings = set(re.findall(r"^#{2,4} (\w+)\s*$", text, flags=re.MULTILINE))
    missing = [name for name in kclient.errors.__all__ if name not in headings]
    assert not missing, f"docs/troubleshooting.md has no section for {missing}"
