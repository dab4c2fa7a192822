"""Compiled codecs: the generated decoder and encoder of one message version."""

from __future__ import annotations

import gc
import struct
from collections.abc import Callable

from kclient.errors import EncodeError, ProtocolError, TruncatedMessageError, UnknownMessageError
from kclient.protocol.classgen import message_classes
from kclient.protocol.emitter import OFFSET_LOCAL, SourceEmitter
from kclient.protocol.generated import failure_offset, run_generated
from kclient.protocol.message import Message
from kclient.protocol.schema import MessageSpec

__all__ = ["CompiledMessage", "compile_message"]

# Decoding at least this many bytes pauses the cyclic collector: from about 8 KiB
# a decode allocates in the order of the collector's 700-allocation threshold
# (10-20 bytes an object), and letting it run mid-decode scans a half-built answer
# that frees nothing.  Measured (benchmarks/bench_codec.py messages, results kept
# or dropped): 20-30% off the 18-34 KB Fetch and ListOffsets requests, 10% off
# OffsetCommit, no change at 7 KB and below; the pause itself costs ~0.1 us.
_PAUSE_GC_ABOVE = 8 * 1024


class CompiledMessage:
    """The specialised encoder and decoder of one message at one version."""

    __slots__ = ("_decode", "_encode", "filename", "message_class", "name", "source",
                 "version")

    def __init__(self, spec: MessageSpec, version: int, classes: dict[str, type[Message]]):
        if version not in spec.valid:
            raise UnknownMessageError(f"{spec.name} has no version {version} (valid: "
                                      f"{spec.valid})")
        self.name = spec.name
        self.version = version
        gen = SourceEmitter(spec, version, classes)
        root = gen.emit_struct(spec.root)
        self.source = "\n".join(gen.lines)
        self.filename = run_generated(self.source, gen.env,
                                      f"decode/encode {spec.name} v{version}", OFFSET_LOCAL)
        self._decode: Callable[[bytes, int, int], tuple[Message, int]] = gen.env[f"_dec_{root}"]
        self._encode: Callable[[Message, bytearray], None] = gen.env[f"_enc_{root}"]
        self.message_class = classes[spec.root.name]

    def decode_from(self, data: bytes, pos: int = 0) -> tuple[Message, int]:
        """Decode one message starting at ``pos``; returns it and the offset after it.

        A low-level error escaping the generated decoder becomes a
        :class:`~kclient.errors.ProtocolError` with the offset; it keeps the
        traceback into the generated code, so the failing line shows.
        """
        try:
            return self._decode(data, pos, len(data))
        except ValueError as exc:  # UnicodeDecodeError included
            if isinstance(exc, ProtocolError):
                raise
            error = self._failure(exc, len(data))
        except (struct.error, IndexError) as exc:
            error = self._failure(exc, len(data))
        raise error from None  # with the traceback into the generated code

    def _failure(self, exc: Exception, size: int) -> ProtocolError:
        """The :class:`~kclient.errors.ProtocolError` of a low-level error ``exc``
        escaping the generated decoder, carrying ``exc``'s traceback and offset."""
        tb = exc.__traceback__
        error: ProtocolError
        if isinstance(exc, (struct.error, IndexError)):
            error = TruncatedMessageError(f"{self.name} v{self.version}: data ended early "
                                          f"({size} bytes)", failure_offset(tb))
        elif isinstance(exc, UnicodeDecodeError):
            error = ProtocolError(f"{self.name} v{self.version}: string is not valid UTF-8",
                                  failure_offset(tb))
        else:
            error = ProtocolError(f"{self.name} v{self.version}: {exc}", failure_offset(tb))
        return error.with_traceback(tb)

    def decode(self, data: bytes | bytearray | memoryview) -> Message:
        """Decode exactly one message; trailing bytes are an error."""
        # The work of decode_from, inlined: this is the hot path of small answers.
        buf = data if type(data) is bytes else bytes(data)
        size = len(buf)
        try:
            if size < _PAUSE_GC_ABOVE or not gc.isenabled():
                message, end = self._decode(buf, 0, size)
            else:
                gc.disable()
                try:
                    message, end = self._decode(buf, 0, size)
                finally:
                    gc.enable()
        except ValueError as exc:  # UnicodeDecodeError included
            if isinstance(exc, ProtocolError):
                raise
            error = self._failure(exc, size)
        except (struct.error, IndexError) as exc:
            error = self._failure(exc, size)
        else:
            if end == size:
                return message
            raise ProtocolError(f"{self.name} v{self.version}: {size - end} unexpected "
                                "trailing bytes", end)
        raise error from None  # with the traceback into the generated code

    def encode_into(self, value: object, out: bytearray) -> None:
        """Append the encoding of ``value`` to ``out``."""
        message = self.message_class.from_value(value)
        try:
            self._encode(message, out)
        except (struct.error, TypeError, AttributeError, OverflowError,
                UnicodeEncodeError) as exc:
            raise EncodeError(f"cannot encode {self.name} v{self.version}: {exc}") from None

    def encode(self, value: object) -> bytes:
        """Encode a message (instance or mapping) to bytes."""
        out = bytearray()
        self.encode_into(value, out)
        return bytes(out)


def compile_message(spec: MessageSpec, version: int,
                    classes: dict[str, type[Message]] | None = None) -> CompiledMessage:
    """Compile ``spec`` at ``version`` (callers cache the result)."""
    return CompiledMessage(spec, version, classes if classes is not None else
                           message_classes(spec))
