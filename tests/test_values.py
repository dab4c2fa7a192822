"""One rule each for seconds, ports and counts, shared by the library and the CLI."""

from __future__ import annotations

import math

import pytest

from kclient.errors import ConfigError
from kclient.net import Client, Connection
from kclient.values import count_problem, port_problem, seconds_problem


@pytest.mark.parametrize("value", [0, -1, math.inf, math.nan, True, "3", None])
def test_seconds_refused(value: object) -> None:
    assert seconds_problem(value) is not None


@pytest.mark.parametrize("value", [0.001, 1, 30.0])
def test_seconds_accepted(value: float) -> None:
    assert seconds_problem(value) is None
    assert seconds_problem(value, floor=0.05) == (
        None if value >= 0.05 else seconds_problem(value, floor=0.05))


def test_a_floor_is_named() -> None:
    assert seconds_problem(0.01, floor=0.05) == (
        "must be a finite number of seconds, at least 0.05; got 0.01")


@pytest.mark.parametrize("port", [0, 65536, -1, True, "9092", 9.0])
def test_ports_refused(port: object) -> None:
    assert port_problem(port) is not None


def test_counts() -> None:
    assert count_problem(1) is None
    assert count_problem(0) == "must be a whole number, 1 or more; got 0"
    assert count_problem(True) is not None


def test_library_and_cli_use_the_same_words() -> None:
    """The client, a connection and the CLI's --timeout refuse with one sentence."""
    with pytest.raises(ConfigError) as client:
        Client("127.0.0.1:9092", request_timeout=math.inf)
    with pytest.raises(ConfigError) as connection:
        Connection("127.0.0.1", 9092, request_timeout=math.inf)
    assert str(client.value) == f"request_timeout {seconds_problem(math.inf)}"
    assert str(connection.value) == f"request_timeout {seconds_problem(math.inf)}"
    with pytest.raises(ConfigError, match="port 0 is not a number from 1 to 65535"):
        Connection("127.0.0.1", 0)
