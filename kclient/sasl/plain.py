"""SASL PLAIN (RFC 4616): ``authzid NUL authcid NUL password`` in one message.

PLAIN sends the password itself, so use it over TLS (``SASL_SSL``) outside
tests.  Kafka's broker answers a successful PLAIN message with empty bytes.
"""

from __future__ import annotations

from collections.abc import Callable

from kclient.errors import AuthenticationError, ConfigError
from kclient.sasl.mechanism import PLAIN, SaslClientMechanism, SaslServerMechanism

__all__ = ["PlainClient", "PlainServer"]


class PlainClient(SaslClientMechanism):
    """Client side of PLAIN; no authorization identity is sent (Kafka ignores it)."""

    mechanism = PLAIN

    def __init__(self, username: str, password: str) -> None:
        if not username:
            raise ConfigError("SASL PLAIN needs a non-empty user name")
        if "\x00" in username or "\x00" in password:
            raise ConfigError("SASL PLAIN user names and passwords cannot contain NUL characters")
        self._username = username
        self._password = password
        self._state = "initial"

    def initial_response(self) -> bytes:
        if self._state != "initial":
            raise AuthenticationError("SASL PLAIN message was already sent")
        self._state = "sent"
        return b"\x00" + self._username.encode("utf-8") + b"\x00" + self._password.encode("utf-8")

    def evaluate_challenge(self, challenge: bytes) -> bytes | None:
        if self._state != "sent":
            raise AuthenticationError(
                f"unexpected SASL PLAIN server message in state {self._state!r}"
            )
        if challenge:
            self._state = "failed"
            raise AuthenticationError(
                "SASL PLAIN: the server sent a non-empty answer; PLAIN has a single message"
            )
        self._state = "complete"
        return None


class PlainServer(SaslServerMechanism):
    """Server side of PLAIN for the emulated broker.

    ``verify(username, password)`` says whether the pair is right; it is given
    by the credential store so this class never keeps passwords.
    """

    mechanism = PLAIN

    def __init__(self, verify: Callable[[str, str], bool]) -> None:
        self._verify = verify
        self._state = "initial"
        self._user = None

    def evaluate_response(self, response: bytes) -> bytes:
        if self._state != "initial":
            raise AuthenticationError("SASL PLAIN has a single client message")
        self._state = "failed"
        parts = response.split(b"\x00")
        if len(parts) != 3:
            raise AuthenticationError(
                "Invalid SASL/PLAIN message: expected authzid NUL username NUL password"
            )
        try:
            authzid, username, password = (part.decode("utf-8") for part in parts)
        except UnicodeDecodeError:
            raise AuthenticationError("Invalid SASL/PLAIN message: not UTF-8") from None
        if not username:
            raise AuthenticationError("Authentication failed: username not specified")
        if not password:
            raise AuthenticationError("Authentication failed: password not specified")
        if authzid and authzid != username:
            raise AuthenticationError(
                "Authentication failed: Client requested an authorization id that is "
                "different from username"
            )
        if not self._verify(username, password):
            raise AuthenticationError("Authentication failed: Invalid username or password")
        self._user = username
        self._state = "complete"
        return b""
