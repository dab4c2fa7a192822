"""Large decodes pause the cyclic collector and always give it back as they found it."""

from __future__ import annotations

import gc
from collections.abc import Iterator

import pytest

from kclient.errors import ProtocolError, TruncatedMessageError
from kclient.protocol import decode, encode
from kclient.protocol.compiled import _PAUSE_GC_ABOVE


def _big_list_offsets() -> bytes:
    value = {"replica_id": -1, "isolation_level": 0, "topics": [
        {"name": f"topic-{t:04d}", "partitions": [
            {"partition_index": p, "current_leader_epoch": 1, "timestamp": -1}
            for p in range(20)]} for t in range(40)]}
    data = encode("ListOffsetsRequest", 8, value)
    assert len(data) >= _PAUSE_GC_ABOVE
    return data


@pytest.fixture
def collector_on() -> Iterator[None]:
    was = gc.isenabled()
    gc.enable()
    try:
        yield
    finally:
        if not was:
            gc.disable()


def test_a_large_decode_leaves_the_collector_on(collector_on: None) -> None:
    data = _big_list_offsets()
    seen: list[bool] = []
    gc.callbacks.append(lambda phase, info: seen.append(phase == "start"))
    try:
        message = decode("ListOffsetsRequest", 8, data)
    finally:
        gc.callbacks.pop()
    assert len(message.topics) == 40  # type: ignore[attr-defined]
    assert gc.isenabled()
    assert not seen  # no collection ran while the answer was being built


def test_a_failing_large_decode_leaves_the_collector_on(collector_on: None) -> None:
    data = _big_list_offsets()
    with pytest.raises(ProtocolError, match="offset"):
        decode("ListOffsetsRequest", 8, data[:-3])
    with pytest.raises(TruncatedMessageError):
        decode("ListOffsetsRequest", 8, data[:-1])
    with pytest.raises(ProtocolError, match="trailing"):
        decode("ListOffsetsRequest", 8, data + b"\0")
    assert gc.isenabled()


def test_a_collector_turned_off_by_the_caller_stays_off() -> None:
    was = gc.isenabled()
    gc.disable()
    try:
        decode("ListOffsetsRequest", 8, _big_list_offsets())
        assert not gc.isenabled()
    finally:
        if was:
            gc.enable()
