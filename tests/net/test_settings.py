"""Grouped settings: timeouts and backoff as frozen values that check themselves."""

from __future__ import annotations

import random

import attrs
import pytest

from kclient import ConfigError
from kclient.net import Client
from kclient.net.defaults import (
    DEFAULT_AUTH_RETRY_BACKOFF,
    DEFAULT_CONNECT_TIMEOUT,
    DEFAULT_RECONNECT_BACKOFF,
    DEFAULT_RECONNECT_BACKOFF_MAX,
    DEFAULT_REQUEST_TIMEOUT,
    MIN_AUTH_RETRY_BACKOFF,
)
from kclient.net.settings import Backoff, Timeouts


def test_backoff_doubles_with_jitter_up_to_the_maximum() -> None:
    backoff = Backoff(reconnect=0.1, reconnect_max=1.0)
    rng = random.Random(3)
    for failures, base in ((0, 0.1), (1, 0.2), (2, 0.4), (3, 0.8), (4, 1.0), (40, 1.0)):
        delays = [backoff.delay(failures, rng=rng) for _ in range(200)]
        assert all(base * 0.5 <= d <= base for d in delays), failures
        assert max(delays) - min(delays) > base * 0.3  # jittered, not fixed


def test_refused_credentials_wait_the_auth_retry_pause() -> None:
    backoff = Backoff(reconnect=0.1, reconnect_max=1.0, auth_retry=7.0)
    assert {backoff.delay(n, auth_failed=True) for n in (0, 1, 30)} == {7.0}


def test_defaults_come_from_the_defaults_module() -> None:
    assert Backoff() == Backoff(DEFAULT_RECONNECT_BACKOFF, DEFAULT_RECONNECT_BACKOFF_MAX,
                                DEFAULT_AUTH_RETRY_BACKOFF)
    timeouts = Timeouts()
    assert (timeouts.connect, timeouts.request) == (DEFAULT_CONNECT_TIMEOUT,
                                                    DEFAULT_REQUEST_TIMEOUT)
    assert timeouts.startup == DEFAULT_CONNECT_TIMEOUT + DEFAULT_REQUEST_TIMEOUT
    assert Timeouts(2, 3).startup == 5 and Timeouts(2, 3, 0.5).startup == 0.5


def test_values_are_frozen() -> None:
    with pytest.raises(attrs.exceptions.FrozenInstanceError):
        Backoff().reconnect = 1.0  # type: ignore[misc]
    with pytest.raises(attrs.exceptions.FrozenInstanceError):
        Timeouts().request = 1.0  # type: ignore[misc]


@pytest.mark.parametrize(("build", "option"), [
    (lambda: Backoff(reconnect=0), "reconnect_backoff"),
    (lambda: Backoff(reconnect_max=float("inf")), "reconnect_backoff_max"),
    (lambda: Backoff(auth_retry=MIN_AUTH_RETRY_BACKOFF / 2), "auth_retry_backoff"),
    (lambda: Timeouts(connect=-1), "connect_timeout"),
    (lambda: Timeouts(request=float("nan")), "request_timeout"),
    (lambda: Timeouts(startup=True), "startup_wait"),
])
def test_a_bad_value_names_its_option(build: object, option: str) -> None:
    with pytest.raises(ConfigError) as caught:
        build()  # type: ignore[operator]
    assert caught.value.options == (option,)
    assert str(caught.value).startswith(f"{option} must be a finite number of seconds")


def test_the_pause_may_not_shrink_as_failures_grow() -> None:
    with pytest.raises(ConfigError) as caught:
        Backoff(reconnect=2.0, reconnect_max=1.0)
    assert caught.value.options == ("reconnect_backoff", "reconnect_backoff_max")
    assert str(caught.value) == ("reconnect_backoff (2) must be at most "
                                 "reconnect_backoff_max (1)")


def test_the_client_holds_its_flat_keywords_grouped() -> None:
    client = Client("127.0.0.1:9092", connect_timeout=2, request_timeout=3,
                    reconnect_backoff=0.2, reconnect_backoff_max=0.4, auth_retry_backoff=9)
    assert client.timeouts == Timeouts(2, 3, 5)
    assert client.backoff == Backoff(0.2, 0.4, 9)
    assert Client("127.0.0.1:9092", startup_wait=0.5).timeouts.startup == 0.5


def test_the_client_refuses_what_the_value_refuses() -> None:
    with pytest.raises(ConfigError) as direct:
        Backoff(reconnect=-1)
    with pytest.raises(ConfigError) as through_client:
        Client("127.0.0.1:9092", reconnect_backoff=-1)
    assert str(through_client.value) == str(direct.value)
    assert through_client.value.options == direct.value.options
