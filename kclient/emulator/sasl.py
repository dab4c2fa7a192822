"""SASL on the emulated broker: which requests are allowed, and the server side of each flow.

The broker makes one :class:`SaslServerSession` per connection when it has a
:class:`SaslServerConfig` and asks it about every request:

* :meth:`SaslServerSession.allows` -- before authentication only ApiVersions (18),
  SaslHandshake (17) and SaslAuthenticate (36) are served; the broker closes the
  connection on anything else, as Kafka does.
* :meth:`SaslServerSession.handle` answers SaslHandshake and SaslAuthenticate
  (a response body for :func:`kclient.protocol.encode_response`).
* After a SaslHandshake **v0** the client sends raw size-prefixed tokens instead
  of requests (:attr:`SaslServerSession.awaiting_raw_tokens`); the broker gives
  each frame to :meth:`SaslServerSession.raw_token` and sends back the returned
  bytes as one size-prefixed frame (possibly empty), or closes the connection
  when it returns ``None`` (the v0 flow has no way to carry an error).
* :attr:`SaslServerSession.failed` -- the broker sends the current response and
  then closes the connection.

``SaslServerConfig(v0_only=True)`` makes a broker behave like Kafka 0.10-0.11:
SaslHandshake v0 only and no SaslAuthenticate (see :meth:`SaslServerConfig.restrict`).
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Mapping
from typing import Any

import attrs

from kclient.errors import AuthenticationError, ConfigError
from kclient.protocol.constants import ApiKey, ErrorCode
from kclient.sasl import (
    OAUTHBEARER,
    PLAIN,
    SCRAM_SHA_256,
    SCRAM_SHA_512,
    CredentialStore,
    SaslServerMechanism,
    TokenValidator,
)

__all__ = [
    "SaslServerConfig",
    "SaslServerSession",
]

log = logging.getLogger(__name__)


_PRE_AUTH_APIS = frozenset({ApiKey.SASL_HANDSHAKE, ApiKey.API_VERSIONS, ApiKey.SASL_AUTHENTICATE})


def _store(value: CredentialStore | Mapping[str, str]) -> CredentialStore:
    if isinstance(value, CredentialStore):
        return value
    return CredentialStore.from_passwords(value)


def _mechanisms(value: tuple[str, ...] | list[str]) -> tuple[str, ...]:
    return tuple(str(item).upper() for item in value)


@attrs.frozen(repr=False)
class SaslServerConfig:
    """How an emulated broker authenticates clients.

    ``users`` is ``{user: password}`` (turned into SCRAM credentials at once, the
    passwords are not kept) or a ready :class:`kclient.sasl.CredentialStore`.
    ``mechanisms`` are the enabled ones, in the order the broker lists them.
    OAUTHBEARER needs ``token_validator``.  ``mechanism_factory`` replaces the
    built-in server mechanisms (tests use it to emulate a misbehaving broker).
    """

    users: CredentialStore = attrs.field(converter=_store)
    mechanisms: tuple[str, ...] = attrs.field(
        default=(PLAIN, SCRAM_SHA_256, SCRAM_SHA_512), converter=_mechanisms
    )
    v0_only: bool = False
    session_lifetime_ms: int = 0
    token_validator: TokenValidator | None = None
    mechanism_factory: Callable[[str], SaslServerMechanism] | None = attrs.field(
        default=None, eq=False
    )

    def __attrs_post_init__(self) -> None:
        if not self.mechanisms:
            raise ConfigError("an emulated SASL broker needs at least one enabled mechanism")
        known = (PLAIN, SCRAM_SHA_256, SCRAM_SHA_512, OAUTHBEARER)
        for mechanism in self.mechanisms:
            if mechanism not in known and self.mechanism_factory is None:
                raise ConfigError(
                    f"the emulator cannot serve SASL mechanism {mechanism!r}; "
                    f"choose from {', '.join(known)}"
                )
        if (
            OAUTHBEARER in self.mechanisms
            and self.token_validator is None
            and self.mechanism_factory is None
        ):
            raise ConfigError("OAUTHBEARER on the emulator needs a token_validator")

    def restrict(self, apis: Mapping[int, tuple[int, int]]) -> dict[int, tuple[int, int]]:
        """Adjust advertised ``{api_key: (min, max)}`` ranges to what this SASL setup serves.

        In ``v0_only`` mode SaslHandshake is capped at v0 and SaslAuthenticate is
        removed, like a Kafka 0.10/0.11 broker.  Otherwise the ranges are kept.
        """
        result = {key: (low, high) for key, (low, high) in apis.items()}
        if self.v0_only:
            result.pop(ApiKey.SASL_AUTHENTICATE, None)
            if ApiKey.SASL_HANDSHAKE in result:
                result[ApiKey.SASL_HANDSHAKE] = (result[ApiKey.SASL_HANDSHAKE][0], 0)
        return result

    def new_mechanism(self, mechanism: str) -> SaslServerMechanism:
        """A fresh server state machine for one exchange."""
        if self.mechanism_factory is not None:
            return self.mechanism_factory(mechanism)
        return self.users.server_mechanism(mechanism, self.token_validator)

    def __repr__(self) -> str:
        return (
            f"SaslServerConfig(users={list(self.users.users)!r}, "
            f"mechanisms={list(self.mechanisms)!r}, v0_only={self.v0_only})"
        )


class SaslServerSession:
    """The SASL state of one client connection on an emulated broker."""

    def __init__(self, config: SaslServerConfig) -> None:
        self._config = config
        self._state = "handshake"
        self._mechanism: SaslServerMechanism | None = None
        self._raw = False
        self._failed = False
        self._principal: str | None = None

    @property
    def authenticated(self) -> bool:
        """True once the client has authenticated on this connection."""
        return self._state == "authenticated"

    @property
    def failed(self) -> bool:
        """True when the broker must close the connection after the current response."""
        return self._failed

    @property
    def awaiting_raw_tokens(self) -> bool:
        """True while the v0 flow expects raw SASL tokens instead of Kafka requests."""
        return self._raw and self._state == "authenticate" and not self._failed

    @property
    def principal(self) -> str | None:
        """The authenticated user name, or ``None``."""
        return self._principal

    def allows(self, api_key: int) -> bool:
        """Whether a request with ``api_key`` may be served now (else close the connection)."""
        if self._failed or self.awaiting_raw_tokens:
            return False
        return self.authenticated or api_key in _PRE_AUTH_APIS

    def handle(self, api_key: int, api_version: int, request: Any) -> dict[str, Any]:
        """Answer a SaslHandshake (17) or SaslAuthenticate (36) request."""
        if api_key == ApiKey.SASL_HANDSHAKE:
            return self._handshake(api_version, str(getattr(request, "mechanism", "") or ""))
        if api_key == ApiKey.SASL_AUTHENTICATE:
            auth_bytes = bytes(getattr(request, "auth_bytes", b"") or b"")
            return self._authenticate(api_version, auth_bytes)
        raise ValueError(f"SaslServerSession.handle got api key {api_key}; only 17 and 36")

    def raw_token(self, data: bytes) -> bytes | None:
        """One token of the v0 flow: the server token to send back, or ``None`` to close."""
        if not self.awaiting_raw_tokens or self._mechanism is None:
            self._failed = True
            return None
        try:
            challenge = self._mechanism.evaluate_response(bytes(data))
        except AuthenticationError as exc:
            log.debug("emulated broker: SASL v0 flow failed: %s", exc)
            self._failed = True
            return None
        self._after_step()
        return challenge

    def _handshake(self, version: int, mechanism: str) -> dict[str, Any]:
        enabled = list(self._config.mechanisms)
        if self._state != "handshake":
            self._failed = True
            return {"error_code": ErrorCode.ILLEGAL_SASL_STATE, "mechanisms": enabled}
        if version > 0 and self._config.v0_only:
            self._failed = True
            return {"error_code": ErrorCode.UNSUPPORTED_VERSION, "mechanisms": enabled}
        if mechanism.upper() not in enabled:
            log.debug("emulated broker: SASL mechanism %r not enabled", mechanism)
            self._failed = True
            return {"error_code": ErrorCode.UNSUPPORTED_SASL_MECHANISM, "mechanisms": enabled}
        self._mechanism = self._config.new_mechanism(mechanism.upper())
        self._raw = version == 0
        self._state = "authenticate"
        return {"error_code": ErrorCode.NONE, "mechanisms": enabled}

    def _authenticate(self, version: int, auth_bytes: bytes) -> dict[str, Any]:
        body: dict[str, Any] = {"error_code": ErrorCode.NONE, "error_message": None,
                                "auth_bytes": b""}
        if version >= 1:
            body["session_lifetime_ms"] = 0
        if self._state != "authenticate" or self._raw or self._mechanism is None:
            self._failed = True
            body["error_code"] = ErrorCode.ILLEGAL_SASL_STATE
            body["error_message"] = (
                "Unexpected SaslAuthenticate request: a SaslHandshake v1 must come first"
            )
            return body
        try:
            body["auth_bytes"] = self._mechanism.evaluate_response(auth_bytes)
        except AuthenticationError as exc:
            self._failed = True
            body["error_code"] = ErrorCode.SASL_AUTHENTICATION_FAILED
            body["error_message"] = str(exc)
            return body
        self._after_step()
        if self.authenticated and version >= 1:
            body["session_lifetime_ms"] = self._config.session_lifetime_ms
        return body

    def _after_step(self) -> None:
        mechanism = self._mechanism
        if mechanism is not None and mechanism.complete:
            self._state = "authenticated"
            self._principal = mechanism.authorization_id
            log.debug("emulated broker: %s authenticated with %s", self._principal,
                      mechanism.mechanism)

    def __repr__(self) -> str:
        return f"<SaslServerSession {self._state}{' failed' if self._failed else ''}>"
