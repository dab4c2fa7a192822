"""Secrets: kept in files, checked before a dependency sees them, never in a message.

A secret never goes on the command line (where ``ps`` and shell history show it);
the CLI takes a file instead.  The file holds the secret; one final newline, as
editors and ``echo`` add, is not part of it.

A secret handed to native code (OpenSSL, the ``cryptography`` package's Rust)
is checked first (:func:`check_key_password`), and the call is made through
:func:`without_panics`: a panic of that code (pyo3's ``PanicException``, a
``BaseException`` that ``except Exception`` does not catch, whose text may quote
the secret's bytes) becomes a typed error with no link to it.
"""

from __future__ import annotations

import os
from collections.abc import Callable
from pathlib import Path
from typing import TypeVar

from kclient._inputfile import MAX_SETTINGS_INPUT, read_input_text
from kclient.errors import ConfigError, KClientError
from kclient.options import Text

__all__ = ["check_key_password", "read_private_text", "read_secret_file", "without_panics"]

T = TypeVar("T")

#: BaseExceptions that are Python's own signals, never a dependency's panic.
_SIGNALS = (KeyboardInterrupt, SystemExit, GeneratorExit)


def check_key_password(password: str | None, what: object) -> None:
    """Refuse a TLS key or key store password that holds a NUL character.

    OpenSSL reads such a password only up to the NUL (a wrong password taken as
    right), and the ``cryptography`` package panics on it, quoting its bytes.
    ``what`` names the password's option in the error, which never shows it.
    """
    if password is not None and "\0" in password:
        raise ConfigError(Text(what, " contains a NUL character, which no TLS key or key "
                               "store password can hold; check the password (its value is "
                               "not shown)"))


def without_panics(call: Callable[[], T], refusal: Callable[[], KClientError]) -> T:
    """``call()``, a dependency's native code handling a secret; its panic becomes ``refusal()``.

    The panic is dropped before the typed error is raised, so neither its text
    nor its traceback travels with it (nor reaches a log or the CLI's ``-v``).
    Exceptions (``ValueError``...) pass unchanged for the caller to translate;
    Ctrl-C, ``SystemExit`` and cancellation too.
    """
    try:
        return call()
    except Exception:
        raise
    except BaseException as exc:
        if isinstance(exc, _SIGNALS) or type(exc).__module__.startswith(
                ("asyncio", "concurrent")):
            raise
    # Outside the handler: nothing is being handled, so nothing is chained.
    raise refusal()


def read_private_text(path: str | os.PathLike[str], what: str) -> str:
    """The UTF-8 text of a file that may hold secrets; ``what`` names it in errors.

    Raises :class:`ConfigError` when it is missing, unreadable, not a regular
    file, too large or not UTF-8 (:mod:`kclient._inputfile`); the message names
    the file and the kind of failure, never the content.
    """
    return read_input_text(path, what, limit=MAX_SETTINGS_INPUT)


def read_secret_file(path: str | os.PathLike[str], what: str) -> str:
    """The secret in ``path`` (one final newline removed); ``what`` names it in errors.

    Raises :class:`ConfigError` when the file is missing, unreadable, not UTF-8 or
    empty; the message never includes the file's content.
    """
    text = read_private_text(path, what)
    if text.endswith("\r\n"):
        text = text[:-2]
    elif text.endswith("\n"):
        text = text[:-1]
    if not text:
        raise ConfigError(f"{what} {Path(path)} is empty")
    return text
