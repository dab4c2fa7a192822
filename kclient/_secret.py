"""Secrets kept in files (passwords for SASL and for encrypted TLS keys).

A secret never goes on the command line (where ``ps`` and shell history show it);
the CLI takes a file instead.  The file holds the secret; one final newline, as
editors and ``echo`` add, is not part of it.
"""

from __future__ import annotations

import os
from pathlib import Path

from kclient._inputfile import MAX_SETTINGS_INPUT, read_input_text
from kclient.errors import ConfigError

__all__ = ["read_private_text", "read_secret_file"]


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
