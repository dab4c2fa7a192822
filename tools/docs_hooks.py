"""mkdocs hooks: add the pictures and the code-highlighting stylesheet at build time.

Listed under ``hooks:`` in mkdocs.yml.  The files are generated in memory from
kclient's own code (``tools/docs_figures.py``) on every build, so they are never
stale and nothing generated is kept in the repository.
"""

from __future__ import annotations

from typing import Any

import compat_matrix
import docs_figures  # tools/ is on sys.path while mkdocs loads this hook
import module_map
from mkdocs.structure.files import File, Files

#: Generated site files: path in the site -> function writing their text.
GENERATED = {
    "css/pygments.css": docs_figures.pygments_css,
    "img/handshake-ladder.svg": docs_figures.ladder_svg,
    "img/kip35-ranges.svg": docs_figures.ranges_svg,
}
GENERATED.update(compat_matrix.figures())


def on_files(files: Files, config: Any) -> Files:
    """Add the generated files, as if they were in docs/."""
    for path, make in GENERATED.items():
        files.append(File.generated(config, path, content=make()))
    return files


def on_page_markdown(markdown: str, page: Any, config: Any, files: Files) -> str:
    """Put the module map, written from the modules' docstrings, where a page asks."""
    if module_map.MARKER in markdown:
        markdown = markdown.replace(module_map.MARKER, module_map.module_map_markdown())
    if compat_matrix.MARKER in markdown:
        markdown = markdown.replace(compat_matrix.MARKER, compat_matrix.matrix_markdown())
    return markdown
