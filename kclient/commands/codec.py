"""``kclient decode`` and ``kclient encode``: Kafka bytes to JSON and back.

Both take the direction (``request`` or ``response``), the API (name or key) and
the version.  ``--header`` includes the request/response header (with Kafka's
header-version rules), ``--framed`` the int32 size prefix.  JSON uses the
snake_case field names; bytes are hex strings and UUIDs their usual text.
"""

from __future__ import annotations

import argparse
import json
import sys
import uuid
from pathlib import Path
from typing import TYPE_CHECKING, Any

from kclient._inputfile import (
    MAX_MESSAGE_INPUT,
    decode_input,
    read_input_bytes,
    read_input_stream,
)
from kclient._json import loads as json_loads
from kclient.errors import ConfigError, EncodeError, ProtocolError
from kclient.protocol.codec import UNKNOWN_TAGS_KEY

if TYPE_CHECKING:
    from kclient.protocol import Message

__all__ = ["from_json", "input_bytes", "json_document", "register", "to_json"]


def to_json(value: Any, version: int | None = None) -> Any:
    """Decoded values -> JSON-ready values (bytes as hex, UUIDs as text).

    With ``version``, only the fields that exist in that version are shown.
    """
    from kclient.protocol import Message

    if isinstance(value, Message):
        out = {
            f.attr: to_json(getattr(value, f.attr), version)
            for f in value.fields(version)
        }
        if value.unknown_tags:
            out[UNKNOWN_TAGS_KEY] = {
                str(tag): data.hex() for tag, data in sorted(value.unknown_tags.items())
            }
        return out
    if isinstance(value, dict):
        return {k: to_json(v, version) for k, v in value.items()}
    if isinstance(value, list):
        return [to_json(v, version) for v in value]
    if isinstance(value, bytes):
        return value.hex()
    if isinstance(value, uuid.UUID):
        return str(value)
    return value


def from_json(message_class: type[Message], data: Any, where: str = "") -> Any:
    """JSON values -> codec values for ``message_class`` (hex -> bytes, text -> UUID)."""
    if data is None:
        return None
    if not isinstance(data, dict):
        raise EncodeError(f"{where or message_class.__name__}: expected a JSON object")
    out: dict[str, Any] = {}
    for key, value in data.items():
        if key == UNKNOWN_TAGS_KEY:
            out[key] = _unknown_tags_from_json(value, f"{where}.{key}" if where else key)
            continue
        spec = message_class.field(key)
        if spec is None:
            known = ", ".join(f.attr for f in message_class.fields())
            raise EncodeError(f"{where or message_class.__name__}: unknown field {key!r}; "
                              f"fields: {known}")
        path = f"{where}.{key}" if where else key
        kind = spec.element if spec.kind == "array" else spec.kind
        child = message_class.child(spec.attr)
        if spec.kind == "array" and isinstance(value, list):
            out[spec.attr] = [_convert(kind, child, v, f"{path}[{i}]")
                              for i, v in enumerate(value)]
        else:
            out[spec.attr] = _convert(kind, child, value, path)
    return out


def _unknown_tags_from_json(value: Any, path: str) -> Any:
    if not isinstance(value, dict):
        return value  # the codec names the wrong type
    try:
        return {tag: bytes.fromhex(data) for tag, data in value.items()}
    except (TypeError, ValueError):
        raise EncodeError(f"{path}: tagged field values must be hex strings") from None


def _convert(kind: str | None, child: Any, value: Any, path: str) -> Any:
    if value is None:
        return None
    if kind == "struct":
        return from_json(child, value, path)
    try:
        if kind in ("bytes", "records", "uuid") and not isinstance(value, str):
            raise TypeError(value)
        if kind in ("bytes", "records"):
            return bytes.fromhex(value)
        if kind == "uuid":
            return uuid.UUID(value)
    except (TypeError, ValueError):
        raise EncodeError(f"{path}: {value!r} is not valid {kind} "
                          "(bytes are hex strings, UUIDs their usual text)") from None
    return value


def input_bytes(name: str, flag: str) -> bytes:
    """The bytes of the file ``name`` given to ``flag`` (``-``: standard input).

    A regular file of at most :data:`~kclient._inputfile.MAX_MESSAGE_INPUT`
    bytes (standard input: as many), else a :class:`ConfigError` naming ``flag``.
    """
    if name == "-":
        return read_input_stream(sys.stdin.buffer, f"{flag}:", limit=MAX_MESSAGE_INPUT)
    return read_input_bytes(name, f"{flag}:", limit=MAX_MESSAGE_INPUT)


def json_document(text: str, source: str) -> Any:
    """The JSON document in ``text``; every fault is a :class:`ConfigError` naming ``source``.

    Syntax errors give ``source:line:column``; nesting too deep and integers
    too long to convert are refused too (:mod:`kclient._json`).
    """
    try:
        return json_loads(text)
    except json.JSONDecodeError as exc:
        raise ConfigError(f"{source}:{exc.lineno}:{exc.colno}: invalid JSON: {exc.msg}") \
            from None
    except ValueError as exc:  # nested too deeply, integers too long
        raise ConfigError(f"{source}: invalid JSON: {exc}") from None


def _read_input(args: argparse.Namespace) -> bytes:
    if args.hex is not None:
        text = "".join(args.hex.split())
        try:
            return bytes.fromhex(text)
        except ValueError:
            raise ConfigError("--hex is not valid hexadecimal: give two hex digits (0-9, a-f) per "
                          "byte, spaces allowed") from None
    raw = input_bytes(args.file, "--file")
    stripped = raw.strip()
    # Files written by tools are often hex text; accept both forms.
    if stripped and all(chr(c) in "0123456789abcdefABCDEF \n\r\t" for c in stripped):
        digits = "".join(stripped.decode("ascii").split())
        if len(digits) % 2:
            raise ConfigError(f"{args.file}: looks like hex text but has an odd number of "
                              f"digits ({len(digits)}); each byte is two hex digits")
        return bytes.fromhex(digits)
    return raw


def _resolve(args: argparse.Namespace) -> tuple[int, str]:
    from kclient.protocol import default_catalog, default_registry

    if args.schemas:
        default_registry().load_directory(args.schemas)
    info = default_catalog().resolve(args.api)
    suffix = "Request" if args.direction == "request" else "Response"
    return info.key, f"{info.name}{suffix}"


def _show_codec(name: str, version: int) -> int:
    from kclient.protocol import default_registry

    codec = default_registry().codec(name, version)
    sys.stdout.write(f"# {codec.filename}: the generated decoder and encoder of {name} "
                     f"v{version}\n# (names: see the kclient.protocol.codec docstring)\n\n")
    sys.stdout.write(codec.source.rstrip("\n") + "\n")
    return 0


def _decode(args: argparse.Namespace) -> int:
    from kclient.protocol import (
        decode,
        decode_request,
        decode_response_body,
        decode_response_with_layout,
    )

    api_key, name = _resolve(args)
    if args.show_codec:
        return _show_codec(name, args.version)
    if args.hex is None and args.file is None:
        raise ConfigError("decode needs --hex or --file (or --show-codec to print the codec)")
    data = _read_input(args)
    if args.framed:
        if len(data) < 4:
            raise ProtocolError("framed input shorter than its 4-byte size", 0)
        size = int.from_bytes(data[:4], "big", signed=True)
        if size != len(data) - 4:
            raise ProtocolError(f"frame size {size} does not match the {len(data) - 4} bytes "
                                "that follow it", 0)
        data = data[4:]
    result: dict[str, Any]
    if args.direction == "request":
        if not args.header:
            result = to_json(decode(name, args.version, data), args.version)
        else:
            header, body = decode_request(data)
            header_key = header.request_api_key  # type: ignore[attr-defined]
            if header_key != api_key:
                raise ProtocolError(f"header says api key {header_key}, not {api_key}", 0)
            result = {"header": to_json(header), "body": to_json(body, args.version)}
    else:
        # ApiVersionsResponse may be read in the v0 layout (error 35, or the asked
        # layout does not parse, as Kafka reads it); show the fields of the layout read.
        if args.header:
            correlation_id, body, layout = decode_response_with_layout(api_key, args.version,
                                                                       data)
            result = {"header": {"correlation_id": correlation_id},
                      "body": to_json(body, layout)}
        else:
            body, layout = decode_response_body(api_key, args.version, data)
            result = to_json(body, layout)
        if layout != args.version:
            sys.stderr.write(f"note: {name} read in the v{layout} layout (the v{args.version} "
                             "layout does not apply: Kafka answers ApiVersions errors and "
                             "versions it cannot speak in v0)\n")
    json.dump(result, sys.stdout, indent=2, ensure_ascii=False)
    sys.stdout.write("\n")
    return 0


def _encode(args: argparse.Namespace) -> int:
    from kclient.protocol import encode, encode_request, encode_response, frame, message_class

    api_key, name = _resolve(args)
    source = "stdin" if args.json == "-" else args.json
    text = decode_input(input_bytes(args.json, "--json"), "--json:", source)
    document = json_document(text, source)
    if isinstance(document, dict) and set(document) == {"header", "body"}:
        document = document["body"]  # accept what `kclient decode --header` prints
    cls = message_class(name)
    body = cls.from_value(from_json(cls, document))
    if not args.header:
        data = encode(name, args.version, body)
    elif args.direction == "request":
        data = encode_request(api_key, args.version, args.correlation_id, args.client_id, body)
    else:
        data = encode_response(api_key, args.version, args.correlation_id, body)
    if args.framed:
        data = frame(data)
    if args.out:
        try:
            Path(args.out).write_bytes(data)
        except OSError as exc:
            raise ConfigError(f"cannot write {args.out}: {exc.strerror or exc}") from None
    else:
        print(data.hex())
    return 0


def _common(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("direction", choices=("request", "response"))
    parser.add_argument("--api", required=True, help="API name (Metadata) or key (3)")
    parser.add_argument("--version", required=True, type=int, help="API version")
    parser.add_argument("--header", action="store_true",
                        help="include the request/response header")
    parser.add_argument("--framed", action="store_true", help="include the int32 size prefix")
    parser.add_argument("--schemas", metavar="DIR",
                        help="also load Kafka-format message specs from DIR")


def register(subparsers: Any) -> None:
    """Add ``decode`` and ``encode`` to the command line."""
    decode_parser = subparsers.add_parser(
        "decode", help="decode Kafka bytes to JSON",
        description="Decode a Kafka request or response (hex or file) and print it as JSON.")
    _common(decode_parser)
    source = decode_parser.add_mutually_exclusive_group()
    source.add_argument("--hex", help="the bytes as hexadecimal text")
    source.add_argument("--file", help="a file of raw bytes or hex text ('-' for stdin)")
    source.add_argument("--show-codec", action="store_true",
                        help="print the generated Python decoder/encoder of this message "
                             "version instead of decoding")
    decode_parser.set_defaults(handler=_decode)

    encode_parser = subparsers.add_parser(
        "encode", help="encode JSON to Kafka bytes",
        description="Encode a JSON message (as printed by `kclient decode`) to Kafka bytes.")
    _common(encode_parser)
    encode_parser.add_argument("--json", required=True, metavar="FILE",
                               help="the message as JSON ('-' for stdin)")
    encode_parser.add_argument("--correlation-id", type=int, default=0,
                               help="correlation id for --header (default 0)")
    encode_parser.add_argument("--client-id", default="kclient",
                               help="client id for a request --header (default kclient)")
    encode_parser.add_argument("--out", metavar="FILE", help="write raw bytes here instead of hex")
    encode_parser.set_defaults(handler=_encode)
