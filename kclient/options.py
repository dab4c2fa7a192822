"""How messages name kclient's options: in the caller's own vocabulary.

A hint such as "raise request_timeout" helps a Python caller and misleads a
command-line user, whose flag is ``--timeout``.  The library builds every hint
that names an option through a :class:`Vocabulary`: by default the Python
parameter names, and the command line passes its flags.  Messages are built
right the first time, so nothing downstream ever rewrites them.
"""

from __future__ import annotations

from collections.abc import Mapping

import attrs

__all__ = ["PYTHON", "Vocabulary"]


def _frozen(value: Mapping[str, str]) -> Mapping[str, str]:
    return dict(value)


@attrs.frozen
class Vocabulary:
    """Names of options as the caller knows them.

    ``flags`` maps a Python parameter name (``"request_timeout"``) to a
    command-line flag (``"--timeout"``); an empty mapping means Python names.
    """

    flags: Mapping[str, str] = attrs.field(factory=dict, converter=_frozen, hash=False)

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
