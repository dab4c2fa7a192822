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
    # Every public name of the package has its own entry in the API reference.
    documented = {anchor.rsplit(".", 1)[-1]
                  for anchor in re.findall(r'id="kclient\.([A-Za-z_.]+)"', api_page)}
    missing = [name for name in kclient.__all__
               if name != "__version__" and name not in documented]
    assert not missing, f"docs/reference/python-api.md does not document {missing}"
    for method in ("version_for", "supports", "explain", "report", "on_change", "refresh",
                   "request", "from_config"):
        assert f'id="kclient.net.Client.{method}"' in api_page, method
        assert f'id="kclient.net.SyncClient.{method}"' in api_page, method


def test_troubleshooting_covers_every_error_class() -> None:
    text = (DOCS / "troubleshooting.md").read_text(encoding="utf-8")
    headings = set(re.findall(r"^#{2,4} (\w+)\s*$", text, flags=re.MULTILINE))
    missing = [name for name in kclient.errors.__all__ if name not in headings]
    assert not missing, f"docs/troubleshooting.md has no section for {missing}"
