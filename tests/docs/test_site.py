"""The documentation site builds cleanly and covers what the code offers."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

import kclient.errors
from tests.docs.conftest import BuiltSite

REPO = Path(__file__).resolve().parents[2]
DOCS = REPO / "docs"


@pytest.mark.timeout(150)
def test_mkdocs_build_is_strict_clean(built_site: BuiltSite) -> None:
    warnings = [line for line in built_site.stderr.splitlines() if "WARNING" in line]
    assert built_site.returncode == 0 and not warnings, built_site.stderr
    api_file = built_site.path / "reference" / "python-api" / "index.html"
    assert api_file.is_file()
    api_page = api_file.read_text(encoding="utf-8")
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


def test_site_loads_nothing_from_other_hosts(built_site: BuiltSite) -> None:
    # Scripts, stylesheets, images and fonts come with the site: it works offline
    # (code highlighting included) and readers' browsers ask no CDN.
    assert built_site.returncode == 0, built_site.stderr
    external = re.compile(
        r"<(?:script|img|iframe|source)\b[^>]*\bsrc=[\"']?(?:https?:)?//"
        r"|<link\b[^>]*\bhref=[\"']?(?:https?:)?//"
        r"|@import\s+(?:url\()?[\"']?(?:https?:)?//|url\([\"']?(?:https?:)?//",
        re.IGNORECASE)
    files = [*built_site.pages(), *built_site.path.rglob("*.css")]
    assert len(files) > 10
    found = {str(f.relative_to(built_site.path)): external.findall(f.read_text("utf-8"))
             for f in files}
    assert not {k: v for k, v in found.items() if v}
    # Code is highlighted at build time: Pygments spans in the pages, their CSS shipped.
    quickstart = (built_site.path / "quickstart" / "index.html").read_text("utf-8")
    assert re.search(r'<div class="language-python highlight">.*?<span class="k">',
                     quickstart, re.DOTALL)
    assert ".highlight .k {" in (built_site.path / "css" / "pygments.css").read_text("utf-8")


def test_no_sphinx_role_renders_literally(built_site: BuiltSite) -> None:
    assert built_site.returncode == 0, built_site.stderr
    role = re.compile(r":(?:py:)?(?:class|meth|func|attr|mod|data|exc|obj|const):")
    literal = {str(p.relative_to(built_site.path)): sorted(set(role.findall(p.read_text("utf-8"))))
               for p in built_site.pages()}
    assert not {k: v for k, v in literal.items() if v}
    # ... and the docstrings' roles became links into the reference.
    api_page = (built_site.path / "reference" / "python-api" / "index.html").read_text("utf-8")
    assert re.search(r'<a class="autorefs autorefs-internal"[^>]*href="#kclient\.errors\.'
                     r'ConfigError"[^>]*><code>ConfigError</code></a>', api_page)


def test_readme_has_no_relative_links() -> None:
    # The README is the package index's project page, where relative links break.
    text = (REPO / "README.md").read_text(encoding="utf-8")
    targets = re.findall(r"\]\(([^)\s]+)[^)]*\)|\]:\s*(\S+)|(?:href|src)=\"([^\"]+)\"", text)
    relative = [t for group in targets for t in group
                if t and not re.match(r"(?:https?:|mailto:|#)", t)]
    assert not relative, f"README.md links relatively to {relative}"
