"""Choosing the SASL flow from advertised versions."""

from __future__ import annotations

import pytest

from kclient.errors import AuthenticationError
from kclient.sasl.flow import SaslFlow, choose_flow


@pytest.mark.parametrize(
    ("handshake", "authenticate", "expected"),
    [
        ((0, 1), (0, 2), SaslFlow(1, 2)),  # Kafka 2.4+
        ((0, 1), (0, 1), SaslFlow(1, 1)),  # Kafka 2.2-2.3
        ((0, 1), (0, 0), SaslFlow(1, 0)),  # Kafka 1.0-2.1
        ((0, 1), (0, 7), SaslFlow(1, 2)),  # a future broker: our highest
        ((0, 0), None, SaslFlow(0, None)),  # Kafka 0.10-0.11
        ((0, 1), None, SaslFlow(0, None)),  # v1 handshake without SaslAuthenticate
        ((0, 3), (5, 7), SaslFlow(0, None)),  # nothing in common for SaslAuthenticate
    ],
)
def test_choose_flow(
    handshake: tuple[int, int], authenticate: tuple[int, int] | None, expected: SaslFlow
) -> None:
    assert choose_flow(handshake, authenticate) == expected


def test_describe() -> None:
    assert SaslFlow(1, 2).describe() == "SaslHandshake v1 + SaslAuthenticate v2"
    assert SaslFlow(0, None).describe() == "SaslHandshake v0 + raw tokens"
    assert SaslFlow(0, None).raw_tokens and not SaslFlow(1, 0).raw_tokens


def test_no_handshake_is_an_authentication_error() -> None:
    with pytest.raises(AuthenticationError, match="broker b1: the broker does not offer"):
        choose_flow(None, None, broker="b1")
    with pytest.raises(AuthenticationError, match="only at v2-3"):
        choose_flow((2, 3), None)
    with pytest.raises(AuthenticationError, match="requires SaslHandshake v1"):
        choose_flow((1, 1), None)
