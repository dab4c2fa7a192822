"""The rules for option values every entry point shares: seconds, ports, counts.

Each function says what is wrong with a value (``None`` when nothing is), so
the caller names the option its own way: the Python parameter, a config key
or a command-line flag.  One rule each, so the library, the configuration
readers and the CLI accept and refuse the same values with the same words.
"""

from __future__ import annotations

import math

__all__ = ["count_problem", "port_problem", "seconds_problem"]


def seconds_problem(value: object, floor: float = 0.0) -> str | None:
    """What is wrong with ``value`` as a duration: a finite number of seconds above 0
    (and at least ``floor``), or ``None``."""
    if isinstance(value, bool) or not isinstance(value, int | float) or not (
            math.isfinite(value)) or value <= 0 or value < floor:
        least = f"at least {floor:g}" if floor else "more than 0"
        return f"must be a finite number of seconds, {least}; got {value!r}"
    return None


def port_problem(port: object) -> str | None:
    """What is wrong with ``port`` as a TCP port to connect to (1-65535), or ``None``."""
    if isinstance(port, bool) or not isinstance(port, int) or not 0 < port < 65536:
        return f"port {port!r} is not a number from 1 to 65535"
    return None


def count_problem(value: object, least: int = 1) -> str | None:
    """What is wrong with ``value`` as a whole number of at least ``least``, or ``None``."""
    if isinstance(value, bool) or not isinstance(value, int) or value < least:
        return f"must be a whole number, {least} or more; got {value!r}"
    return None
