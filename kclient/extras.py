"""The optional extras: whether a feature's modules are installed, and the typed error if not.

pyproject.toml's ``[project.optional-dependencies]`` lists what each extra
installs; a feature that needs some of it calls :func:`require` before it
starts, so that a user without the extra gets one typed error naming the
feature, the missing modules, the extra and the ``pip`` command, not an
``ImportError`` from deep inside.
"""

from __future__ import annotations

import importlib.util
from collections.abc import Iterable

from kclient._version import install_hint
from kclient.errors import KClientError

__all__ = ["missing", "not_installed", "require"]


def _absent(module: str) -> bool:
    try:
        return importlib.util.find_spec(module) is None
    except (ImportError, ValueError):  # a parent package missing; a module set to None
        return True


def missing(modules: Iterable[str]) -> list[str]:
    """The ``modules`` (import names) that are not installed here; nothing is imported."""
    return [module for module in modules if _absent(module)]


def require(extra: str, feature: str, modules: Iterable[str],
            error: type[KClientError] = KClientError) -> None:
    """Raise ``error`` when one of the ``modules`` that ``feature`` needs from
    ``extra`` is not installed.

    The message names the feature, the missing modules, the extra and the command
    that installs it (``pip install 'kclient-kafka[spark]'``).
    """
    absent = missing(modules)
    if absent:
        raise error(f"{feature} needs {', '.join(absent)}, {not_installed(extra)}")


def not_installed(extra: str) -> str:
    """The end of :func:`require`'s message: which extra, and the command that installs it."""
    return f"from kclient's {extra!r} extra, which is not installed here: {install_hint(extra)}"
