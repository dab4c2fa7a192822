"""Which SASL flow to use with a broker, from the versions it advertised (KIP-43, KIP-152).

* SaslHandshake v1 + SaslAuthenticate (Kafka 1.0+): every SASL token travels in a
  SaslAuthenticate request, so the broker can answer with an error code and message.
* SaslHandshake v0 (Kafka 0.10-0.11): after the handshake the tokens are sent as raw
  size-prefixed frames; a failure is signalled only by the broker closing the connection.
"""

from __future__ import annotations

import attrs

from kclient.errors import AuthenticationError

__all__ = [
    "CLIENT_AUTHENTICATE_VERSIONS",
    "CLIENT_HANDSHAKE_VERSIONS",
    "SaslFlow",
    "choose_flow",
]

#: SaslHandshake versions kclient speaks.
CLIENT_HANDSHAKE_VERSIONS = (0, 1)
#: SaslAuthenticate versions kclient speaks.
CLIENT_AUTHENTICATE_VERSIONS = (0, 2)


@attrs.frozen
class SaslFlow:
    """The versions to use: ``authenticate_version`` is ``None`` for the raw-token (v0) flow."""

    handshake_version: int
    authenticate_version: int | None

    @property
    def raw_tokens(self) -> bool:
        """True for the SaslHandshake v0 flow."""
        return self.authenticate_version is None

    def describe(self) -> str:
        """Short text for logs: ``SaslHandshake v1 + SaslAuthenticate v2`` or ``... raw tokens``."""
        if self.authenticate_version is None:
            return f"SaslHandshake v{self.handshake_version} + raw tokens"
        return (
            f"SaslHandshake v{self.handshake_version} + "
            f"SaslAuthenticate v{self.authenticate_version}"
        )


def _overlap(broker: tuple[int, int] | None, ours: tuple[int, int]) -> tuple[int, int] | None:
    if broker is None:
        return None
    low, high = max(broker[0], ours[0]), min(broker[1], ours[1])
    return (low, high) if low <= high else None


def choose_flow(
    handshake: tuple[int, int] | None,
    authenticate: tuple[int, int] | None,
    broker: str | None = None,
) -> SaslFlow:
    """Pick the flow from the broker's ``(min, max)`` ranges for SaslHandshake (17) and
    SaslAuthenticate (36); ``None`` means the broker does not offer that API."""
    shake = _overlap(handshake, CLIENT_HANDSHAKE_VERSIONS)
    if shake is None:
        if handshake is None:
            offered = "does not offer SaslHandshake (api key 17)"
        else:
            offered = f"offers SaslHandshake (api key 17) only at v{handshake[0]}-{handshake[1]}"
        raise AuthenticationError(
            f"the broker {offered}, so kclient cannot authenticate it "
            "with SASL; check the listener's security protocol (SASL_PLAINTEXT / SASL_SSL) "
            "or connect without SASL",
            broker,
        )
    auth = _overlap(authenticate, CLIENT_AUTHENTICATE_VERSIONS)
    if shake[1] >= 1 and auth is not None:
        return SaslFlow(handshake_version=shake[1], authenticate_version=auth[1])
    if shake[0] > 0:
        raise AuthenticationError(
            "the broker requires SaslHandshake v1+ but does not offer a SaslAuthenticate "
            "version kclient speaks (v0-v2)",
            broker,
        )
    return SaslFlow(handshake_version=0, authenticate_version=None)
