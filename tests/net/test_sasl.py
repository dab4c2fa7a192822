"""SASL over real sockets: kclient's Connection and Client against the emulated broker,
and librdkafka (confluent-kafka) against the emulator's server side."""

from __future__ import annotations

import asyncio
import base64
import json
import logging
import ssl
import time
from collections.abc import AsyncIterator, Iterator
from typing import Any

import pytest

from kclient.emulator import EmulatedBroker
from kclient.emulator.broker import BrokerInfo
from kclient.emulator.sasl import SaslServerConfig
from kclient.errors import (
    AuthenticationError,
    BrokerConnectionError,
    UnsupportedSaslMechanismError,
)
from kclient.negotiation import record_to_json
from kclient.net import Client, Connection
from kclient.net.client import _metadata_body
from kclient.sasl import SaslConfig, SaslServerMechanism, ScramServer
from tests.extras import needs_trustme

PASSWORD = "pa55-w0rd-that-must-never-leak"
WRONG = "wr0ng-pa55-that-must-never-leak"
USERS = {"alice": PASSWORD}
MECHANISMS = ["PLAIN", "SCRAM-SHA-256", "SCRAM-SHA-512"]
SERVER = SaslServerConfig(users=USERS)
SERVER_V0 = SaslServerConfig(users=USERS, v0_only=True)

pytestmark = pytest.mark.timeout(60)


@pytest.fixture(scope="module")
def tls_contexts() -> tuple[ssl.SSLContext, ssl.SSLContext]:
    trustme = needs_trustme()
    ca = trustme.CA()
    cert = ca.issue_cert("127.0.0.1", "localhost")
    server = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
    cert.configure_cert(server)
    client = ssl.create_default_context()
    ca.configure_trust(client)
    return server, client


async def _metadata(conn: Connection) -> Any:
    version = conn.version_for("Metadata")
    return await conn.request("Metadata", _metadata_body(), version,
                              drop_unsupported=("allow_auto_topic_creation",))


@pytest.mark.parametrize("mechanism", MECHANISMS)
@pytest.mark.parametrize(
    ("release", "server", "sasl_apis"),
    [
        ("3.9", SERVER, [(17, 1), (36, 2)]),
        ("1.0", SERVER, [(17, 1), (36, 0)]),
        ("3.9", SERVER_V0, [(17, 0)]),
        ("0.10.2", SERVER, [(17, 0)]),
    ],
    ids=["v1-3.9", "v1-1.0", "v0-only-3.9", "v0-0.10.2"],
)
@pytest.mark.parametrize("use_tls", [False, True], ids=["plaintext", "tls"])
async def test_authenticates_then_metadata(
    mechanism: str,
    release: str,
    server: SaslServerConfig,
    sasl_apis: list[tuple[int, int]],
    use_tls: bool,
    tls_contexts: tuple[ssl.SSLContext, ssl.SSLContext],
) -> None:
    server_ctx, client_ctx = tls_contexts
    async with EmulatedBroker(
        1, release, sasl=server, ssl=server_ctx if use_tls else None
    ) as broker:
        conn = Connection(
            "127.0.0.1", broker.port, sasl=SaslConfig(mechanism, "alice", PASSWORD),
            tls=client_ctx if use_tls else None, request_timeout=5,
        )
        async with conn:
            response = await _metadata(conn)
            assert [int(b.node_id) for b in response.brokers] == [1]
        sasl_requests = [item for item in broker.received if item[0] in (17, 36)]
        assert sasl_requests[0] == sasl_apis[0]
        assert sorted(set(sasl_requests)) == sorted(set(sasl_apis))


async def test_metadata_refused_before_authentication() -> None:
    async with EmulatedBroker(1, "3.9", sasl=SERVER) as broker:
        conn = Connection("127.0.0.1", broker.port, request_timeout=5)
        async with conn:
            assert conn.versions.apis  # ApiVersions is answered before authentication
            with pytest.raises(BrokerConnectionError, match="closed"):
                await _metadata(conn)
        assert (3, conn.version_for("Metadata")) in broker.received


@pytest.mark.parametrize("mechanism", MECHANISMS)
@pytest.mark.parametrize("server", [SERVER, SERVER_V0], ids=["v1", "v0"])
async def test_wrong_password_is_a_clean_authentication_error(
    mechanism: str, server: SaslServerConfig, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.DEBUG)
    config = SaslConfig(mechanism, "alice", WRONG)
    async with EmulatedBroker(1, "3.9", sasl=server) as broker:
        conn = Connection("127.0.0.1", broker.port, sasl=config, request_timeout=5)
        with pytest.raises(AuthenticationError) as info:
            await conn.connect()
        assert conn.closed
        assert conn.versions.apis  # the negotiated versions survive the failure
    text = str(info.value)
    assert text.startswith(f"broker bootstrap 127.0.0.1:{broker.port}: SASL {mechanism}")
    if server is SERVER:
        assert "SASL_AUTHENTICATION_FAILED (58)" in text
    for secret in (WRONG, PASSWORD, base64.b64encode(WRONG.encode()).decode()):
        assert secret not in text and secret not in repr(info.value)
        assert secret not in caplog.text and secret not in repr(config)


async def test_unknown_mechanism_lists_broker_mechanisms() -> None:
    server = SaslServerConfig(users=USERS, mechanisms=("SCRAM-SHA-512",))
    async with EmulatedBroker(1, "3.9", sasl=server) as broker:
        conn = Connection("127.0.0.1", broker.port, sasl=SaslConfig("PLAIN", "alice", PASSWORD))
        with pytest.raises(UnsupportedSaslMechanismError, match="it enables: SCRAM-SHA-512") as e:
            await conn.connect()
    assert e.value.enabled_mechanisms == ("SCRAM-SHA-512",)


class _TamperedScram(ScramServer):
    def evaluate_response(self, response: bytes) -> bytes:
        answer = super().evaluate_response(response)
        if answer.startswith(b"v="):
            signature = bytearray(base64.b64decode(answer[2:]))
            signature[0] ^= 0x80
            answer = b"v=" + base64.b64encode(bytes(signature))
        return answer


class _HostileIterations(ScramServer):
    count = "4096"

    def evaluate_response(self, response: bytes) -> bytes:
        answer = super().evaluate_response(response)
        if answer.startswith(b"r="):
            head, _, _ = answer.rpartition(b",i=")
            answer = head + b",i=" + self.count.encode("utf-8")
        return answer


@pytest.mark.parametrize(("count", "reason"), [
    ("\u00b2", "non-numeric iteration count"),
    ("9" * 5000, "5000-digit iteration count, above the limit of 16384"),
    ("16385", "16385 iterations, above the limit of 16384"),
])
async def test_hostile_iteration_count_is_an_authentication_error(count: str,
                                                                  reason: str) -> None:
    store = SERVER.users

    def factory(mechanism: str) -> SaslServerMechanism:
        server = _HostileIterations(mechanism, store.scram[mechanism])
        server.count = count
        return server

    server = SaslServerConfig(users=store, mechanism_factory=factory)
    async with EmulatedBroker(1, "3.9", sasl=server) as broker:
        conn = Connection(
            "127.0.0.1", broker.port, sasl=SaslConfig("SCRAM-SHA-256", "alice", PASSWORD),
            request_timeout=10,
        )
        started = time.monotonic()
        with pytest.raises(AuthenticationError, match=reason):
            await conn.connect()
        assert time.monotonic() - started < 10
        assert conn.closed


@pytest.mark.parametrize("v0_only", [False, True], ids=["v1", "v0"])
async def test_server_signature_mismatch(v0_only: bool) -> None:
    store = SERVER.users

    def factory(mechanism: str) -> SaslServerMechanism:
        return _TamperedScram(mechanism, store.scram[mechanism])

    server = SaslServerConfig(users=store, mechanism_factory=factory, v0_only=v0_only)
    async with EmulatedBroker(1, "3.9", sasl=server) as broker:
        conn = Connection(
            "127.0.0.1", broker.port, sasl=SaslConfig("SCRAM-SHA-512", "alice", PASSWORD)
        )
        with pytest.raises(AuthenticationError, match="server signature does not match"):
            await conn.connect()
        assert conn.closed


@pytest.mark.parametrize(
    ("mechanism", "drop_after", "v0_only"),
    [
        ("PLAIN", 2, False),  # closes after answering SaslHandshake
        ("SCRAM-SHA-256", 3, False),  # closes after the first SaslAuthenticate
        ("SCRAM-SHA-256", 2, True),  # closes after SaslHandshake v0, before any token
    ],
)
async def test_broker_closing_mid_exchange(mechanism: str, drop_after: int, v0_only: bool) -> None:
    server = SERVER_V0 if v0_only else SERVER
    async with EmulatedBroker(
        1, "3.9", sasl=server, behaviour=f"drop-after:{drop_after}"
    ) as broker:
        conn = Connection(
            "127.0.0.1", broker.port, sasl=SaslConfig(mechanism, "alice", PASSWORD),
            request_timeout=5,
        )
        with pytest.raises(AuthenticationError, match="during the exchange") as info:
            await conn.connect()
    assert PASSWORD not in str(info.value)


async def test_oauthbearer_over_the_wire() -> None:
    server = SaslServerConfig(
        users={}, mechanisms=("OAUTHBEARER",),
        token_validator=lambda token, ext: "svc" if token == "jwt.ok.sig" else None,
    )
    async with EmulatedBroker(1, "3.9", sasl=server) as broker:
        good = SaslConfig("OAUTHBEARER", token_provider=lambda: "jwt.ok.sig")
        async with Connection("127.0.0.1", broker.port, sasl=good) as conn:
            await _metadata(conn)
        bad = SaslConfig("OAUTHBEARER", token_provider=lambda: "jwt.revoked.sig")
        with pytest.raises(AuthenticationError, match="invalid_token") as info:
            await Connection("127.0.0.1", broker.port, sasl=bad).connect()
    assert "jwt.revoked" not in str(info.value)


# -- the cluster client -------------------------------------------------------------------


@pytest.fixture
async def two_brokers() -> AsyncIterator[tuple[EmulatedBroker, EmulatedBroker]]:
    """Broker 1 knows alice's password; broker 2 has another one (a mis-synced credential)."""
    listed: list[BrokerInfo] = []
    one = EmulatedBroker(1, "3.9", sasl=SERVER, peers=lambda: listed)
    two = EmulatedBroker(
        2, "3.9", sasl=SaslServerConfig(users={"alice": "a-different-one"}), peers=lambda: listed
    )
    await one.start()
    await two.start()
    listed.extend([one.info, two.info])
    try:
        yield one, two
    finally:
        await one.stop()
        await two.stop()


async def test_client_records_authentication_failure_without_tight_loop(
    two_brokers: tuple[EmulatedBroker, EmulatedBroker], caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.DEBUG)
    one, two = two_brokers
    config = SaslConfig("SCRAM-SHA-256", "alice", PASSWORD)
    async with Client(
        f"127.0.0.1:{one.port}", sasl=config, request_timeout=5, metadata_refresh_interval=None,
        reconnect_backoff=0.01, reconnect_backoff_max=0.05,
    ) as client:
        assert two.connections_accepted == 1
        brokers = {b.node_id: b for b in client.brokers}
        assert brokers[1].error is None and brokers[1].apis
        assert brokers[2].error is not None
        assert brokers[2].error.startswith("authentication failed:")
        assert brokers[2].apis  # the negotiated ApiVersions data is kept
        accepted = two.connections_accepted
        started = time.monotonic()
        await asyncio.sleep(1.0)
        window = time.monotonic() - started
        # With a 0.01 s reconnect backoff a retry loop would make dozens of attempts.
        assert two.connections_accepted - accepted == 0, window
        records = [record_to_json(r) for r in client.snapshot("sasl-test")]
    dumped = json.dumps(records)
    assert "authentication failed" in dumped
    for secret in (PASSWORD, "a-different-one"):
        assert secret not in dumped and secret not in caplog.text


async def test_client_start_with_wrong_password_fails_cleanly() -> None:
    async with EmulatedBroker(1, "3.9", sasl=SERVER) as broker:
        client = Client(
            f"127.0.0.1:{broker.port}", sasl=SaslConfig("PLAIN", "alice", WRONG),
            request_timeout=5, metadata_refresh_interval=None,
        )
        with pytest.raises(AuthenticationError) as info:
            await client.start()
        assert WRONG not in str(info.value)
        assert broker.connections_accepted == 1


# -- librdkafka against the emulator's server side ------------------------------------------


def _admin_config(port: int, mechanism: str, password: str) -> dict[str, Any]:
    return {
        "bootstrap.servers": f"127.0.0.1:{port}",
        "security.protocol": "SASL_PLAINTEXT",
        "sasl.mechanism": mechanism,
        "sasl.username": "alice",
        "sasl.password": password,
        "socket.timeout.ms": 5000,
        "reconnect.backoff.ms": 200,
        "reconnect.backoff.max.ms": 1000,
    }


@pytest.fixture
def no_librdkafka_leak() -> Iterator[None]:
    pytest.importorskip("confluent_kafka")
    yield


@pytest.mark.integration
@pytest.mark.usefixtures("no_librdkafka_leak")
@pytest.mark.parametrize("mechanism", MECHANISMS)
async def test_librdkafka_authenticates_and_lists_topics(mechanism: str) -> None:
    from confluent_kafka.admin import AdminClient

    async with EmulatedBroker(1, "3.9", sasl=SERVER) as broker:
        admin = AdminClient(_admin_config(broker.port, mechanism, PASSWORD))
        metadata = await asyncio.to_thread(admin.list_topics, timeout=10)
        assert sorted(metadata.brokers) == [1]
        keys = [api for api, _ in broker.received]
        assert 36 in keys and 3 in keys
        # librdkafka opens several connections; on each one that asked for
        # Metadata, SaslAuthenticate came first.
        with_metadata = [[api for api, _ in log] for log in broker.received_by_connection
                         if any(api == 3 for api, _ in log)]
        assert with_metadata
        for log in with_metadata:
            assert 36 in log and log.index(36) < log.index(3), log


@pytest.mark.integration
@pytest.mark.usefixtures("no_librdkafka_leak")
@pytest.mark.parametrize("mechanism", MECHANISMS)
async def test_librdkafka_wrong_password_fails_cleanly(mechanism: str) -> None:
    from confluent_kafka import KafkaError, KafkaException
    from confluent_kafka.admin import AdminClient

    errors: list[Any] = []
    config = _admin_config(0, mechanism, WRONG)
    async with EmulatedBroker(1, "3.9", sasl=SERVER) as broker:
        config["bootstrap.servers"] = f"127.0.0.1:{broker.port}"
        config["error_cb"] = errors.append
        admin = AdminClient(config)
        started = time.monotonic()
        # librdkafka connects at once and delivers error_cb only while the
        # application polls: the refusal must be reported promptly ...
        while not errors and time.monotonic() - started < 8:
            await asyncio.to_thread(admin.poll, 0.1)
        assert errors, "librdkafka reported no error within 8 s of the refused login"
        # ... and a metadata call still fails (within its timeout), never reaching Metadata.
        with pytest.raises(KafkaException):
            await asyncio.to_thread(admin.list_topics, timeout=1)
        assert time.monotonic() - started < 10
        assert not any(api == 3 for api, _ in broker.received)
    codes = {error.code() for error in errors}
    assert KafkaError._AUTHENTICATION in codes, [str(e) for e in errors]


async def test_a_sasl_listener_reached_without_sasl_is_named_as_such() -> None:
    """ApiVersions answered, Metadata closed: the error says SASL, not 'closed'."""
    from kclient.commands.common import CLI_VOCABULARY
    from kclient.errors import BrokerConnectionError

    async with EmulatedBroker(1, "3.9", sasl=SERVER) as broker:
        with pytest.raises(BrokerConnectionError) as info:
            await Client(f"127.0.0.1:{broker.port}", metadata_refresh_interval=None).start()
        assert str(info.value).endswith(
            "the broker answered ApiVersions, then closed the connection on Metadata: that "
            "is what a listener that requires SASL authentication does; connect with SASL "
            "(sasl)")
        assert info.value.options == ("sasl",)
        assert CLI_VOCABULARY.text(info.value).endswith(
            "connect with SASL (--security-protocol SASL_PLAINTEXT or SASL_SSL, with "
            "--sasl-mechanism)")
