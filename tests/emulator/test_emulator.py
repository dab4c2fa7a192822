"""The emulated broker on the wire: ApiVersions per era, Metadata, DescribeCluster, behaviours.

ApiVersions requests here are built byte by byte (not with kclient's codec), so the
emulator is checked against the wire format itself.
"""

from __future__ import annotations

import asyncio
import struct

import pytest

from kclient.emulator import Behaviour, BrokerSpec, EmulatedBroker, EmulatedCluster
from kclient.emulator.cluster import parse_broker_spec
from kclient.errors import ConfigError, UnsupportedRequestError
from kclient.negotiation import release_profile
from kclient.net import Connection

pytestmark = pytest.mark.timeout(30)


def api_versions_request(version: int, cid: int = 1) -> bytes:
    client_id = b"raw-test"
    header = struct.pack(">hhih", 18, version, cid, len(client_id)) + client_id
    if version < 3:
        return header
    name, soft = b"raw", b"1.0"
    body = bytes([len(name) + 1]) + name + bytes([len(soft) + 1]) + soft + b"\x00"
    return header + b"\x00" + body


async def exchange(port: int, payload: bytes) -> bytes | None:
    """Send one frame; return the response frame's payload or None when the peer closed."""
    reader, writer = await asyncio.open_connection("127.0.0.1", port)
    try:
        writer.write(struct.pack(">i", len(payload)) + payload)
        await writer.drain()
        try:
            size = struct.unpack(">i", await reader.readexactly(4))[0]
            return await reader.readexactly(size)
        except asyncio.IncompleteReadError:
            return None
    finally:
        writer.close()
        await writer.wait_closed()


def parse_v0_body(data: bytes) -> tuple[int, int, dict[int, tuple[int, int]]]:
    cid, error, count = struct.unpack_from(">ihi", data)
    apis = {}
    for index in range(count):
        key, low, high = struct.unpack_from(">hhh", data, 10 + 6 * index)
        apis[key] = (low, high)
    assert len(data) == 10 + 6 * count
    return cid, error, apis


@pytest.mark.parametrize("release", ["0.10.0", "1.0", "2.0", "2.3"])
async def test_pre_kip511_release_answers_error_35_with_empty_list(release: str) -> None:
    async with EmulatedBroker(1, release) as broker:
        too_new = release_profile(release)[18].max + 1
        data = await exchange(broker.port, api_versions_request(too_new, cid=9))
        assert data is not None
        assert parse_v0_body(data) == (9, 35, {})


@pytest.mark.parametrize("release", ["2.4", "2.8"])
async def test_kip511_release_lists_its_api_versions_range(release: str) -> None:
    async with EmulatedBroker(1, release) as broker:
        data = await exchange(broker.port, api_versions_request(4, cid=3))
        assert data is not None
        rng = release_profile(release)[18]
        assert parse_v0_body(data) == (3, 35, {18: (rng.min, rng.max)})


async def test_pre_kip511_behaviour_on_a_new_release() -> None:
    async with EmulatedBroker(1, "2.8", behaviour="pre-kip511") as broker:
        data = await exchange(broker.port, api_versions_request(4))
        assert data is not None and parse_v0_body(data)[1:] == (35, {})


@pytest.mark.parametrize("release", ["0.10.0", "2.0", "2.8", "3.9", "4.1"])
async def test_v0_answer_lists_the_whole_profile(release: str) -> None:
    async with EmulatedBroker(1, release) as broker:
        data = await exchange(broker.port, api_versions_request(0, cid=5))
        assert data is not None
        cid, error, apis = parse_v0_body(data)
        expected = {k: (r.min, r.max) for k, r in release_profile(release).items()}
        assert (cid, error, apis) == (5, 0, expected)
        assert {k: (r.min, r.max) for k, r in broker.profile.items()} == expected


async def test_kraft_release_advertises_the_kraft_profile() -> None:
    async with EmulatedBroker(1, "3.7-kraft") as broker:
        data = await exchange(broker.port, api_versions_request(0, cid=6))
        assert data is not None
        _, error, apis = parse_v0_body(data)
        assert error == 0 and broker.release == "3.7-kraft"
        assert 74 in apis and 4 not in apis  # ListClientMetricsResources, no LeaderAndIsr
        assert apis == {k: (r.min, r.max) for k, r in release_profile("3.7-kraft").items()}
        assert apis != {k: (r.min, r.max) for k, r in release_profile("3.7").items()}


@pytest.mark.parametrize("spec", ["0.9.0", "3.9:legacy"])
async def test_legacy_closes_on_api_versions(spec: str) -> None:
    parsed = parse_broker_spec(spec)
    async with EmulatedBroker(1, parsed.release, behaviour=parsed.behaviour) as broker:
        assert await exchange(broker.port, api_versions_request(0)) is None


async def test_closes_on_flexible_answers_v0_only() -> None:
    async with EmulatedBroker(1, "3.9", behaviour="closes-on-flexible") as broker:
        assert await exchange(broker.port, api_versions_request(3)) is None
        data = await exchange(broker.port, api_versions_request(0))
        assert data is not None and parse_v0_body(data)[1] == 0


async def test_flexible_answer_has_header_v0_and_features() -> None:
    broker = EmulatedBroker(1, "3.9", finalized_features={"metadata.version": (1, 21)},
                            supported_features={"metadata.version": (1, 21)},
                            finalized_features_epoch=42)
    async with broker, Connection("127.0.0.1", broker.port) as conn:
        versions = conn.versions
        assert versions.handshake[-1] == "ApiVersions v4 answered"
        assert versions.finalized_level("metadata.version") == 21
        assert versions.finalized_features_epoch == 42
        assert dict(versions.apis) == dict(release_profile("3.9"))


@pytest.mark.parametrize("release", ["2.0", "2.8", "3.9", "4.1"])
async def test_metadata_and_describe_cluster_list_every_broker(release: str) -> None:
    async with EmulatedCluster([release, "3.9", "4.1"], cluster_id="emu-x") as cluster:
        first = cluster.brokers[0]
        async with Connection("127.0.0.1", first.port) as conn:
            expected = [(b.node_id, "127.0.0.1", b.port) for b in cluster.brokers]
            catalog_max = conn.application.apis[3].max
            top = min(catalog_max, first.profile[3].max)
            for version in range(release_profile(release)[3].min, top + 1):
                response = await conn.request("Metadata", {"topics": []}, version)
                assert [(b.node_id, b.host, b.port) for b in response.brokers] == expected
                if version >= 2:
                    assert response.cluster_id == "emu-x"
            if 60 in release_profile(release):
                described = await conn.request("DescribeCluster", {})
                assert [b.broker_id for b in described.brokers] == [1, 2, 3]


async def test_metadata_for_named_topics_says_unknown_topic() -> None:
    async with EmulatedBroker(1, "2.8") as broker, Connection("127.0.0.1", broker.port) as conn:
        response = await conn.request("Metadata", {"topics": [{"name": "orders"}],
                                                   "allow_auto_topic_creation": False}, 9)
        assert [(t.name, t.error_code) for t in response.topics] == [("orders", 3)]
        assert broker.state.topics == {}


async def test_unknown_api_closes_or_answers_zero_length() -> None:
    # Kafka 2.0 lacks DescribeCluster (60): the broker closes the connection ...
    async with EmulatedBroker(1, "2.0") as broker, Connection("127.0.0.1", broker.port) as conn:
        with pytest.raises(Exception) as info:
            await conn.request("DescribeCluster", {}, 0)
        assert "closed" in str(info.value)
        assert conn.closed
    # ... or, with the behaviour, answers with a zero-length frame and stays usable.
    async with EmulatedBroker(1, "2.0", behaviour="zero-length-for-unknown") as broker, \
            Connection("127.0.0.1", broker.port) as conn:
        with pytest.raises(UnsupportedRequestError, match="not supported by server"):
            await conn.request("DescribeCluster", {}, 0)
        assert not conn.closed
        response = await conn.request("Metadata", {"topics": []})
        assert [b.node_id for b in response.brokers] == [1]


async def test_drop_after_and_restart_with_another_release() -> None:
    broker = EmulatedBroker(1, "2.8", behaviour="drop-after:3")
    async with broker:
        port = broker.port
        conn = Connection("127.0.0.1", port)
        await conn.connect()  # requests 1 and 2 (ApiVersions v4 rejected, v3)
        await conn.request("Metadata", {"topics": []})  # request 3, then dropped
        await asyncio.wait_for(conn.wait_closed(), 5)
        await broker.restart("4.1", behaviour="")
        assert broker.port == port and broker.release == "4.1"
        versions = await conn.connect()
        assert dict(versions.apis) == dict(broker.profile)
        assert versions.apis[61] == release_profile("4.1")[61]
        await conn.close()


async def test_slow_and_hang() -> None:
    async with EmulatedBroker(1, "3.9", behaviour="slow:0.2") as broker:
        loop = asyncio.get_running_loop()
        started = loop.time()
        async with Connection("127.0.0.1", broker.port):
            assert loop.time() - started >= 0.2
    async with EmulatedBroker(1, "3.9", behaviour="hang") as broker:
        conn = Connection("127.0.0.1", broker.port, request_timeout=0.3)
        with pytest.raises(Exception, match=r"no answer to ApiVersions v4 within 0\.3s"):
            await conn.connect()
        assert conn.closed


def test_behaviour_words_round_trip() -> None:
    text = "legacy,pre-kip511,closes-on-flexible,zero-length-for-unknown,slow:0.5,hang,drop-after:3"
    behaviour = Behaviour.parse(text)
    assert Behaviour.parse(behaviour.words()) == behaviour
    assert str(behaviour) == text
    assert str(Behaviour()) == "normal"
    for bad in ("fast", "slow:x", "drop-after:0", "legacy:1"):
        with pytest.raises(ConfigError, match="behaviour"):
            Behaviour.parse(bad)


def test_cluster_specs() -> None:
    cluster = EmulatedCluster(["2.8", BrokerSpec("3.9", node_id=7), "0.9.0:legacy"])
    assert [(b.node_id, b.release, str(b.behaviour)) for b in cluster.brokers] == [
        (1, "2.8", "normal"), (7, "3.9", "normal"), (8, "0.9", "legacy")]
    with pytest.raises(ConfigError, match="used twice"):
        EmulatedCluster([BrokerSpec("3.9", node_id=1), BrokerSpec("2.8", node_id=1)])
    with pytest.raises(ConfigError, match="unknown Kafka release"):
        EmulatedCluster(["9.9"])


async def test_cluster_add_remove_and_listing() -> None:
    async with EmulatedCluster(["3.9", "3.9"]) as cluster:
        added = await cluster.add_broker("4.1")
        assert [b.node_id for b in cluster.listed()] == [1, 2, 3]
        assert added.address in cluster.bootstrap_servers
        await cluster.remove_broker(2)
        assert [b.node_id for b in cluster.listed()] == [1, 3]
        async with Connection("127.0.0.1", cluster.broker(1).port) as conn:
            response = await conn.request("Metadata", {"topics": []})
            assert [b.node_id for b in response.brokers] == [1, 3]
        await cluster.rolling_restart("4.1")
        assert {b.release for b in cluster.brokers} == {"4.1"}


async def test_repeated_api_versions_answers_follow_cid_release_and_features() -> None:
    """The emulator reuses encoded ApiVersions bodies: each answer must still carry its
    own correlation id, and a new release or new feature levels must show at once."""
    from kclient.protocol import decode_response

    broker = EmulatedBroker(1, "2.8")
    async with broker:
        answers = {}
        for cid in (7, -2, 2**31 - 1):
            data = await exchange(broker.port, api_versions_request(3, cid=cid))
            assert data is not None
            got_cid, response = decode_response(18, 3, data)
            assert got_cid == cid
            answers[cid] = data[4:]
        assert len(set(answers.values())) == 1
        assert {a.api_key: (a.min_version, a.max_version) for a in response.api_keys} == {
            k: (r.min, r.max) for k, r in release_profile("2.8").items()}
        assert response.finalized_features == []

        broker.finalized_features["metadata.version"] = (1, 7)
        broker.finalized_features_epoch = 3
        data = await exchange(broker.port, api_versions_request(3, cid=8))
        assert data is not None
        _, response = decode_response(18, 3, data)
        assert [(f.name, f.max_version_level) for f in response.finalized_features] == [
            ("metadata.version", 7)]
        assert response.finalized_features_epoch == 3

        broker.set_release("3.9")
        data = await exchange(broker.port, api_versions_request(0, cid=9))
        assert data is not None
        assert parse_v0_body(data) == (9, 0, {k: (r.min, r.max)
                                              for k, r in release_profile("3.9").items()})


def test_a_threaded_call_that_does_not_finish_is_a_typed_error() -> None:
    from kclient.emulator import ThreadedEmulator
    from kclient.errors import EmulatorError

    with ThreadedEmulator(EmulatedCluster(["3.9"]), start_timeout=5) as emulator:
        with pytest.raises(EmulatorError, match=r"did not finish sleep within 0\.2 s"):
            emulator.call(asyncio.sleep(30), timeout=0.2)
        assert emulator.call(asyncio.sleep(0, "still serving")) == "still serving"
    with pytest.raises(EmulatorError, match="not running"):
        emulator.call(asyncio.sleep(0))
