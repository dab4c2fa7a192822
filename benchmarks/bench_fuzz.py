"""Mutation fuzzing of every entry point that reads outside input.

Usage: ``python -m benchmarks fuzz [-- --cases N --seconds S --seed K --targets a,b]``.

Each target starts from valid seed inputs (an encoded message of every shipped
schema and version, the shipped features.yaml and small feature files, valid
snapshot lines, command lines of ``kclient decode/encode/features --snapshot``;
for the input targets: ``kclient request --json @FILE`` bodies of every request,
``--command-config`` properties files, ``Client.from_config`` mappings,
``sasl.jaas.config`` lines, SCRAM/PLAIN/OAUTHBEARER messages to both sides,
``--features`` files) plus the regression corpus in ``tests/data/fuzz/``, and feeds the entry point
mutants of them: bit flips, interesting bytes, truncation, deleted or repeated
ranges, splices of two seeds, int16/int32 length fields overwritten with edge
values, over-long varints, and tokens typical of the format.  The random
generator is seeded, so a run is reproducible.  Every case is also checked for a
jump of the process's peak RSS (over 64 MiB: a giant allocation, a failure).

kclient's promise is that bad input ends in a :class:`kclient.KClientError`
(or, for the command line, argparse's exit 2), fast and without a giant
allocation.  Per target the report gives: cases run, how many were accepted and
how many refused with a typed error, the non-typed exceptions (must be 0; the
first few are printed with their input in hex), the slowest case, and the peak
memory per input byte (tracemalloc on a sample of cases).  A case running past
``--case-timeout`` is interrupted and counted as a non-typed failure (a hang).
The exit status is 1 when any target had a non-typed exception.  When the
``jaas`` target runs, the report ends with the jaas scaling figure: the parse
time of 100 KB and 800 KB ``sasl.jaas.config`` values of four shapes (linear
parsing: about x8; the quadratic parser of old: x64).
"""

from __future__ import annotations

import argparse
import contextlib
import io
import json
import random
import resource
import signal
import struct
import sys
import tempfile
import time
import tracemalloc
import uuid
import warnings
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from kclient.errors import KClientError

ROOT = Path(__file__).resolve().parents[1]
CORPUS = ROOT / "tests" / "data" / "fuzz"

#: Inputs longer than this are cut after mutation (keeps each case small and fast).
MAX_INPUT = 64 * 1024

#: A case that raises the process's peak memory by more than this is a failure.
GIANT_ALLOCATION = 64 * 1024 * 1024


class CaseTimeout(BaseException):
    """Raised in a case that runs past its time limit (a hang)."""


# ------------------------------------------------------------------------- seeds


def _sample(kind: str, rng: random.Random) -> Any:
    if kind in ("int8", "int16", "int32", "int64"):
        bits = int(kind[3:])
        return rng.choice([0, 1, -1, 2 ** (bits - 1) - 1, rng.randrange(100)])
    if kind == "uint16":
        return rng.choice([0, 65535, rng.randrange(100)])
    if kind == "uint32":
        return rng.choice([0, 2**32 - 1, rng.randrange(100)])
    if kind == "bool":
        return rng.random() < 0.5
    if kind == "float64":
        return rng.choice([0.0, 1.5, -2.25])
    if kind == "uuid":
        return uuid.UUID(int=rng.getrandbits(128))
    if kind == "string":
        return rng.choice(["", "a", "broker-1.example", "topic-é漢"])
    if kind in ("bytes", "records"):
        return bytes(rng.randrange(256) for _ in range(rng.randrange(6)))
    raise AssertionError(kind)


def _struct_value(struct: Any, version: int, rng: random.Random, depth: int = 0) -> Any:
    value: dict[str, Any] = {}
    for f in struct.fields:
        if version not in f.versions:
            continue
        if f.is_nullable(version) and rng.random() < 0.2:
            value[f.attr] = None
        elif f.kind == "array":
            count = rng.randrange(3) if depth < 3 else 0
            if f.element == "struct":
                value[f.attr] = [_struct_value(f.struct, version, rng, depth + 1)
                                 for _ in range(count)]
            else:
                value[f.attr] = [_sample(f.element, rng) for _ in range(count)]
        elif f.kind == "struct":
            value[f.attr] = _struct_value(f.struct, version, rng, depth + 1)
        else:
            value[f.attr] = _sample(f.kind, rng)
    return value


def message_seeds(rng: random.Random) -> list[tuple[str, int, dict[str, Any]]]:
    """``(message name, version, value)`` for every shipped schema and version."""
    from kclient.protocol import default_registry

    out = []
    for spec in sorted(default_registry(), key=lambda s: s.name):
        for version in spec.versions:
            for _ in range(2):
                out.append((spec.name, version, _struct_value(spec.root, version, rng)))
    return out


# ---------------------------------------------------------------------- mutation

_INTERESTING_BYTES = (0x00, 0x01, 0x7F, 0x80, 0xFF, 0x0A, 0x1B, 0x22, 0x5B, 0x7B)
_INTERESTING_INTS = (0, 1, -1, 0x7F, 0x80, 0x7FFF, -0x8000, 0xFFFF, 0x7FFFFFFF, -0x80000000)


def _big_varint(rng: random.Random) -> bytes:
    body = bytes(rng.choice((0x80, 0xFF, 0x8F)) for _ in range(rng.randrange(4, 12)))
    return body + bytes([rng.randrange(0x80)])


def mutate(data: bytes, rng: random.Random, others: Sequence[bytes],
           tokens: Sequence[bytes]) -> bytes:
    """Apply one to four random mutations to ``data``."""
    buf = bytearray(data)
    for _ in range(rng.randrange(1, 5)):
        op = rng.randrange(10)
        n = len(buf)
        if op == 0 and n:  # bit flips
            for _ in range(rng.randrange(1, 9)):
                i = rng.randrange(n)
                buf[i] ^= 1 << rng.randrange(8)
        elif op == 1 and n:  # an interesting byte
            buf[rng.randrange(n)] = rng.choice(_INTERESTING_BYTES)
        elif op == 2 and n:  # truncate
            del buf[rng.randrange(n):]
        elif op == 3 and n:  # delete a range
            i = rng.randrange(n)
            del buf[i:i + rng.randrange(1, 17)]
        elif op == 4 and n:  # repeat a range
            i = rng.randrange(n)
            chunk = buf[i:i + rng.randrange(1, 33)]
            buf[i:i] = chunk * rng.randrange(1, 4)
        elif op == 5 and others:  # splice with another seed
            other = rng.choice(others)
            cut_a = rng.randrange(n + 1)
            cut_b = rng.randrange(len(other) + 1)
            buf = buf[:cut_a] + bytearray(other[cut_b:])
        elif op == 6 and n >= 2:  # a length field (int16/int32) set to an edge value
            width = rng.choice((2, 4))
            i = rng.randrange(max(1, n - width + 1))
            value = rng.choice((*_INTERESTING_INTS, n, n - i, n + 1))
            fmt = ">h" if width == 2 else ">i"
            try:
                packed = struct.pack(fmt, value)
            except struct.error:
                packed = struct.pack(fmt, -1)
            buf[i:i + width] = packed
        elif op == 7:  # an over-long or huge varint
            i = rng.randrange(n + 1)
            buf[i:i] = _big_varint(rng)
        elif tokens:  # a token of the format (ops 8, 9)
            token = rng.choice(tokens)
            if rng.random() < 0.1:
                token *= rng.randrange(2, 2000)
            i = rng.randrange(n + 1)
            if rng.random() < 0.5 and n:
                buf[i:i + rng.randrange(1, 8)] = token
            else:
                buf[i:i] = token
    return bytes(buf[:MAX_INPUT])


# ----------------------------------------------------------------------- targets


@dataclass
class Target:
    """One entry point: seed inputs (with the context each needs) and how to run one."""

    name: str
    seeds: list[tuple[Any, bytes]]
    run: Callable[[Any, bytes], None]
    tokens: list[bytes] = field(default_factory=list)
    typed: tuple[type[BaseException], ...] = (KClientError,)


def _protocol_targets(rng: random.Random) -> list[Target]:
    from kclient.protocol import (
        FrameDecoder,
        decode,
        decode_request,
        decode_response,
        default_catalog,
        encode,
        encode_request,
        encode_response,
        frame,
    )

    catalog = default_catalog()
    decode_seeds: list[tuple[Any, bytes]] = []
    request_seeds: list[tuple[Any, bytes]] = []
    response_seeds: list[tuple[Any, bytes]] = []
    for name, version, value in message_seeds(rng):
        decode_seeds.append(((name, version), encode(name, version, value)))
        api = name.removesuffix("Request").removesuffix("Response")
        info = catalog.by_name(api)
        if info is None:
            continue  # the headers
        if name.endswith("Request"):
            data = encode_request(info.key, version, rng.randrange(1 << 31), "fuzz-client", value)
            request_seeds.append((None, data))
        else:
            data = encode_response(info.key, version, rng.randrange(1 << 31), value)
            response_seeds.append(((info.key, version), data))

    def run_decode(context: Any, data: bytes) -> None:
        decode(context[0], context[1], data)

    def run_request(context: Any, data: bytes) -> None:
        decode_request(data, strict=bool(data and data[-1] & 1))

    def run_response(context: Any, data: bytes) -> None:
        decode_response(context[0], context[1], data)

    frame_seeds = []
    payloads = [d for _, d in response_seeds]
    for _ in range(40):
        chosen = [rng.choice(payloads) for _ in range(rng.randrange(1, 4))]
        frame_seeds.append((None, b"".join(frame(p) for p in chosen) + frame(b"")))

    def run_frames(context: Any, data: bytes) -> None:
        decoder = FrameDecoder(max_frame_size=1 << (10 + len(data) % 14))
        pos = 0
        step = 1 + len(data) % 7
        while pos < len(data):
            decoder.feed(data[pos:pos + step])
            pos += step
            for payload in decoder:
                if len(payload) >= 8:
                    key, version = struct.unpack_from(">hh", payload, 0)
                    if catalog.by_key(key) is not None:
                        decode_response(key, version & 0x0F, payload)

    varint_tokens = [b"\xff\xff\xff\xff\x0f", b"\x80\x80\x80\x80\x80\x01", b"\x00", b"\xff\xff",
                     b"\x7f\xff\xff\xff", b"\x00\x00\x00\x00"]
    return [
        Target("decode", decode_seeds, run_decode, varint_tokens),
        Target("decode_request", request_seeds, run_request, varint_tokens),
        Target("decode_response", response_seeds, run_response, varint_tokens),
        Target("FrameDecoder", frame_seeds, run_frames, varint_tokens),
    ]


def _text(data: bytes) -> str:
    """Input bytes as text: UTF-8, else with lone surrogates standing for bad bytes."""
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError:
        return data.decode("utf-8", "surrogateescape")


_SMALL_FEATURES = b"""\
version: 1
features:
  - name: Zstd
    description: zstd compression
    reference: KIP-110
    requires:
      - {api: Produce, min: 7}
      - {api: 1, min: 10, max: 12}
  - name: NewGroups
    requires:
      - {feature: group.version, min: 1}
    any_of:
      - {api: ConsumerGroupHeartbeat}
      - - {api: JoinGroup, min: 0}
        - {api: SyncGroup}
"""


def _corpus(folder: str, pattern: str) -> list[bytes]:
    return [p.read_bytes() for p in sorted((CORPUS / folder).glob(pattern))]


def _features_target() -> Target:
    from kclient.negotiation.featurefile import parse_features

    shipped = (ROOT / "features.yaml").read_bytes()
    seeds = [(None, _SMALL_FEATURES)] * 8 + [(None, shipped)]
    seeds += [(None, data) for data in _corpus("features", "*.yaml")]

    def run(context: Any, data: bytes) -> None:
        parse_features(_text(data), "fuzz.yaml")

    tokens = [b"!!int ", b"!!float ", b"!!timestamp ", b"!!binary ", b"!foo ", b"&a ", b"*a",
              b"[", b"]", b"{", b"}", b"- ", b": ", b"\n  ", b"\n", b"40000", b"-1",
              b"1:2:3", b"0x7fff", b"0b1", b"1e9", b"~", b"'", b'"', b"---\n", b"? ", b"<<: ",
              b"\t", b"\xed\xa0\x80", b"\x1b[31m", b"%YAML 1.1\n", b"|\n", b">-\n"]
    return Target("parse_features", seeds, run, tokens)


_RECORD = {
    "cluster": "prod-eu-1", "broker_id": 1, "host": "10.0.0.5", "port": 9092,
    "observed_at": "2026-11-22T10:00:00Z", "source": "api_versions",
    "api_versions": [{"api_key": 0, "min_version": 0, "max_version": 11},
                     {"api_key": 18, "min_version": 0, "max_version": 4}],
    "supported_features": {"group.version": [0, 1]},
    "finalized_features": {"metadata.version": [1, 21]},
    "finalized_features_epoch": 42,
    "software": {"name": "apache-kafka", "version": "3.9.0"},
    "error": None,
}


def _snapshot_target() -> Target:
    from kclient.commands import render
    from kclient.negotiation import ClusterView
    from kclient.negotiation.featurefile import default_features
    from kclient.negotiation.snapshot import brokers_by_cluster, parse_snapshots

    line = json.dumps(_RECORD).encode()
    error_line = json.dumps({**_RECORD, "broker_id": 2, "source": "error", "api_versions": [],
                             "error": "connection refused"}).encode()
    seeds = [(None, line + b"\n"), (None, line + b"\n" + error_line + b"\n")]
    seeds += [(None, data) for data in _corpus("snapshot", "*.jsonl")]
    features = default_features()

    def run(context: Any, data: bytes) -> None:
        try:
            text = data.decode("utf-8")
        except UnicodeDecodeError:
            return  # the file reader refuses it (SnapshotError "not UTF-8")
        records = parse_snapshots(text, "fuzz.jsonl")
        for name, brokers in brokers_by_cluster(records).items():
            view = ClusterView(brokers, name=name)
            shown = render.api_versions_table(view) + render.features_table(
                view, view.evaluate(features))
            shown.encode("utf-8")  # what a terminal stream does
            if "\x1b" in shown:
                raise AssertionError("an escape character reached the output")

    tokens = [b"\\ud800", b"\\u001b[2J", b"70000", b"-1", b"32768", b"1e400", b"9" * 30,
              b"[", b"{", b"]", b"}", b"null", b"true", b"\"", b",", b":", b"0.5",
              b"\"fallback:2.1\"", b"\"error\"", b"\"api_versions\""]
    return Target("snapshot", seeds, run, tokens)


class _CliFiles:
    """Files that fuzzed command lines may name (a temporary directory)."""

    def __init__(self) -> None:
        from kclient.protocol import encode

        self.dir = Path(tempfile.mkdtemp(prefix="kclient-fuzz-"))
        d = self.dir
        (d / "req.hex").write_text(encode("MetadataRequest", 1, {"topics": None}).hex())
        (d / "odd.hex").write_text("0a0b0")
        (d / "raw.bin").write_bytes(b"\x00\x01\x02\xff")
        (d / "meta.json").write_text(json.dumps({"topics": None}))
        (d / "deep.json").write_text("[" * 5000 + "]" * 5000)
        (d / "bad.json").write_bytes(b'{"a": "\xff"}')
        (d / "snap.jsonl").write_text(json.dumps(_RECORD) + "\n")
        (d / "ansi.jsonl").write_text(json.dumps({**_RECORD, "host": "h\x1b[2J"}) + "\n")
        (d / "f.yaml").write_bytes(_SMALL_FEATURES)
        (d / "deep.yaml").write_text("version: 1\nfeatures: " + "[" * 3000 + "\n")
        specs = d / "specs"
        specs.mkdir()
        (specs / "Bad.json").write_bytes(b'{"name": "\xff"}')
        self.paths = [str(p) for p in sorted(d.iterdir())] + ["missing.txt", str(d)]


def _cli_target(files: _CliFiles) -> Target:
    from kclient.cli import build_parser

    parser = build_parser()
    allowed = {"decode", "encode", "features", "api-versions"}
    p = files.paths

    def path(name: str) -> str:
        return str(files.dir / name)

    argvs = [
        ["decode", "request", "--api", "Metadata", "--version", "1", "--file", path("req.hex")],
        ["decode", "request", "--api", "3", "--version", "1", "--hex", "000000010000"],
        ["decode", "response", "--api", "ApiVersions", "--version", "3", "--hex", "0000"],
        ["encode", "request", "--api", "Metadata", "--version", "1", "--json",
         path("meta.json")],
        ["encode", "request", "--api", "Metadata", "--version", "4", "--json",
         path("meta.json"), "--header", "--framed"],
        ["features", "--snapshot", path("snap.jsonl")],
        ["features", "--snapshot", path("snap.jsonl"), "--features", path("f.yaml"),
         "--require", "Zstd"],
        ["api-versions", "--snapshot", path("ansi.jsonl"), "--format", "json"],
    ]
    words = ["decode", "encode", "features", "api-versions", "request", "response", "--api",
             "--version", "--hex", "--file", "--json", "--header", "--framed", "--schemas",
             "--snapshot", "--features", "--require", "--cluster", "--format", "json", "table",
             "--merge-default", "--lenient", "--correlation-id", "--client-id", "-v",
             "Metadata", "ApiVersions", "SaslHandshake", "3", "18", "-1", "99999",
             "99999999999999999999", "²", "0x10", "", "zz", "0a0", "00" * 40, "\x1b[2J",
             "\ud800", "a" * 300, "--", "-", *p]
    seeds = [(None, "\0".join(argv).encode("utf-8", "surrogatepass")) for argv in argvs]
    tokens = [w.encode("utf-8", "surrogatepass") for w in words]
    tokens += [b"\0" + t for t in tokens]

    def run(context: Any, data: bytes) -> None:
        argv = data.decode("utf-8", "surrogateescape").split("\0")
        if "-" in argv:
            argv = [a for a in argv if a != "-"]  # stdin is not fuzzed
        # As Python sets up a UTF-8 terminal: stdout strict, stderr backslashreplace.
        out = io.TextIOWrapper(io.BytesIO(), encoding="utf-8")
        err = io.TextIOWrapper(io.BytesIO(), encoding="utf-8", errors="backslashreplace")
        with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
            args = parser.parse_args(argv)
            if args.command not in allowed:
                return
            if args.command in ("features", "api-versions") and not args.snapshot:
                return  # would contact brokers
            args.handler(args)
            out.flush()
            err.flush()

    return Target("cli", seeds, run, tokens, typed=(KClientError, SystemExit))


_JSON_TOKENS = [b"[", b"]", b"{", b"}", b",", b":", b'"', b"null", b"true", b"false", b"-1",
                b"0", b"1e400", b"-0.0", b"9" * 30, b"9" * 5000, b"[" * 3000, b"\\ud800",
                b"\\u0000", b"\xff", b"\xed\xa0\x80", b"\xef\xbb\xbf", b'"00ff"', b'"zz"',
                b'"123e4567-e89b-12d3-a456-426614174000"', b"2147483648", b"32768", b"NaN",
                b"Infinity", b'"header"', b'"body"']


def _request_json_target(files: _CliFiles) -> Target:
    """``kclient request --json @FILE``: the file's bytes to the request body it sends.

    Each case is written to a file and read by the command's own reader (as
    ``--json @FILE``), turned into the request's message and encoded at the
    newest version, as ``Client.request`` would before sending: everything the
    command does before the network.
    """
    from kclient.commands import request as request_command
    from kclient.commands.codec import from_json, to_json
    from kclient.protocol import default_catalog, encode, message_class

    catalog = default_catalog()
    rng = random.Random(36)
    seeds: list[tuple[Any, bytes]] = []
    for name, version, value in message_seeds(rng):
        if not name.endswith("Request") or catalog.by_name(name[:-len("Request")]) is None:
            continue
        cls = message_class(name)
        document = to_json(cls.from_value(value), version)
        seeds.append(((name, version), json.dumps(document).encode()))
    seeds = [*seeds[::3], (("MetadataRequest", 12), b'{"topics": null}'),
             (("MetadataRequest", 1), b"{}")]
    path = files.dir / "request-body.json"
    argument = "@" + str(path)

    def run(context: Any, data: bytes) -> None:
        name, version = context
        path.write_bytes(data)
        document = request_command._body(argument)
        cls = message_class(name)
        body = cls.from_value(from_json(cls, document))
        encode(name, version, body)

    return Target("request_json", seeds, run, _JSON_TOKENS)


_PROPERTIES = [
    b"bootstrap.servers=b1:9092,b2:9092\nclient.id=app\nrequest.timeout.ms=1500\n",
    b"# Kafka tools\nbootstrap.servers = b1:9092\nsecurity.protocol=SASL_PLAINTEXT\n"
    b"sasl.mechanism=PLAIN\nsasl.jaas.config=org.apache.kafka.common.security.plain."
    b'PlainLoginModule required \\\n    username="alice" password="s3cr\\"et";\n',
    b"bootstrap.servers: b1\nsecurity.protocol=SASL_SSL\nsasl.mechanisms=SCRAM-SHA-512\n"
    b"sasl.username=bob\nsasl.password=pw\nssl.ca.location=/nonexistent/ca.pem\n"
    b"ssl.endpoint.identification.algorithm=https\n",
    b"bootstrap.servers b1:9092\n! comment\nreconnect.backoff.ms=100\n"
    b"reconnect.backoff.max.ms=2000\nacks=all\nkey\\ with\\ spaces=\\u0041\\t\n",
    b"bootstrap.servers=[::1]:9092\nsecurity.protocol=SSL\n"
    b"ssl.endpoint.identification.algorithm=none\n",
]
_PROPERTY_TOKENS = [b"=", b":", b" ", b"\\", b"\\\n", b"\n", b"\r\n", b"#", b"!", b"\\u",
                    b"\\u12", b"\t", b"bootstrap.servers=", b"security.protocol=",
                    b"SASL_SSL", b"SASL_PLAINTEXT", b"sasl.mechanism=", b"GSSAPI",
                    b"OAUTHBEARER", b"sasl.jaas.config=", b"request.timeout.ms=", b"9" * 40,
                    b"10" + b"0" * 30, b"-1", b"0", b"1_000", b"\xd9\xa3", b"ssl.key.password=",
                    b"ssl.certificate.location=", b"ssl.key.location=", b"required ",
                    b'password="', b"\xff", b"\x00", b"[::1]", b",", b"PLAINTEXT://"]


def _quiet_options(config: Any) -> None:
    from kclient.net.config import client_options_from_config

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        client_options_from_config(config, unknown="warn")


def _properties_target(files: _CliFiles) -> Target:
    """``--command-config FILE``: a Java properties file to the client's options.

    Each case is written to a file and read by the command's reader.
    """
    from kclient.net.config import read_properties

    path = files.dir / "fuzz.properties"

    def run(context: Any, data: bytes) -> None:
        path.write_bytes(data)
        _quiet_options(read_properties(path))

    return Target("properties", [(None, p) for p in _PROPERTIES], run, _PROPERTY_TOKENS)


def _client_config_target() -> Target:
    """``Client.from_config(mapping)``: librdkafka / Java keys given from Python.

    The input is a JSON document: whatever it holds (an object, a list, text,
    null, numbers as values) is what the application passes.
    """
    seeds = [(None, json.dumps(dict(
        line.split("=", 1) for line in p.decode().replace("\\\n    ", "").splitlines()
        if "=" in line and not line.startswith(("#", "!"))
    )).encode()) for p in _PROPERTIES]
    seeds += [(None, b'["bootstrap.servers", "b1"]'), (None, b'"bootstrap.servers=b1"'),
              (None, b"null"), (None, b'{"bootstrap.servers": ["b1"], "request.timeout.ms": '
                                     b'1e30, "security.protocol": true}')]

    def run(context: Any, data: bytes) -> None:
        try:
            config = json.loads(data)
        except (ValueError, RecursionError):
            return  # not the target: the JSON reader
        _quiet_options(config)

    return Target("client_config", seeds, run, _JSON_TOKENS + _PROPERTY_TOKENS[10:])


_JAAS_SEEDS = [
    b'org.apache.kafka.common.security.plain.PlainLoginModule required username="alice" '
    b'password="alice-secret";',
    b"org.apache.kafka.common.security.scram.ScramLoginModule required username=bob "
    b'password="b\\"o\\\\b" ;',
    b"org.apache.kafka.common.security.plain.PlainLoginModule   required\n\tusername = a "
    b"password = b",
    b"com.example.Unknown optional key=value;",
]


def _jaas_target() -> Target:
    """``sasl.jaas.config``: the login module line to the client's SASL settings."""
    from kclient.net.config import parse_jaas

    mechanisms = ("PLAIN", "SCRAM-SHA-256", "SCRAM-SHA-512", "GSSAPI", "OAUTHBEARER")
    seeds = [(mechanism, seed) for seed in _JAAS_SEEDS for mechanism in mechanisms[:3]]
    seeds += [(mechanisms[3], _JAAS_SEEDS[0]), (mechanisms[4], _JAAS_SEEDS[1])]

    def run(context: Any, data: bytes) -> None:
        text = _text(data)
        parse_jaas(text)
        _quiet_options({"bootstrap.servers": "b1:9092", "security.protocol": "SASL_SSL",
                        "sasl.mechanism": context, "sasl.jaas.config": text})

    tokens = [b"=", b'"', b"\\", b'\\"', b";", b" ", b"\t", b"\n", b"required ", b"optional ",
              b"requisite ", b"sufficient ", b"username=", b"password=", b'password="', b"a.b",
              b"_x", b"\xff", b"\x00", b"\xed\xa0\x80", b" " * 100, b"x=y " * 50]
    return Target("jaas", seeds, run, tokens)


_SCRAM_NONCE = "fyko+d2lbbFgONRv9qkxdawL"
_SCRAM_SALT = "QSXCR+Q6sek8bf92"


def _sasl_target() -> Target:
    """The SASL parsers: what a broker (or, for the emulator, a client) sends.

    SCRAM server-first and server-final messages to the client, client-first
    and client-final messages to the server, PLAIN and OAUTHBEARER client
    messages to the servers and OAUTHBEARER error challenges to the client.
    The fuzzed SCRAM client accepts 1-64 iterations (the real bounds are
    4096-16384) so that a case hashes in microseconds, not milliseconds.
    """
    from kclient.sasl.oauthbearer import OAuthBearerClient, OAuthBearerServer
    from kclient.sasl.plain import PlainClient, PlainServer
    from kclient.sasl.scram import ScramClient, ScramCredential, ScramServer

    credentials = {m: {"user": ScramCredential.from_password(m, "pencil")}
                   for m in ("SCRAM-SHA-256", "SCRAM-SHA-512")}

    def scram_client(mechanism: str) -> Any:
        client = ScramClient(mechanism, "user", "pencil", nonce=_SCRAM_NONCE,
                             min_iterations=1, max_iterations=64)
        client.initial_response()
        return client

    def run(context: Any, data: bytes) -> None:
        kind, mechanism = context
        if kind == "scram-server-first":
            scram_client(mechanism).evaluate_challenge(data)
        elif kind == "scram-server-final":
            client = scram_client(mechanism)
            client.evaluate_challenge(
                f"r={_SCRAM_NONCE}srv,s={_SCRAM_SALT},i=16".encode())
            client.evaluate_challenge(data)
        elif kind == "scram-client-first":
            ScramServer(mechanism, credentials[mechanism], nonce="srv").evaluate_response(data)
        elif kind == "scram-client-final":
            server = ScramServer(mechanism, credentials[mechanism], nonce="srv")
            server.evaluate_response(f"n,,n=user,r={_SCRAM_NONCE}".encode())
            server.evaluate_response(data)
        elif kind == "plain-server":
            PlainServer(lambda user, password: user == "alice").evaluate_response(data)
        elif kind == "plain-client":
            client = PlainClient("alice", "pw")
            client.initial_response()
            client.evaluate_challenge(data)
        elif kind == "oauth-server":
            server = OAuthBearerServer(lambda token, ext: "alice" if token == "t" else None)
            if server.evaluate_response(data):
                server.evaluate_response(b"\x01")
        else:
            client = OAuthBearerClient("token", {"traceId": "1"})
            client.initial_response()
            client.evaluate_challenge(data)

    seeds: list[tuple[Any, bytes]] = []
    for mechanism in ("SCRAM-SHA-256", "SCRAM-SHA-512"):
        seeds += [
            (("scram-server-first", mechanism),
             f"r={_SCRAM_NONCE}3rfcNHYJY1ZVvWVs7j,s={_SCRAM_SALT},i=16".encode()),
            (("scram-server-first", mechanism), b"e=invalid-proof"),
            (("scram-server-first", mechanism), f"m=ext,r={_SCRAM_NONCE}x,s=AA==,i=1".encode()),
            (("scram-server-final", mechanism), b"v=rmF9pqV8S7suAoZWja4dJRkFsKQ="),
            (("scram-server-final", mechanism), b"e=other-error"),
            (("scram-client-first", mechanism), f"n,,n=user,r={_SCRAM_NONCE}".encode()),
            (("scram-client-first", mechanism), b"y,a=admin,n=us=2Cer=3D,r=abc"),
            (("scram-client-final", mechanism),
             f"c=biws,r={_SCRAM_NONCE}srv,p=v0X8v3Bz2T0CJGbJQyF0X+HI4Ts=".encode()),
        ]
    seeds += [
        (("plain-server", ""), b"\x00alice\x00pw"), (("plain-server", ""), b"admin\x00bob\x00pw"),
        (("plain-client", ""), b""),
        (("oauth-server", ""), b"n,,\x01auth=Bearer t\x01\x01"),
        (("oauth-server", ""), b"n,a=alice,\x01auth=Bearer bad\x01traceId=7\x01\x01"),
        (("oauth-client", ""), b'{"status": "invalid_token", "scope": "a b", '
                               b'"openid-configuration": "https://x"}'),
    ]
    tokens = [b",", b"=", b"r=", b"s=", b"i=", b"v=", b"e=", b"p=", b"c=", b"n=", b"a=", b"m=",
              b"n,,", b"y,,", b"p=tls,", b"=2C", b"=3D", b"=", b"==", b"\x00", b"\x01",
              b"auth=", b"Bearer ", b"\xff", b"\xed\xa0\x80", b"99999999999", b"0", b"-1",
              b"biws", b"AAAA", _SCRAM_NONCE.encode(), b'{"status": ', b"}", b"[" * 3000]
    return Target("sasl", seeds, run, tokens)


def _features_file_target(files: _CliFiles) -> Target:
    """``--features FILE`` (laid over the default with ``--merge-default``): the file's
    bytes through the loader the command uses, reader included."""
    from kclient.negotiation.featurefile import load_features

    shipped = (ROOT / "features.yaml").read_bytes()
    seeds = [(False, _SMALL_FEATURES), (True, _SMALL_FEATURES), (False, shipped)]
    seeds += [(False, b"version: 1\nfeatures:\n  - name: A\n    requires:\n"
                      b"      - {api: Produce, min: 1:30}\n"),
              (True, b"version: 1\nfeatures:\n  - name: B\n    requires:\n"
                     b"      - {feature: group.version, min: 010}\n")]
    path = files.dir / "fuzz-features.yaml"

    def run(context: Any, data: bytes) -> None:
        path.write_bytes(data)
        load_features(path, merge_default=context)

    tokens = [b"1:30", b"0x10", b"010", b"0o7", b"0b11", b"1_000", b"+3", b"-1", b"40000",
              b"!!int ", b"!!float ", b"[", b"]", b"{", b"}", b"- ", b": ", b"\n  ", b"\n",
              b"\xff", b"\xed\xa0\x80", b"&a ", b"*a", b"~"]
    return Target("features_file", seeds, run, tokens)


def _legacy_gzip(inner: bytes) -> bytes:
    """A magic 1 message whose gzip'd value holds ``inner`` (for the emulator's seeds)."""
    import gzip

    value = gzip.compress(inner)
    body = struct.pack(">bbq", 1, 1, 0) + struct.pack(">ii", -1, len(value)) + value
    return struct.pack(">qiI", 0, len(body) + 4, 0) + body


def _record_sets() -> list[bytes]:
    """Produced record sets for the emulator's Produce seeds: v2 batches, magic 0/1."""
    def v2(count: int, attributes: int = 0, producer_id: int = -1) -> bytes:
        rest = struct.pack(">ibIhiqqqhii", -1, 2, 0, attributes, count - 1, 5, 7, producer_id,
                           0, 0, count) + b"r" * count
        return struct.pack(">qi", 0, len(rest)) + rest

    def legacy(value: bytes, magic: int = 1) -> bytes:
        body = struct.pack(">bb", magic, 0) + (struct.pack(">q", 9) if magic else b"")
        body += struct.pack(">ii", -1, len(value)) + value
        return struct.pack(">qiI", 0, len(body) + 4, 0) + body

    return [v2(1), v2(3) + v2(2), v2(2, attributes=0x14, producer_id=7), legacy(b"v"),
            legacy(b"w", magic=0), _legacy_gzip(legacy(b"a") + legacy(b"bb")),
            _legacy_gzip(struct.pack(">qi", 0, 14) + bytes(14))]


def _emulator_target(rng: random.Random) -> Target:
    """An emulated broker's request handlers: a whole request (header and body) in,
    through the path a connection's frame takes (``EmulatedBroker._answer``).

    The broker advertises every version kclient can decode, shares one cluster state
    across cases (so requests meet topics, groups and offsets made by earlier ones)
    and is not listening (a Fetch never waits for data).  An answer that waits (a
    JoinGroup parked for a rebalance) is given 50 ms, then abandoned as when its
    client goes; any other request that does not end in 0.5 s is a hang.  Typed ends:
    a kclient error, or the emulator closing the connection.
    """
    import asyncio

    from kclient.emulator import EmulatedBroker
    from kclient.emulator.apis import HANDLERS, WAITING_APIS
    from kclient.emulator.broker import _Close
    from kclient.emulator.classic_groups import GroupSettings
    from kclient.emulator.group_apis import GROUP_HANDLERS
    from kclient.emulator.inbound import ClientGone
    from kclient.emulator.state import ClusterState
    from kclient.protocol import default_catalog, default_registry, encode_request

    catalog = default_catalog()
    registry = default_registry()
    # Every API the broker answers: the handshake, Metadata, DescribeCluster and the
    # handlers' tables.
    served = {18, 3, 60} | set(HANDLERS) | set(GROUP_HANDLERS)
    seeds: list[tuple[Any, bytes]] = []
    for name, version, value in message_seeds(rng):
        info = catalog.by_name(name.removesuffix("Request"))
        if info is not None and name.endswith("Request") and info.key in served:
            seeds.append((None, encode_request(info.key, version, rng.randrange(1 << 31),
                                               "fuzz", value)))
    for records in _record_sets():
        for version in (2, 3, 7, 9):
            seeds.append((None, encode_request(0, version, 1, "fuzz", {
                "acks": -1, "timeout_ms": 100, "topic_data": [
                    {"name": "t", "partition_data": [{"index": 0, "records": records}]}]})))
    join = {"group_id": "g", "session_timeout_ms": 10, "rebalance_timeout_ms": 10,
            "member_id": "", "protocol_type": "consumer",
            "protocols": [{"name": "range", "metadata": b""}]}
    seeds += [(None, encode_request(11, v, 1, "fuzz", join)) for v in (0, 4, 5)]
    seeds += [(None, encode_request(19, 4, 1, "fuzz", {"topics": [
        {"name": "t", "num_partitions": 3, "replication_factor": 1}], "timeout_ms": 100}))]
    apis = {info.key: (0, registry.spec(f"{info.name}Request").valid.hi)
            for info in catalog if f"{info.name}Request" in registry}
    holder: dict[str, Any] = {}

    def fresh() -> tuple[asyncio.AbstractEventLoop, Any]:
        old = holder.get("loop")
        if old is not None:
            old.close()
        loop = asyncio.new_event_loop()
        state = ClusterState(group_settings=GroupSettings(
            initial_rebalance_delay_ms=0, min_session_timeout_ms=0))
        state.create_topic("t", 3)
        holder["loop"], holder["broker"] = loop, EmulatedBroker(1, "4.1", apis=apis,
                                                                  state=state)
        return loop, holder["broker"]

    fresh()

    def run(context: Any, data: bytes) -> None:
        loop, broker = holder["loop"], holder["broker"]
        key = struct.unpack_from(">h", data)[0] if len(data) >= 2 else -1
        waits = key in WAITING_APIS
        try:
            loop.run_until_complete(asyncio.wait_for(broker._answer(data, None),
                                                     0.05 if waits else 0.5))
        except TimeoutError:
            if not waits:
                raise AssertionError(f"hang: API {key} did not answer within 0.5 s") from None
        except (_Close, ClientGone):
            return
        except BaseException:
            if not isinstance(sys.exc_info()[1], KClientError):
                fresh()  # a case timeout may leave the loop half-run
            raise

    tokens = [b"\xff\xff\xff\xff", b"\x7f\xff\xff\xff", b"\x80\x00\x00\x00", b"\x00\x00",
              b"\xff\xff", b"\xff\xff\xff\xf4", b"\xff\xff\xff\xe8", b"\x1f\x8b\x08"]
    return Target("emulator", seeds, run, tokens)


#: The targets issue 36 added: the inputs of the command line and configuration.
INPUT_TARGETS = ("request_json", "properties", "client_config", "jaas", "sasl",
                 "features_file")


def build_targets(seed: int) -> tuple[list[Target], Callable[[], None]]:
    """Every target, and a function removing the temporary files they use."""
    import shutil

    rng = random.Random(seed)
    files = _CliFiles()
    targets = [*_protocol_targets(rng), _features_target(), _snapshot_target(),
               _cli_target(files), _request_json_target(files), _properties_target(files),
               _client_config_target(), _jaas_target(), _sasl_target(),
               _features_file_target(files), _emulator_target(rng)]
    return targets, lambda: shutil.rmtree(files.dir, ignore_errors=True)


# --------------------------------------------------------------- jaas scaling

#: The shapes of a long ``sasl.jaas.config`` value, by name: ``shape(n)`` is
#: about ``n`` characters after the login module.
_JAAS_SHAPES: dict[str, Callable[[int], str]] = {
    "many options": lambda n: "a=b " * (n // 4) + ";",
    "one long value": lambda n: 'password="' + "x" * n + '";',
    "escapes": lambda n: 'password="' + '\\"' * (n // 2) + '";',
    "unterminated quote": lambda n: 'password="' + "x" * n,
}


def jaas_scaling(small: int = 100_000, large: int = 800_000) -> list[tuple[str, float, float]]:
    """``(shape, seconds at small, seconds at large)`` for parsing long jaas lines.

    Linear parsing takes about ``large / small`` times longer for the large
    line (8x by default); quadratic parsing about its square (64x).
    """
    from kclient.errors import ConfigError
    from kclient.net.config import parse_jaas

    module = "org.apache.kafka.common.security.plain.PlainLoginModule required "
    figures = []
    for shape, make in _JAAS_SHAPES.items():
        times = []
        for size in (small, large):
            text = module + make(size)
            best = float("inf")
            for _ in range(2):
                t0 = time.perf_counter()
                with contextlib.suppress(ConfigError):
                    parse_jaas(text)
                best = min(best, time.perf_counter() - t0)
            times.append(best)
        figures.append((shape, times[0], times[1]))
    return figures


def jaas_scaling_lines(small: int = 100_000, large: int = 800_000) -> list[str]:
    """The jaas figure as report lines."""
    out = [f"jaas scaling (parse time of one sasl.jaas.config value; linear: x"
           f"{large // small}, quadratic: x{(large // small) ** 2}):"]
    for shape, t_small, t_large in jaas_scaling(small, large):
        ratio = t_large / t_small if t_small > 0 else float("inf")
        out.append(f"  {shape}: {small // 1000} KB {t_small * 1000:.1f} ms, {large // 1000} KB "
                   f"{t_large * 1000:.1f} ms (x{ratio:.1f})")
    return out


# ------------------------------------------------------------------------ running


@dataclass
class Failure:
    """A non-typed exception (or a hang) and the input that caused it."""

    kind: str
    message: str
    context: Any
    data: bytes


@dataclass
class Report:
    """What one target's run found."""

    name: str
    cases: int = 0
    accepted: int = 0
    refused: int = 0
    failures: list[Failure] = field(default_factory=list)
    failure_count: int = 0
    failure_kinds: dict[str, int] = field(default_factory=dict)
    slowest: float = 0.0
    slowest_size: int = 0
    slowest_data: bytes = b""
    memory_samples: int = 0
    peak_per_byte: float = 0.0
    peak_bytes: int = 0
    elapsed: float = 0.0

    def lines(self, shown: int = 3) -> list[str]:
        """The report as text lines."""
        out = [
            f"{self.name}: {self.cases} cases in {self.elapsed:.1f} s, {self.accepted} accepted, "
            f"{self.refused} refused with a typed error, {self.failure_count} non-typed",
            f"  slowest case {self.slowest * 1000:.2f} ms ({self.slowest_size} bytes: "
            f"{self.slowest_data[:48].hex()}{'...' if self.slowest_size > 48 else ''})",
            f"  peak memory (tracemalloc, {self.memory_samples} sampled cases of 64+ bytes): "
            f"{self.peak_per_byte:.0f} bytes per input byte at most; largest peak "
            f"{self.peak_bytes / 1024:.0f} KiB",
        ]
        if self.failure_kinds:
            out.append("  non-typed by kind: " + ", ".join(
                f"{kind} {count}" for kind, count in sorted(
                    self.failure_kinds.items(), key=lambda item: -item[1])))
        for failure in self.failures[:shown]:
            out.append(f"  NON-TYPED {failure.kind}: {failure.message[:200]}")
            out.append(f"    context {failure.context!r}; input ({len(failure.data)} bytes) "
                       f"{failure.data[:256].hex()}")
        return out


def _on_alarm(signum: int, frame: Any) -> None:
    raise CaseTimeout


def run_case(target: Target, context: Any, data: bytes) -> tuple[bool, str | None]:
    """Run one input: ``(accepted, problem)``; ``problem`` is None unless non-typed."""
    try:
        target.run(context, data)
    except target.typed:
        return False, None
    except CaseTimeout:
        return False, "hang: the case ran past its time limit"
    except Exception as exc:  # the point: anything else is a finding
        return False, f"{type(exc).__name__}: {exc}"
    return True, None


def fuzz_target(target: Target, *, cases: int, seconds: float, seed: int,
                case_timeout: float = 5.0, memory_every: int = 97) -> Report:
    """Run up to ``cases`` mutants (or ``seconds``) of ``target``'s seeds."""
    rng = random.Random(f"{seed}:{target.name}")
    report = Report(target.name)
    seeds = target.seeds
    others = [d for _, d in seeds]
    use_alarm = hasattr(signal, "setitimer")
    previous = signal.signal(signal.SIGALRM, _on_alarm) if use_alarm else None
    started = time.perf_counter()
    try:
        for index in range(cases):
            if time.perf_counter() - started > seconds:
                break
            # Every seed as is, interleaved with mutants: a short run (the smoke
            # test) reaches the error paths even with many seeds.
            if index % 2 == 0 and index // 2 < len(seeds):
                context, data = seeds[index // 2]
            else:
                context, original = seeds[rng.randrange(len(seeds))]
                data = mutate(original, rng, others, target.tokens)
            sample = len(data) >= 64 and index % memory_every == 0
            if sample:
                tracemalloc.start()
            if use_alarm:
                signal.setitimer(signal.ITIMER_REAL, case_timeout)
            rss_before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
            t0 = time.perf_counter()
            try:
                accepted, problem = run_case(target, context, data)
            finally:
                took = time.perf_counter() - t0
                if use_alarm:
                    signal.setitimer(signal.ITIMER_REAL, 0)
                if sample:
                    peak = tracemalloc.get_traced_memory()[1]
                    tracemalloc.stop()
                    report.memory_samples += 1
                    report.peak_per_byte = max(report.peak_per_byte, peak / len(data))
                    report.peak_bytes = max(report.peak_bytes, peak)
            # Every case: the process's peak RSS (KiB on Linux) must not jump.
            grown = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss - rss_before
            if problem is None and grown * 1024 > GIANT_ALLOCATION:
                problem = f"giant allocation: peak RSS grew by {grown // 1024} MiB"
            report.cases += 1
            if accepted:
                report.accepted += 1
            elif problem is None:
                report.refused += 1
            if took > report.slowest:
                report.slowest, report.slowest_size, report.slowest_data = took, len(data), data
            if problem is not None:
                report.failure_count += 1
                kind, _, message = problem.partition(": ")
                report.failure_kinds[kind] = report.failure_kinds.get(kind, 0) + 1
                if len(report.failures) < 20:
                    report.failures.append(Failure(kind, message, context, data))
    finally:
        if use_alarm:
            signal.signal(signal.SIGALRM, previous)
    report.elapsed = time.perf_counter() - started
    return report


def run(names: Sequence[str] | None = None, *, cases: int, seconds: float, seed: int = 1,
        case_timeout: float = 5.0,
        on_report: Callable[[Report], None] | None = None) -> list[Report]:
    """Fuzz the named targets (all when ``None``); one report per target.

    ``on_report`` is called with each report as soon as its target is done.
    """
    targets, cleanup = build_targets(seed)
    reports = []
    try:
        for target in targets:
            if names is not None and target.name not in names:
                continue
            report = fuzz_target(target, cases=cases, seconds=seconds, seed=seed,
                                 case_timeout=case_timeout)
            reports.append(report)
            if on_report is not None:
                on_report(report)
        return reports
    finally:
        cleanup()


def iter_target_names() -> Iterator[str]:
    """The target names, in run order."""
    yield from ("decode", "decode_request", "decode_response", "FrameDecoder",
                "parse_features", "snapshot", "cli", *INPUT_TARGETS, "emulator")


def main(argv: list[str]) -> int:
    """Command line of the fuzz benchmark (see the module docstring)."""
    parser = argparse.ArgumentParser(prog="python -m benchmarks fuzz --")
    parser.add_argument("--cases", type=int, default=20_000, help="cases per target")
    parser.add_argument("--seconds", type=float, default=60.0, help="time per target")
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--case-timeout", type=float, default=5.0,
                        help="a case running longer is a hang (a failure)")
    parser.add_argument("--targets", default=None,
                        help=f"comma-separated subset of {', '.join(iter_target_names())}")
    args = parser.parse_args(argv)
    names = args.targets.split(",") if args.targets else None
    reports = run(names, cases=args.cases, seconds=args.seconds, seed=args.seed,
                  case_timeout=args.case_timeout,
                  on_report=lambda r: print("\n".join(r.lines()), flush=True))
    if names is None or "jaas" in names:
        print("\n".join(jaas_scaling_lines()), flush=True)
    total = sum(r.cases for r in reports)
    failures = sum(r.failure_count for r in reports)
    print(f"total: {total} cases, {failures} non-typed exceptions (seed {args.seed})")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
