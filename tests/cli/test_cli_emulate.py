"""``kclient emulate`` through the console script: start, print, stop cleanly, errors."""

from __future__ import annotations

import signal
import socket
from collections.abc import Callable
from pathlib import Path

import pytest

from kclient.negotiation import guess_release, release_profile
from tests.conftest import raw_api_versions
from tests.extras import needs_trustme

from .conftest import Emulator, run_kclient

pytestmark = [pytest.mark.integration, pytest.mark.timeout(60)]


def _accepts(address: str) -> bool:
    host, _, port = address.rpartition(":")
    try:
        with socket.create_connection((host, int(port)), timeout=2):
            return True
    except OSError:
        return False


@pytest.mark.parametrize("sig", [signal.SIGINT, signal.SIGTERM], ids=["SIGINT", "SIGTERM"])
def test_emulate_prints_brokers_and_stops_cleanly(
        emulator: Callable[..., Emulator], sig: signal.Signals) -> None:
    emu = emulator("--release", "2.0,3.9", "--brokers", "3", "--port", "0",
                   "--behaviour", "3=slow:0.1")
    text = "".join(emu.output)
    assert "3 broker(s) on 127.0.0.1" in text
    assert "broker 1" in text and "Kafka 2.0" in text
    assert "broker 2" in text and "Kafka 3.9" in text
    assert "broker 3" in text and "[slow:0.1]" in text  # releases cycle: 2.0, 3.9, 2.0
    assert len(emu.ports) == 3 and _accepts(emu.bootstrap)
    code, _, err = emu.stop(sig)
    assert code == 0, err
    assert "Traceback" not in err
    assert not _accepts(emu.bootstrap)


def test_emulate_kraft_release(emulator: Callable[..., Emulator]) -> None:
    emu = emulator("--release", "3.7-kraft", "--port", "0")
    assert "Kafka 3.7-kraft" in "".join(emu.output)
    host, _, port = emu.bootstrap.rpartition(":")
    apis = raw_api_versions(host, int(port))
    assert apis == release_profile("3.7-kraft")
    assert guess_release(apis).text == "3.7 (KRaft)"
    code, _, err = emu.stop()
    assert code == 0, err


def _free_port_pair() -> int:
    """A port P with P and P+1 both free right now (other tests take ports too)."""
    for _ in range(50):
        with socket.socket() as first, socket.socket() as second:
            first.bind(("127.0.0.1", 0))
            base = int(first.getsockname()[1])
            if base >= 65535:
                continue
            try:
                second.bind(("127.0.0.1", base + 1))
            except OSError:
                continue
            return base
    raise AssertionError("no two consecutive free ports on 127.0.0.1 in 50 tries")


def test_emulate_consecutive_ports(emulator: Callable[..., Emulator]) -> None:
    base = _free_port_pair()
    emu = emulator("--release", "2.8", "--brokers", "2", "--port", str(base))
    assert emu.bootstrap == f"127.0.0.1:{base}"
    assert emu.ports == [base, base + 1]


def test_emulate_with_tls(emulator: Callable[..., Emulator], tmp_path: Path) -> None:
    ca = needs_trustme().CA()
    cert = ca.issue_cert("127.0.0.1")
    chain, key = tmp_path / "server.pem", tmp_path / "server.key"
    cert.private_key_pem.write_to_path(str(key))
    chain.write_bytes(b"".join(blob.bytes() for blob in cert.cert_chain_pems))
    emu = emulator("--release", "3.9", "--port", "0", "--tls-cert", str(chain),
                   "--tls-key", str(key))
    assert "with TLS" in "".join(emu.output)
    assert _accepts(emu.bootstrap)


@pytest.mark.parametrize(("argv", "fragment"), [
    (["--release", "9.9"], "unknown Kafka release '9.9'"),
    (["--release", "2.1-kraft"], "Kafka 2.1 has no KRaft mode"),
    (["--release", ","], "at least one Kafka release"),
    (["--brokers", "0"], "--brokers: 0 is not between 1 and 64"),
    (["--behaviour", "wobble"], "unknown emulator behaviour 'wobble'"),
    (["--behaviour", "5=legacy"], "broker '5' is not one of 1-1"),
    (["--tls-key", "k.pem"], "--tls-key needs --tls-cert"),
    (["--tls-cert", "missing.pem"], "--tls-cert: missing.pem does not exist; check the path"),
    (["--port", "70000"], "--port: 70000"),
    (["--host", "a" * 100], "--host: the host 'aaaa"),
    (["--host", "a" * 100], "has a label of 100 characters; DNS allows 63"),
    (["--host", "a..b"], "--host: the host 'a..b' has an empty label"),
    (["--host", "x\ty"], "--host: the host 'x\\ty' contains control characters"),
    (["--brokers", "two"], "invalid int value"),
    (["--every", "5"], "--every needs --upgrade-to RELEASE"),
    (["--upgrade-to", "9.9"], "--upgrade-to: unknown Kafka release '9.9'"),
    (["--upgrade-to", "4.0", "--every", "0"], "argument --every: must be a finite number of "
     "seconds, more than 0; got 0.0"),
    (["--sasl-user", "alice"], "--sasl-user: 'alice' is not NAME:PASSWORD_FILE"),
    (["--sasl-user", "alice:missing.pw"], "--sasl-user alice: password file missing.pw does not"),
    (["--sasl-mechanism", "PLAIN"], "--sasl-mechanism needs at least one --sasl-user"),
    (["--finalized-feature", "group.version"], "--finalized-feature: 'group.version' is not "
     "NAME=LEVEL"),
    (["--finalized-feature", "group.version=-1"], "levels from 0 to 32767"),
    (["--supported-feature", "transaction.version=2"], "is not NAME=MIN-MAX"),
    (["--supported-feature", "transaction.version=3-1"], "the minimum 3 is above the maximum 1"),
    (["--finalized-feature", "transaction.version=3", "--supported-feature",
      "transaction.version=0-2"], "transaction.version=3 is outside the supported range 0-2"),
])
def test_emulate_errors_are_one_line_exit_2(argv: list[str], fragment: str,
                                            tmp_path: Path) -> None:
    result = run_kclient("emulate", *argv, cwd=tmp_path)
    assert result.returncode == 2, result.stderr
    assert fragment in result.stderr
    assert result.stderr.count("\n") == 1 and "Traceback" not in result.stderr
    assert result.stdout == ""


def test_emulate_port_in_use(emulator: Callable[..., Emulator]) -> None:
    first = emulator("--release", "3.9", "--port", "0")
    port = first.ports[0]
    result = run_kclient("emulate", "--port", str(port), timeout=30)
    assert result.returncode == 2
    assert f"127.0.0.1:{port}" in result.stderr and "pick another" in result.stderr
    assert "Traceback" not in result.stderr


def test_emulate_sasl_users_and_finalized_features(emulator: Callable[..., Emulator],
                                                   tmp_path: Path) -> None:
    import json

    password = tmp_path / "alice.password"
    password.write_text("alice-secret\n", encoding="utf-8")
    secured = emulator("--release", "3.9", "--brokers", "2", "--port", "0",
                       "--sasl-user", f"alice:{password}", "--sasl-mechanism", "SCRAM-SHA-256",
                       "--finalized-feature", "group.version=1")
    assert "with SASL (SCRAM-SHA-256)" in secured.output[0]
    assert any("finalized features: group.version=1 (epoch 1)" in line
               for line in secured.output)
    login = ["--security-protocol", "SASL_PLAINTEXT", "--sasl-mechanism", "SCRAM-SHA-256",
             "--sasl-username", "alice", "--sasl-password-file", str(password)]
    ok = run_kclient("features", "-b", secured.bootstrap, *login, "--require",
                     "ConsumerGroupProtocol", "--format", "json")
    assert ok.returncode == 0, ok.stderr
    brokers = json.loads(run_kclient("api-versions", "-b", secured.bootstrap, *login,
                                     "--format", "json").stdout)["clusters"][0]["brokers"]
    assert [b["finalized_features"] for b in brokers] == [{"group.version": [1, 1]}] * 2
    assert [b["supported_features"] for b in brokers] == [{"group.version": [0, 1]}] * 2
    assert {b["finalized_features_epoch"] for b in brokers} == {1}
    wrong = tmp_path / "wrong.password"
    wrong.write_text("guess\n", encoding="utf-8")
    refused = run_kclient("api-versions", "-b", secured.bootstrap, "--timeout", "5",
                          *login[:-1], str(wrong))
    assert refused.returncode == 2 and "Traceback" not in refused.stderr
    # The same cluster without the level: the KIP-848 protocol is not available.
    plain = emulator("--release", "3.9", "--brokers", "2", "--port", "0")
    unset = run_kclient("features", "-b", plain.bootstrap, "--require", "ConsumerGroupProtocol")
    assert unset.returncode == 1
    assert "group.version needs 1+; brokers 1-2 have not finalized it" in unset.stdout


def _hostile(state: str, address: str) -> list[socket.socket]:
    """Connections that put an emulator in ``state`` (kept open until the test ends)."""
    import gzip
    import struct
    import zlib

    from kclient.protocol import encode_request, frame

    host, _, port = address.rpartition(":")
    sock = socket.create_connection((host, int(port)), timeout=5)
    if state == "parked-join":
        join = {"group_id": "g", "session_timeout_ms": 10_000, "rebalance_timeout_ms": 300_000,
                "member_id": "", "protocol_type": "consumer",
                "protocols": [{"name": "range", "metadata": b""}]}
        sock.sendall(frame(encode_request(11, 3, 1, "a", join)))
        sock.recv(65536)  # the first member's answer after the initial delay
        other = socket.create_connection((host, int(port)), timeout=5)
        other.sendall(frame(encode_request(11, 3, 2, "b", join)))  # parked: waits for "a"
        return [sock, other]
    if state == "partial-frame":
        sock.sendall(struct.pack(">i", 90 * 1024 * 1024) + bytes(8 * 1024 * 1024))
        return [sock]
    if state == "bomb":
        squeeze = zlib.compressobj(9, zlib.DEFLATED, 16 + zlib.MAX_WBITS)
        bomb = squeeze.compress(struct.pack(">qiIbb", 0, 1 << 30, 0, 1, 0))
        for _ in range(200):
            bomb += squeeze.compress(bytes(1 << 20))
        bomb += squeeze.flush()
        body = struct.pack(">bbq", 1, 1, 0) + struct.pack(">ii", -1, len(bomb)) + bomb
        records = struct.pack(">qiI", 0, len(body) + 4, 0) + body
        sock.sendall(frame(encode_request(0, 2, 1, "b", {
            "acks": -1, "timeout_ms": 1000, "topic_data": [{"name": "t", "partition_data": [
                {"index": 0, "records": records}]}]})))
        return [sock]
    if state == "negative-inner-size":
        inner = gzip.compress(struct.pack(">qi", 0, -12) + bytes(40))
        body = struct.pack(">bbq", 1, 1, 0) + struct.pack(">ii", -1, len(inner)) + inner
        records = struct.pack(">qiI", 0, len(body) + 4, 0) + body
        for index in range(20):
            sock.sendall(frame(encode_request(0, 2, index, "n", {
                "acks": -1, "timeout_ms": 1000, "topic_data": [{"name": "t", "partition_data": [
                    {"index": 0, "records": records}]}]})))
        sock.recv(4)  # the first is answered: the others are in flight
        return [sock]
    return [sock]


@pytest.mark.parametrize("state", ["idle", "parked-join", "partial-frame", "bomb",
                                   "negative-inner-size"])
def test_sigterm_stops_emulate_within_a_second_in_every_state(
        emulator: Callable[..., Emulator], state: str) -> None:
    import time

    emu = emulator("--release", "3.9", "--port", "0")
    held = _hostile(state, emu.bootstrap)
    try:
        started = time.monotonic()
        code, _, err = emu.stop(signal.SIGTERM)
        took = time.monotonic() - started
    finally:
        for sock in held:
            sock.close()
    assert code == 0 and "Traceback" not in err, err
    assert took < 1.0, f"kclient emulate took {took:.2f} s to stop ({state})"
def test_kafka_4_group_protocols_on_fresh_and_upgraded_emulated_clusters(
        emulator: Callable[..., Emulator]) -> None:
    """A fresh emulated 4.0 cluster finalizes group.version 1, so the KIP-848 protocol is
    on; one upgraded from 3.x that kept group.version 0 (--finalized-feature) is not, and
    the reason names the fix. Share groups: on with 4.2's fresh levels, off with 4.1's
    (a preview: share.version 0)."""
    fresh = emulator("--release", "4.0", "--port", "0")
    assert any("finalized features: metadata.version=25, kraft.version=1, "
               "transaction.version=2, group.version=1 (epoch 1)" in line
               for line in fresh.output)
    ok = run_kclient("features", "-b", fresh.bootstrap, "--require", "ConsumerGroupProtocol")
    assert ok.returncode == 0, ok.stderr + ok.stdout
    upgraded = emulator("--release", "4.0", "--port", "0", "--finalized-feature",
                        "group.version=0")
    refused = run_kclient("features", "-b", upgraded.bootstrap, "--require",
                          "ConsumerGroupProtocol")
    assert refused.returncode == 1
    fix = ("group.version needs 1+; broker 1 has not finalized it; to finalize it: "
           "kafka-features.sh upgrade --feature group.version=1 (an emulated cluster: kclient "
           "emulate --finalized-feature group.version=1)")
    assert fix in refused.stderr
    share_on = emulator("--release", "4.2", "--port", "0")
    on = run_kclient("features", "-b", share_on.bootstrap, "--require", "ShareGroups")
    assert on.returncode == 0, on.stderr + on.stdout
    share_off = emulator("--release", "4.1", "--port", "0")
    off = run_kclient("features", "-b", share_off.bootstrap, "--require", "ShareGroups")
    assert off.returncode == 1
    assert ("ShareGroups is not available in cluster" in off.stderr
            and "share.version needs 1+; broker 1 has not finalized it; to finalize it: "
            "kafka-features.sh upgrade --feature share.version=1" in off.stderr)
