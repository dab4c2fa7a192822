"""Messages that name kclient's options, kept in parts so that each reader gets its words.

A hint such as "raise request_timeout" helps a Python caller and misleads a
command-line user, whose flag is ``--timeout``.  So a message that names an
option is built from parts: plain text and small markers saying which option
(:class:`Option`), with an example value (:class:`Example`) or as a setting
(:class:`Setting`).  :class:`Text` joins the parts into a ``str`` that reads
in Python parameter names and keeps the parts; an error raised with it keeps
them too (:attr:`kclient.KClientError.parts`, :attr:`kclient.KClientError.options`).
The command line prints the same parts with its flags.

:func:`render` is the one rule for both readers: ``flags`` maps a parameter
name to the flag that sets it, and an option without a flag keeps its Python
name.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import NamedTuple

__all__ = ["Example", "Option", "Part", "Setting", "Text", "joined", "option_names", "parts_of",
           "render"]


class Option(NamedTuple):
    """An option named in a message: ``request_timeout``, or its flag ``--timeout``.

    ``python`` is how Python code sets it when that is more than its name
    (``drop_unsupported=True``); ``None`` means the name.
    """

    name: str
    python: str | None = None


class Example(NamedTuple):
    """An option with an example value: ``name (e.g. name="value")`` or
    ``--flag (e.g. --flag value)``."""

    name: str
    value: str


class Setting(NamedTuple):
    """An option set to a value: ``name=value`` or ``--flag value``."""

    name: str
    value: str


#: One piece of a message: text, or a marker naming an option.
Part = str | Option | Example | Setting
_MARKERS = (Option, Example, Setting)
_NO_FLAGS: Mapping[str, str] = {}


def _render_part(part: Part, flags: Mapping[str, str]) -> str:
    if isinstance(part, str):
        return part
    flag = flags.get(part.name)
    if isinstance(part, Option):
        if flag is not None:
            return flag
        return part.python if part.python is not None else part.name
    if isinstance(part, Example):
        if flag is not None:
            return f"{flag} (e.g. {flag} {part.value})"
        return f'{part.name} (e.g. {part.name}="{part.value}")'
    return f"{part.name}={part.value}" if flag is None else f"{flag} {part.value}"


def render(parts: Iterable[Part], flags: Mapping[str, str] = _NO_FLAGS) -> str:
    """``parts`` as one string: each option by its flag in ``flags``, else by its
    Python name (no ``flags``: Python names throughout)."""
    return "".join(_render_part(part, flags) for part in parts)


def parts_of(value: object) -> tuple[Part, ...]:
    """The parts of a :class:`Text` or an error raised with one; anything else is
    one piece of plain text (its ``str``)."""
    parts = getattr(value, "parts", None)
    if isinstance(parts, tuple) and all(isinstance(p, (str, *_MARKERS)) for p in parts):
        return parts
    return (str(value),)


def option_names(parts: Iterable[Part]) -> tuple[str, ...]:
    """The options ``parts`` name, in order, each once (parameter names)."""
    return tuple(dict.fromkeys(p.name for p in parts if isinstance(p, _MARKERS)))


class Text(str):
    """A message in Python names (it *is* that ``str``) that keeps its :attr:`parts`.

    ``Text("raise ", Option("request_timeout"), " for slow brokers")``.  A piece
    may be text, a marker, or a :class:`Text` or error whose parts are taken
    over, so a message quoting another keeps the options it names.
    """

    parts: tuple[Part, ...]

    def __new__(cls, *pieces: object) -> Text:
        parts: list[Part] = []
        for piece in pieces:
            for part in (piece,) if isinstance(piece, _MARKERS) else parts_of(piece):
                if isinstance(part, str) and parts and isinstance(parts[-1], str):
                    parts[-1] += part  # neighbouring text is one piece
                elif part != "":
                    parts.append(part)
        self = super().__new__(cls, render(parts))
        self.parts = tuple(parts)
        return self

    def __reduce__(self) -> tuple[object, ...]:
        return (Text, self.parts)


def joined(separator: str, pieces: Iterable[object]) -> Text:
    """``separator.join`` for messages: each piece keeps the options it names."""
    between: list[object] = []
    for piece in pieces:
        if between:
            between.append(separator)
        between.append(piece)
    return Text(*between)
