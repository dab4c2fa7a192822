"""SASL OAUTHBEARER (RFC 7628) as Kafka uses it (KIP-255, KIP-342).

The client sends one message: the GS2 header ``n,,``, then ``auth=Bearer
<token>`` and optional ``key=value`` extensions, each followed by the 0x01
separator, and a final 0x01.  The token comes from the application (see
:attr:`kclient.sasl.SaslConfig.token_provider`); kclient never fetches or
parses tokens itself.  On success the server answers with empty bytes; on
failure it sends a JSON error document, the client acknowledges it with a
single 0x01 and the server then fails the exchange.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Mapping

from kclient._json import loads as json_loads
from kclient.errors import AuthenticationError, ConfigError
from kclient.sasl.mechanism import OAUTHBEARER, SaslClientMechanism, SaslServerMechanism

__all__ = ["OAuthBearerClient", "OAuthBearerServer", "validate_extensions"]

_SEPARATOR = "\x01"
# RFC 6750 b64token: the characters a bearer token may contain.
_TOKEN = re.compile(r"[A-Za-z0-9\-._~+/]+=*")
_EXTENSION_KEY = re.compile(r"[A-Za-z]+")
_EXTENSION_VALUE = re.compile(r"[\x21-\x7e \t\r\n]+")


def validate_extensions(extensions: Mapping[str, str]) -> None:
    """Raise :class:`ConfigError` when an extension key or value is not allowed by RFC 7628."""
    for key, value in extensions.items():
        if not _EXTENSION_KEY.fullmatch(key):
            raise ConfigError(f"OAUTHBEARER extension name {key!r} must be letters only")
        if key == "auth":
            raise ConfigError("OAUTHBEARER extension name 'auth' is reserved for the token")
        if not _EXTENSION_VALUE.fullmatch(value):
            raise ConfigError(
                f"OAUTHBEARER extension {key!r} has characters RFC 7628 does not allow"
            )


class OAuthBearerClient(SaslClientMechanism):
    """Client side of OAUTHBEARER with a token the application already obtained."""

    mechanism = OAUTHBEARER

    def __init__(self, token: str, extensions: Mapping[str, str] | None = None) -> None:
        if not _TOKEN.fullmatch(token):
            raise ConfigError(
                "the OAUTHBEARER token from the token provider is empty or has characters a "
                "bearer token cannot contain (RFC 6750 b64token)"
            )
        self._token = token
        self._extensions = dict(extensions or {})
        validate_extensions(self._extensions)
        self._state = "initial"
        self._failure: str | None = None

    def initial_response(self) -> bytes:
        if self._state != "initial":
            raise AuthenticationError("OAUTHBEARER message was already sent")
        self._state = "sent"
        pairs = [f"auth=Bearer {self._token}"]
        pairs.extend(f"{key}={value}" for key, value in sorted(self._extensions.items()))
        body = "".join(pair + _SEPARATOR for pair in pairs)
        return f"n,,{_SEPARATOR}{body}{_SEPARATOR}".encode()

    def evaluate_challenge(self, challenge: bytes) -> bytes | None:
        if self._state != "sent":
            raise AuthenticationError(
                f"unexpected OAUTHBEARER server message in state {self._state!r}"
            )
        if not challenge:
            self._state = "complete"
            return None
        # An error document: remember what the server said and acknowledge it so the
        # server can end the exchange with its own error.
        self._state = "failed"
        self._failure = _describe_error(challenge)
        return _SEPARATOR.encode("ascii")


def _describe_error(challenge: bytes) -> str:
    try:
        document = json_loads(challenge.decode("utf-8"))
    except ValueError:  # not UTF-8, not JSON, nested too deeply, integers too long
        return "server sent an unreadable OAUTHBEARER error document"
    if not isinstance(document, dict):
        return "server sent an OAUTHBEARER error document that is not a JSON object"
    status = document.get("status", "unknown")
    scope = document.get("scope")
    text = f"OAUTHBEARER status {status}"
    if isinstance(scope, str) and scope:
        text += f" (scope {scope})"
    return text


class OAuthBearerServer(SaslServerMechanism):
    """Server side of OAUTHBEARER for the emulated broker.

    ``validate(token, extensions)`` returns the principal name for a good token
    or ``None``; a refused token gets RFC 7628's JSON error, then a failure once
    the client acknowledges it.
    """

    mechanism = OAUTHBEARER

    def __init__(self, validate: Callable[[str, Mapping[str, str]], str | None]) -> None:
        self._validate = validate
        self._state = "initial"
        self._user = None

    def evaluate_response(self, response: bytes) -> bytes:
        if self._state == "error-sent":
            self._state = "failed"
            raise AuthenticationError("Authentication failed: invalid_token")
        if self._state != "initial":
            raise AuthenticationError("unexpected OAUTHBEARER client message")
        self._state = "failed"
        try:
            text = response.decode("utf-8")
        except UnicodeDecodeError:
            raise AuthenticationError("Invalid OAUTHBEARER message: not UTF-8") from None
        header, separator, rest = text.partition(_SEPARATOR)
        if not separator or not header.startswith(("n,", "y,")) or not header.endswith(","):
            raise AuthenticationError("Invalid OAUTHBEARER message: bad GS2 header")
        if not rest.endswith(_SEPARATOR + _SEPARATOR) and rest != _SEPARATOR:
            raise AuthenticationError("Invalid OAUTHBEARER message: missing final separator")
        fields: dict[str, str] = {}
        for pair in rest.split(_SEPARATOR):
            if not pair:
                continue
            key, equals, value = pair.partition("=")
            if not equals or key in fields:
                raise AuthenticationError("Invalid OAUTHBEARER message: bad key=value pair")
            fields[key] = value
        auth = fields.pop("auth", "")
        scheme, _, token = auth.partition(" ")
        if scheme.lower() != "bearer" or not _TOKEN.fullmatch(token):
            raise AuthenticationError("Invalid OAUTHBEARER message: no bearer token")
        principal = self._validate(token, fields)
        if principal is None:
            self._state = "error-sent"
            return json.dumps({"status": "invalid_token"}).encode("utf-8")
        self._user = principal
        self._state = "complete"
        return b""
