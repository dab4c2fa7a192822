"""``kclient emulate`` through the console script: start, print, stop cleanly, errors."""

from __future__ import annotations

import signal
import socket
from collections.abc import Callable
from pathlib import Path

import pytest
import trustme

from kclient.negotiation import guess_release, release_profile
from tests.conftest import raw_api_versions

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
    ca = trustme.CA()
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
    (["--tls-cert", "missing.pem"], "--tls-cert: missing.pem is not a readable file"),
    (["--port", "70000"], "--port: 70000"),
    (["--brokers", "two"], "invalid int value"),
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
