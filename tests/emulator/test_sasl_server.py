"""The emulated broker's SASL session, driven by kclient's own client mechanisms."""

from __future__ import annotations

from types import SimpleNamespace

import pytest

from kclient.emulator.sasl import SaslServerConfig, SaslServerSession
from kclient.errors import ConfigError
from kclient.sasl import SaslConfig

USERS = {"alice": "alice-secret-pw"}
CONFIG = SaslServerConfig(users=USERS)


def handshake(session: SaslServerSession, mechanism: str, version: int = 1) -> dict[str, object]:
    return session.handle(17, version, SimpleNamespace(mechanism=mechanism))


def authenticate(session: SaslServerSession, data: bytes, version: int = 2) -> dict[str, object]:
    return session.handle(36, version, SimpleNamespace(auth_bytes=data))


@pytest.mark.parametrize("mechanism", ["PLAIN", "SCRAM-SHA-256", "SCRAM-SHA-512"])
def test_v1_flow_succeeds(mechanism: str) -> None:
    session = SaslServerSession(SaslServerConfig(users=USERS, session_lifetime_ms=60_000))
    assert session.allows(18) and session.allows(17) and not session.allows(3)
    response = handshake(session, mechanism)
    assert response == {
        "error_code": 0,
        "mechanisms": ["PLAIN", "SCRAM-SHA-256", "SCRAM-SHA-512"],
    }
    assert not session.awaiting_raw_tokens
    client = SaslConfig(mechanism, "alice", USERS["alice"]).create_client()
    message: bytes | None = client.initial_response()
    while message is not None:
        answer = authenticate(session, message)
        assert answer["error_code"] == 0, answer
        assert isinstance(answer["auth_bytes"], bytes)
        message = client.evaluate_challenge(answer["auth_bytes"])
    assert client.complete and session.authenticated and session.principal == "alice"
    assert answer["session_lifetime_ms"] == 60_000
    assert session.allows(3) and not session.failed


@pytest.mark.parametrize("mechanism", ["PLAIN", "SCRAM-SHA-256", "SCRAM-SHA-512"])
def test_v0_raw_token_flow(mechanism: str) -> None:
    session = SaslServerSession(SaslServerConfig(users=USERS, v0_only=True))
    assert handshake(session, mechanism, version=0)["error_code"] == 0
    assert session.awaiting_raw_tokens and not session.allows(18)
    client = SaslConfig(mechanism, "alice", USERS["alice"]).create_client()
    message: bytes | None = client.initial_response()
    while message is not None:
        token = session.raw_token(message)
        assert token is not None
        message = client.evaluate_challenge(token)
    assert session.authenticated and not session.awaiting_raw_tokens and session.allows(3)


def test_wrong_password_v1_gives_error_58_and_closes() -> None:
    session = SaslServerSession(CONFIG)
    handshake(session, "PLAIN")
    client = SaslConfig("PLAIN", "alice", "not-the-password").create_client()
    answer = authenticate(session, client.initial_response(), version=0)
    assert answer["error_code"] == 58
    assert "Invalid username or password" in str(answer["error_message"])
    assert "session_lifetime_ms" not in answer
    assert session.failed and not session.authenticated and not session.allows(3)


def test_wrong_password_v0_closes() -> None:
    session = SaslServerSession(CONFIG)
    handshake(session, "SCRAM-SHA-256", version=0)
    client = SaslConfig("SCRAM-SHA-256", "alice", "nope-nope").create_client()
    first = session.raw_token(client.initial_response())
    assert first is not None
    final = client.evaluate_challenge(first)
    assert final is not None
    assert session.raw_token(final) is None
    assert session.failed


def test_unknown_mechanism_lists_enabled_ones() -> None:
    session = SaslServerSession(SaslServerConfig(users=USERS, mechanisms=("SCRAM-SHA-512",)))
    assert handshake(session, "PLAIN") == {"error_code": 33, "mechanisms": ["SCRAM-SHA-512"]}
    assert session.failed


def test_illegal_sequences() -> None:
    session = SaslServerSession(CONFIG)
    answer = authenticate(session, b"\x00alice\x00x")
    assert answer["error_code"] == 34 and session.failed
    session = SaslServerSession(CONFIG)
    handshake(session, "PLAIN")
    assert handshake(session, "PLAIN")["error_code"] == 34
    session = SaslServerSession(CONFIG)
    handshake(session, "PLAIN", version=0)
    assert authenticate(session, b"x")["error_code"] == 34
    session = SaslServerSession(CONFIG)
    assert session.raw_token(b"x") is None and session.failed
    with pytest.raises(ValueError):
        SaslServerSession(CONFIG).handle(3, 0, SimpleNamespace())


def test_v0_only_mode() -> None:
    config = SaslServerConfig(users=USERS, v0_only=True)
    session = SaslServerSession(config)
    assert handshake(session, "PLAIN", version=1)["error_code"] == 35
    assert session.failed
    apis = {17: (0, 1), 36: (0, 2), 18: (0, 4)}
    assert config.restrict(apis) == {17: (0, 0), 18: (0, 4)}
    assert CONFIG.restrict(apis) == apis


def test_config_rules_and_repr() -> None:
    assert "alice-secret-pw" not in repr(CONFIG) and "alice" in repr(CONFIG)
    with pytest.raises(ConfigError, match="cannot serve"):
        SaslServerConfig(users=USERS, mechanisms=("GSSAPI",))
    with pytest.raises(ConfigError, match="token_validator"):
        SaslServerConfig(users=USERS, mechanisms=("OAUTHBEARER",))
    with pytest.raises(ConfigError, match="at least one"):
        SaslServerConfig(users=USERS, mechanisms=())


def test_oauthbearer_session() -> None:
    config = SaslServerConfig(
        users={},
        mechanisms=("OAUTHBEARER",),
        token_validator=lambda token, ext: "svc" if token == "tok.en" else None,
    )
    session = SaslServerSession(config)
    handshake(session, "OAUTHBEARER")
    client = SaslConfig("OAUTHBEARER", token_provider=lambda: "x").create_client("bad.tok")
    answer = authenticate(session, client.initial_response())
    assert answer["error_code"] == 0 and answer["auth_bytes"]
    ack = client.evaluate_challenge(answer["auth_bytes"])  # type: ignore[arg-type]
    assert ack == b"\x01"
    final = authenticate(session, ack)
    assert final["error_code"] == 58 and session.failed
