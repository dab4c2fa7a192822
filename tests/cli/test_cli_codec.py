"""`kclient decode` / `kclient encode` through the real console script."""

from __future__ import annotations

import json
import subprocess
import sys
import uuid
from pathlib import Path

from kclient.protocol import decode, encode

KCLIENT = [sys.executable, "-m", "kclient.cli"]


def run(*args: str, stdin: str | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run([*KCLIENT, *args], input=stdin, capture_output=True, text=True,
                          timeout=60, check=False)


METADATA = {
    "throttle_time_ms": 3,
    "brokers": [{"node_id": 1, "host": "b1", "port": 9092, "rack": None}],
    "cluster_id": "c-1",
    "controller_id": 1,
    "topics": [{
        "error_code": 0, "name": "orders", "topic_id": str(uuid.UUID(int=42)),
        "is_internal": False, "topic_authorized_operations": -2147483648,
        "partitions": [{"error_code": 0, "partition_index": 0, "leader_id": 1,
                        "leader_epoch": 4, "replica_nodes": [1], "isr_nodes": [1],
                        "offline_replicas": []}],
    }],
}


def test_encode_then_decode_round_trips_json(tmp_path: Path) -> None:
    source = tmp_path / "metadata.json"
    source.write_text(json.dumps(METADATA))
    encoded = run("encode", "response", "--api", "Metadata", "--version", "12",
                  "--json", str(source))
    assert encoded.returncode == 0, encoded.stderr
    data = bytes.fromhex(encoded.stdout.strip())
    # Independent check of the bytes through the Python API.
    assert decode("MetadataResponse", 12, data).topics[0].topic_id == uuid.UUID(int=42)  # type: ignore[attr-defined]
    decoded = run("decode", "response", "--api", "3", "--version", "12", "--hex", data.hex())
    assert decoded.returncode == 0, decoded.stderr
    assert json.loads(decoded.stdout) == METADATA


def test_header_and_framing_options(tmp_path: Path) -> None:
    body = '{"client_software_name": "kclient", "client_software_version": "1.0"}'
    framed = run("encode", "request", "--api", "ApiVersions", "--version", "3", "--header",
                 "--framed", "--correlation-id", "9", "--client-id", "me", "--json", "-",
                 stdin=body)
    assert framed.returncode == 0, framed.stderr
    data = bytes.fromhex(framed.stdout.strip())
    assert int.from_bytes(data[:4], "big") == len(data) - 4
    raw = tmp_path / "req.bin"
    raw.write_bytes(data)
    decoded = run("decode", "request", "--api", "ApiVersions", "--version", "3", "--header",
                  "--framed", "--file", str(raw))
    assert decoded.returncode == 0, decoded.stderr
    result = json.loads(decoded.stdout)
    assert result["header"] == {"request_api_key": 18, "request_api_version": 3,
                                "correlation_id": 9, "client_id": "me"}
    assert result["body"] == json.loads(body)


def test_api_versions_error_response_is_read_as_v0() -> None:
    # A broker answering an unsupported ApiVersions version writes the v0 layout.
    body = encode("ApiVersionsResponse", 0, {"error_code": 35, "api_keys": [
        {"api_key": 18, "min_version": 0, "max_version": 2}]})
    data = (7).to_bytes(4, "big") + body
    decoded = run("decode", "response", "--api", "ApiVersions", "--version", "4", "--header",
                  "--hex", data.hex())
    assert decoded.returncode == 0, decoded.stderr
    result = json.loads(decoded.stdout)
    assert result["header"] == {"correlation_id": 7}
    assert result["body"]["error_code"] == 35
    assert result["body"]["api_keys"] == [{"api_key": 18, "min_version": 0, "max_version": 2}]


def test_body_only_api_versions_error_falls_back_to_v0_and_says_so() -> None:
    # `kclient encode --header` writes error 35 in the v0 layout; the body alone,
    # decoded as v4, is read as v0 (only v0 fields shown) with a note on stderr.
    error = json.dumps({"error_code": 35, "api_keys": [
        {"api_key": 18, "min_version": 0, "max_version": 3}]})
    encoded = run("encode", "response", "--api", "ApiVersions", "--version", "4", "--header",
                  "--correlation-id", "5", "--json", "-", stdin=error)
    assert encoded.returncode == 0, encoded.stderr
    wire = bytes.fromhex(encoded.stdout.strip())
    assert wire == bytes.fromhex("00000005" "0023" "00000001" "0012" "0000" "0003")
    decoded = run("decode", "response", "--api", "ApiVersions", "--version", "4",
                  "--hex", wire[4:].hex())
    assert decoded.returncode == 0, decoded.stderr
    assert json.loads(decoded.stdout) == {
        "error_code": 35, "api_keys": [{"api_key": 18, "min_version": 0, "max_version": 3}]}
    assert "read in the v0 layout" in decoded.stderr
    same = run("decode", "response", "--api", "ApiVersions", "--version", "0",
               "--hex", wire[4:].hex())
    assert same.stdout == decoded.stdout and same.stderr == ""


def test_errors_are_one_line_and_exit_2(tmp_path: Path) -> None:
    cases = [
        ("decode", "response", "--api", "Metadata", "--version", "12", "--hex", "00ff"),
        ("decode", "response", "--api", "NoSuchApi", "--version", "0", "--hex", "00"),
        ("decode", "response", "--api", "Metadata", "--version", "99", "--hex", "00"),
        ("decode", "response", "--api", "Metadata", "--version", "1", "--hex", "zz"),
        ("decode", "response", "--api", "Metadata", "--version", "1", "--file",
         str(tmp_path / "missing.bin")),
    ]
    for case in cases:
        result = run(*case)
        assert result.returncode == 2, (case, result.stderr)
        lines = result.stderr.strip().splitlines()
        assert len(lines) == 1 and lines[0].startswith("kclient: error:"), (case, result.stderr)
        assert "Traceback" not in result.stderr
    bad_json = tmp_path / "bad.json"
    bad_json.write_text('{"no_such_field": 1}')
    result = run("encode", "response", "--api", "Metadata", "--version", "1", "--json",
                 str(bad_json))
    assert result.returncode == 2 and "no_such_field" in result.stderr
    bad_json.write_text("{not json")
    result = run("encode", "response", "--api", "Metadata", "--version", "1", "--json",
                 str(bad_json))
    assert result.returncode == 2 and "bad.json:1:2" in result.stderr


def test_truncated_input_names_the_offset() -> None:
    body = encode("MetadataResponse", 1, {"brokers": [{"node_id": 1, "host": "h", "port": 1}]})
    result = run("decode", "response", "--api", "Metadata", "--version", "1", "--hex",
                 body[:-3].hex())
    assert result.returncode == 2
    assert "offset" in result.stderr


def test_unknown_tagged_fields_survive_decode_and_encode(tmp_path: Path) -> None:
    # ApiVersionsResponse v3 as a newer broker might send it: one API entry with
    # an unknown tag 4, and unknown tag 9 at the top level beside known tag 1.
    data = (b"\x00\x00" + b"\x02" + b"\x00\x12\x00\x00\x00\x04"
            + b"\x01\x04\x01\xaa"                              # entry tags: {4: aa}
            + b"\x00\x00\x00\x00"
            + b"\x02" + b"\x01\x08" + (7).to_bytes(8, "big")   # tag 1: epoch 7
            + b"\x09\x02\xbe\xef")                             # tag 9: beef
    decoded = run("decode", "response", "--api", "ApiVersions", "--version", "3",
                  "--hex", data.hex())
    assert decoded.returncode == 0, decoded.stderr
    shown = json.loads(decoded.stdout)
    assert shown["unknown_tags"] == {"9": "beef"}
    assert shown["api_keys"][0]["unknown_tags"] == {"4": "aa"}
    assert shown["finalized_features_epoch"] == 7
    source = tmp_path / "tagged.json"
    source.write_text(decoded.stdout)
    encoded = run("encode", "response", "--api", "ApiVersions", "--version", "3",
                  "--json", str(source))
    assert encoded.returncode == 0, encoded.stderr
    assert bytes.fromhex(encoded.stdout.strip()) == data
    source.write_text(json.dumps({"unknown_tags": {"9": "not hex"}}))
    refused = run("encode", "response", "--api", "ApiVersions", "--version", "3",
                  "--json", str(source))
    assert refused.returncode == 2
    assert "unknown_tags" in refused.stderr and "hex" in refused.stderr


def test_show_codec_prints_the_generated_source() -> None:
    shown = run("decode", "response", "--api", "ApiVersions", "--version", "3", "--show-codec")
    assert shown.returncode == 0, shown.stderr
    assert "<kclient generated decode/encode ApiVersionsResponse v3" in shown.stdout
    assert "def _dec_ApiVersionsResponse(buf, pos, end_buf" in shown.stdout
    assert "def _enc_ApiVersionsResponse(o, out" in shown.stdout
    # What is printed is the code that runs: it compiles.
    body = shown.stdout.split("\n\n", 1)[1]
    compile(body, "<shown>", "exec")
    request = run("decode", "request", "--api", "Metadata", "--version", "4", "--show-codec")
    assert request.returncode == 0, request.stderr
    assert "def _dec_MetadataRequest(" in request.stdout


def test_decode_without_input_says_what_to_give() -> None:
    result = run("decode", "response", "--api", "ApiVersions", "--version", "3")
    assert result.returncode != 0
    assert "--hex or --file" in result.stderr


def test_message_introspection_is_public() -> None:
    from kclient.protocol import message_class

    cls = message_class("ApiVersionsResponse")
    v0 = [f.attr for f in cls.fields(0)]
    assert v0 == ["error_code", "api_keys"]
    assert "throttle_time_ms" in [f.attr for f in cls.fields(1)]
    assert cls.fields() == cls.fields(None) and len(cls.fields()) >= len(cls.fields(3))
    spec = cls.field("ApiKeys")
    assert spec is not None and spec is cls.field("api_keys") and spec.kind == "array"
    child = cls.child("api_keys")
    assert child is not None and [f.attr for f in child.fields(0)] == [
        "api_key", "min_version", "max_version"]
    assert cls.field("nope") is None and cls.child("error_code") is None
