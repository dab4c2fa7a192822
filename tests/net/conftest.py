"""Fixtures for the connection-layer tests: tansu with TLS and test certificates.

The plaintext ``tansu`` fixture is session-wide, in tests/conftest.py.
"""

from __future__ import annotations

import ssl
import subprocess
from collections.abc import Iterator
from pathlib import Path

import attrs
import pytest

from tests.conftest import TansuBroker, free_port, start_tansu, stop_tansu, tansu_binary
from tests.extras import needs_trustme

__all__ = ["Certificates", "TansuBroker"]


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


@pytest.fixture(scope="session")
def certificates(tmp_path_factory: pytest.TempPathFactory) -> Certificates:
    """A CA, a server certificate for 127.0.0.1 and localhost, and a client certificate."""
    trustme = needs_trustme()
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


def _tls_options_refused(certificates: Certificates) -> str | None:
    """tansu's own error when it refuses ``--cert`` with ``--key``; None if it takes them.

    tansu 0.6.0's command line declares the two options mutually exclusive (and
    with ``--cert`` alone it listens in plaintext), so it exits at once with a
    usage error; a build that accepts them keeps running and is stopped here.
    """
    binary = tansu_binary()
    if binary is None:
        return None  # start_tansu skips, naming the missing binary
    url = f"tcp://127.0.0.1:{free_port()}"
    try:
        result = subprocess.run(
            [binary, "broker", "--listener-url", url, "--advertised-listener-url", url,
             "--storage-engine", "memory://tansu/", "--cert", str(certificates.cert_file),
             "--key", str(certificates.key_file)],
            capture_output=True, text=True, timeout=2, stdin=subprocess.DEVNULL)
    except subprocess.TimeoutExpired:
        return None
    errors = [line for line in result.stderr.splitlines() if line.startswith("error:")]
    return errors[0] if errors else f"exit status {result.returncode}"


@pytest.fixture(scope="session")
def tansu_tls(certificates: Certificates) -> Iterator[TansuBroker]:
    """tansu with a TLS listener using the test certificate."""
    refused = _tls_options_refused(certificates)
    if refused is not None:
        pytest.skip(f"this tansu build cannot serve TLS: started with --cert and --key it "
                    f"exits with {refused!r}; TLS is proven against the emulator in "
                    "test_tls_against_the_emulator")
    process, port = start_tansu(["--cert", str(certificates.cert_file),
                                  "--key", str(certificates.key_file)], "tansu with TLS")
    try:
        yield TansuBroker("127.0.0.1", port, tls=True)
    finally:
        stop_tansu(process)
