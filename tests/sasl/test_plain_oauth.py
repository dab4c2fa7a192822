"""PLAIN and OAUTHBEARER state machines, client and server."""

from __future__ import annotations

import json
from collections.abc import Mapping

import pytest

from kclient.errors import AuthenticationError, ConfigError
from kclient.sasl import CredentialStore, OAuthBearerClient, OAuthBearerServer, PlainClient

STORE = CredentialStore.from_passwords({"alice": "alice-pw", "bob": "bob-pw"})


def test_plain_message_and_success() -> None:
    client = PlainClient("alice", "alice-pw")
    message = client.initial_response()
    assert message == b"\x00alice\x00alice-pw"
    server = STORE.server_mechanism("PLAIN")
    assert server.evaluate_response(message) == b""
    assert server.complete and server.authorization_id == "alice"
    assert client.evaluate_challenge(b"") is None and client.complete
    assert "alice-pw" not in repr(client)


@pytest.mark.parametrize(
    ("message", "reason"),
    [
        (b"\x00alice\x00wrong", "Invalid username or password"),
        (b"\x00carol\x00alice-pw", "Invalid username or password"),
        (b"bob\x00alice\x00alice-pw", "authorization id"),
        (b"\x00alice", "expected authzid"),
        (b"\x00\x00pw", "username not specified"),
        (b"\x00alice\x00", "password not specified"),
        (b"\x00\xff\x00pw", "not UTF-8"),
    ],
)
def test_plain_server_refusals(message: bytes, reason: str) -> None:
    server = STORE.server_mechanism("PLAIN")
    with pytest.raises(AuthenticationError, match=reason):
        server.evaluate_response(message)
    assert not server.complete and server.authorization_id is None
    with pytest.raises(AuthenticationError):
        server.evaluate_response(b"\x00alice\x00alice-pw")


def test_plain_client_rules() -> None:
    with pytest.raises(ConfigError):
        PlainClient("", "pw")
    with pytest.raises(ConfigError):
        PlainClient("a\x00b", "pw")
    client = PlainClient("alice", "pw")
    with pytest.raises(AuthenticationError, match="unexpected"):
        client.evaluate_challenge(b"")
    client.initial_response()
    with pytest.raises(AuthenticationError, match="non-empty"):
        client.evaluate_challenge(b"surprise")


def test_store_keeps_no_password() -> None:
    assert STORE.users == ("alice", "bob")
    assert "alice-pw" not in repr(STORE)
    assert STORE.verify_plain("bob", "bob-pw") and not STORE.verify_plain("bob", "alice-pw")
    with pytest.raises(ConfigError):
        STORE.server_mechanism("GSSAPI")
    with pytest.raises(ConfigError):
        CredentialStore.from_passwords({"": "x"})


def _validator(token: str, extensions: Mapping[str, str]) -> str | None:
    return "svc" if token == "good.token.sig" and extensions.get("tenant") == "t1" else None


def test_oauthbearer_message_format_and_success() -> None:
    client = OAuthBearerClient("good.token.sig", {"tenant": "t1"})
    message = client.initial_response()
    assert message == b"n,,\x01auth=Bearer good.token.sig\x01tenant=t1\x01\x01"
    server = OAuthBearerServer(_validator)
    assert server.evaluate_response(message) == b""
    assert server.authorization_id == "svc"
    assert client.evaluate_challenge(b"") is None and client.complete
    assert "good.token" not in repr(client)


def test_oauthbearer_refused_token_error_dance() -> None:
    client = OAuthBearerClient("bad.token.sig", {"tenant": "t1"})
    server = OAuthBearerServer(_validator)
    challenge = server.evaluate_response(client.initial_response())
    assert json.loads(challenge) == {"status": "invalid_token"}
    ack = client.evaluate_challenge(challenge)
    assert ack == b"\x01"
    assert client.failure_detail == "OAUTHBEARER status invalid_token"
    assert not client.complete
    with pytest.raises(AuthenticationError, match="invalid_token"):
        server.evaluate_response(ack)


@pytest.mark.parametrize(
    "message",
    [
        b"x,,\x01auth=Bearer t\x01\x01",
        b"n,,\x01auth=Basic t\x01\x01",
        b"n,,\x01auth=Bearer t\x01",
        b"n,,auth=Bearer t\x01\x01",
        b"n,,\x01auth=Bearer t\x01auth=Bearer u\x01\x01",
    ],
)
def test_oauthbearer_server_refuses_malformed(message: bytes) -> None:
    with pytest.raises(AuthenticationError, match="Invalid OAUTHBEARER"):
        OAuthBearerServer(_validator).evaluate_response(message)


def test_oauthbearer_client_rules() -> None:
    with pytest.raises(ConfigError, match="b64token"):
        OAuthBearerClient("has space")
    with pytest.raises(ConfigError, match="letters only"):
        OAuthBearerClient("tok", {"bad-key": "v"})
    with pytest.raises(ConfigError, match="reserved"):
        OAuthBearerClient("tok", {"auth": "v"})
    with pytest.raises(ConfigError, match="does not allow"):
        OAuthBearerClient("tok", {"k": "\x01"})
    client = OAuthBearerClient("tok")
    client.initial_response()
    assert client.evaluate_challenge(b"not json") == b"\x01"
    assert client.failure_detail is not None and "unreadable" in client.failure_detail


@pytest.mark.parametrize("challenge", [
    b"[" * 100_000,                       # nested too deeply (was RecursionError)
    b'{"status": ' + b"9" * 5000 + b"}",  # an integer Python will not convert
    b"\xff\xfe",                          # not UTF-8
])
def test_oauthbearer_hostile_error_document_is_unreadable_not_a_crash(challenge: bytes) -> None:
    client = OAuthBearerClient("tok")
    client.initial_response()
    assert client.evaluate_challenge(challenge) == b"\x01"
    assert client.failure_detail == "server sent an unreadable OAUTHBEARER error document"
