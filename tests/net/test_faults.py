"""Faults: peers that close mid-handshake, refuse, reset or send garbage; resource leaks."""

from __future__ import annotations

import asyncio
import contextlib
import logging
import os
import select
import socket
import struct
from collections.abc import Awaitable, Callable

import pytest

from kclient.emulator import BrokerInfo, EmulatedBroker, EmulatedCluster
from kclient.errors import (
    BrokerConnectionError,
    FrameTooLargeError,
    HandshakeError,
    InvalidLengthError,
    KClientError,
    ProtocolError,
    VerdictUnknownError,
)
from kclient.net import Client, Connection
from kclient.protocol import encode_response, frame
from kclient.protocol.constants import ApiKey
from tests.waiting import until

pytestmark = pytest.mark.timeout(120)

Handler = Callable[[asyncio.StreamReader, asyncio.StreamWriter], Awaitable[None]]


class FaultPeer:
    """A loopback server whose every connection runs ``handler``."""

    def __init__(self, handler: Handler) -> None:
        self.handler = handler
        self.server: asyncio.Server | None = None
        self.port = 0
        self.connections = 0

    async def _run(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        self.connections += 1
        try:
            await self.handler(reader, writer)
        except (OSError, asyncio.IncompleteReadError):
            pass
        finally:
            writer.close()
            with contextlib.suppress(OSError):
                await writer.wait_closed()

    async def __aenter__(self) -> FaultPeer:
        self.server = await asyncio.start_server(self._run, "127.0.0.1", 0)
        self.port = int(self.server.sockets[0].getsockname()[1])
        return self

    async def __aexit__(self, *exc: object) -> None:
        assert self.server is not None
        self.server.close()
        await self.server.wait_closed()


async def read_frame(reader: asyncio.StreamReader) -> bytes:
    size = struct.unpack(">i", await reader.readexactly(4))[0]
    return await reader.readexactly(size)


async def captured_answer(release: str, version: int) -> bytes:
    """The full frame an emulated broker sends for ApiVersions at ``version`` (cid 0)."""
    async with EmulatedBroker(1, release) as broker:
        reader, writer = await asyncio.open_connection("127.0.0.1", broker.port)
        conn = Connection("127.0.0.1", broker.port)
        from kclient.protocol import encode_request, frame

        body = {"client_software_name": "kclient", "client_software_version": "1"}
        writer.write(frame(encode_request(18, version, 0, "kclient", body if version >= 3
                                          else {})))
        await writer.drain()
        answer = await read_frame(reader)
        writer.close()
        await writer.wait_closed()
        del conn
    return struct.pack(">i", len(answer)) + answer


async def test_peer_closing_at_every_byte_offset_of_the_answer() -> None:
    answer = await captured_answer("3.9", 4)
    assert len(answer) > 100
    state = {"cut": 0}

    async def handler(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        request = await read_frame(reader)
        # The answer carries the request's correlation id (a wrong one is refused from
        # the first bytes of the frame, however few follow).
        echoed = answer[:4] + request[4:8] + answer[8:]
        writer.write(echoed[:state["cut"]])
        await writer.drain()

    async with FaultPeer(handler) as peer:
        for cut in range(len(answer)):
            state["cut"] = cut
            conn = Connection("127.0.0.1", peer.port, request_timeout=5)
            with pytest.raises(HandshakeError) as info:
                await conn.connect()
            # v4 cut short -> reconnect and v0 (also cut short) -> no fallback configured.
            assert "api_version_fallback" in str(info.value)
            assert conn.closed
    # And the whole answer works.
    state["cut"] = len(answer)
    async with FaultPeer(handler) as peer:
        versions = await Connection("127.0.0.1", peer.port).connect()
        assert versions.handshake[-1] == "ApiVersions v4 answered"


async def test_peer_closing_at_every_byte_offset_of_the_request() -> None:
    from kclient import __version__
    from kclient.protocol import encode_request, frame

    body = {"client_software_name": "kclient", "client_software_version": __version__}
    size = len(frame(encode_request(18, 4, 0, "kclient", body)))
    state = {"expected": 0}

    async def handler(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        # Read exactly that many bytes of the request, then close.  The v0 retry is
        # shorter than the v4 request: once it is all read, close as well.
        if state["expected"]:
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(reader.readexactly(state["expected"]), 0.1)

    async with FaultPeer(handler) as peer:
        for expected in range(size):
            state["expected"] = expected
            conn = Connection("127.0.0.1", peer.port, request_timeout=5)
            with pytest.raises(BrokerConnectionError):
                await conn.connect()
            assert conn.closed


@pytest.mark.parametrize("garbage", [
    struct.pack(">i", 4) + b"\x00\x00\x00\x63",            # unknown correlation id
    struct.pack(">i", 2) + b"\x00\x00",                    # too short for an id
    struct.pack(">i", 0x7FFFFFF0),                          # oversized frame
    struct.pack(">i", -5),                                  # negative size
    struct.pack(">i", 6) + b"\x00\x00\x00\x00\xff\xff",     # truncated body
])
async def test_garbage_is_a_protocol_error(garbage: bytes) -> None:
    async def handler(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        await read_frame(reader)
        writer.write(garbage)
        await writer.drain()
        await reader.read()  # until the client hangs up

    async with FaultPeer(handler) as peer:
        conn = Connection("127.0.0.1", peer.port, request_timeout=5)
        with pytest.raises(ProtocolError):
            await conn.connect()
        assert conn.closed


async def test_reset_is_a_connection_error() -> None:
    async def handler(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        await read_frame(reader)
        sock = writer.get_extra_info("socket")
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
        writer.transport.abort()

    async with FaultPeer(handler) as peer:
        with pytest.raises(HandshakeError, match="api_version_fallback"):
            await Connection("127.0.0.1", peer.port).connect()
        assert peer.connections == 2


async def test_client_keeps_serving_the_other_brokers_despite_faulty_peers() -> None:
    async def garbage(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        await read_frame(reader)
        writer.write(b"\x00\x00\x00\x05hello")
        await writer.drain()
        await reader.read()  # until the client hangs up

    async def closer(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        await reader.read(3)

    async with FaultPeer(garbage) as bad, FaultPeer(closer) as early, \
            EmulatedCluster(["3.9", "2.8"]) as cluster:
        extra = [BrokerInfo(7, "127.0.0.1", bad.port), BrokerInfo(8, "127.0.0.1", early.port)]
        for broker in cluster.brokers:
            broker.peers = lambda: [*cluster.listed(), *extra]
        async with Client(cluster.bootstrap_servers, metadata_refresh_interval=None,
                          reconnect_backoff=0.2) as client:
            assert [b.node_id for b in client.view.live_brokers] == [1, 2]
            errors = {b.node_id: str(b.error) for b in client.view.failed_brokers}
            assert "correlation id" in errors[7]
            assert "api_version_fallback" in errors[8]
            response = await client.request("Metadata", {"topics": []}, broker=2)
            assert len(response.brokers) == 4
            # Two listed brokers never answered: cluster-wide, nothing is promised...
            with pytest.raises(VerdictUnknownError) as info:
                client.version_for("Produce")
            assert info.value.brokers == (7, 8)
            # ...while each answered broker still has its own version.
            assert client.version_for("Produce", broker=1) >= 0


def open_sockets() -> int:
    """Sockets this process holds open (file descriptors that link to ``socket:[...]``)."""
    count = 0
    for name in os.listdir("/proc/self/fd"):
        with contextlib.suppress(OSError):
            if os.readlink(f"/proc/self/fd/{name}").startswith("socket:"):
                count += 1
    return count


@pytest.mark.skipif(not os.path.isdir("/proc/self/fd"), reason="needs /proc/self/fd")
async def test_a_thousand_reconnect_cycles_leak_nothing() -> None:
    async with EmulatedBroker(1, "3.9") as broker:
        conn = Connection("127.0.0.1", broker.port)
        await conn.connect()
        await conn.close()
        await until(lambda: broker.open_connections == 0, "the first connection closed")
        fds, tasks = open_sockets(), len(asyncio.all_tasks())
        for _ in range(1000):
            await conn.connect()
            await conn.close()
        await until(lambda: (open_sockets(), len(asyncio.all_tasks())) == (fds, tasks),
                    "sockets and tasks back to where they were")
        assert broker.connections_accepted == 1001
        assert broker.open_connections == 0


@pytest.mark.skipif(not os.path.isdir("/proc/self/fd"), reason="needs /proc/self/fd")
async def test_client_reconnect_cycles_leak_nothing() -> None:
    before_fds = open_sockets()
    before_tasks = len(asyncio.all_tasks())
    async with EmulatedCluster(["3.9:drop-after:1", "3.9"]) as cluster, \
            Client(cluster.broker(2).address, metadata_refresh_interval=None,
                   reconnect_backoff=0.001, reconnect_backoff_max=0.002) as client:
            flaky = cluster.broker(1)
            await until(lambda: flaky.connections_accepted >= 200,
                        "200 connections to the flaky broker")
            await client.request("Metadata", {"topics": []}, broker=2)
    await until(lambda: (open_sockets(), len(asyncio.all_tasks())) == (before_fds, before_tasks),
                "sockets and tasks back to where they were")


async def test_errors_are_typed() -> None:
    async with FaultPeer(lambda r, w: asyncio.sleep(0)) as peer:
        try:
            await Connection("127.0.0.1", peer.port).connect()
        except KClientError as exc:
            assert "127.0.0.1" in str(exc)
        else:  # pragma: no cover - a closing peer must fail the handshake
            pytest.fail("the handshake with a closing peer succeeded")


def hand_written_v0_answer(cid: int, entries: list[tuple[int, int, int]]) -> bytes:
    """An ApiVersions v0 answer frame built by hand: cid, error 0, the (key, min, max) list."""
    body = struct.pack(">ihi", cid, 0, len(entries)) + b"".join(
        struct.pack(">hhh", *entry) for entry in entries)
    return struct.pack(">i", len(body)) + body


def answering_v0_with(entries: list[tuple[int, int, int]]) -> Handler:
    """A peer that rejects ApiVersions v1+ like a pre-2.4 broker and answers v0 with ``entries``."""
    async def handler(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        for _ in range(4):
            request = await read_frame(reader)
            _, version, cid = struct.unpack_from(">hhi", request)
            if version == 0:
                writer.write(hand_written_v0_answer(cid, entries))
            else:  # error 35 in the v0 layout, empty list
                writer.write(struct.pack(">iihi", 10, cid, 35, 0))
            await writer.drain()
    return handler


@pytest.mark.parametrize(("entries", "named"), [
    ([(18, 0, 3), (0, 5, 3)], r"Produce \(key 0\) with versions 5-3 \(min above max\)"),
    ([(18, 0, 3), (3, -1, 12)], r"Metadata \(key 3\) with versions -1-12 \(negative"),
    ([(18, 0, 3), (0, 0, 9), (0, 3, 11)], r"Produce \(key 0\) twice, with versions 0-9 and "
                                          r"3-11"),
])
async def test_a_bad_entry_in_the_answer_is_an_immediate_protocol_error(
        entries: list[tuple[int, int, int]], named: str) -> None:
    async with FaultPeer(answering_v0_with(entries)) as peer:
        conn = Connection("127.0.0.1", peer.port)  # default 30 s request timeout
        loop = asyncio.get_running_loop()
        started = loop.time()
        with pytest.raises(ProtocolError, match=named) as info:
            await conn.connect()
        assert loop.time() - started < 5
        assert f"bootstrap 127.0.0.1:{peer.port} sent an ApiVersions v0 answer" in str(
            info.value)
        assert conn.closed


async def test_a_key_repeated_with_the_same_range_is_kept_once() -> None:
    entries = [(18, 0, 3), (0, 0, 9), (3, 0, 12), (0, 0, 9)]
    async with FaultPeer(answering_v0_with(entries)) as peer, \
            Connection("127.0.0.1", peer.port) as conn:
        assert {k: (r.min, r.max) for k, r in conn.versions.apis.items()} == {
            0: (0, 9), 3: (0, 12), 18: (0, 3)}


AfterHandshake = Callable[[asyncio.StreamReader, asyncio.StreamWriter], Awaitable[None]]


def negotiated_then(after: AfterHandshake) -> Handler:
    """A peer that answers the handshake (ApiVersions v0, as a pre-2.4 broker), then runs
    ``after`` on the negotiated connection."""
    entries = [(18, 0, 3), (3, 0, 12), (0, 0, 9), (48, 0, 1)]

    async def handler(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        while True:
            _, version, cid = struct.unpack_from(">hhi", await read_frame(reader))
            writer.write(hand_written_v0_answer(cid, entries) if version == 0 else
                         struct.pack(">iihi", 10, cid, 35, 0))
            await writer.drain()
            if version == 0:
                break
        await after(reader, writer)
        await reader.read()  # until the client hangs up
    return handler


async def test_a_frame_nobody_asked_for_is_refused_from_its_size_prefix() -> None:
    """Nothing in flight: such a frame was bounded only by the 100 MiB frame limit and
    buffered whole before it was refused (90 MiB: +270 MB, 2 s)."""
    negotiated = asyncio.Event()

    async def unasked(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        await negotiated.wait()  # answers may be 100 MiB from then on
        writer.write(struct.pack(">ii", 90 * 1024 * 1024, 12345))  # and nothing more
        await writer.drain()

    async with FaultPeer(negotiated_then(unasked)) as peer, \
            Connection("127.0.0.1", peer.port) as conn:
        negotiated.set()
        await asyncio.wait_for(conn.wait_closed(), 5)
        assert "nobody asked for; it is refused before it is read" in str(conn.close_reason)


async def test_an_answer_is_held_to_the_cap_of_the_request_it_answers() -> None:
    """The cap was the oldest request's: a 1 KiB-capped request was handed 14 MB."""
    async def out_of_order(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        await read_frame(reader)
        capped = await read_frame(reader)
        writer.write(struct.pack(">ii", 14_000_000, struct.unpack_from(">i", capped, 4)[0]))
        await writer.drain()

    async with FaultPeer(negotiated_then(out_of_order)) as peer, \
            Connection("127.0.0.1", peer.port) as conn:
        uncapped = asyncio.ensure_future(conn.request("Metadata", {"topics": []}))
        await until(lambda: conn.in_flight == 1, "the first request sent")
        with pytest.raises(FrameTooLargeError, match="DescribeClientQuotas v1 announces "
                                                     "14000000 bytes, more than the 1024"):
            await conn.request("DescribeClientQuotas", {"components": []},
                               max_response_size=(1024, "max_response_size"), timeout=5)
        with pytest.raises(FrameTooLargeError):
            await uncapped


async def test_answers_before_a_broken_frame_in_the_same_read_are_delivered() -> None:
    """An answer followed in one read by a broken frame was lost: its caller waited for
    the whole request_timeout and heard "no answer"."""
    async def answer_then_garbage(reader: asyncio.StreamReader,
                                  writer: asyncio.StreamWriter) -> None:
        first = await read_frame(reader)
        await read_frame(reader)
        cid = struct.unpack_from(">i", first, 4)[0]
        body = encode_response(ApiKey.METADATA, 0, cid, {"brokers": [], "topics": []})
        writer.write(frame(body) + struct.pack(">i", -7))
        await writer.drain()

    async with FaultPeer(negotiated_then(answer_then_garbage)) as peer, \
            Connection("127.0.0.1", peer.port) as conn:  # the default 30 s request_timeout
        loop = asyncio.get_running_loop()
        started = loop.time()
        answered = asyncio.ensure_future(conn.request("Metadata", {"topics": []}, 0))
        await until(lambda: conn.in_flight == 1, "the first request sent")
        with pytest.raises(InvalidLengthError, match="negative frame size -7"):
            await conn.request("Metadata", {"topics": []}, 0)
        assert (await answered).brokers == []
        assert loop.time() - started < 5


async def test_no_request_is_written_onto_a_lost_connection(
        caplog: pytest.LogCaptureFixture) -> None:
    """A broker that vanishes under load: until the reader task closed the connection,
    every request in between was written onto the lost transport, and asyncio logged
    "socket.send() raised exception" for each (150 lines in 10 resets of 20 requests)."""
    reset = asyncio.Event()

    async def vanish(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        await read_frame(reader)
        sock = writer.get_extra_info("socket")
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
        writer.transport.abort()  # a reset, as from a broker killed or unplugged
        reset.set()

    async with FaultPeer(negotiated_then(vanish)) as peer, \
            Connection("127.0.0.1", peer.port) as conn:
        first = asyncio.ensure_future(conn.request("Metadata", {"topics": []}, 0))
        await reset.wait()
        # Wait (blocking the loop, bounded) until the reset has reached the socket: the
        # loop has not seen it yet when the requests below start.
        assert conn.ssl_context is None and conn._writer is not None
        ready, _, _ = select.select([conn._writer.get_extra_info("socket")], [], [], 10)
        assert ready, "the reset did not arrive"
        caplog.set_level(logging.WARNING, logger="asyncio")
        results = await asyncio.gather(
            first, *(conn.request("Metadata", {"topics": []}, 0) for _ in range(20)),
            return_exceptions=True)
    assert all(isinstance(result, BrokerConnectionError) for result in results), results
    lost = [r.getMessage() for r in caplog.records if r.name == "asyncio"]
    assert lost == []
