"""kclient against a real broker (tansu): negotiation, Metadata and TLS.

The ranges kclient records are compared with what tansu sends, read from a
hand-built ApiVersions v0 exchange (not kclient's codec).
"""

from __future__ import annotations

import ssl

import pytest

from kclient.emulator import EmulatedBroker
from kclient.errors import BrokerConnectionError
from kclient.negotiation import ClusterView
from kclient.net import Client, Connection, TlsConfig
from tests.conftest import raw_api_versions

from .conftest import Certificates, TansuBroker

pytestmark = [pytest.mark.integration, pytest.mark.timeout(60)]


async def test_negotiated_ranges_equal_what_tansu_sends(tansu: TansuBroker) -> None:
    expected = raw_api_versions(tansu.host, tansu.port)
    async with Connection(tansu.host, tansu.port) as conn:
        assert dict(conn.versions.apis) == expected
        assert conn.versions.source == "api_versions"
        assert conn.versions.handshake[0] == "send ApiVersions v4"


async def test_client_metadata_and_view_on_tansu(tansu: TansuBroker) -> None:
    expected = raw_api_versions(tansu.host, tansu.port)
    async with Client(tansu.bootstrap, metadata_refresh_interval=None) as client:
        assert len(client.view.live_brokers) == 1
        broker = client.view.live_brokers[0]
        assert (broker.host, broker.port) == (tansu.host, tansu.port)
        assert dict(broker.apis) == expected
        offline = ClusterView([broker])
        assert client.version_for("Metadata") == offline.version_for("Metadata")
        response = await client.request("Metadata", {"topics": []})
        assert [(b.host, b.port) for b in response.brokers] == [(tansu.host, tansu.port)]


async def test_tls_with_a_self_signed_certificate(tansu_tls: TansuBroker,
                                                  certificates: Certificates) -> None:
    trusted = ssl.create_default_context(cafile=str(certificates.ca_file))
    try:
        expected = raw_api_versions(tansu_tls.host, tansu_tls.port, trusted)
    except (ssl.SSLError, ConnectionError, OSError) as exc:
        pytest.skip(f"this tansu build does not serve TLS with --cert/--key ({exc}); "
                    "TLS is proven against the emulator in test_tls_against_the_emulator")
    tls = TlsConfig(ca_file=certificates.ca_file)
    async with Connection(tansu_tls.host, tansu_tls.port, tls=tls) as conn:
        assert dict(conn.versions.apis) == expected
    # Verification is on by default: the system store does not trust the test CA.
    with pytest.raises(BrokerConnectionError, match="TLS handshake failed"):
        await Connection(tansu_tls.host, tansu_tls.port, tls=True).connect()


async def test_tls_against_the_emulator(certificates: Certificates) -> None:
    server = certificates.server_context()
    async with EmulatedBroker(1, "3.9", ssl=server) as broker:
        tls = TlsConfig(ca_file=certificates.ca_file)
        async with Client(broker.address, tls=tls, metadata_refresh_interval=None) as client:
            assert client.view.live_brokers[0].node_id == 1
            await client.request("Metadata", {"topics": []})
        with pytest.raises(BrokerConnectionError,
                           match="TLS certificate verification failed: unable to get local"):
            await Connection("127.0.0.1", broker.port, tls=True).connect()
        wrong_name = TlsConfig(ca_file=certificates.ca_file, server_name="kafka.example")
        with pytest.raises(BrokerConnectionError,
                           match="Hostname mismatch, certificate is not valid for"):
            await Connection("127.0.0.1", broker.port, tls=wrong_name).connect()
        unverified = TlsConfig(verify=False)
        async with Connection("127.0.0.1", broker.port, tls=unverified) as conn:
            assert conn.versions.apis


async def test_tls_client_certificate(certificates: Certificates) -> None:
    server = certificates.server_context()
    server.verify_mode = ssl.CERT_REQUIRED
    server.load_verify_locations(cafile=str(certificates.ca_file))
    async with EmulatedBroker(1, "3.9", ssl=server) as broker:
        with_cert = TlsConfig(ca_file=certificates.ca_file,
                              cert_file=certificates.client_cert_file,
                              key_file=certificates.client_key_file)
        async with Connection("127.0.0.1", broker.port, tls=with_cert) as conn:
            assert conn.versions.apis
        without = TlsConfig(ca_file=certificates.ca_file)
        with pytest.raises(BrokerConnectionError):
            await Connection("127.0.0.1", broker.port, tls=without,
                             request_timeout=5).connect()
    assert "key_password=None" in repr(with_cert)
    assert "secret" not in repr(TlsConfig(key_password="secret"))
