"""Structured log events: stable names and fields for every handshake and view change.

kclient logs them on the ``kclient.events`` logger with ``extra`` fields, so a
JSON log formatter (or a test's ``caplog``) can read them without parsing text:

========================  =====  ==================================================
event                     level  fields (besides ``event``)
========================  =====  ==================================================
``handshake.done``        DEBUG  ``broker``, ``duration_ms``, ``source``, ``steps``
``handshake.failed``      INFO   ``broker``, ``duration_ms``, ``error``
``broker.stale``          INFO   ``broker``, ``error`` (unreachable, last answer kept)
``broker.unknown``        INFO   ``broker``, ``error`` (never answered yet)
``broker.answered``       DEBUG  ``broker`` (negotiated again after a failure)
``view.changed``          INFO   ``cluster``, ``changes`` (the diff's lines)
========================  =====  ==================================================

Every event name is prefixed ``kclient.`` in the record's ``event`` field.
"""

from __future__ import annotations

import logging
from typing import Any

__all__ = ["EVENTS", "LOGGER", "emit"]

#: The logger every event goes to.
LOGGER = logging.getLogger("kclient.events")

#: Event name -> level: the only events kclient emits.
EVENTS: dict[str, int] = {
    "handshake.done": logging.DEBUG,
    "handshake.failed": logging.INFO,
    "broker.stale": logging.INFO,
    "broker.unknown": logging.INFO,
    "broker.answered": logging.DEBUG,
    "view.changed": logging.INFO,
}


def emit(name: str, message: str, **fields: Any) -> None:
    """Log event ``name`` (one of :data:`EVENTS`) with ``fields`` as record attributes."""
    level = EVENTS[name]
    if LOGGER.isEnabledFor(level):
        LOGGER.log(level, message, extra={"event": f"kclient.{name}", **fields})
