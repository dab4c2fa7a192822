"""The package version and distribution name, kept in one place."""

__version__ = "0.1.0"
#: The name to ``pip install`` (``kclient`` on the package index is an unrelated
#: project); the import name and the command stay ``kclient``.
DISTRIBUTION = "kclient-kafka"


def install_hint(extra: str | None = None) -> str:
    """``pip install 'kclient-kafka[spark]'``: what messages tell users to run."""
    name = DISTRIBUTION if extra is None else f"{DISTRIBUTION}[{extra}]"
    return f"pip install '{name}'"
