"""Settings that belong together, as small frozen values a reader can take in at once.

:class:`Client` keeps its flat keywords (``connect_timeout=``,
``reconnect_backoff=`` ...), which users and :func:`kclient.from_config` pass;
inside, it holds them grouped: :class:`Timeouts` (how long to wait) and
:class:`Backoff` (how long to pause before trying a broker again, and the
doubling-with-jitter rule itself).  Each value checks itself when built, with the
rule of :mod:`kclient.values`, and names the failing option in the caller's words
(a :class:`~kclient.options.Option` marker), so ``Backoff(reconnect=-1)`` and
``Client(..., reconnect_backoff=-1)`` refuse the same value with the same message.
"""

from __future__ import annotations

import random
from typing import Any

import attrs

from kclient.errors import ConfigError
from kclient.net.defaults import (
    DEFAULT_AUTH_RETRY_BACKOFF,
    DEFAULT_CONNECT_TIMEOUT,
    DEFAULT_RECONNECT_BACKOFF,
    DEFAULT_RECONNECT_BACKOFF_MAX,
    DEFAULT_REQUEST_TIMEOUT,
    MIN_AUTH_RETRY_BACKOFF,
)
from kclient.options import Option, Text
from kclient.values import seconds_problem

__all__ = ["Backoff", "Timeouts", "check_seconds"]


def check_seconds(option: str, value: float | None, floor: float = 0.0) -> None:
    """Refuse ``value`` for ``option`` unless it is a finite duration above ``floor``
    (``None``: the option is unset and nothing is checked)."""
    problem = None if value is None else seconds_problem(value, floor)
    if problem is not None:
        raise ConfigError(Text(Option(option), f" {problem}"))


def _seconds(option: str, floor: float = 0.0) -> Any:
    def check(instance: object, attribute: object, value: float) -> None:
        check_seconds(option, value, floor)
    return check


@attrs.frozen
class Timeouts:
    """How long the client waits, in seconds.

    ``connect``: for a TCP (and TLS) connection to a broker; ``request``: for the
    answer to one request; ``startup``: for the first answers when the client
    starts or refreshes (by default ``connect + request``).
    """

    connect: float = attrs.field(default=DEFAULT_CONNECT_TIMEOUT,
                                 validator=_seconds("connect_timeout"))
    request: float = attrs.field(default=DEFAULT_REQUEST_TIMEOUT,
                                 validator=_seconds("request_timeout"))
    startup: float = attrs.field(validator=_seconds("startup_wait"))

    @startup.default
    def _startup(self) -> float:
        # Defaults are made before validators run: check what the sum is made of.
        check_seconds("connect_timeout", self.connect)
        check_seconds("request_timeout", self.request)
        return self.connect + self.request


@attrs.frozen
class Backoff:
    """How long a broker's supervisor pauses before it connects again, in seconds.

    After ``failures`` failed attempts in a row the pause is ``reconnect`` doubled
    per failure, at most ``reconnect_max``, times a random factor in [0.5, 1) so
    that the clients of a restarted cluster do not all come back in the same
    instant (:meth:`delay`); after refused credentials it is ``auth_retry``, so a
    wrong password does not become a storm of attempts.
    """

    reconnect: float = attrs.field(default=DEFAULT_RECONNECT_BACKOFF,
                                   validator=_seconds("reconnect_backoff"))
    reconnect_max: float = attrs.field(default=DEFAULT_RECONNECT_BACKOFF_MAX,
                                       validator=_seconds("reconnect_backoff_max"))
    auth_retry: float = attrs.field(default=DEFAULT_AUTH_RETRY_BACKOFF,
                                    validator=_seconds("auth_retry_backoff",
                                                       MIN_AUTH_RETRY_BACKOFF))

    def __attrs_post_init__(self) -> None:
        if self.reconnect_max < self.reconnect:
            raise ConfigError(Text(Option("reconnect_backoff"), f" ({self.reconnect:g}) must be "
                                   "at most ", Option("reconnect_backoff_max"),
                                   f" ({self.reconnect_max:g})"))

    def delay(self, failures: int, *, auth_failed: bool = False,
              rng: random.Random | None = None) -> float:
        """Seconds to pause after ``failures`` failures in a row (0: a connection that
        worked and closed); ``auth_failed`` when the broker refused the credentials."""
        if auth_failed:
            return self.auth_retry
        base = min(self.reconnect_max, self.reconnect * (1 << min(failures, 30)))
        return base * (rng or random).uniform(0.5, 1.0)
