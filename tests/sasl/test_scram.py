"""SCRAM client and server: RFC test vectors, validation of every server message, round trips."""

from __future__ import annotations

import base64

import pytest

from kclient.errors import AuthenticationError, ConfigError
from kclient.sasl import (
    SCRAM_SHA_256,
    SCRAM_SHA_512,
    ScramClient,
    ScramCredential,
    ScramServer,
    escape_saslname,
    unescape_saslname,
)

# RFC 7677 section 3.
RFC7677_SERVER_FIRST = (
    b"r=rOprNGfwEbeRWgbNEkqO%hvYDpWUa2RaTCAfuxFIlj)hNlF$k0,s=W22ZaJ0SNY7soEsUEjb6gQ==,i=4096"
)
RFC7677_CLIENT_FINAL = (
    b"c=biws,r=rOprNGfwEbeRWgbNEkqO%hvYDpWUa2RaTCAfuxFIlj)hNlF$k0,"
    b"p=dHzbZapWIk4jUhN+Ute9ytag9zjfMHgsqmmiz7AndVQ="
)
RFC7677_SERVER_FINAL = b"v=6rriTRBi23WpRR/wtup+mMhUZUn/dB5nLTJRsjl95G4="


def rfc7677_client() -> ScramClient:
    return ScramClient(SCRAM_SHA_256, "user", "pencil", nonce="rOprNGfwEbeRWgbNEkqO")


def test_rfc7677_client_messages_match_exactly() -> None:
    client = rfc7677_client()
    assert client.initial_response() == b"n,,n=user,r=rOprNGfwEbeRWgbNEkqO"
    assert client.evaluate_challenge(RFC7677_SERVER_FIRST) == RFC7677_CLIENT_FINAL
    assert not client.complete
    assert client.evaluate_challenge(RFC7677_SERVER_FINAL) is None
    assert client.complete


def test_rfc7677_server_reproduces_server_signature() -> None:
    salt = base64.b64decode("W22ZaJ0SNY7soEsUEjb6gQ==")
    credential = ScramCredential.from_password(SCRAM_SHA_256, "pencil", salt=salt, iterations=4096)
    server = ScramServer(
        SCRAM_SHA_256, {"user": credential}, nonce="%hvYDpWUa2RaTCAfuxFIlj)hNlF$k0"
    )
    assert server.evaluate_response(b"n,,n=user,r=rOprNGfwEbeRWgbNEkqO") == RFC7677_SERVER_FIRST
    assert server.evaluate_response(RFC7677_CLIENT_FINAL) == RFC7677_SERVER_FINAL
    assert server.complete and server.authorization_id == "user"


def test_rfc5802_sha1_example() -> None:
    client = ScramClient(
        "SCRAM-SHA-1", "user", "pencil", nonce="fyko+d2lbbFgONRv9qkxdawL", hash_name="sha1"
    )
    assert client.initial_response() == b"n,,n=user,r=fyko+d2lbbFgONRv9qkxdawL"
    final = client.evaluate_challenge(
        b"r=fyko+d2lbbFgONRv9qkxdawL3rfcNHYJY1ZVvWVs7j,s=QSXCR+Q6sek8bf92,i=4096"
    )
    assert final == (
        b"c=biws,r=fyko+d2lbbFgONRv9qkxdawL3rfcNHYJY1ZVvWVs7j,p=v0X8v3Bz2T0CJGbJQyF0X+HI4Ts="
    )
    assert client.evaluate_challenge(b"v=rmF9pqV8S7suAoZWja4dJRkFsKQ=") is None
    assert client.complete


def test_tampered_server_signature_is_refused() -> None:
    client = rfc7677_client()
    client.initial_response()
    client.evaluate_challenge(RFC7677_SERVER_FIRST)
    signature = bytearray(base64.b64decode(RFC7677_SERVER_FINAL[2:]))
    signature[0] ^= 1
    with pytest.raises(AuthenticationError, match="server signature does not match"):
        client.evaluate_challenge(b"v=" + base64.b64encode(bytes(signature)))
    assert not client.complete


@pytest.mark.parametrize(
    ("server_first", "reason"),
    [
        (b"r=someoneelse123,s=W22ZaJ0SNY7soEsUEjb6gQ==,i=4096", "does not extend"),
        (b"r=rOprNGfwEbeRWgbNEkqO,s=W22ZaJ0SNY7soEsUEjb6gQ==,i=4096", "does not extend"),
        (b"r=rOprNGfwEbeRWgbNEkqOxyz,s=W22ZaJ0SNY7soEsUEjb6gQ==,i=4095", "below the minimum"),
        (b"r=rOprNGfwEbeRWgbNEkqOxyz,s=W22ZaJ0SNY7soEsUEjb6gQ==,i=99999999", "above the limit"),
        (b"r=rOprNGfwEbeRWgbNEkqOxyz,s=W22ZaJ0SNY7soEsUEjb6gQ==,i=4k", "non-numeric"),
        ("r=rOprNGfwEbeRWgbNEkqOxyz,s=W22ZaJ0SNY7soEsUEjb6gQ==,i=²".encode(), "non-numeric"),
        ("r=rOprNGfwEbeRWgbNEkqOxyz,s=W22ZaJ0SNY7soEsUEjb6gQ==,i=٤٠٩٦".encode(), "non-numeric"),
        (b"r=rOprNGfwEbeRWgbNEkqOxyz,s=W22ZaJ0SNY7soEsUEjb6gQ==,i=" + b"9" * 5000,
         "a 5000-digit iteration count, above the limit of 16384"),
        (b"r=rOprNGfwEbeRWgbNEkqOxyz,s=W22ZaJ0SNY7soEsUEjb6gQ==,i=16385", "above the limit"),
        (b"r=rOprNGfwEbeRWgbNEkqOxyz,s=W22ZaJ0SNY7soEsUEjb6gQ==,i=", "non-numeric"),
        (b"r=rOprNGfwEbeRWgbNEkqOxyz,s=!!!,i=4096", "not valid base64"),
        (b"r=rOprNGfwEbeRWgbNEkqOxyz,s=,i=4096", "empty salt"),
        (b"s=W22ZaJ0SNY7soEsUEjb6gQ==,r=rOprNGfwEbeRWgbNEkqOxyz,i=4096", "r=, s=, i="),
        (b"m=ext,r=rOprNGfwEbeRWgbNEkqOxyz,s=W22ZaJ0SNY7soEsUEjb6gQ==,i=4096", "extension"),
        (b"e=other-error", "refused"),
        (b"garbage", "malformed"),
        (b"\xff\xfe", "UTF-8"),
    ],
)
def test_invalid_server_first_is_refused(server_first: bytes, reason: str) -> None:
    client = rfc7677_client()
    client.initial_response()
    with pytest.raises(AuthenticationError, match=reason) as info:
        client.evaluate_challenge(server_first)
    assert "pencil" not in str(info.value)


def test_server_final_error_and_garbage() -> None:
    client = rfc7677_client()
    client.initial_response()
    client.evaluate_challenge(RFC7677_SERVER_FIRST)
    with pytest.raises(AuthenticationError, match="invalid-proof"):
        client.evaluate_challenge(b"e=invalid-proof")
    assert client.failure_detail == "invalid-proof"
    other = rfc7677_client()
    other.initial_response()
    other.evaluate_challenge(RFC7677_SERVER_FIRST)
    with pytest.raises(AuthenticationError, match="neither v= nor e="):
        other.evaluate_challenge(b"x=1")


def test_messages_out_of_order_are_refused() -> None:
    client = rfc7677_client()
    with pytest.raises(AuthenticationError, match="unexpected"):
        client.evaluate_challenge(RFC7677_SERVER_FIRST)
    client.initial_response()
    with pytest.raises(AuthenticationError, match="already sent"):
        client.initial_response()


def test_saslname_escaping_round_trip() -> None:
    assert escape_saslname("a=b,c") == "a=3Db=2Cc"
    assert unescape_saslname("a=3Db=2Cc") == "a=b,c"
    for bad in ("a=4Eb", "a=", "a,b"):
        with pytest.raises(AuthenticationError):
            unescape_saslname(bad)


@pytest.mark.parametrize("mechanism", [SCRAM_SHA_256, SCRAM_SHA_512])
@pytest.mark.parametrize("username", ["alice", "we=ird,name", "ünïcode"])
def test_client_and_server_round_trip(mechanism: str, username: str) -> None:
    credential = ScramCredential.from_password(mechanism, "s3cret-é")
    server = ScramServer(mechanism, {username: credential})
    client = ScramClient(mechanism, username, "s3cret-é")
    first = client.initial_response()
    assert escape_saslname(username).encode() in first
    final = client.evaluate_challenge(server.evaluate_response(first))
    assert final is not None
    assert client.evaluate_challenge(server.evaluate_response(final)) is None
    assert client.complete and server.complete
    assert server.authorization_id == username


@pytest.mark.parametrize("mechanism", [SCRAM_SHA_256, SCRAM_SHA_512])
def test_wrong_password_fails_at_the_server(mechanism: str) -> None:
    credential = ScramCredential.from_password(mechanism, "right")
    server = ScramServer(mechanism, {"alice": credential})
    client = ScramClient(mechanism, "alice", "wrong-password")
    final = client.evaluate_challenge(server.evaluate_response(client.initial_response()))
    assert final is not None
    with pytest.raises(AuthenticationError, match="invalid credentials") as info:
        server.evaluate_response(final)
    assert "wrong-password" not in str(info.value) and not server.complete


def test_unknown_user_looks_like_a_wrong_password() -> None:
    server = ScramServer(SCRAM_SHA_256, {})
    client = ScramClient(SCRAM_SHA_256, "nobody", "pw")
    server_first = server.evaluate_response(client.initial_response())
    assert server_first.startswith(b"r=") and b",s=" in server_first
    final = client.evaluate_challenge(server_first)
    assert final is not None
    with pytest.raises(AuthenticationError, match="invalid credentials"):
        server.evaluate_response(final)


def test_server_checks_client_messages() -> None:
    credential = ScramCredential.from_password(SCRAM_SHA_256, "pw")
    cases = [
        b"p=tls-unique,,n=alice,r=abc",
        b"x,,n=alice,r=abc",
        b"n,,r=abc,n=alice",
        b"n,a=bob,n=alice,r=abc",
        b"n,,n=,r=abc",
        b"no-header",
    ]
    for message in cases:
        server = ScramServer(SCRAM_SHA_256, {"alice": credential})
        with pytest.raises(AuthenticationError):
            server.evaluate_response(message)
    server = ScramServer(SCRAM_SHA_256, {"alice": credential})
    server.evaluate_response(b"n,a=alice,n=alice,r=abc")
    with pytest.raises(AuthenticationError, match="nonce"):
        server.evaluate_response(b"c=bixhPWFsaWNlLA==,r=abc-wrong,p=AAAA")
    server = ScramServer(SCRAM_SHA_256, {"alice": credential})
    server.evaluate_response(b"n,,n=alice,r=abc")
    with pytest.raises(AuthenticationError, match="channel binding"):
        server.evaluate_response(b"c=eSws,r=abc,p=AAAA")


def test_credential_rules_and_repr() -> None:
    with pytest.raises(ConfigError, match="at least 4096"):
        ScramCredential.from_password(SCRAM_SHA_256, "pw", iterations=1000)
    with pytest.raises(ConfigError, match="unknown SCRAM mechanism"):
        ScramCredential.from_password("SCRAM-MD5", "pw")
    credential = ScramCredential.from_password(SCRAM_SHA_512, "pw", salt=b"salt")
    assert len(credential.stored_key) == 64
    assert "***" in repr(credential) and credential.stored_key.hex() not in repr(credential)
    client = ScramClient(SCRAM_SHA_512, "alice", "hunter2-secret")
    assert "hunter2" not in repr(client)
    with pytest.raises(ConfigError):
        ScramClient(SCRAM_SHA_256, "alice", "pw", nonce="a,b")


@pytest.mark.parametrize("count", ["16384", "0000004096"])
def test_iteration_counts_within_kafkas_bounds_are_accepted(count: str) -> None:
    client = rfc7677_client()
    client.initial_response()
    answer = client.evaluate_challenge(
        f"r=rOprNGfwEbeRWgbNEkqOxyz,s=W22ZaJ0SNY7soEsUEjb6gQ==,i={count}".encode())
    assert answer is not None and answer.startswith(b"c=biws,r=")
