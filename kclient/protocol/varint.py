"""Unsigned varints (KIP-482): 7 bits a byte, low group first, high bit = more."""

from __future__ import annotations

from kclient.errors import EncodeError, InvalidVarintError, TruncatedMessageError

__all__ = ["UVARINT_SMALL", "read_uvarint", "write_uvarint"]

#: ``UVARINT_SMALL[n]`` is the one-byte encoding of ``n`` (0 to 127).
UVARINT_SMALL = tuple(bytes([i]) for i in range(128))

def write_uvarint(value: int) -> bytes:
    """Encode an unsigned varint (7 bits a byte, low group first)."""
    if value < 128:
        if value < 0:
            raise EncodeError(f"unsigned varint cannot hold {value}")
        return UVARINT_SMALL[value]
    out = bytearray()
    while value >= 0x80:
        out.append((value & 0x7F) | 0x80)
        value >>= 7
    out.append(value)
    return bytes(out)


def read_uvarint(buf: bytes, pos: int, max_bytes: int = 5) -> tuple[int, int]:
    """Decode an unsigned varint at ``pos``; returns ``(value, new_pos)``."""
    result = 0
    shift = 0
    start = pos
    end = len(buf)
    while True:
        if pos >= end:
            raise TruncatedMessageError("data ended inside a varint", start)
        byte = buf[pos]
        pos += 1
        result |= (byte & 0x7F) << shift
        if not byte & 0x80:
            return result, pos
        shift += 7
        if pos - start >= max_bytes:
            raise InvalidVarintError(f"varint longer than {max_bytes} bytes", start)

