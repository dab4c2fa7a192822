"""Fixtures for the connection-layer tests: tansu with TLS and test certificates.

The plaintext ``tansu`` fixture is session-wide, in tests/conftest.py.
"""

from __future__ import annotations

import ssl
from collections.abc import Iterator
from pathlib import Path

import attrs
import pytest

from tests.conftest import TansuBroker, start_tansu, stop_tansu

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
    process, port = start_tansu(["--cert", str(certificates.cert_file),
                                  "--key", str(certificates.key_file)], "tansu with TLS")
    try:
        yield TansuBroker("127.0.0.1", port, tls=True)
    finally:
        stop_tansu(process)
