"""SASL authentication on a live connection, right after the ApiVersions handshake.

:func:`authenticate` picks the flow from the versions the broker advertised on
this connection (:func:`kclient.sasl.flow.choose_flow`), sends SaslHandshake,
then moves the tokens of the mechanism's state machine either in SaslAuthenticate
requests (broker error codes and messages are reported) or as raw size-prefixed
frames (the SaslHandshake v0 flow, where a failure is only a closed connection).

Nothing secret is logged or put into an exception: messages name the broker,
the mechanism and the user, never the password, token or SASL bytes.
"""

from __future__ import annotations

import inspect
import logging
from collections.abc import Awaitable, Callable, Mapping
from typing import Any, Protocol

import attrs

from kclient.errors import AuthenticationError, BrokerConnectionError, UnsupportedSaslMechanismError
from kclient.protocol.constants import ApiKey, ErrorCode, error_name
from kclient.sasl import OAUTHBEARER, SaslClientMechanism, SaslConfig
from kclient.sasl.flow import SaslFlow, choose_flow

__all__ = ["SaslResult", "SaslTransport", "authenticate"]

log = logging.getLogger(__name__)


# A mechanism needs at most a handful of round trips; more means a confused peer.
_MAX_ROUND_TRIPS = 8


class SaslTransport(Protocol):
    """What :func:`authenticate` needs from a connection."""

    @property
    def broker_label(self) -> str:
        """How to name the broker in messages (``host:port`` or ``node 1 (host:port)``)."""

    def api_range(self, api_key: int) -> tuple[int, int] | None:
        """The broker's advertised ``(min, max)`` for ``api_key`` on this connection."""

    async def request(self, api: int, body: Mapping[str, Any], version: int) -> Any:
        """Send one request at ``version`` and return the decoded response body."""

    async def send_raw_frame(self, payload: bytes) -> None:
        """Write ``payload`` with an int32 size prefix and no Kafka header."""

    async def receive_raw_frame(self) -> bytes:
        """Read one size-prefixed frame (may be empty) and return its payload."""


@attrs.frozen
class SaslResult:
    """What a successful authentication established."""

    mechanism: str
    flow: SaslFlow
    session_lifetime_ms: int = 0


def _fail(
    config: SaslConfig, broker: str, reason: str, mechanism: SaslClientMechanism | None = None
) -> AuthenticationError:
    who = f" as {config.username!r}" if config.username else ""
    detail = ""
    if mechanism is not None and mechanism.failure_detail:
        detail = f" ({mechanism.failure_detail})"
    return AuthenticationError(f"SASL {config.mechanism}{who} failed: {reason}{detail}", broker)


async def _token(config: SaslConfig, broker: str) -> str | None:
    if config.mechanism != OAUTHBEARER:
        return None
    assert config.token_provider is not None
    try:
        value = config.token_provider()
        if inspect.isawaitable(value):
            value = await value
    except Exception as exc:
        raise _fail(
            config, broker, f"the token provider raised {type(exc).__name__}"
        ) from exc
    if not isinstance(value, str):
        raise _fail(
            config, broker, f"the token provider returned {type(value).__name__}, not str"
        )
    return value


def _field(message: Any, name: str, default: Any = None) -> Any:
    if isinstance(message, Mapping):
        return message.get(name, default)
    return getattr(message, name, default)


async def authenticate(connection: SaslTransport, config: SaslConfig) -> SaslResult:
    """Authenticate ``connection`` with ``config``; raise :class:`AuthenticationError` on failure.

    An unknown mechanism raises :class:`UnsupportedSaslMechanismError` listing the
    mechanisms the broker enables.  A connection lost during the exchange is an
    :class:`AuthenticationError` too (the broker did not accept the credentials).
    """
    broker = connection.broker_label
    flow = choose_flow(
        connection.api_range(ApiKey.SASL_HANDSHAKE),
        connection.api_range(ApiKey.SASL_AUTHENTICATE),
        broker,
    )
    log.debug("broker %s: SASL %s via %s", broker, config.mechanism, flow.describe())
    token = await _token(config, broker)
    try:
        mechanism = config.create_client(token)
    except Exception as exc:  # a token the provider gave that a bearer token cannot be
        raise _fail(config, broker, str(exc)) from None
    try:
        await _handshake(connection, config, flow, broker)
        if flow.raw_tokens:
            lifetime = await _raw_exchange(connection, config, mechanism, broker)
        else:
            lifetime = await _authenticate_exchange(connection, config, flow, mechanism, broker)
    except AuthenticationError:
        raise
    except BrokerConnectionError as exc:
        reason = (
            "the broker closed the connection during the exchange"
            if flow.raw_tokens
            else "the connection failed during the exchange"
        )
        if flow.raw_tokens:
            reason += (
                " (the SaslHandshake v0 flow carries no error message: most likely wrong "
                "credentials; check the user name and password)"
            )
        raise _fail(config, broker, f"{reason}: {exc}", mechanism) from None
    log.debug("broker %s: SASL %s authenticated", broker, config.mechanism)
    return SaslResult(mechanism=config.mechanism, flow=flow, session_lifetime_ms=lifetime)


async def _handshake(
    connection: SaslTransport, config: SaslConfig, flow: SaslFlow, broker: str
) -> None:
    response = await connection.request(
        ApiKey.SASL_HANDSHAKE, {"mechanism": config.mechanism}, version=flow.handshake_version
    )
    code = int(_field(response, "error_code", 0))
    enabled = tuple(str(name) for name in (_field(response, "mechanisms", ()) or ()))
    if code == ErrorCode.UNSUPPORTED_SASL_MECHANISM:
        shown = ", ".join(enabled) if enabled else "none"
        raise UnsupportedSaslMechanismError(
            f"SASL mechanism {config.mechanism} is not enabled on this broker; "
            f"it enables: {shown}",
            broker,
            enabled,
        )
    if code != ErrorCode.NONE:
        raise _fail(config, broker, f"SaslHandshake answered {error_name(code)}")


async def _drive(
    mechanism: SaslClientMechanism,
    round_trip: Callable[[bytes], Awaitable[bytes]],
    config: SaslConfig,
    broker: str,
    early_end: str,
) -> None:
    """Move the mechanism's tokens through ``round_trip`` until it has nothing more to say."""
    message: bytes | None = mechanism.initial_response()
    for _ in range(_MAX_ROUND_TRIPS):
        if message is None:
            break
        challenge = await round_trip(message)
        try:
            message = mechanism.evaluate_challenge(challenge)
        except AuthenticationError as exc:
            raise _fail(config, broker, str(exc), mechanism) from None
    else:
        if message is not None:
            raise _fail(config, broker, "the exchange did not finish in time")
    if not mechanism.complete:
        raise _fail(config, broker, early_end, mechanism)


async def _authenticate_exchange(
    connection: SaslTransport,
    config: SaslConfig,
    flow: SaslFlow,
    mechanism: SaslClientMechanism,
    broker: str,
) -> int:
    version = flow.authenticate_version
    assert version is not None
    lifetime = 0

    async def round_trip(message: bytes) -> bytes:
        nonlocal lifetime
        response = await connection.request(
            ApiKey.SASL_AUTHENTICATE, {"auth_bytes": message}, version=version
        )
        code = int(_field(response, "error_code", 0))
        if code != ErrorCode.NONE:
            text = _field(response, "error_message") or "no message"
            raise _fail(config, broker, f"broker says {text!s} [{error_name(code)}]", mechanism)
        lifetime = int(_field(response, "session_lifetime_ms", 0) or 0)
        return bytes(_field(response, "auth_bytes", b"") or b"")

    await _drive(mechanism, round_trip, config, broker, "the broker ended the exchange early")
    if lifetime > 0:
        log.debug(
            "broker %s: SASL session lifetime %d ms; the broker closes the connection after it "
            "and kclient authenticates again on reconnect",
            broker,
            lifetime,
        )
    return lifetime


async def _raw_exchange(
    connection: SaslTransport, config: SaslConfig, mechanism: SaslClientMechanism, broker: str
) -> int:
    async def round_trip(message: bytes) -> bytes:
        await connection.send_raw_frame(message)
        return await connection.receive_raw_frame()

    # OAUTHBEARER's error acknowledgement leaves the mechanism incomplete: the broker
    # closes the connection next.
    await _drive(mechanism, round_trip, config, broker, "the broker refused the credentials")
    return 0
