"""A griffe extension: Sphinx roles in docstrings become cross-references.

kclient's docstrings name other objects the Sphinx way (``:class:`~kclient.X```,
``:meth:`refresh```), which IDEs and ``help()`` readers know.  The API reference
is rendered by mkdocstrings, which does not read those roles, so this extension
(listed under the python handler's ``extensions`` in mkdocs.yml) rewrites each
role into an autorefs cross-reference before the docstring is rendered: a link
when the target is in the reference, code when it is not.  The docstrings in
the source stay as they are.
"""

from __future__ import annotations

import html
import importlib
import re
from typing import Any

from griffe import (
    AliasResolutionError,
    CyclicAliasError,
    Extension,
    NameResolutionError,
    Object,
)

#: ``:class:`~kclient.X``` and friends (with or without the ``py:`` domain).
ROLE = re.compile(
    r":(?:py:)?(?P<role>class|meth|func|attr|mod|data|exc|obj|const|type):"
    r"`(?P<text>[^`]+)`"
)


def _canonical(package: Object, path: str) -> str:
    """Where ``path`` (``kclient.X.Y``) is defined, following re-exports.

    Names that kclient exports lazily (a module ``__getattr__``) are not visible
    to griffe's static analysis; Python finds their home instead.
    """
    inner = path.removeprefix(f"{package.path}.")
    if inner == path:
        return path
    try:
        found: Any = package[inner]
        return str(found.canonical_path)
    except (KeyError, AliasResolutionError, CyclicAliasError):
        pass
    parts = inner.split(".")
    value: Any = importlib.import_module(package.path)
    for index, part in enumerate(parts):
        value = getattr(value, part, None)
        home = getattr(value, "__module__", None)
        qualname = getattr(value, "__qualname__", None)
        if isinstance(home, str) and isinstance(qualname, str):
            return ".".join([home, qualname, *parts[index + 1:]])
    return path


def _target(obj: Object, package: Object, name: str) -> str:
    """The full path of ``name`` as written in ``obj``'s docstring (best effort)."""
    name = name.lstrip(".")
    if not name.startswith(f"{package.path}.") and name != package.path:
        first, _, rest = name.partition(".")
        try:
            resolved = obj.resolve(first)
        except NameResolutionError:
            return name
        name = f"{resolved}.{rest}" if rest else resolved
    return _canonical(package, name)


def rewrite(obj: Object, package: Object, text: str) -> str:
    """``text`` with every Sphinx role replaced by an optional autorefs cross-reference."""

    def replace(match: re.Match[str]) -> str:
        written = match["text"].strip()
        explicit = re.fullmatch(r"(?P<title>.+?)\s*<(?P<target>[^>]+)>", written)
        if explicit:
            title, name = explicit["title"], explicit["target"]
        else:
            name = written
            title = written.lstrip("~.")
            if written.startswith("~"):
                title = title.rsplit(".", 1)[-1]
        identifier = _target(obj, package, name.lstrip("~"))
        return (f'<autoref identifier="{html.escape(identifier)}" optional>'
                f"<code>{html.escape(title)}</code></autoref>")

    return ROLE.sub(replace, text)


class SphinxRoles(Extension):
    """Rewrite Sphinx roles once the package is loaded (names then resolve)."""

    def on_package(self, *, pkg: Any, **kwargs: Any) -> None:
        """Walk every object of the package and rewrite its docstring."""
        seen: set[int] = set()
        stack: list[Any] = [pkg]
        while stack:
            obj = stack.pop()
            if obj.is_alias or id(obj) in seen:
                continue
            seen.add(id(obj))
            if obj.docstring is not None:
                obj.docstring.value = rewrite(obj, pkg, obj.docstring.value)
            stack.extend(obj.members.values())
