"""How the command line names kclient's options: its flags.

The library's messages keep the options they name as parts
(:mod:`kclient.options`) and read in Python parameter names.  The command line
prints the same parts with its flags: ``raise --timeout`` where Python reads
``raise request_timeout``.  The rule that turns parts into text is
:func:`kclient.options.render`; this module only holds the flags.
"""

from __future__ import annotations

from collections.abc import Mapping
from types import MappingProxyType
from typing import Any, NoReturn

from kclient.options import Example, Option, parts_of, render

__all__ = ["CLI_VOCABULARY", "PYTHON", "Vocabulary"]


class Vocabulary:
    """Names of options as one reader knows them (an immutable value).

    ``flags`` maps a Python parameter name (``"request_timeout"``) to a
    command-line flag (``"--timeout"``); an empty mapping means Python names.
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
        """The reader's name of ``option`` (the parameter name when it has no flag)."""
        return render((Option(option),), self._flags)

    def example(self, option: str, value: str) -> str:
        """``option (e.g. option="0.9.0")`` or ``--flag (e.g. --flag 0.9.0)``."""
        return render((Example(option, value),), self._flags)

    def has(self, option: str) -> bool:
        """True when the reader can set ``option`` at all (Python can set every one)."""
        return not self._flags or option in self._flags

    def text(self, message: object) -> str:
        """``message`` (an error, a :class:`~kclient.options.Text` or any text) in
        these names: the parts it keeps rendered with :attr:`flags`."""
        return render(parts_of(message), self._flags)


#: Python parameter names (what ``str()`` of a library message reads).
PYTHON = Vocabulary()

#: How the command line names the library's options (parameter -> flag).
CLI_VOCABULARY = Vocabulary({
    "api_version_fallback": "--api-version-fallback",
    "request_timeout": "--timeout",
    "connect_timeout": "--timeout",
    "tls": "--tls",
    "TlsConfig.ca_file": "--ca",
    "TlsConfig.cert_file": "--cert",
    "TlsConfig.key_file": "--key",
    "TlsConfig.key_password": "--key-password-file",
    "bootstrap_servers": "--bootstrap-server",
    "client_software": "--client-software",
    "max_brokers": "--max-brokers",
    "max_response_size": "--max-response-size",
    "sasl": "--security-protocol SASL_PLAINTEXT or SASL_SSL, with --sasl-mechanism",
    "strict=False": "--lenient",
    "drop_unsupported": "--drop-unsupported",
    "version": "--version",
})
