"""Produced record sets, read the way a broker reads them before it appends them.

Pure functions over bytes: :func:`read_record_set` walks the ``records`` field of a
Produce request (v2 record batches, or magic 0/1 message sets) and returns one
:class:`Batch` per batch with what the rest of the emulator needs (offset count,
timestamps, producer id and epoch, sequence, compression codec, transactional and
control flags).  Everything a client controls is bounded before it is used, the way
Kafka bounds it, and a record set the broker would refuse raises
:class:`RecordsError` carrying the error code Kafka answers with:

* ``max.message.bytes`` (topic config, ``message.max.bytes`` broker default
  1048588): a batch (or a magic 0/1 wrapper message) larger than that is refused
  with MESSAGE_TOO_LARGE (Kafka's ``LogValidator``/``UnifiedLog.analyzeAndValidateRecords``:
  ``RecordTooLargeException``).
* Sizes: a batch or message whose size field is negative, smaller than its own header
  or longer than what is left is CORRUPT_MESSAGE, as Kafka's ``ByteBufferLogInputStream``
  refuses it; every walk moves forward by at least one header per step.
* A gzip'd magic 0/1 wrapper is inflated a piece at a time, never more than
  :data:`MAX_INFLATED_BYTES` in all (Kafka streams the inner messages one by one
  through ``DataLogInputStream``; the emulator counts them the same way and stops
  a decompression bomb at that bound, with CORRUPT_MESSAGE).  Inner messages
  must be uncompressed and of the wrapper's magic (Kafka's ``LogValidator``:
  "Compressed outer record has an inner record with a compressed codec").
"""

from __future__ import annotations

import struct
import zlib
from collections.abc import Iterator

import attrs

from kclient.protocol.constants import ErrorCode

__all__ = [
    "CODEC_NAMES",
    "DEFAULT_MAX_MESSAGE_BYTES",
    "MAX_INFLATED_BYTES",
    "Batch",
    "RecordsError",
    "control_batch",
    "crc32c",
    "has_compressed_legacy",
    "read_record_set",
]

#: Kafka's ``message.max.bytes`` default (1 MiB + the 12-byte log overhead), the
#: default of the ``max.message.bytes`` topic config.
DEFAULT_MAX_MESSAGE_BYTES = 1048588
#: The most bytes the emulator inflates from one compressed magic 0/1 wrapper.
MAX_INFLATED_BYTES = 64 * 1024 * 1024
#: Compression codecs by attribute value (the low three bits of a batch's attributes).
CODEC_NAMES = {0: "none", 1: "gzip", 2: "snappy", 3: "lz4", 4: "zstd"}

_LOG_OVERHEAD = 12  # offset (int64) and size (int32) before every batch or message
_V2_HEADER = 61  # a v2 batch header, through its record count
_V0_OVERHEAD = 14  # crc, magic, attributes, key and value lengths (magic 0 record overhead)
_V1_OVERHEAD = 22  # the same with the timestamp (magic 1)
_INFLATE_PIECE = 64 * 1024
_TRANSACTIONAL = 0x10
_CONTROL = 0x20


class RecordsError(Exception):
    """A produced record set a broker refuses: ``code`` is Kafka's error, the text says why."""

    def __init__(self, message: str, code: int = ErrorCode.CORRUPT_MESSAGE) -> None:
        super().__init__(message)
        self.code = int(code)


@attrs.frozen
class Batch:
    """One produced batch (v2) or top-level message (magic 0/1), read but not yet placed.

    ``data`` is the batch's bytes as received; ``count`` the offsets it takes
    (records of a v2 batch, inner messages of a compressed magic 0/1 wrapper, else 1).
    """

    magic: int
    codec: int
    count: int
    max_timestamp: int
    data: bytes
    producer_id: int = -1
    producer_epoch: int = -1
    base_sequence: int = -1
    transactional: bool = False
    control: bool = False

    @property
    def codec_name(self) -> str:
        """The compression codec's name (``"zstd"``, ...)."""
        return CODEC_NAMES.get(self.codec, f"codec {self.codec}")

    @property
    def idempotent(self) -> bool:
        """True for a batch of an idempotent or transactional producer (it has a producer id)."""
        return self.magic == 2 and self.producer_id >= 0

    @property
    def last_sequence(self) -> int:
        """The sequence number of the batch's last record (wrapping as Kafka's does)."""
        return (self.base_sequence + self.count - 1) % 2**31 if self.base_sequence >= 0 else -1


def _crc32c_table() -> list[int]:
    table = []
    for byte in range(256):
        crc = byte
        for _ in range(8):
            crc = (crc >> 1) ^ 0x82F63B78 if crc & 1 else crc >> 1
        table.append(crc)
    return table


_CRC32C = _crc32c_table()


def crc32c(data: bytes) -> int:
    """CRC-32C (Castagnoli) of ``data``, the checksum of a v2 record batch."""
    crc = 0xFFFFFFFF
    for byte in data:
        crc = _CRC32C[(crc ^ byte) & 0xFF] ^ (crc >> 8)
    return crc ^ 0xFFFFFFFF


def control_batch(producer_id: int, producer_epoch: int, commit: bool, coordinator_epoch: int,
                  timestamp: int) -> Batch:
    """A transaction marker: the one-record control batch (COMMIT or ABORT) that Kafka's
    ``WriteTxnMarkers`` appends to each partition of a transaction (``MemoryRecords.
    withEndTransactionMarker``: key = version 0 and type 0 ABORT / 1 COMMIT, value = version
    0 and the coordinator epoch; transactional and control attributes set, no sequence)."""
    key = struct.pack(">hh", 0, 1 if commit else 0)
    value = struct.pack(">hi", 0, coordinator_epoch)
    # attributes, timestamp delta, offset delta (varints of 0), key and value lengths
    # (zigzag varints of 4 and 6), no headers.
    body = b"\x00\x00\x00" + bytes([len(key) * 2]) + key + bytes([len(value) * 2]) + value + b"\x00"
    record = bytes([len(body) * 2]) + body
    after_crc = struct.pack(">hiqqqhii", _TRANSACTIONAL | _CONTROL, 0, timestamp, timestamp,
                            producer_id, producer_epoch, -1, 1) + record
    size = 4 + 1 + 4 + len(after_crc)  # partition leader epoch, magic, crc, the rest
    data = (struct.pack(">qii", 0, size, 0) + b"\x02" + struct.pack(">I", crc32c(after_crc))
            + after_crc)
    return Batch(2, 0, 1, timestamp, data, producer_id, producer_epoch, -1, True, True)


def read_record_set(records: bytes, max_message_bytes: int = DEFAULT_MAX_MESSAGE_BYTES,
                    ) -> list[Batch]:
    """The batches of a produced ``records`` field, checked as a broker checks them."""
    out: list[Batch] = []
    pos = 0
    while pos < len(records):
        left = len(records) - pos
        if left < _LOG_OVERHEAD + 5:
            raise RecordsError(f"{left} bytes left at byte {pos}, less than a batch header")
        size = struct.unpack_from(">i", records, pos + 8)[0]
        if size < 0 or size > left - _LOG_OVERHEAD:
            raise RecordsError(f"batch at byte {pos} claims {size} bytes, "
                               f"{left - _LOG_OVERHEAD} are left")
        if size + _LOG_OVERHEAD > max_message_bytes:
            raise RecordsError(
                f"batch at byte {pos} is {size + _LOG_OVERHEAD} bytes, more than "
                f"max.message.bytes {max_message_bytes}", ErrorCode.MESSAGE_TOO_LARGE)
        end = pos + _LOG_OVERHEAD + size
        magic = records[pos + 16]
        if magic == 2:
            out.append(_v2_batch(records, pos, end))
        elif magic in (0, 1):
            out.append(_legacy_message(records, pos, end, magic))
        else:
            raise RecordsError(f"unknown record magic {magic} at byte {pos}")
        pos = end
    return out


def has_compressed_legacy(records: bytes) -> bool:
    """True when ``records`` starts a compressed magic 0/1 message within its first
    batches (the ones :func:`read_record_set` would inflate): a cheap look at headers."""
    pos = 0
    for _ in range(64):
        if len(records) - pos < _LOG_OVERHEAD + 6:
            return False
        size = struct.unpack_from(">i", records, pos + 8)[0]
        if records[pos + 16] < 2 and records[pos + 17] & 0x07:
            return True
        if size < 0:
            return False
        pos += _LOG_OVERHEAD + size
    return True  # many small messages: read them off the loop too


def _v2_batch(records: bytes, pos: int, end: int) -> Batch:
    if end - pos < _V2_HEADER:
        raise RecordsError(f"record batch at byte {pos} is shorter than its header")
    (attributes, last_delta, _base_ts, max_ts, producer_id, producer_epoch, base_sequence,
     _count) = struct.unpack_from(">hiqqqhii", records, pos + 21)
    if last_delta < 0:
        raise RecordsError(f"record batch at byte {pos} has lastOffsetDelta {last_delta}")
    return Batch(2, attributes & 0x07, last_delta + 1, max_ts, records[pos:end], producer_id,
                 producer_epoch, base_sequence, bool(attributes & _TRANSACTIONAL),
                 bool(attributes & _CONTROL))


def _legacy_fields(data: bytes, pos: int, end: int, magic: int) -> tuple[int, int, int, int]:
    """``(attributes, timestamp, value offset, value length)`` of the message at ``pos``."""
    overhead = _V1_OVERHEAD if magic == 1 else _V0_OVERHEAD
    if end - pos - _LOG_OVERHEAD < overhead:
        raise RecordsError(f"message at byte {pos} is shorter than its header")
    attributes = data[pos + 17]
    timestamp = struct.unpack_from(">q", data, pos + 18)[0] if magic == 1 else -1
    key_at = pos + (26 if magic == 1 else 18)
    key_len = struct.unpack_from(">i", data, key_at)[0]
    value_at = key_at + 4 + max(key_len, 0)
    if key_len < -1 or value_at + 4 > end:
        raise RecordsError(f"message at byte {pos} has a key of {key_len} bytes that does "
                           "not fit")
    value_len = struct.unpack_from(">i", data, value_at)[0]
    if value_len < -1 or value_at + 4 + max(value_len, 0) > end:
        raise RecordsError(f"message at byte {pos} has a value of {value_len} bytes that "
                           "does not fit")
    return attributes, timestamp, value_at + 4, value_len


def _legacy_message(records: bytes, pos: int, end: int, magic: int) -> Batch:
    attributes, timestamp, value_at, value_len = _legacy_fields(records, pos, end, magic)
    codec = attributes & 0x07
    count = 1
    if codec:
        if magic == 0:
            raise RecordsError("compressed magic 0 message sets are not emulated; send "
                               "magic 1 or record batches (magic 2)")
        if codec != 1:
            raise RecordsError(f"compressed message sets (magic 1) in {CODEC_NAMES.get(codec)} "
                               "are not emulated; send gzip or record batches (magic 2)")
        count = _gzip_inner_count(records[value_at:value_at + max(value_len, 0)], magic)
    return Batch(magic, codec, count, timestamp, records[pos:end])


class _Inflater:
    """Reads a gzip stream a piece at a time, never more than :data:`MAX_INFLATED_BYTES`."""

    def __init__(self, data: bytes) -> None:
        self._inflate = zlib.decompressobj(16 + zlib.MAX_WBITS)
        self._input = data
        self._buffer = bytearray()
        self.produced = 0

    def _fill(self, want: int) -> None:
        while len(self._buffer) < want:
            if self._inflate.eof:
                return
            source = self._inflate.unconsumed_tail or self._input
            self._input = b""
            if not source:
                return
            try:
                piece = self._inflate.decompress(source, _INFLATE_PIECE)
            except zlib.error as exc:
                raise RecordsError(f"gzip message set does not decompress: {exc}") from None
            self.produced += len(piece)
            if self.produced > MAX_INFLATED_BYTES:
                raise RecordsError(f"gzip message set inflates to more than "
                                   f"{MAX_INFLATED_BYTES} bytes (the emulator's bound)")
            self._buffer += piece

    def read(self, count: int) -> bytes:
        """Up to ``count`` bytes (fewer only at the end of the stream)."""
        self._fill(count)
        out = bytes(self._buffer[:count])
        del self._buffer[:count]
        return out

    def skip(self, count: int) -> int:
        """Drop ``count`` bytes; return how many were there."""
        dropped = 0
        while dropped < count:
            self._fill(min(count - dropped, _INFLATE_PIECE))
            if not self._buffer:
                break
            take = min(count - dropped, len(self._buffer))
            del self._buffer[:take]
            dropped += take
        return dropped


def _inner_messages(inflater: _Inflater) -> Iterator[tuple[int, bytes]]:
    """``(size, first bytes)`` of every inner message, the walk always moving forward."""
    while True:
        head = inflater.read(_LOG_OVERHEAD + 6)
        if not head:
            return
        if len(head) < _LOG_OVERHEAD + 6:
            raise RecordsError("gzip message set ends inside an inner message's header")
        size = struct.unpack_from(">i", head, 8)[0]
        if size < _V0_OVERHEAD:
            raise RecordsError(f"inner message of {size} bytes is smaller than the "
                               f"{_V0_OVERHEAD}-byte minimum")
        yield size, head
        rest = size - 6
        if inflater.skip(rest) != rest:
            raise RecordsError("gzip message set ends inside an inner message")


def _gzip_inner_count(value: bytes, magic: int) -> int:
    """How many messages a gzip'd wrapper holds, checked as Kafka checks them."""
    count = 0
    for _size, head in _inner_messages(_Inflater(value)):
        inner_magic, inner_attributes = head[16], head[17]
        if inner_magic != magic:
            raise RecordsError(f"inner message of magic {inner_magic} in a magic {magic} "
                               "wrapper", ErrorCode.INVALID_RECORD)
        if inner_attributes & 0x07:
            raise RecordsError("compressed wrapper holds an inner message that is itself "
                               "compressed", ErrorCode.INVALID_RECORD)
        count += 1
    if count == 0:
        raise RecordsError("gzip message set holds no whole message")
    return count
