"""``kclient request``: send one request of any API and print the answer as JSON.

The version is the one negotiated with the receiving broker (``--version``
overrides it); the body is JSON in the format ``kclient decode`` prints
(snake_case names, bytes as hex, UUIDs as text).  A field the version lacks is
refused, as :meth:`kclient.net.Client.request` does, unless
``--drop-unsupported``.  The answer goes to stdout as
``{"api", "version", "broker", "dropped", "response"}``; every error code in
the response gets its name next to it (``"error_code": 3, "error_name":
"UNKNOWN_TOPIC_OR_PARTITION"``).  An answer that carries an error code, top-level
or per item (:meth:`kclient.protocol.Message.raise_for_error` decides), exits
:data:`EXIT_ANSWER_ERROR` with its message as one line on stderr, unless
``--allow-errors``.
"""

from __future__ import annotations

import argparse
import json
import sys
from typing import Any

from kclient.commands.common import add_connection_arguments
from kclient.net.defaults import DEFAULT_MAX_RESPONSE_SIZE
from kclient.values import count_problem

__all__ = ["EXIT_ANSWER_ERROR", "name_error_codes", "register", "run_request"]

#: Exit code of ``kclient request`` when the broker's answer carries an error code.
EXIT_ANSWER_ERROR = 4


def register(subparsers: Any) -> None:
    """Add the ``request`` sub-command."""
    parser = subparsers.add_parser(
        "request", help="send one request of any Kafka API and print the answer as JSON",
        description="Send one request (any API kclient has a spec for) at the version "
        "negotiated with the broker and print the decoded answer as JSON.")
    parser.add_argument("api", help="API name (CreateTopics) or key (19)")
    parser.add_argument("--json", default="{}", metavar="JSON|@FILE|-",
                        help="the request body: JSON text, @FILE, or - for stdin "
                        "(default {})")
    target = parser.add_mutually_exclusive_group()
    target.add_argument("--broker", type=int, metavar="NODE_ID",
                        help="send to this broker (default: any connected broker)")
    target.add_argument("--controller", action="store_true",
                        help="send to the controller named by Metadata")
    parser.add_argument("--version", type=int, metavar="V",
                        help="send this version instead of the negotiated one")
    parser.add_argument("--drop-unsupported", action="store_true",
                        help="send without the fields the version lacks (listed under "
                        "'dropped') instead of refusing")
    parser.add_argument("--max-response-size", type=_response_bytes, metavar="BYTES",
                        default=None,
                        help="refuse an answer larger than this many bytes before reading "
                        f"it (default {DEFAULT_MAX_RESPONSE_SIZE:,}; raise it for large "
                        "Fetch or Metadata answers)")
    parser.add_argument("--allow-errors", action="store_true",
                        help=f"exit 0 even when the answer carries error codes (default: "
                        f"exit {EXIT_ANSWER_ERROR})")
    add_connection_arguments(parser)
    parser.set_defaults(handler=run_request)


def _response_bytes(text: str) -> int:
    if not (text.isascii() and text.isdigit()) or len(text) > 12:
        raise argparse.ArgumentTypeError(f"expected a whole number of bytes, got {text[:40]!r}")
    if (problem := count_problem(int(text))) is not None:
        raise argparse.ArgumentTypeError(problem)
    return int(text)


def _body(text: str) -> Any:
    from kclient._inputfile import decode_input
    from kclient.commands.codec import input_bytes, json_document

    source = "--json"
    if text == "-" or text.startswith("@"):
        name = "-" if text == "-" else text[1:]
        source = "stdin" if name == "-" else name
        text = decode_input(input_bytes(name, "--json"), "--json:", source)
    return json_document(text, source)


def run_request(args: argparse.Namespace) -> int:
    """Handler of ``kclient request``."""
    import asyncio

    from kclient.commands.codec import from_json
    from kclient.protocol import default_catalog, message_class

    info = default_catalog().resolve(args.api)
    document = _body(args.json)
    cls = message_class(f"{info.name}Request")
    body = cls.from_value(from_json(cls, document))
    from kclient.errors import KafkaResponseError
    from kclient.text import printable

    result, response = asyncio.run(_send(args, info.name, body))
    name_error_codes(result["response"])
    json.dump(result, sys.stdout, indent=2)
    sys.stdout.write("\n")
    if not args.allow_errors:
        try:
            response.raise_for_error()
        except KafkaResponseError as exc:
            print(f"kclient request: the answer carries an error code: {printable(exc)} "
                  "(--allow-errors exits 0)", file=sys.stderr)
            return EXIT_ANSWER_ERROR
    return 0


def _error_name(code: int) -> str:
    from kclient.protocol import ErrorCode

    try:
        return ErrorCode(code).name
    except ValueError:
        return f"UNKNOWN_ERROR_CODE({code})"


def name_error_codes(value: Any, path: str = "") -> list[tuple[str, int, str]]:
    """Add a name next to every error code of a decoded answer, in place.

    A field ``error_code`` (or ``*_error_code``) gets a sibling ``error_name``
    (``*_error_name``) holding Kafka's name for it (``UNKNOWN_TOPIC_OR_PARTITION``).
    Returns ``(path, code, name)`` for every non-zero code, in document order.
    """
    found: list[tuple[str, int, str]] = []
    if isinstance(value, dict):
        items = list(value.items())
        value.clear()  # refilled in the same order, each name right after its code
        for key, item in items:
            where = f"{path}.{key}" if path else key
            value[key] = item
            if (key.endswith("error_code") and isinstance(item, int)
                    and not isinstance(item, bool)):
                name = _error_name(item)
                named = key.removesuffix("_code") + "_name"
                if all(named != other for other, _ in items):
                    value[named] = name
                if item != 0:
                    found.append((where, item, name))
            else:
                found.extend(name_error_codes(item, where))
    elif isinstance(value, list):
        for index, item in enumerate(value):
            found.extend(name_error_codes(item, f"{path}[{index}]"))
    return found


def _check_fields(conn: Any, api: str, body: Any, version: int | None, drop: bool) -> None:
    """Refuse a field the version lacks before sending, naming the command line's flags.

    The same check (:func:`kclient.protocol.versioncheck.check_request`, with the
    arguments the connection gives it) runs again when the request is sent.  Its error
    names ``version`` and ``drop_unsupported`` as options, which the command line
    prints as ``--version`` and ``--drop-unsupported``.
    """
    from kclient.negotiation.clientrules import with_client_values
    from kclient.protocol.versioncheck import check_request

    key = conn.application.catalog.resolve(api).key
    sent = version if version is not None else conn.request_version(key, body)
    rng = conn.api_range(key)
    check_request(f"{api}Request", sent, with_client_values(key, body), drop=drop,
                  broker=conn.broker_label, broker_max=None if rng is None else rng[1])


async def _send(args: argparse.Namespace, api: str, body: Any) -> tuple[dict[str, Any], Any]:
    from kclient.commands.codec import to_json
    from kclient.commands.common import client_options_from_args
    from kclient.net.client import Client

    async with Client(**client_options_from_args(args), metadata_refresh_interval=None) \
            as client:
        node = (client.controller() if args.controller else
                args.broker if args.broker is not None else client.any_broker())
        version = args.version if args.version is not None else None
        _check_fields(client.connection(node), api, body, version, bool(args.drop_unsupported))
        response = await client.request(api, body, broker=node, version=version,
                                        drop_unsupported=bool(args.drop_unsupported),
                                        max_response_size=args.max_response_size)
        sent = version if version is not None else client.connection(node).request_version(
            api, body)
        return {
            "api": api, "version": sent, "broker": node,
            "dropped": [d.path for d in response.dropped_fields],
            "response": to_json(response, sent),
        }, response
