"""Errors that point at the cause, in the command line's own words (console script).

Each case puts a peer that is not what the user thinks on a loopback port: a web
server, a TLS listener reached in plaintext, a plaintext listener reached with
TLS, a silent server.  The message must name the broker address, say what the
peer really is, and name the flag that helps (never a Python parameter).
"""

from __future__ import annotations

import socket
import subprocess
import sys
import threading
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from kclient.negotiation import SnapshotRecord, release_profile, write_snapshots
from kclient.negotiation.model import BrokerVersions
from tests.cli.conftest import Emulator, kclient_env, run_kclient
from tests.extras import needs_trustme

pytestmark = pytest.mark.timeout(120)


def _serve(answer: bytes | None) -> Iterator[int]:
    """A one-thread loopback server: reads a request, writes ``answer`` (None: stays silent)."""
    server = socket.socket()
    server.bind(("127.0.0.1", 0))
    server.listen(8)
    server.settimeout(0.2)
    stop = threading.Event()
    held: list[socket.socket] = []

    def run() -> None:
        while not stop.is_set():
            try:
                peer, _ = server.accept()
            except TimeoutError:
                continue
            peer.settimeout(5)
            try:
                peer.recv(4096)
                if answer is not None:
                    peer.sendall(answer)
                    peer.close()
                else:
                    held.append(peer)  # silent: keep it open, say nothing
            except OSError:
                peer.close()

    thread = threading.Thread(target=run, daemon=True)
    thread.start()
    try:
        yield server.getsockname()[1]
    finally:
        stop.set()
        thread.join(5)
        for peer in held:
            peer.close()
        server.close()


@pytest.fixture
def http_port() -> Iterator[int]:
    yield from _serve(b"HTTP/1.1 400 Bad Request\r\nContent-Length: 0\r\n\r\n")


@pytest.fixture
def tls_alert_port() -> Iterator[int]:
    # A TLS listener answering plaintext with a fatal alert record (type 21, TLS 1.2).
    yield from _serve(bytes.fromhex("15030300020246"))


@pytest.fixture
def silent_port() -> Iterator[int]:
    yield from _serve(None)


def _one_line_error(result: subprocess.CompletedProcess[str]) -> str:
    assert result.returncode == 2, (result.stdout, result.stderr)
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("kclient: error:"), result.stderr
    assert "Traceback" not in result.stderr
    return lines[0]


def test_an_http_server_is_named_as_such(http_port: int) -> None:
    line = _one_line_error(run_kclient("api-versions", "-b", f"127.0.0.1:{http_port}",
                                       "--timeout", "5"))
    assert f"127.0.0.1:{http_port}" in line
    assert "answered in HTTP" in line and "not Kafka" in line
    assert line.endswith("this address is a web server or proxy; check the port")
    assert "max_frame_size" not in line  # no such flag on the command line


def test_a_tls_listener_reached_in_plaintext_says_use_tls(tls_alert_port: int) -> None:
    line = _one_line_error(run_kclient("api-versions", "-b", f"127.0.0.1:{tls_alert_port}",
                                       "--timeout", "5"))
    assert f"127.0.0.1:{tls_alert_port}" in line
    assert line.endswith("expects TLS; connect with TLS (--tls)")  # no "at offset 0"
    assert "predates Kafka 0.10" not in line


def test_a_plaintext_listener_reached_with_tls_says_drop_tls(
        emulator: Callable[..., Emulator], tmp_path: Path) -> None:
    emu = emulator("--release", "3.9", "--port", "0")
    ca = tmp_path / "ca.pem"
    needs_trustme().CA().cert_pem.write_to_path(str(ca))
    line = _one_line_error(run_kclient("api-versions", "-b", emu.bootstrap, "--tls",
                                       "--ca", str(ca), "--timeout", "5"))
    assert emu.bootstrap.split(",")[0] in line
    assert line.endswith("the listener probably speaks plaintext: connect without TLS "
                         "(leave out --tls)")


def test_a_silent_server_names_the_timeout_flag(silent_port: int) -> None:
    line = _one_line_error(run_kclient("api-versions", "-b", f"127.0.0.1:{silent_port}",
                                       "--timeout", "1"))
    assert f"127.0.0.1:{silent_port}" in line
    # Silence to ApiVersions: the likely causes first, a slow broker last.
    assert line.endswith(
        "no answer to ApiVersions v4 within 1s; the connection is closed. Brokers answer "
        "ApiVersions at once, before authentication, so this is most often a wrong port, a "
        "proxy or a TLS listener (connect with TLS: --tls), seldom a slow broker (raise "
        "--timeout)"), line
    assert "request_timeout" not in line


def test_a_closed_stdout_ends_quietly(tmp_path: Path) -> None:
    records = [SnapshotRecord.from_broker("big", BrokerVersions(
        n, f"h{n}", 9092, release_profile("3.9")), "2026-11-22T10:00:00Z") for n in range(200)]
    snapshot = tmp_path / "big.jsonl"
    write_snapshots(snapshot, records)
    proc = subprocess.Popen([sys.executable, "-m", "kclient.cli", "api-versions", "--snapshot",
                             str(snapshot)], stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                            env=kclient_env())
    assert proc.stdout is not None and proc.stderr is not None
    proc.stdout.readline()  # like `| head -1`
    proc.stdout.close()
    try:
        code = proc.wait(60)
        errors = proc.stderr.read().decode()
    finally:
        proc.kill()
        proc.stderr.close()
    assert code == 0, errors
    assert "Traceback" not in errors and "BrokenPipe" not in errors


@pytest.mark.parametrize(("argv", "expected"), [
    (["api-versions", "--bootstrap-servers", "x:1"],
     "kclient: error: unrecognized arguments: --bootstrap-servers x:1; did you mean "
     "--bootstrap-server? (see 'kclient api-versions --help')\n"),
    (["features", "--requre=ZSTD"],
     "kclient: error: unrecognized arguments: --requre=ZSTD; did you mean --require? "
     "(see 'kclient features --help')\n"),
    (["api-version", "-b", "x:1"],
     "kclient: error: argument COMMAND: invalid choice: 'api-version' (choose from "
     "'api-versions', 'features', 'probe', 'watch', 'emulate', 'demo', 'decode', 'encode', "
     "'request', 'fleet', 'compat'); did you mean api-versions? "
     "(see 'kclient api-versions --help')\n"),
    (["fleet", "reprt"],
     "kclient: error: argument COMMAND: invalid choice: 'reprt' (choose from 'report', "
     "'scan', 'synth', 'prepare'); did you mean report? (see 'kclient fleet report --help')\n"),
    (["watch", "--zzz"],
     "kclient: error: unrecognized arguments: --zzz (see 'kclient watch --help')\n"),
])
def test_did_you_mean_and_the_sub_commands_help(argv: list[str], expected: str,
                                               capsys: pytest.CaptureFixture[str]) -> None:
    from kclient.cli import main

    with pytest.raises(SystemExit) as exited:
        main(argv)
    assert exited.value.code == 2
    captured = capsys.readouterr()
    assert (captured.out, captured.err) == ("", expected)


def test_one_error_reads_in_python_names_and_the_command_line_prints_its_flags(
        emulator: Callable[..., Emulator], tls_alert_port: int) -> None:
    """The library's error keeps the options it names as facts: ``str()`` gives the
    Python parameters, and the console script prints the same error with its flags."""
    import asyncio

    from kclient import Client
    from kclient.commands.vocabulary import CLI_VOCABULARY
    from kclient.errors import BrokerConnectionError

    legacy = emulator("--release", "0.9.0", "--port", "0", "--behaviour", "legacy")
    cases = [
        (legacy.bootstrap, ("api_version_fallback", "tls"),
         'set api_version_fallback (e.g. api_version_fallback="0.9.0")',
         "set --api-version-fallback (e.g. --api-version-fallback 0.9.0)"),
        (f"127.0.0.1:{tls_alert_port}", ("tls",), "connect with TLS (tls)",
         "connect with TLS (--tls)"),
    ]

    async def start(bootstrap: str) -> None:
        client = Client(bootstrap, request_timeout=5, metadata_refresh_interval=None)
        try:
            await client.start()
        finally:
            await client.close()

    for bootstrap, options, python_words, cli_words in cases:
        with pytest.raises(BrokerConnectionError) as info:
            asyncio.run(start(bootstrap))
        assert info.value.options == options
        assert python_words in str(info.value) and cli_words not in str(info.value)
        line = _one_line_error(run_kclient("api-versions", "-b", bootstrap, "--timeout", "5"))
        assert cli_words in line and python_words not in line
        assert line == f"kclient: error: {CLI_VOCABULARY.text(info.value)}"
