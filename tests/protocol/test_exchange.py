"""The sans-I/O exchange of one connection, driven with bytes alone (no sockets)."""

from __future__ import annotations

import itertools
import struct

import pytest

from kclient.errors import FrameTooLargeError, ProtocolError
from kclient.protocol import encode_response, frame
from kclient.protocol.constants import ApiKey
from kclient.protocol.exchange import (
    TRANSITIONS,
    Answer,
    EmptyAnswer,
    Exchange,
    Phase,
    RawFrame,
    Step,
)


def _decode(api_key: int, version: int, payload: bytes) -> int:
    return int(struct.unpack_from(">i", payload)[0])


def _answer(cid: int, size: int = 8) -> bytes:
    return frame(struct.pack(">i", cid) + bytes(size - 4))


def _opened(**options: int) -> Exchange:
    exchange = Exchange(**options)  # type: ignore[arg-type]
    exchange.open()
    return exchange


def test_answers_reach_their_requests_whatever_the_chunking() -> None:
    data = _answer(0) + _answer(1, 20) + frame(b"")
    for cut in range(1, len(data)):
        exchange = _opened()
        first = exchange.request(ApiKey.METADATA, 12, "first", _decode)
        second = exchange.request(ApiKey.PRODUCE, 9, "second", _decode)
        third = exchange.request(ApiKey.FETCH, 4, "third", _decode)
        found = exchange.receive(data[:cut]) + exchange.receive(data[cut:])
        assert found == [Answer(first, data[4:12]), Answer(second, data[16:36]),
                         EmptyAnswer(third)]
        assert exchange.in_flight == []
    assert (first.correlation_id, second.correlation_id) == (0, 1)


def test_a_cap_refuses_the_answer_from_its_size_prefix_alone() -> None:
    exchange = _opened()
    exchange.request(ApiKey.DESCRIBE_CLIENT_QUOTAS, 1, None, _decode, 100, "max_response_size")
    with pytest.raises(FrameTooLargeError, match="DescribeClientQuotas v1 announces 15000000 "
                                                 r"bytes, more than the 100 bytes .*"
                                                 r"\(max_response_size\)"):
        exchange.receive(struct.pack(">i", 15_000_000))  # four bytes: nothing buffered


def test_answers_are_handshake_sized_until_negotiated() -> None:
    exchange = _opened(handshake_limit=64, max_frame_size=1 << 20)
    exchange.request(ApiKey.API_VERSIONS, 3, None, _decode)
    with pytest.raises(FrameTooLargeError):
        exchange.receive(_answer(0, 100))
    exchange = _opened(handshake_limit=64, max_frame_size=1 << 20)
    exchange.negotiated()
    item = exchange.request(ApiKey.METADATA, 12, None, _decode)
    assert exchange.receive(_answer(0, 100)) == [Answer(item, _answer(0, 100)[4:])]


def test_frames_nobody_asked_for() -> None:
    exchange = _opened()
    exchange.request(ApiKey.METADATA, 12, None, _decode)
    with pytest.raises(ProtocolError, match="correlation id 7 arrived, which no request"):
        exchange.receive(_answer(7))
    with pytest.raises(ProtocolError, match="nobody asked for"):
        _opened().receive(_answer(0))
    with pytest.raises(ProtocolError, match="too short for a correlation id"):
        exchange = _opened()
        exchange.request(ApiKey.METADATA, 12, None, _decode)
        exchange.receive(frame(b"\x00\x01"))


def test_raw_sasl_tokens_arrive_as_raw_frames_until_negotiated() -> None:
    exchange = _opened()
    exchange.raw()
    assert exchange.receive(frame(b"token")) == [RawFrame(b"token")]
    exchange.negotiated()
    with pytest.raises(ProtocolError, match="nobody asked for"):
        exchange.receive(frame(b"late"))


def test_close_hands_back_what_was_in_flight_and_a_real_answer_decodes() -> None:
    exchange = _opened()
    items = [exchange.request(ApiKey.METADATA, 12, n, _decode) for n in range(3)]
    exchange.receive(frame(encode_response(ApiKey.METADATA, 12, 1, {"brokers": []})))
    assert exchange.close() == [items[0], items[2]]
    assert exchange.phase is Phase.CLOSED
    with pytest.raises(ProtocolError, match="closed"):
        exchange.request(ApiKey.METADATA, 12, None, _decode)


@pytest.mark.parametrize(("phase", "step"), list(itertools.product(Phase, Step)))
def test_every_pair_is_listed_or_refused(phase: Phase, step: Step) -> None:
    exchange = Exchange()
    exchange.phase = phase
    if (phase, step) in TRANSITIONS:
        {Step.OPEN: exchange.open, Step.RAW: exchange.raw,
         Step.NEGOTIATED: exchange.negotiated, Step.CLOSE: exchange.close}[step]()
        assert exchange.phase is TRANSITIONS[phase, step]
    else:
        with pytest.raises(ProtocolError, match=f"{step} is not possible while the "
                                                f"connection is {phase}"):
            {Step.OPEN: exchange.open, Step.RAW: exchange.raw,
             Step.NEGOTIATED: exchange.negotiated, Step.CLOSE: exchange.close}[step]()
        assert exchange.phase is phase
