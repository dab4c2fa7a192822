"""How messages name kclient's options: in the caller's own vocabulary.

A hint such as "raise request_timeout" helps a Python caller and misleads a
command-line user, whose flag is ``--timeout``.  The library builds every hint
that names an option through a :class:`Vocabulary`: by default the Python
parameter names, and the command line passes its flags.  Messages are built
right the first time, so nothing downstream ever rewrites them.
"""

from __future__ import annotations

from collections.abc import Mapping
from types import MappingProxyType
from typing import Any, NoReturn

__all__ = ["PYTHON", "Vocabulary"]


class Vocabulary:
    """Names of options as the caller knows them (an immutable value).

    ``flags`` maps a Python parameter name (``"request_timeout"``) to a
    command-line flag (``"--timeout"``); an empty mapping means Python names.
    Written by hand rather than with attrs so that importing :class:`SyncClient`,
    whose signature names :data:`PYTHON`, stays cheap.
    """

    __slots__ = ("_flags",)
    _flags: Mapping[str, str]

    def __init__(self, flags: Mapping[str, str] | None = None) -> None:
        object.__setattr__(self, "_flags", MappingProxyType(dict(flags or {})))

    @property
    def flags(self) -> Mapping[str, str]:
        """The parameter-name to flag mapping (read-only)."""
        return self._flags

    def __setattr__(self, name: str, value: Any) -> NoReturn:
        raise AttributeError(f"Vocabulary is immutable; cannot set {name!r}")

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, Vocabulary):
            return NotImplemented
        return dict(self._flags) == dict(other._flags)

    def __hash__(self) -> int:
        return hash(frozenset(self._flags.items()))

    def __repr__(self) -> str:
        return f"Vocabulary(flags={dict(self._flags)!r})"

    def name(self, option: str) -> str:
        """The caller's name of ``option`` (the parameter name when it has no flag)."""
        return self.flags.get(option, option)

    def example(self, option: str, value: str) -> str:
        """``option (e.g. option="0.9.0")`` or ``--flag (e.g. --flag 0.9.0)``."""
        flag = self.flags.get(option)
        if flag is not None:
            return f"{flag} (e.g. {flag} {value})"
        return f'{option} (e.g. {option}="{value}")'

    def has(self, option: str) -> bool:
        """True when the caller can set ``option`` at all (Python can set every one)."""
        return not self.flags or option in self.flags


#: Python parameter names: the default everywhere.
PYTHON = Vocabulary()
