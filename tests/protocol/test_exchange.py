"""The sans-I/O exchange of one connection, driven with bytes alone (no sockets)."""

from __future__ import annotations

import itertools
import re
import struct

import pytest

from kclient.errors import FrameTooLargeError, ProtocolError
from kclient.protocol import encode_response, frame
from kclient.protocol.constants import ApiKey
from kclient.protocol.exchange import (
    TRANSITIONS,
    Answer,
    Broken,
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


def _refusal(exchange: Exchange, data: bytes) -> ProtocolError:
    """The error ``data`` ends in (the last item :meth:`Exchange.receive` returns)."""
    found = exchange.receive(data)
    assert found and isinstance(found[-1], Broken), found
    return found[-1].error


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
    error = _refusal(exchange, struct.pack(">ii", 15_000_000, 0))  # eight bytes: no more read
    assert isinstance(error, FrameTooLargeError)
    assert re.search(r"DescribeClientQuotas v1 announces 15000000 bytes, more than the 100 "
                     r"bytes .*\(max_response_size\)", str(error))


def test_each_frame_is_held_to_the_cap_of_the_request_it_answers() -> None:
    """Not the oldest request's: a peer may answer out of order (a 1 KiB-capped request
    was handed 14 MB because the uncapped one before it was still waiting)."""
    exchange = _opened()
    exchange.request(ApiKey.METADATA, 12, "uncapped", _decode)
    capped = exchange.request(ApiKey.DESCRIBE_CLIENT_QUOTAS, 1, "capped", _decode, 1024,
                              "max_response_size")
    error = _refusal(exchange, struct.pack(">ii", 14_000_000, capped.correlation_id))
    assert isinstance(error, FrameTooLargeError)
    assert "DescribeClientQuotas v1 announces 14000000 bytes" in str(error)
    # And the other way round: the uncapped request's large answer passes the capped one.
    exchange = _opened()
    first = exchange.request(ApiKey.DESCRIBE_CLIENT_QUOTAS, 1, "capped", _decode, 8, "cap")
    second = exchange.request(ApiKey.METADATA, 12, "uncapped", _decode)
    assert exchange.receive(_answer(1, 100) + _answer(0, 8)) == [
        Answer(second, _answer(1, 100)[4:]), Answer(first, _answer(0, 8)[4:])]


@pytest.mark.parametrize("case", ["nothing in flight", "after acks=0", "unknown id"])
def test_an_unasked_frame_is_refused_from_its_first_bytes(case: str) -> None:
    """Bounded only by the frame limit, it was buffered whole first (90 MB: +270 MB)."""
    exchange = _opened()
    exchange.negotiated()  # answers may be 100 MiB now
    cid = 7
    if case == "after acks=0":
        cid = exchange.request(ApiKey.PRODUCE, 9, None, _decode, answered=False).correlation_id
    elif case == "unknown id":
        exchange.request(ApiKey.METADATA, 12, None, _decode)
    prefix = struct.pack(">ii", 90 * 1024 * 1024, cid)
    error = _refusal(exchange, prefix if case != "nothing in flight" else prefix[:4])
    assert ("nobody asked for; it is refused before it is read" in str(error)
            if case != "unknown id" else f"correlation id {cid} arrived, which no "
            "request in flight has" in str(error))


def test_answers_before_broken_bytes_are_delivered_with_the_error() -> None:
    """An answer and a broken frame in one read: the answer was lost with the error, and
    its caller waited for its whole request timeout."""
    exchange = _opened()
    first = exchange.request(ApiKey.METADATA, 12, "first", _decode)
    exchange.request(ApiKey.METADATA, 12, "second", _decode)
    found = exchange.receive(_answer(0) + struct.pack(">i", -7))
    assert found[0] == Answer(first, _answer(0)[4:])
    assert isinstance(found[1], Broken) and "negative frame size -7" in str(found[1].error)
    assert len(found) == 2
    assert [item.token for item in exchange.in_flight] == ["second"]


def test_answers_are_handshake_sized_until_negotiated() -> None:
    exchange = _opened(handshake_limit=64, max_frame_size=1 << 20)
    exchange.request(ApiKey.API_VERSIONS, 3, None, _decode)
    assert isinstance(_refusal(exchange, _answer(0, 100)), FrameTooLargeError)
    exchange = _opened(handshake_limit=64, max_frame_size=1 << 20)
    exchange.negotiated()
    item = exchange.request(ApiKey.METADATA, 12, None, _decode)
    assert exchange.receive(_answer(0, 100)) == [Answer(item, _answer(0, 100)[4:])]


def test_frames_nobody_asked_for() -> None:
    exchange = _opened()
    exchange.request(ApiKey.METADATA, 12, None, _decode)
    assert "correlation id 7 arrived, which no request" in str(_refusal(exchange, _answer(7)))
    assert "nobody asked for" in str(_refusal(_opened(), _answer(0)))
    exchange = _opened()
    exchange.request(ApiKey.METADATA, 12, None, _decode)
    assert "too short for a correlation id" in str(_refusal(exchange, frame(b"\x00\x01")))


def test_raw_sasl_tokens_arrive_as_raw_frames_until_negotiated() -> None:
    exchange = _opened()
    exchange.raw()
    assert exchange.receive(frame(b"token")) == [RawFrame(b"token")]
    exchange.negotiated()
    assert "nobody asked for" in str(_refusal(exchange, frame(b"late")))


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
