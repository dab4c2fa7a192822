"""Kafka wire format: schemas, codecs, headers and framing (pure, no I/O).

``encode(name, version, value)`` and ``decode(name, version, data)`` work for
every message in the default registry (the specs kclient ships, plus any
directory loaded with :func:`load_directory`).

Malformed bytes raise a :class:`~kclient.errors.ProtocolError` subclass naming
the byte offset; lengths are checked against the bytes left before anything is
allocated.  Bytes left over after a complete message are an error for
:func:`decode` and :func:`decode_response` (a client must not guess what they
mean), while :func:`decode_request` ignores them unless ``strict=True``, as
Kafka brokers do.  Re-encoding a decoded message gives back its bytes, unknown
tagged fields and tags written at their default included.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any

from kclient._lazy import DeferredModule, resolve
from kclient.errors import ProtocolError

# Light modules load at once: the negotiation core needs the catalog and the
# constants without paying for the codec compiler.
from kclient.protocol.catalog import ApiInfo, Catalog, default_catalog, load_catalog
from kclient.protocol.constants import DEFAULT_MAX_FRAME_SIZE, ApiKey, ErrorCode
from kclient.protocol.framing import FrameDecoder, frame

if TYPE_CHECKING:
    from kclient.protocol import headers as _headers
    from kclient.protocol import registry as _registry
    from kclient.protocol.codec import CompiledMessage, Message, read_uvarint, write_uvarint
    from kclient.protocol.headers import (
        decode_request,
        decode_request_header,
        decode_response,
        decode_response_body,
        decode_response_with_layout,
        encode_request,
        encode_response,
        is_flexible,
        request_header_version,
        response_body_version,
        response_header_version,
    )
    from kclient.protocol.registry import Registry, default_registry
    from kclient.protocol.schema import MessageSpec, parse_spec
else:
    # Used by the functions below; loaded on their first call.
    _headers = DeferredModule("kclient.protocol.headers")
    _registry = DeferredModule("kclient.protocol.registry")

# The codec, headers, registry and schema parser load on first use.
_LAZY = {
    **dict.fromkeys(("CompiledMessage", "Message", "read_uvarint", "write_uvarint"),
                    "kclient.protocol.codec"),
    **dict.fromkeys(("decode_request", "decode_request_header", "decode_response",
                     "decode_response_body", "decode_response_with_layout", "encode_request",
                     "encode_response", "is_flexible", "request_header_version",
                     "response_body_version", "response_header_version"),
                    "kclient.protocol.headers"),
    **dict.fromkeys(("Registry", "default_registry"), "kclient.protocol.registry"),
    **dict.fromkeys(("MessageSpec", "parse_spec"), "kclient.protocol.schema"),
}


def __getattr__(name: str) -> Any:
    return resolve(__name__, _LAZY, globals(), name)


__all__ = [
    "DEFAULT_MAX_FRAME_SIZE",
    "ApiInfo",
    "ApiKey",
    "Catalog",
    "CompiledMessage",
    "ErrorCode",
    "FrameDecoder",
    "Message",
    "MessageSpec",
    "Registry",
    "decode",
    "decode_request",
    "decode_request_header",
    "decode_response",
    "decode_response_body",
    "decode_response_with_layout",
    "default_catalog",
    "default_registry",
    "encode",
    "encode_request",
    "encode_response",
    "frame",
    "is_flexible",
    "load_catalog",
    "load_directory",
    "message_class",
    "parse_spec",
    "read_uvarint",
    "request_header_version",
    "response_body_version",
    "response_header_version",
    "write_uvarint",
]


def encode(name: str, version: int, value: Mapping[str, Any] | Message | None = None,
           **fields: Any) -> bytes:
    """Encode message ``name`` (e.g. ``"ApiVersionsRequest"``) at ``version``.

    ``value`` is a Message or a mapping of snake_case (or Kafka) field names;
    keyword arguments may be given instead.  Missing fields take their defaults.
    """
    if value is None:
        value = fields
    elif fields:
        base = value if isinstance(value, Mapping) else value.to_dict()
        value = {**base, **fields}
    codec = _compiled((name, version)) or _codec(name, version)
    return codec.encode(value)


def decode(name: str, version: int, data: bytes | bytearray | memoryview) -> Message:
    """Decode exactly one ``name`` message of ``version`` from ``data``.

    Raises :class:`~kclient.errors.UnknownMessageError` for an unknown name or
    version and a :class:`~kclient.errors.ProtocolError` subclass (with the
    offset) for malformed data, including trailing bytes after the message.

    ``ApiVersionsResponse`` is read as Kafka's Java client reads it: in the v0
    layout when ``version``'s layout does not parse (how brokers write
    UNSUPPORTED_VERSION answers); :func:`decode_response_body` also returns the
    layout that was read.
    """
    codec = _compiled((name, version))
    if name == "ApiVersionsResponse":
        if codec is not None:
            try:
                return codec.decode(data)
            except ProtocolError:
                pass  # decode_response_body reads it again, and in the v0 layout if need be
        return _headers.decode_response_body(ApiKey.API_VERSIONS, version, data)[0]
    return (codec or _codec(name, version)).decode(data)


def _codec(name: str, version: int) -> CompiledMessage:
    """The default registry's codec (compiled on first use); on the first call, also
    points :func:`_compiled` at the registry's cache of compiled codecs."""
    global _compiled
    registry = _registry.default_registry()
    # Registry.codec's own cache, read without a call: it holds current codecs only
    # (adding a spec removes that message's), so a hit needs no other check.
    _compiled = registry._codecs.get
    return registry.codec(name, version)


def _nothing_compiled(key: tuple[str, int]) -> CompiledMessage | None:
    return None


#: The default registry's compiled codec of (name, version), or None: a dict lookup.
_compiled: Callable[[tuple[str, int]], CompiledMessage | None] = _nothing_compiled


def message_class(name: str) -> type[Message]:
    """The class of message ``name``; instantiate it with keyword arguments."""
    return _registry.default_registry().message_class(name)


def load_directory(directory: str | Path) -> list[MessageSpec]:
    """Add every spec in ``directory`` to the default registry."""
    return _registry.default_registry().load_directory(directory)
