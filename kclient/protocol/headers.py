"""Request and response headers, with Kafka's special cases.

* A request uses header v2 exactly when its API version is flexible, else v1
  (v0, without client id, only for ControlledShutdown v0).  The client id stays
  a classic int16-length string even in v2, so any broker can read it.
* A response uses header v1 when its version is flexible, else v0 — except
  ApiVersionsResponse, whose header is always v0.
* An ApiVersionsResponse carrying UNSUPPORTED_VERSION (35) is laid out as v0,
  whatever version was asked (:func:`response_body_version`);
  :func:`encode_response` writes it so.
* Reading an ApiVersionsResponse whose asked layout does not parse (or has no
  schema) falls back to the v0 layout, as Kafka's Java client does
  (``ApiVersionsResponse.parse``), when that v0 reading is an error answer (a
  success is always in the asked layout; accepting it as v0 would hide a
  truncated v1/v2 answer).
  That reads every error-35 body: a v0 body never parses in a later layout (v1
  and v2 add a trailing field; in v3+ the first byte of a v0 int32 count, 0 for
  any real count, reads as a null list).  :func:`decode_response_body` and
  :func:`decode_response_with_layout` say which layout was read.
"""

from __future__ import annotations

import struct
from collections.abc import Mapping
from typing import Any

from kclient.errors import (
    ProtocolError,
    TruncatedMessageError,
    UnknownMessageError,
    UnknownRequestError,
)
from kclient.protocol.catalog import default_catalog
from kclient.protocol.codec import CompiledMessage, Message
from kclient.protocol.constants import ApiKey, ErrorCode
from kclient.protocol.registry import Registry, default_registry

__all__ = [
    "Route",
    "decode_request",
    "decode_request_header",
    "decode_response",
    "decode_response_body",
    "decode_response_with_layout",
    "encode_request",
    "encode_response",
    "is_flexible",
    "request_header_version",
    "response_body_version",
    "response_header_version",
    "route",
]

_KEY_VERSION = struct.Struct(">hh")


def is_flexible(api_key: int, api_version: int, registry: Registry | None = None) -> bool:
    """Whether ``api_version`` of ``api_key`` uses the flexible (KIP-482) encoding."""
    info = default_catalog().by_key(api_key)
    if info is None:
        return False
    registry = registry or default_registry()
    name = f"{info.name}Request"
    if name in registry:
        return registry.spec(name).is_flexible(api_version)
    return info.is_flexible(api_version)


def request_header_version(api_key: int, api_version: int,
                           registry: Registry | None = None) -> int:
    """0, 1 or 2: the request header version this request uses."""
    if api_key == ApiKey.CONTROLLED_SHUTDOWN and api_version == 0:
        return 0
    return 2 if is_flexible(api_key, api_version, registry) else 1


def response_header_version(api_key: int, api_version: int,
                            registry: Registry | None = None) -> int:
    """0 or 1: the response header version of this response."""
    if api_key == ApiKey.API_VERSIONS:
        return 0
    return 1 if is_flexible(api_key, api_version, registry) else 0


def response_body_version(api_key: int, api_version: int, error_code: int | None) -> int:
    """The layout of a response body: ``api_version``, except v0 for an
    ApiVersionsResponse carrying UNSUPPORTED_VERSION (35), which Kafka writes in
    the v0 layout whatever was asked so that any client can read it."""
    if api_key == ApiKey.API_VERSIONS and error_code == ErrorCode.UNSUPPORTED_VERSION:
        return 0
    return api_version


def _api_name(api_key: int) -> str:
    info = default_catalog().by_key(api_key)
    if info is None:
        raise UnknownMessageError(f"unknown Kafka API key {api_key}")
    return info.name


def encode_request(api_key: int, api_version: int, correlation_id: int, client_id: str | None,
                   body: Mapping[str, Any] | Message, registry: Registry | None = None) -> bytes:
    """Header plus body of a request, without the size prefix."""
    registry = registry or default_registry()
    header_version = request_header_version(api_key, api_version, registry)
    out = bytearray()
    registry.codec("RequestHeader", header_version).encode_into(
        {"request_api_key": api_key, "request_api_version": api_version,
         "correlation_id": correlation_id, "client_id": client_id}, out)
    registry.codec(f"{_api_name(api_key)}Request", api_version).encode_into(body, out)
    return bytes(out)


def encode_response(api_key: int, api_version: int, correlation_id: int,
                    body: Mapping[str, Any] | Message,
                    registry: Registry | None = None) -> bytes:
    """Header plus body of a response, without the size prefix (server side).

    An ApiVersionsResponse with error UNSUPPORTED_VERSION (35) is written in the
    v0 body layout whatever ``api_version`` is (see :func:`response_body_version`).
    """
    registry = registry or default_registry()
    out = bytearray()
    header_version = response_header_version(api_key, api_version, registry)
    registry.codec("ResponseHeader", header_version).encode_into(
        {"correlation_id": correlation_id}, out)
    name = f"{_api_name(api_key)}Response"
    body_version = api_version
    if api_key == ApiKey.API_VERSIONS:
        body = registry.message_class(name).from_value(body)
        body_version = response_body_version(api_key, api_version,
                                             getattr(body, "error_code", None))
    registry.codec(name, body_version).encode_into(body, out)
    return bytes(out)


def decode_request_header(data: bytes, registry: Registry | None = None) -> tuple[Message, int]:
    """Decode only the header of a request; returns it and the body offset."""
    registry = registry or default_registry()
    if len(data) < 4:
        raise TruncatedMessageError("request shorter than its api key and version", len(data))
    api_key, api_version = _KEY_VERSION.unpack_from(data, 0)
    header_version = request_header_version(api_key, api_version, registry)
    return registry.codec("RequestHeader", header_version).decode_from(bytes(data), 0)


def decode_request(data: bytes | bytearray | memoryview, registry: Registry | None = None,
                   *, strict: bool = False) -> tuple[Message, Message]:
    """Decode a whole request (server side): ``(header, body)``.

    Like a Kafka broker, bytes after the body are ignored unless ``strict``
    (librdkafka, for one, pads some requests).  A request whose API key or
    version has no schema in ``registry`` raises
    :class:`~kclient.errors.UnknownRequestError` carrying the decoded header, so
    the server can still answer it (ApiVersions: error 35 in the v0 layout).
    """
    registry = registry or default_registry()
    buf = bytes(data)
    if len(buf) < 4:
        raise TruncatedMessageError("request shorter than its api key and version", len(buf))
    api_key, api_version = _KEY_VERSION.unpack_from(buf, 0)
    info = default_catalog().by_key(api_key)
    name = f"{info.name}Request" if info is not None else None
    if name is None or name not in registry or api_version not in registry.spec(name).valid:
        # No schema: read the v1 header (a prefix of v2) so the caller can still answer.
        header, _ = registry.codec("RequestHeader", 1).decode_from(buf, 0)
        what = (f"API key {api_key}" if info is None else
                f"{info.name} (key {api_key}) v{api_version}" if name in registry else
                f"{info.name} (key {api_key})")
        raise UnknownRequestError(
            f"no request schema for {what}; the header is attached so a server can answer "
            "(load more specs with kclient.protocol.load_directory)", header)
    header, pos = decode_request_header(buf, registry)
    codec = registry.codec(name, api_version)
    body, end = codec.decode_from(buf, pos)
    if strict and end != len(buf):
        raise ProtocolError(f"{codec.name} v{api_version}: {len(buf) - end} unexpected "
                            "trailing bytes", end)
    return header, body


def _decode_body(api_key: int, api_version: int, buf: bytes, pos: int,
                 registry: Registry) -> tuple[Message, int]:
    """One response body from ``pos`` to the end of ``buf``: ``(body, layout version)``."""
    name = f"{_api_name(api_key)}Response"
    try:
        return _decode_exact(registry, name, api_version, buf, pos), api_version
    except (ProtocolError, UnknownMessageError) as exc:
        if api_key != ApiKey.API_VERSIONS or api_version == 0:
            raise
        # As Kafka's Java client reads it (ApiVersionsResponse.parse): a body that
        # does not parse in the asked layout (or whose layout kclient has no schema
        # for) is read again as v0, which is how a broker writes error 35.  Unlike
        # Java, only an error answer is taken so: a v1/v2 success cut before its
        # last field would otherwise pass as v0 and hide the truncation.
        try:
            body = _decode_exact(registry, name, 0, buf, pos)
        except ProtocolError:
            raise exc from None
        if not getattr(body, "error_code", 0):
            raise exc from None
        return body, 0


def _decode_exact(registry: Registry, name: str, version: int, buf: bytes, pos: int
                  ) -> Message:
    codec = registry.codec(name, version)
    if pos == 0:
        return codec.decode(buf)  # checks trailing bytes itself
    body, end = codec.decode_from(buf, pos)
    if end != len(buf):
        raise ProtocolError(f"{codec.name} v{version}: {len(buf) - end} unexpected "
                            "trailing bytes", end)
    return body


def decode_response_body(api_key: int, api_version: int, data: bytes | bytearray | memoryview,
                         registry: Registry | None = None) -> tuple[Message, int]:
    """Decode a response body alone (no header): ``(body, layout version)``.

    The layout version is ``api_version`` except for an ApiVersionsResponse whose
    asked layout does not parse: it is read as v0, as Kafka's Java client does
    (brokers write UNSUPPORTED_VERSION answers so), provided the v0 reading
    carries a non-zero error code.  Trailing bytes are an error.
    """
    return _decode_body(api_key, api_version, bytes(data), 0, registry or default_registry())


def decode_response_with_layout(api_key: int, api_version: int,
                                data: bytes | bytearray | memoryview,
                                registry: Registry | None = None
                                ) -> tuple[int, Message, int]:
    """:func:`decode_response` plus the layout version the body was read in."""
    registry = registry or default_registry()
    buf = bytes(data)
    header_version = response_header_version(api_key, api_version, registry)
    header, pos = registry.codec("ResponseHeader", header_version).decode_from(buf, 0)
    body, layout = _decode_body(api_key, api_version, buf, pos, registry)
    return header.correlation_id, body, layout  # type: ignore[attr-defined]


def decode_response(api_key: int, api_version: int, data: bytes | bytearray | memoryview,
                    registry: Registry | None = None) -> tuple[int, Message]:
    """Decode a response to a request we sent: ``(correlation_id, body)``.

    ApiVersionsResponse bodies may be read in the v0 layout (see
    :func:`decode_response_body`).
    """
    correlation_id, body, _ = decode_response_with_layout(api_key, api_version, data, registry)
    return correlation_id, body


class Route:
    """One API at one version, resolved once: its name, the request's header and body
    codecs and the answer's header codec, so that sending a request and reading its
    answer look nothing up (:func:`route` keeps one per registry, API and version).

    Unknown keys and versions raise :class:`~kclient.errors.UnknownMessageError`
    when the route is built, as :func:`encode_request` does.
    """

    __slots__ = ("_registry", "_request_header", "_response", "_response_header", "api_key",
                 "name", "request", "request_name", "request_root", "version")

    def __init__(self, api_key: int, version: int, registry: Registry) -> None:
        self.api_key = api_key
        self.version = version
        self._registry = registry
        #: Kafka's name of the API (``UNKNOWN(<key>)`` for a key the catalog lacks).
        self.name = default_catalog().name_of(api_key)
        self.request_name = f"{self.name}Request"
        #: The request body's codec; its ``message_class`` builds request values.
        self.request = registry.codec(self.request_name, version)
        #: The request's top-level struct (what a field-version check walks).
        self.request_root = registry.spec(self.request_name).root
        self._request_header = registry.codec(
            "RequestHeader", request_header_version(api_key, version, registry))
        self._response_header = registry.codec(
            "ResponseHeader", response_header_version(api_key, version, registry))
        self._response: CompiledMessage | None = None  # resolved by the first answer

    def encode_request(self, correlation_id: int, client_id: str | None,
                       body: Mapping[str, Any] | Message) -> bytes:
        """:func:`encode_request` of this API and version."""
        out = bytearray()
        self._request_header.encode_into(
            {"request_api_key": self.api_key, "request_api_version": self.version,
             "correlation_id": correlation_id, "client_id": client_id}, out)
        self.request.encode_into(body, out)
        return bytes(out)

    def decode_response(self, data: bytes | bytearray | memoryview) -> tuple[int, Message]:
        """:func:`decode_response` of this API and version: ``(correlation_id, body)``."""
        buf = bytes(data)
        header, pos = self._response_header.decode_from(buf, 0)
        if self.api_key == ApiKey.API_VERSIONS:  # may be read in the v0 layout
            body = _decode_body(self.api_key, self.version, buf, pos, self._registry)[0]
            return header.correlation_id, body  # type: ignore[attr-defined]
        codec = self._response
        if codec is None:
            codec = self._response = self._registry.codec(f"{self.name}Response", self.version)
        body, end = codec.decode_from(buf, pos)
        if end != len(buf):
            raise ProtocolError(f"{codec.name} v{self.version}: {len(buf) - end} unexpected "
                                "trailing bytes", end)
        return header.correlation_id, body  # type: ignore[attr-defined]


def route(api_key: int, version: int, registry: Registry | None = None) -> Route:
    """The :class:`Route` of ``api_key`` at ``version``, built on first use and kept
    until the registry's specs change."""
    registry = registry or default_registry()
    # Only a true int finds a route by its key (True and 3.0 equal 1 and 3 there):
    # anything else is judged by the codec, which refuses it typed.
    found = registry.routes.get((api_key, version)) if type(version) is int else None
    if found is None:
        found = registry.routes[api_key, version] = Route(api_key, version, registry)
    return found
