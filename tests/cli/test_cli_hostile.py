"""Hostile files and arguments on the command line: one typed error line, exit 2, fast.

Every case runs the console script (``python -m kclient.cli``) and checks the
promise of the CLI: exactly one ``kclient: error: ...`` line naming the file or
option, exit code 2, no traceback, within a few seconds.
"""

from __future__ import annotations

import json
import subprocess
import sys
import time
from pathlib import Path

from tests.extras import needs_trustme

KCLIENT = [sys.executable, "-m", "kclient.cli"]


def run(*args: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run([*KCLIENT, *args], capture_output=True, text=True, timeout=60,
                          check=False, cwd=cwd, stdin=subprocess.DEVNULL)


def fails_cleanly(*args: str, cwd: Path, expected: str) -> str:
    started = time.monotonic()
    result = run(*args, cwd=cwd)
    elapsed = time.monotonic() - started
    assert result.returncode == 2, result.stderr
    assert "Traceback" not in result.stderr, result.stderr
    lines = result.stderr.splitlines()
    assert len(lines) == 1, result.stderr
    assert lines[0].startswith("kclient: error: "), lines[0]
    assert expected in lines[0], lines[0]
    assert elapsed < 20, f"took {elapsed:.1f} s"
    return lines[0]


DECODE = ("decode", "request", "--api", "Metadata", "--version", "1")
ENCODE = ("encode", "request", "--api", "Metadata", "--version", "1")


def test_decode_file_with_odd_length_hex(tmp_path: Path) -> None:
    (tmp_path / "odd.hex").write_text("0a0b0\n")
    fails_cleanly(*DECODE, "--file", "odd.hex", cwd=tmp_path,
                  expected="odd.hex: looks like hex text but has an odd number of digits (5)")


def test_decode_hex_that_is_not_hex(tmp_path: Path) -> None:
    for text in ("zz", "0a0", "²³"):
        fails_cleanly(*DECODE, "--hex", text, cwd=tmp_path,
                      expected="--hex is not valid hexadecimal")


def test_encode_json_nested_too_deeply(tmp_path: Path) -> None:
    (tmp_path / "deep.json").write_text("[" * 100_000 + "]" * 100_000)
    fails_cleanly(*ENCODE, "--json", "deep.json", cwd=tmp_path,
                  expected="deep.json: invalid JSON: arrays/objects are nested too deeply")


def test_encode_json_not_utf8(tmp_path: Path) -> None:
    (tmp_path / "bad.json").write_bytes(b'{"topics": "\xff"}')
    fails_cleanly(*ENCODE, "--json", "bad.json", cwd=tmp_path,
                  expected="--json: bad.json is not UTF-8 text (byte 12)")


def test_encode_json_with_a_huge_integer(tmp_path: Path) -> None:
    (tmp_path / "big.json").write_text('{"topics": ' + "9" * 5000 + "}")
    fails_cleanly(*ENCODE, "--json", "big.json", cwd=tmp_path, expected="big.json: invalid JSON")


def test_schemas_not_utf8_or_too_deep(tmp_path: Path) -> None:
    specs = tmp_path / "specs"
    specs.mkdir()
    (specs / "Bad.json").write_bytes(b'{"name": "\xff"}')
    fails_cleanly(*DECODE, "--hex", "00", "--schemas", "specs", cwd=tmp_path,
                  expected="specs/Bad.json: at <top>: the message spec is not UTF-8 text (byte 10)")
    (specs / "Bad.json").write_text("[" * 100_000)
    fails_cleanly(*DECODE, "--hex", "00", "--schemas", "specs", cwd=tmp_path,
                  expected="specs/Bad.json: at <top>: invalid JSON: arrays/objects are nested")


GOOD_RECORD = {
    "cluster": "lab", "broker_id": 1, "host": "10.0.0.5", "port": 9092,
    "observed_at": "2026-11-22T10:00:00Z", "source": "api_versions",
    "api_versions": [{"api_key": 18, "min_version": 0, "max_version": 3}], "error": None,
}


def test_snapshot_nested_too_deeply_or_out_of_range(tmp_path: Path) -> None:
    path = tmp_path / "snap.jsonl"
    path.write_text(json.dumps(GOOD_RECORD) + "\n" + "[" * 100_000 + "\n")
    fails_cleanly("features", "--snapshot", "snap.jsonl", cwd=tmp_path,
                  expected="snap.jsonl:2: not valid JSON (arrays/objects are nested too deeply")
    path.write_text(json.dumps({**GOOD_RECORD, "port": 70000}) + "\n")
    fails_cleanly("features", "--snapshot", "snap.jsonl", cwd=tmp_path,
                  expected="snap.jsonl:1: invalid snapshot record: 'port' must be 1-65535")
    path.write_text(json.dumps({**GOOD_RECORD, "host": "h\ud800"}) + "\n")
    fails_cleanly("api-versions", "--snapshot", "snap.jsonl", cwd=tmp_path,
                  expected="snap.jsonl:1: invalid snapshot record: 'host' holds an invalid")


def test_features_file_hostile(tmp_path: Path) -> None:
    (tmp_path / "f.yaml").write_text("version: 1\nfeatures: " + "[" * 5000 + "]" * 5000 + "\n")
    (tmp_path / "snap.jsonl").write_text(json.dumps(GOOD_RECORD) + "\n")
    fails_cleanly("features", "--snapshot", "snap.jsonl", "--features", "f.yaml",
                  cwd=tmp_path, expected="f.yaml:2: lists and mappings are nested more than 64")
    (tmp_path / "f.yaml").write_text("version: 1\nfeatures:\n  - name: A\n    requires:\n"
                                     "      - {api: Produce, min: 40000}\n")
    fails_cleanly("features", "--snapshot", "snap.jsonl", "--features", "f.yaml",
                  cwd=tmp_path, expected="f.yaml:5: min of Produce is 40000, above 32767")


def test_names_from_a_snapshot_reach_the_terminal_escaped(tmp_path: Path) -> None:
    records = [
        {**GOOD_RECORD, "cluster": "lab\x1b]0;owned\x07", "host": "\x1b[2J10.0.0.5"},
        {**GOOD_RECORD, "cluster": "lab\x1b]0;owned\x07", "broker_id": 2, "host": "h\x9b1m",
         "source": "error", "api_versions": [], "error": "refused\x1b[31m\nkclient: forged"},
    ]
    (tmp_path / "snap.jsonl").write_text("".join(json.dumps(r) + "\n" for r in records))
    for command in ("api-versions", "features"):
        result = run(command, "--snapshot", "snap.jsonl", cwd=tmp_path)
        out = result.stdout + result.stderr
        assert "\x1b" not in out and "\x9b" not in out and "\x07" not in out, out
        assert "lab\\x1b]0;owned\\x07" in result.stdout
        assert "refused\\x1b[31m\\nkclient: forged" in result.stdout
        assert not any(line.startswith("kclient: forged") for line in out.splitlines())
        if command == "api-versions":
            assert "\\x1b[2J10.0.0.5:9092" in result.stdout
            assert "h\\x9b1m:9092" in result.stdout


def test_the_error_line_escapes_what_it_quotes(tmp_path: Path) -> None:
    (tmp_path / "snap.jsonl").write_text(json.dumps(GOOD_RECORD) + "\n")
    line = fails_cleanly("features", "--snapshot", "snap.jsonl", "--cluster", "x\x1b[2J\ny",
                         cwd=tmp_path, expected="--cluster: no cluster named x\\x1b[2J\\ny")
    assert "\x1b" not in line


def test_encrypted_key_without_password_fails_before_connecting(tmp_path: Path) -> None:
    trustme = needs_trustme()  # before cryptography, which it needs: absent, both skip
    from cryptography.hazmat.primitives import serialization

    cert = trustme.CA().issue_cert("client.test")
    cert.cert_chain_pems[0].write_to_path(str(tmp_path / "c.pem"))
    key = serialization.load_pem_private_key(cert.private_key_pem.bytes(), None)
    (tmp_path / "k.pem").write_bytes(key.private_bytes(
        serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8,
        serialization.BestAvailableEncryption(b"pw")))
    # Port 9 (discard) on loopback: nothing is contacted, the key fails first.
    fails_cleanly("api-versions", "-b", "127.0.0.1:9", "--cert", "c.pem", "--key", "k.pem",
                  cwd=tmp_path, expected="TLS: the private key in k.pem is encrypted; give "
                  "its password with --key-password-file")


def test_encode_uuid_and_bytes_fields_need_text(tmp_path: Path) -> None:
    topic = {"error_code": 0, "name": "t", "topic_id": 5, "is_internal": False,
             "partitions": [], "topic_authorized_operations": 0}
    body = {"throttle_time_ms": 0, "brokers": [], "cluster_id": None, "controller_id": 1,
            "topics": [topic]}
    (tmp_path / "m.json").write_text(json.dumps(body))
    fails_cleanly("encode", "response", "--api", "Metadata", "--version", "12", "--json",
                  "m.json", cwd=tmp_path, expected="topics[0].topic_id: 5 is not valid uuid")


REQUEST = ("request", "Metadata", "-b", "127.0.0.1:9")


def test_request_json_file_not_utf8(tmp_path: Path) -> None:
    (tmp_path / "bad.json").write_bytes(b'{"topics": "\xff"}')
    fails_cleanly(*REQUEST, "--json", "@bad.json", cwd=tmp_path,
                  expected="--json: bad.json is not UTF-8 text (byte 12)")


def test_request_json_nested_too_deeply(tmp_path: Path) -> None:
    (tmp_path / "deep.json").write_text("[" * 100_000 + "]" * 100_000)
    fails_cleanly(*REQUEST, "--json", "@deep.json", cwd=tmp_path,
                  expected="deep.json: invalid JSON: arrays/objects are nested too deeply")
    fails_cleanly(*REQUEST, "--json", "[" * 100_000, cwd=tmp_path,
                  expected="--json: invalid JSON: arrays/objects are nested too deeply")


def test_request_json_integer_of_5000_digits(tmp_path: Path) -> None:
    (tmp_path / "big.json").write_text('{"topics": ' + "9" * 5000 + "}")
    line = fails_cleanly(*REQUEST, "--json", "@big.json", cwd=tmp_path,
                         expected="big.json: invalid JSON: an integer of more than")
    assert "set_int_max_str_digits" not in line
