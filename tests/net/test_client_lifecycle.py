"""The client against hostile Metadata, bad options and close() at awkward moments."""

from __future__ import annotations

import asyncio
import inspect
import os
from collections.abc import Callable

import pytest

from kclient.emulator import BrokerInfo, EmulatedBroker, EmulatedCluster
from kclient.errors import (
    ClientClosedError,
    ConfigError,
    FrameTooLargeError,
    KClientError,
    ProtocolError,
    VerdictUnknownError,
)
from kclient.negotiation import BrokerState
from kclient.net import Client, Connection, SyncClient
from kclient.net.defaults import (
    DEFAULT_MAX_BROKERS,
    METADATA_BYTES_PER_BROKER,
    metadata_answer_limit,
)
from kclient.protocol.constants import DEFAULT_MAX_FRAME_SIZE
from tests.net.test_faults import open_sockets
from tests.waiting import until

pytestmark = pytest.mark.timeout(60)


async def test_hostile_metadata_addresses_are_typed_errors_not_dead_tasks() -> None:
    hostile = [
        BrokerInfo(7, "a" * 64 + ".example", 9092),   # a DNS label over 63 characters
        BrokerInfo(8, "h\x00st", 9092),                # NUL inside the host
        BrokerInfo(9, "127.0.0.1", 70000),             # a port no socket can have
        BrokerInfo(10, "127.0.0.1", -1),
    ]
    async with EmulatedCluster(["3.9"]) as cluster:
        cluster.brokers[0].peers = lambda: [*cluster.listed(), *hostile]
        loop = asyncio.get_running_loop()
        started = loop.time()
        async with Client(cluster.bootstrap_servers, metadata_refresh_interval=None,
                          startup_wait=5) as client:
            # No 5 s wait for brokers that can never answer: they are settled at once.
            assert loop.time() - started < 3
            errors = {b.node_id: str(b.error) for b in client.view.unknown_brokers}
            assert set(errors) == {7, 8, 9, 10}
            assert "label of 64 characters" in errors[7]
            assert "control characters" in errors[8]
            assert "port 70000" in errors[9] and "port -1" in errors[10]
            assert all("Metadata lists an invalid address" in e for e in errors.values())
            assert client.view.broker(8).host == "h\\x00st"  # printable in every output
            with pytest.raises(VerdictUnknownError):
                client.version_for("Produce")
            # The good broker is served, and refresh() does not hang on the bad ones.
            assert client.version_for("Produce", broker=1) > 0
            await asyncio.wait_for(client.refresh(), 5)
            assert client.view.broker(1).state is BrokerState.ANSWERED


@pytest.mark.parametrize(("option", "value", "fragment"), [
    ("metadata_refresh_interval", -1, "metadata_refresh_interval must be"),
    ("metadata_refresh_interval", 1e-9, "at least 0.05"),
    ("metadata_refresh_interval", float("nan"), "finite"),
    ("auth_retry_backoff", 0, "auth_retry_backoff must be"),
    ("request_timeout", float("inf"), "request_timeout must be"),
    ("connect_timeout", 0, "connect_timeout must be"),
    ("reconnect_backoff", -0.5, "reconnect_backoff must be"),
    ("max_concurrency", 0, "max_concurrency must be"),
    ("startup_wait", -1, "startup_wait must be"),
])
def test_storm_causing_options_are_rejected_up_front(option: str, value: object,
                                                     fragment: str) -> None:
    with pytest.raises(ConfigError, match=fragment):
        Client("127.0.0.1:9092", **{option: value})  # type: ignore[arg-type]


def test_bootstrap_addresses_share_the_library_rules() -> None:
    assert Client("localhost")._bootstrap == [("localhost", 9092)]  # Kafka's default port
    for bad, fragment in [("h:70000", "1 to 65535"), ("h\x00:1", "control characters"),
                          ("PLAINTEXT://h:1", "scheme"), ("", "empty"),
                          ("x" * 64 + ":1", "label of 64")]:
        with pytest.raises(ConfigError, match=fragment):
            Client(bad)


@pytest.mark.skipif(not os.path.isdir("/proc/self/fd"), reason="needs /proc/self/fd")
async def test_close_during_start_raises_promptly_and_leaks_nothing() -> None:
    async with EmulatedBroker(1, "3.9", behaviour="hang") as silent:
        sockets, tasks = open_sockets(), len(asyncio.all_tasks())
        client = Client(f"127.0.0.1:{silent.port}", request_timeout=30,
                        metadata_refresh_interval=None)
        starting = asyncio.create_task(client.start())
        await until(lambda: any(silent.received_by_connection), "ApiVersions reached the broker")
        loop = asyncio.get_running_loop()
        before = loop.time()
        await client.close()
        with pytest.raises(ClientClosedError, match="close\\(\\) was called while start"):
            await asyncio.wait_for(starting, 2)
        assert loop.time() - before < 2
        await until(lambda: (open_sockets(), len(asyncio.all_tasks())) == (sockets, tasks),
                    "sockets and tasks back to where they were")


async def test_close_after_metadata_during_startup_wait_leaks_nothing() -> None:
    async with EmulatedBroker(9, "3.9", behaviour="hang") as silent, \
            EmulatedCluster(["3.9"]) as cluster:
        cluster.brokers[0].peers = lambda: [*cluster.listed(),
                                            BrokerInfo(9, "127.0.0.1", silent.port)]
        sockets, tasks = open_sockets(), len(asyncio.all_tasks())
        client = Client(cluster.bootstrap_servers, request_timeout=30, startup_wait=20,
                        metadata_refresh_interval=None)
        starting = asyncio.create_task(client.start())
        # Broker 1 answered and Metadata listed broker 9, which hangs: start() waits.
        await until(lambda: any(silent.received_by_connection), "the client reached broker 9")
        await client.close()
        with pytest.raises(ClientClosedError):
            await asyncio.wait_for(starting, 2)
        await until(lambda: (open_sockets(), len(asyncio.all_tasks())) == (sockets, tasks),
                    "sockets and tasks back to where they were")


async def test_concurrent_starts_both_return_when_ready() -> None:
    async with EmulatedCluster(["3.9", "2.8"]) as cluster:
        client = Client(cluster.bootstrap_servers, metadata_refresh_interval=None)
        try:
            await asyncio.gather(client.start(), client.start())
            # Neither call returned before both brokers were negotiated.
            assert {b.state for b in client.view.brokers} == {BrokerState.ANSWERED}
        finally:
            await client.close()


async def test_caller_cancelling_start_still_gets_cancelled_error() -> None:
    async with EmulatedBroker(1, "3.9", behaviour="hang") as silent:
        client = Client(f"127.0.0.1:{silent.port}", metadata_refresh_interval=None)
        starting = asyncio.create_task(client.start())
        await until(lambda: any(silent.received_by_connection), "ApiVersions reached the broker")
        starting.cancel()
        with pytest.raises(asyncio.CancelledError):
            await starting
        await client.close()


async def test_metadata_listing_too_many_brokers_is_refused_before_any_connection() -> None:
    async with EmulatedCluster(["3.9"]) as cluster:
        many = [BrokerInfo(n, "127.0.0.1", 1) for n in range(100, 2100)]
        cluster.brokers[0].peers = lambda: [*cluster.listed(), *many]
        tasks = len(asyncio.all_tasks())
        client = Client(cluster.bootstrap_servers, max_brokers=1000,
                        metadata_refresh_interval=None)
        with pytest.raises(ProtocolError, match="lists 2001 brokers, more than max_brokers=1000"):
            await client.start()
        # No task per listed broker was made (the emulator's own ends with the connection).
        await until(lambda: len(asyncio.all_tasks()) == tasks, "no task left")
        with pytest.raises(ConfigError, match="max_brokers"):
            Client(cluster.bootstrap_servers, max_brokers=0)


async def test_handshake_frames_are_small_but_later_answers_may_be_large() -> None:
    from kclient.errors import FrameTooLargeError
    from kclient.net import Connection
    from kclient.net.connection import HANDSHAKE_FRAME_LIMIT

    async def huge(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        await reader.read(4096)
        writer.write((50_000_000).to_bytes(4, "big") + bytes(64))  # announces 50 MB
        await writer.drain()
        await asyncio.sleep(1)
        writer.close()

    server = await asyncio.start_server(huge, "127.0.0.1", 0)
    port = server.sockets[0].getsockname()[1]
    try:
        with pytest.raises(FrameTooLargeError, match=f"maximum of {HANDSHAKE_FRAME_LIMIT} "):
            await asyncio.wait_for(Connection("127.0.0.1", port).connect(), 5)
    finally:
        server.close()
        await server.wait_closed()
    # After the handshake the configured limit applies: a 1.3 MB Metadata answer is fine.
    async with EmulatedCluster(["3.9"]) as cluster:
        many = [BrokerInfo(n, "127.0.0.1", 9092) for n in range(100, 60_100)]
        cluster.brokers[0].peers = lambda: [*cluster.listed(), *many]
        async with Connection("127.0.0.1", cluster.brokers[0].port) as conn:
            answer = await conn.request("Metadata", {"topics": []})
        assert len(answer.brokers) == 60_001


@pytest.mark.parametrize(("options", "fragment"), [
    ({"max_frame_size": 0}, "max_frame_size must be a whole number of bytes from 16"),
    ({"max_frame_size": 2**31}, "max_frame_size must be"),
    ({"request_timeout": float("nan")}, "request_timeout must be a finite number"),
    ({"connect_timeout": -1}, "connect_timeout must be"),
])
def test_connection_rejects_invalid_options_up_front(options: dict[str, object],
                                                     fragment: str) -> None:
    from kclient.net import Connection

    with pytest.raises(ConfigError, match=fragment):
        Connection("127.0.0.1", 9092, **options)  # type: ignore[arg-type]
    with pytest.raises(ConfigError, match="port 70000 is not a number from 1 to 65535"):
        Connection("127.0.0.1", 70000)


async def test_oversized_metadata_answer_is_refused_by_its_size_prefix() -> None:
    # 3,000 brokers with 200-byte host names: ~640 KB, far above what max_brokers=10 allows.
    async with EmulatedCluster(["3.9"]) as cluster:
        many = [BrokerInfo(n, "h" * 200, 1) for n in range(100, 3100)]
        cluster.brokers[0].peers = lambda: [*cluster.listed(), *many]
        client = Client(cluster.bootstrap_servers, max_brokers=10,
                        metadata_refresh_interval=None)
        limit = metadata_answer_limit(10)
        with pytest.raises(FrameTooLargeError) as caught:
            await client.start()
        text = str(caught.value)
        assert f"127.0.0.1:{cluster.brokers[0].port}" in text
        assert "Metadata v" in text and f"more than the {limit} bytes allowed" in text
        assert "max_brokers=10 brokers of at most 1024 bytes each" in text
        assert client.view.brokers == ()  # nothing was decoded, nobody was dialled
        await client.close()


def test_metadata_answer_limit_grows_with_max_brokers() -> None:
    assert metadata_answer_limit(1) < metadata_answer_limit(2)
    assert metadata_answer_limit(20) - metadata_answer_limit(10) == 10 * METADATA_BYTES_PER_BROKER
    # At the default the bound is about a tenth of the general 100 MiB frame limit.
    assert metadata_answer_limit(DEFAULT_MAX_BROKERS) < DEFAULT_MAX_FRAME_SIZE // 9


@pytest.mark.parametrize(("options", "fragment"), [
    ({"avoid_versions": {"Produce": 3}}, r"avoid_versions\['Produce'\] must be a list"),
    ({"avoid_versions": [3]}, "avoid_versions must be a mapping"),
    ({"max_versions": [3]}, "max_versions must be a mapping"),
    ({"on_change": 5}, "on_change must be a callable"),
    ({"sasl": "PLAIN"}, "sasl must be a kclient.SaslConfig"),
    ({"cluster_name": 5}, "cluster_name must be text or None"),
    ({"features": 5}, "features must be a FeatureSet or a file path"),
    ({"strict": "yes"}, "strict must be True or False"),
    ({"api_version_fallback": 3.9}, "api_version_fallback must be text or None"),
    ({"application": "nosuchlib==1.0"}, "no profile for the client library 'nosuchlib'"),
    ({"application": 5}, "application must be a client such as"),
])
@pytest.mark.parametrize("make", [Client, SyncClient])
def test_wrong_argument_types_are_config_errors_up_front(
        options: dict[str, object], fragment: str, make: type[Client | SyncClient]) -> None:
    """SyncClient refused a bad application only at start(), while Client refused it at once."""
    with pytest.raises(ConfigError, match=fragment):
        make("127.0.0.1:9092", **options)  # type: ignore[arg-type]


def test_callbacks_given_as_a_generator_are_all_registered() -> None:
    """The type check consumed a generator, and no callback was registered."""
    callbacks = [lambda diff, view: None, lambda diff, view: None]
    client = Client("127.0.0.1:9092", on_change=(callback for callback in callbacks))
    assert client._callbacks == callbacks


async def test_request_with_no_api_is_a_typed_error() -> None:
    from kclient.errors import UnknownMessageError

    client = Client("127.0.0.1:9092")
    with pytest.raises(UnknownMessageError, match="not None"):
        await client.request(None, {})  # type: ignore[arg-type]


async def test_an_async_callback_may_await_every_call_close_included() -> None:
    """close() awaited from a callback waited 5 s for the callback's own task, then
    cancelled it: the callback got CancelledError and the client stayed CLOSING."""
    async with EmulatedCluster(["2.8"]) as cluster:
        client = Client(cluster.bootstrap_servers, metadata_refresh_interval=None,
                        reconnect_backoff=0.01)
        await client.start()
        outcomes: list[str] = []
        loop = asyncio.get_running_loop()

        async def every_call(diff: object, view: object) -> None:
            if outcomes:
                return
            await client.start()
            await client.refresh()
            await client.request("Metadata", {"topics": []})
            started = loop.time()
            await client.close()
            outcomes.append(f"closed in {loop.time() - started:.1f}s, {client.state}")

        client.on_change(every_call)
        await cluster.rolling_restart("3.9")
        await until(lambda: outcomes, "the callback ran", timeout=20)
        assert outcomes == ["closed in 0.0s, closed"]
        await until(lambda: not [t for t in asyncio.all_tasks()
                                 if t.get_name() == "kclient-on-change"],
                    "the callbacks' task ended")


_METADATA = {"topics": []}
#: Calls on a running client with an argument of the wrong kind; (what, call).
_WRONG_CALLS: list[tuple[str, Callable[[Client], object]]] = [
    ('request(version="3")', lambda c: c.request("Metadata", _METADATA, version="3")),
    ("request(version=True)", lambda c: c.request("Metadata", _METADATA, version=True)),
    ("request(version=3.0)", lambda c: c.request("Metadata", _METADATA, version=3.0)),
    ('request(broker="1")', lambda c: c.request("Metadata", _METADATA, broker="1")),
    ("request(broker=1.0)", lambda c: c.request("Metadata", _METADATA, broker=1.0)),
    ('request(cluster_wide="yes")', lambda c: c.request("Metadata", _METADATA,
                                                         cluster_wide="yes")),
    ("request(drop_unsupported=5)", lambda c: c.request("Metadata", _METADATA,
                                                        drop_unsupported=5)),
    ("feature(5)", lambda c: c.feature(5)),
    ("supports(None)", lambda c: c.supports(None)),
    ("explain(5)", lambda c: c.explain(5)),
    ("snapshot(5)", lambda c: c.snapshot(5)),
    ('connection("1")', lambda c: c.connection("1")),
    ('Connection.request(timeout="1")', lambda c: c.connection(1).request(
        "Metadata", _METADATA, timeout="1")),
    ("Connection.request(timeout=-1)", lambda c: c.connection(1).request(
        "Metadata", _METADATA, timeout=-1)),
    ('Connection.request(max_response_size=("a", "b"))', lambda c: c.connection(1).request(
        "Metadata", _METADATA, max_response_size=("a", "b"))),
    ("Connection(host=5)", lambda c: Connection(5, 9092)),
    ('Connection(node_id="x")', lambda c: Connection("localhost", 9092, node_id="x")),
    ("Client(5)", lambda c: Client(5)),
    ('Client(connect_timeout="1")', lambda c: Client("localhost", connect_timeout="1")),
    ("Client(client_software=5)", lambda c: Client("localhost", client_software=5)),
    ('Client(client_software=("a",))', lambda c: Client("localhost", client_software=("a",))),
    ('Client.from_config(unknown="x")', lambda c: Client.from_config(
        {"bootstrap.servers": "localhost"}, unknown="x")),
]


@pytest.mark.parametrize(("what", "call"), _WRONG_CALLS, ids=[w for w, _ in _WRONG_CALLS])
async def test_every_public_argument_of_the_wrong_kind_is_a_typed_error(
        what: str, call: Callable[[Client], object]) -> None:
    """request(version="3") was an untyped TypeError deep in the codec; so were the others
    here (or they were taken: version=True sent v1, cluster_wide="yes" meant True)."""
    async with EmulatedCluster(["3.9"]) as cluster, \
            Client(cluster.bootstrap_servers, metadata_refresh_interval=None) as client:
        with pytest.raises(KClientError):
            result = call(client)
            if inspect.isawaitable(result):
                await result
        # The connection is still in use: nothing was sent, nothing closed.
        assert (await client.request("Metadata", _METADATA, broker=1)).brokers
