"""Kafka framing: a big-endian int32 size, then that many bytes.

:class:`FrameDecoder` is sans-I/O: feed it whatever the socket produced and
iterate the complete frames.  A size over the configured maximum is rejected
from the four size bytes alone, before any buffer of that size exists.
"""

from __future__ import annotations

import struct

from kclient.errors import FrameTooLargeError, InvalidLengthError
from kclient.options import Option, Text
from kclient.protocol.constants import DEFAULT_MAX_FRAME_SIZE

__all__ = ["DEFAULT_MAX_FRAME_SIZE", "FrameDecoder", "frame"]

_SIZE = struct.Struct(">i")


def frame(payload: bytes | bytearray | memoryview) -> bytes:
    """Prefix ``payload`` with its int32 size."""
    return _SIZE.pack(len(payload)) + bytes(payload)


# The first four bytes of an HTTP answer ("HTTP/1.1 400 ...") or of a request
# that some servers echo; and TLS record types (alert 21, handshake 22 ...).
_HTTP_STARTS = frozenset({b"HTTP", b"<htm", b"<!DO"})
_TLS_RECORD_TYPES = frozenset({20, 21, 22, 23})


class FrameDecoder:
    """Split a byte stream into frames.

    ``offset`` in errors counts bytes from the start of the stream.  A
    zero-size frame is yielded as ``b""`` (brokers use it to say "request not
    supported").  After an error the decoder is poisoned: close the connection.
    """

    def __init__(self, max_frame_size: int = DEFAULT_MAX_FRAME_SIZE, *,
                 limit_option: str | None = "max_frame_size", tls_option: str = "tls") -> None:
        if max_frame_size <= 0:
            raise ValueError("max_frame_size must be positive")
        self.max_frame_size = max_frame_size
        # The options (parameter names) errors point to (None: the caller cannot set it).
        self.limit_option = limit_option
        self.tls_option = tls_option
        self._buffer = bytearray()
        self._consumed = 0
        self._error: Exception | None = None

    def _not_kafka(self, head: bytes) -> str | None:
        """What the peer speaks instead of Kafka, when its first bytes say (else ``None``).

        Such an error is about the peer, not a place in the stream: it names no offset.
        """
        if head[:4] in _HTTP_STARTS:
            return (f"the peer answered in HTTP ({head.decode('ascii')!r}...), not Kafka: "
                    "this address is a web server or proxy; check the port")
        if head[0] in _TLS_RECORD_TYPES and head[1] == 3 and head[2] <= 4:
            return Text("the peer answered with a TLS record (bytes "
                        f"{head[:3].hex(' ')}), not Kafka: this listener expects TLS; connect "
                        "with TLS (", Option(self.tls_option), ")")
        return None

    def _oversize(self, size: int) -> str:
        """Why a size prefix is too large, when the peer seems to speak Kafka."""
        text = f"frame of {size} bytes exceeds the maximum of {self.max_frame_size} bytes"
        if self.limit_option is not None:
            return Text(text, " (raise ", Option(self.limit_option),
                        " if this peer really sends such frames)")
        return text

    def next_size(self) -> int | None:
        """The size the next frame announces, once its 4-byte prefix has arrived.

        Lets a caller refuse an answer by its announced size before its bytes
        are buffered (``None`` while fewer than 4 bytes are waiting).
        """
        if self._error is not None or len(self._buffer) < 4:
            return None
        return int(_SIZE.unpack_from(self._buffer, 0)[0])

    def next_head(self, count: int) -> bytes | None:
        """The first ``count`` bytes of the next frame's payload, once they have arrived.

        With :meth:`next_size`, lets a caller judge a frame by its header (whose
        answer it is) before the rest is buffered.  ``None`` while fewer have
        arrived, or when the frame is shorter than ``count`` bytes.
        """
        size = self.next_size()
        if size is None or size < count or len(self._buffer) < 4 + count:
            return None
        return bytes(self._buffer[4:4 + count])

    @property
    def offset(self) -> int:
        """Bytes of the stream consumed so far (where the next frame starts)."""
        return self._consumed

    @property
    def buffered(self) -> int:
        """Bytes received but not yet returned as part of a frame."""
        return len(self._buffer)

    def feed(self, data: bytes | bytearray | memoryview) -> None:
        """Add bytes read from the stream."""
        if self._error is not None:
            raise self._error
        self._buffer += data

    def __iter__(self) -> FrameDecoder:
        return self

    def __next__(self) -> bytes:
        if self._error is not None:
            raise self._error
        buffer = self._buffer
        if len(buffer) < 4:
            raise StopIteration
        (size,) = _SIZE.unpack_from(buffer, 0)
        if size < 0:
            self._error = InvalidLengthError(f"negative frame size {size}", self._consumed)
            raise self._error
        if size > self.max_frame_size:
            alien = self._not_kafka(bytes(buffer[:4]))
            self._error = (FrameTooLargeError(alien) if alien is not None else
                           FrameTooLargeError(self._oversize(size), self._consumed))
            raise self._error
        end = 4 + size
        if len(buffer) < end:
            raise StopIteration
        payload = bytes(buffer[4:end])
        del buffer[:end]
        self._consumed += end
        return payload
