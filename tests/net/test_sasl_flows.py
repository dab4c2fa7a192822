"""kclient.net.sasl.authenticate driven against the emulator's SASL session in-process.

The transport below hands each request straight to a real
:class:`~kclient.emulator.sasl.SaslServerSession` and behaves like the emulated
broker does on the wire: it closes (raises) when the session says so.  The same
flows run over real sockets in test_sasl.py.
"""

from __future__ import annotations

import asyncio
import base64
import logging
from collections.abc import Mapping
from types import SimpleNamespace
from typing import Any

import pytest

from kclient.emulator.sasl import SaslServerConfig, SaslServerSession
from kclient.errors import AuthenticationError, BrokerConnectionError, UnsupportedSaslMechanismError
from kclient.net.sasl import SaslResult, authenticate
from kclient.sasl import SaslConfig, SaslServerMechanism, ScramServer
from kclient.sasl.flow import SaslFlow

PASSWORD = "correct-horse-battery-staple-7"
USERS = {"alice": PASSWORD}
NEW_BROKER = {17: (0, 1), 36: (0, 2), 18: (0, 4)}
OLD_BROKER = {17: (0, 0), 18: (0, 1)}


class SessionTransport:
    """A connection whose broker end is a SaslServerSession."""

    def __init__(self, server: SaslServerConfig, apis: Mapping[int, tuple[int, int]]) -> None:
        self.session = SaslServerSession(server)
        self.apis = server.restrict(apis)
        self.closed = False
        self.pending: bytes | None = None
        self.requests: list[tuple[int, int]] = []

    @property
    def broker_label(self) -> str:
        return "node 1 (127.0.0.1:9092)"

    def api_range(self, api_key: int) -> tuple[int, int] | None:
        return self.apis.get(api_key)

    def _check_open(self) -> None:
        if self.closed:
            raise BrokerConnectionError("connection closed by the broker", self.broker_label)

    async def request(self, api: int, body: Mapping[str, Any], version: int) -> Any:
        self._check_open()
        self.requests.append((api, version))
        if not self.session.allows(api):
            self.closed = True
            self._check_open()
        response = self.session.handle(api, version, SimpleNamespace(**body))
        if self.session.failed and response.get("error_code") == 0:
            self.closed = True
        return response

    async def send_raw_frame(self, payload: bytes) -> None:
        self._check_open()
        if not self.session.awaiting_raw_tokens:
            self.closed = True
            self._check_open()
        self.pending = self.session.raw_token(payload)
        if self.pending is None:
            self.closed = True

    async def receive_raw_frame(self) -> bytes:
        self._check_open()
        assert self.pending is not None
        data, self.pending = self.pending, None
        return data


MECHANISMS = ["PLAIN", "SCRAM-SHA-256", "SCRAM-SHA-512"]


@pytest.mark.parametrize("mechanism", MECHANISMS)
@pytest.mark.parametrize(
    ("apis", "flow"), [(NEW_BROKER, SaslFlow(1, 2)), (OLD_BROKER, SaslFlow(0, None))]
)
async def test_success(
    mechanism: str, apis: Mapping[int, tuple[int, int]], flow: SaslFlow
) -> None:
    transport = SessionTransport(SaslServerConfig(users=USERS, session_lifetime_ms=5000), apis)
    result = await authenticate(transport, SaslConfig(mechanism, "alice", PASSWORD))
    lifetime = 5000 if flow.authenticate_version else 0
    assert result == SaslResult(mechanism, flow, lifetime)
    assert transport.session.authenticated and transport.session.principal == "alice"


async def test_v0_only_broker_with_new_api_table() -> None:
    transport = SessionTransport(SaslServerConfig(users=USERS, v0_only=True), NEW_BROKER)
    result = await authenticate(transport, SaslConfig("SCRAM-SHA-256", "alice", PASSWORD))
    assert result.flow == SaslFlow(0, None)
    assert transport.requests == [(17, 0)]


@pytest.mark.parametrize("mechanism", MECHANISMS)
@pytest.mark.parametrize("apis", [NEW_BROKER, OLD_BROKER], ids=["v1", "v0"])
async def test_wrong_password(
    mechanism: str, apis: Mapping[int, tuple[int, int]], caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.DEBUG)
    wrong = "wrong-" + PASSWORD
    transport = SessionTransport(SaslServerConfig(users=USERS), apis)
    config = SaslConfig(mechanism, "alice", wrong)
    with pytest.raises(AuthenticationError) as info:
        await authenticate(transport, config)
    text = str(info.value)
    assert type(info.value) is AuthenticationError
    assert text.startswith("broker node 1 (127.0.0.1:9092): SASL ")
    assert "'alice'" in text
    if apis is NEW_BROKER:
        assert "SASL_AUTHENTICATION_FAILED (58)" in text
    else:
        assert "no error message" in text
    for secret in (wrong, PASSWORD):
        assert secret not in text and secret not in repr(info.value)
        assert secret not in caplog.text and secret not in repr(config)
    assert base64.b64encode(wrong.encode()).decode() not in text


async def test_unknown_mechanism_lists_enabled() -> None:
    server = SaslServerConfig(users=USERS, mechanisms=("SCRAM-SHA-512", "PLAIN"))
    transport = SessionTransport(server, NEW_BROKER)
    with pytest.raises(UnsupportedSaslMechanismError) as info:
        await authenticate(transport, SaslConfig("SCRAM-SHA-256", "alice", PASSWORD))
    assert info.value.enabled_mechanisms == ("SCRAM-SHA-512", "PLAIN")
    assert "it enables: SCRAM-SHA-512, PLAIN" in str(info.value)


class TamperedScram(ScramServer):
    """A broker that answers with a server signature that is off by one bit."""

    def evaluate_response(self, response: bytes) -> bytes:
        answer = super().evaluate_response(response)
        if answer.startswith(b"v="):
            signature = bytearray(base64.b64decode(answer[2:]))
            signature[-1] ^= 0x01
            return b"v=" + base64.b64encode(bytes(signature))
        return answer


@pytest.mark.parametrize("apis", [NEW_BROKER, OLD_BROKER], ids=["v1", "v0"])
async def test_server_signature_mismatch(apis: Mapping[int, tuple[int, int]]) -> None:
    store = SaslServerConfig(users=USERS).users

    def factory(mechanism: str) -> SaslServerMechanism:
        return TamperedScram(mechanism, store.scram[mechanism])

    server = SaslServerConfig(users=store, mechanism_factory=factory)
    transport = SessionTransport(server, apis)
    with pytest.raises(AuthenticationError, match="server signature does not match") as info:
        await authenticate(transport, SaslConfig("SCRAM-SHA-256", "alice", PASSWORD))
    assert PASSWORD not in str(info.value)


async def test_oauthbearer_async_provider_and_refusal() -> None:
    calls: list[int] = []

    async def provider() -> str:
        calls.append(1)
        await asyncio.sleep(0)
        return "good.jwt.sig" if len(calls) == 1 else "revoked.jwt.sig"

    server = SaslServerConfig(
        users={},
        mechanisms=("OAUTHBEARER",),
        token_validator=lambda token, ext: "svc" if token == "good.jwt.sig" else None,
    )
    config = SaslConfig("OAUTHBEARER", token_provider=provider)
    result = await authenticate(SessionTransport(server, NEW_BROKER), config)
    assert result.mechanism == "OAUTHBEARER"
    with pytest.raises(AuthenticationError, match="invalid_token") as info:
        await authenticate(SessionTransport(server, NEW_BROKER), config)
    assert "revoked.jwt" not in str(info.value)
    with pytest.raises(AuthenticationError, match="no error message"):
        await authenticate(SessionTransport(server, OLD_BROKER), config)


async def test_token_provider_failures() -> None:
    def broken() -> str:
        raise RuntimeError("vault unreachable")

    server = SaslServerConfig(users=USERS)
    with pytest.raises(AuthenticationError, match="token provider raised RuntimeError"):
        await authenticate(
            SessionTransport(server, NEW_BROKER),
            SaslConfig("OAUTHBEARER", token_provider=broken),
        )
    with pytest.raises(AuthenticationError, match="returned int"):
        await authenticate(
            SessionTransport(server, NEW_BROKER),
            SaslConfig("OAUTHBEARER", token_provider=lambda: 42),  # type: ignore[arg-type,return-value]
        )
    with pytest.raises(AuthenticationError, match="b64token"):
        await authenticate(
            SessionTransport(server, NEW_BROKER),
            SaslConfig("OAUTHBEARER", token_provider=lambda: "has spaces"),
        )


async def test_broker_without_sasl() -> None:
    transport = SessionTransport(SaslServerConfig(users=USERS), {18: (0, 4)})
    with pytest.raises(AuthenticationError, match="does not offer SaslHandshake"):
        await authenticate(transport, SaslConfig("PLAIN", "alice", PASSWORD))
    assert transport.requests == []
