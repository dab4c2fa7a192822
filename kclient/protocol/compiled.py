"""Compiled codecs: the generated decoder and encoder of one message version."""

from __future__ import annotations

import gc
import struct
from collections.abc import Callable
from types import TracebackType

from kclient.errors import EncodeError, ProtocolError, TruncatedMessageError, UnknownMessageError
from kclient.protocol.classgen import message_classes
from kclient.protocol.emitter import OFFSET_LOCAL, SourceEmitter
from kclient.protocol.generated import failure_offset, run_generated
from kclient.protocol.message import Message
from kclient.protocol.schema import MessageSpec

__all__ = ["CompiledMessage", "compile_message"]

_PAUSE_GC_ABOVE = 64 * 1024


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
        tb: TracebackType | None
        try:
            return self._decode(data, pos, len(data))
        except (struct.error, IndexError) as exc:
            tb = exc.__traceback__
            error: ProtocolError = TruncatedMessageError(
                f"{self.name} v{self.version}: data ended early ({len(data)} bytes)",
                failure_offset(tb))
        except UnicodeDecodeError as exc:
            tb = exc.__traceback__
            error = ProtocolError(f"{self.name} v{self.version}: string is not valid UTF-8",
                                  failure_offset(tb))
        except ValueError as exc:
            if isinstance(exc, ProtocolError):
                raise
            tb = exc.__traceback__
            error = ProtocolError(f"{self.name} v{self.version}: {exc}",
                                  failure_offset(tb))
        raise error.with_traceback(tb) from None

    def decode(self, data: bytes | bytearray | memoryview) -> Message:
        """Decode exactly one message; trailing bytes are an error."""
        buf = bytes(data)
        if len(buf) >= _PAUSE_GC_ABOVE and gc.isenabled():
            # Decoding allocates many small objects that all survive; letting the
            # cyclic collector scan them mid-decode costs ~20% and frees nothing.
            gc.disable()
            try:
                message, end = self.decode_from(buf, 0)
            finally:
                gc.enable()
        else:
            message, end = self.decode_from(buf, 0)
        if end != len(buf):
            raise ProtocolError(f"{self.name} v{self.version}: {len(buf) - end} unexpected "
                                "trailing bytes", end)
        return message

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
