"""kclient.net.tls: client certificates with encrypted keys load without ever prompting.

OpenSSL asks for the password of an encrypted key on the terminal when it is not
given a password callback; a library that does that blocks its caller.  These
tests use trustme certificates whose key is re-encrypted with ``cryptography``.
"""

from __future__ import annotations

import os
import pty
import select
import ssl
import sys
import threading
import time
from collections.abc import Callable
from pathlib import Path

import attrs
import pytest

from kclient.commands.vocabulary import CLI_VOCABULARY
from kclient.emulator import EmulatedBroker, EmulatedCluster
from kclient.errors import ConfigError
from kclient.net import Client, Connection, TlsConfig
from tests.extras import needs_trustme

from .conftest import Certificates

trustme = needs_trustme()
serialization = pytest.importorskip("cryptography.hazmat.primitives.serialization")

PASSWORD = "s3cret pass"


@attrs.frozen
class EncryptedClient:
    ca_file: Path
    cert_file: Path
    key_file: Path  # encrypted with PASSWORD
    combined_file: Path  # the certificate and the encrypted key in one file


@pytest.fixture(scope="module")
def encrypted(certificates: Certificates, tmp_path_factory: pytest.TempPathFactory
              ) -> EncryptedClient:
    folder = tmp_path_factory.mktemp("encrypted")
    key = serialization.load_pem_private_key(certificates.client_key_file.read_bytes(), None)
    pem = key.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8,
                            serialization.BestAvailableEncryption(PASSWORD.encode()))
    assert b"ENCRYPTED" in pem
    paths = EncryptedClient(certificates.ca_file, certificates.client_cert_file,
                            folder / "client.key", folder / "client-and-key.pem")
    paths.key_file.write_bytes(pem)
    paths.combined_file.write_bytes(certificates.client_cert_file.read_bytes() + pem)
    return paths


def test_encrypted_key_with_its_password_loads(encrypted: EncryptedClient) -> None:
    TlsConfig(cert_file=encrypted.cert_file, key_file=encrypted.key_file,
              key_password=PASSWORD).context()
    TlsConfig(cert_file=encrypted.combined_file, key_password=PASSWORD).context()


def test_encrypted_key_without_a_password_says_to_give_one(encrypted: EncryptedClient) -> None:
    with pytest.raises(ConfigError) as info:
        TlsConfig(cert_file=encrypted.cert_file, key_file=encrypted.key_file).context()
    assert str(info.value) == (f"TLS: the private key in {encrypted.key_file} is encrypted; "
                               "give its password with TlsConfig.key_password")


def test_wrong_or_oversized_password_is_a_config_error(encrypted: EncryptedClient) -> None:
    with pytest.raises(ConfigError, match="wrong password for the encrypted key") as info:
        TlsConfig(cert_file=encrypted.cert_file, key_file=encrypted.key_file,
                  key_password="wrong").context()
    assert str(encrypted.key_file) in str(info.value)
    with pytest.raises(ConfigError, match="1024 bytes"):
        TlsConfig(cert_file=encrypted.cert_file, key_file=encrypted.key_file,
                  key_password="x" * 2000).context()


@pytest.mark.parametrize("password", [PASSWORD + "\0", "s3cret\0 pass"])
def test_a_nul_in_the_key_password_is_refused_without_showing_it(
        encrypted: EncryptedClient, password: str) -> None:
    """OpenSSL reads a password up to its first NUL: the right password plus a NUL and
    anything was taken as right; one cut short was "wrong"."""
    with pytest.raises(ConfigError) as info:
        TlsConfig(cert_file=encrypted.cert_file, key_file=encrypted.key_file,
                  key_password=password).context()
    assert str(info.value) == (
        "TlsConfig.key_password contains a NUL character, which no TLS key or key store "
        "password can hold; check the password (its value is not shown)")


def test_key_not_matching_or_not_pem_names_the_files(encrypted: EncryptedClient,
                                                     certificates: Certificates,
                                                     tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match="cannot load client certificate") as info:
        TlsConfig(cert_file=encrypted.cert_file, key_file=certificates.key_file).context()
    assert str(certificates.key_file) in str(info.value)
    garbage = tmp_path / "garbage.pem"
    garbage.write_text("not pem\n")
    with pytest.raises(ConfigError, match=f"cannot load client certificate {garbage}"):
        TlsConfig(cert_file=garbage).context()


def test_no_prompt_even_with_a_terminal(encrypted: EncryptedClient) -> None:
    """A child on a pseudo-terminal (its controlling tty) must fail at once, not prompt."""
    code = ("from kclient.net import TlsConfig\n"
            "from kclient.errors import ConfigError\n"
            "try:\n"
            f"    TlsConfig(cert_file={str(encrypted.cert_file)!r}, "
            f"key_file={str(encrypted.key_file)!r}).context()\n"
            "except ConfigError as exc:\n"
            "    print('CONFIG-ERROR', exc)\n")
    pid, master = pty.fork()
    if pid == 0:  # the child: a new session whose controlling terminal is the pty
        os.execv(sys.executable, [sys.executable, "-c", code])
    output = b""
    deadline = time.monotonic() + 20
    try:
        while time.monotonic() < deadline:
            ready, _, _ = select.select([master], [], [], 0.2)
            if ready:
                try:
                    chunk = os.read(master, 4096)
                except OSError:  # the child closed the terminal
                    break
                if not chunk:
                    break
                output += chunk
            finished, _ = os.waitpid(pid, os.WNOHANG)
            if finished:
                pid = 0
                break
    finally:
        if pid:
            os.kill(pid, 9)
            os.waitpid(pid, 0)
        os.close(master)
    text = output.decode(errors="replace")
    assert "pass phrase" not in text, text
    assert "CONFIG-ERROR TLS: the private key" in text, text


async def test_mutual_tls_with_an_encrypted_key(encrypted: EncryptedClient,
                                                certificates: Certificates) -> None:
    server = certificates.server_context()
    server.verify_mode = ssl.CERT_REQUIRED
    server.load_verify_locations(cafile=str(certificates.ca_file))
    async with EmulatedBroker(1, "3.9", ssl=server) as broker:
        tls = TlsConfig(ca_file=encrypted.ca_file, cert_file=encrypted.cert_file,
                        key_file=encrypted.key_file, key_password=PASSWORD)
        async with Connection("127.0.0.1", broker.port, tls=tls) as conn:
            assert conn.versions.apis


async def test_one_ssl_context_is_shared_by_every_connection_of_a_client(
        certificates: Certificates) -> None:
    async with EmulatedCluster(["3.9", "3.9", "2.8"], ssl=certificates.server_context()
                               ) as cluster:
        tls = TlsConfig(ca_file=certificates.ca_file)
        async with Client(cluster.bootstrap_servers, tls=tls,
                          metadata_refresh_interval=None) as client:
            first = [client.connection(n) for n in (1, 2, 3)]
            contexts = {id(conn.ssl_context) for conn in first}
            assert len(contexts) == 1 and first[0].ssl_context is not None
            # Reconnecting (a forced refresh makes new connections) reuses it too.
            await client.refresh()
            again = [client.connection(n) for n in (1, 2, 3)]
            assert not {id(c) for c in again} & {id(c) for c in first}  # new connections
            assert {id(conn.ssl_context) for conn in again} == contexts
        # Two clients do not share one: each builds its own from the TlsConfig.
        async with Client(cluster.bootstrap_servers, tls=tls,
                          metadata_refresh_interval=None) as other:
            assert id(other.connection(1).ssl_context) not in contexts


def test_tls_errors_name_options_in_the_callers_words(tmp_path: Path) -> None:
    bad = tmp_path / "ca.pem"
    bad.write_text("not a certificate\n")
    with pytest.raises(ConfigError) as info:
        TlsConfig(ca_file=bad).context()
    assert str(info.value).startswith(f"TLS: cannot load the CA file {bad} (TlsConfig.ca_file): ")
    assert info.value.options == ("TlsConfig.ca_file",)
    cli = CLI_VOCABULARY.text(info.value)
    assert cli.startswith(f"TLS: cannot load the CA file {bad} (--ca): ")
    assert cli.removeprefix(f"TLS: cannot load the CA file {bad} (--ca)") == str(
        info.value).removeprefix(f"TLS: cannot load the CA file {bad} (TlsConfig.ca_file)")


async def test_tls_to_a_silent_plaintext_listener_says_so_not_firewalls(
        certificates: Certificates) -> None:
    """TCP connects, the TLS handshake gets no answer: the cause is named, not the network."""
    import asyncio

    from kclient.errors import BrokerConnectionError
    from tests.net.test_faults import open_sockets
    from tests.waiting import until

    async def silent(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        await reader.read()  # a plaintext listener waiting for a Kafka frame
        writer.close()

    server = await asyncio.start_server(silent, "127.0.0.1", 0)
    port = server.sockets[0].getsockname()[1]
    sockets = open_sockets()
    try:
        conn = Connection("127.0.0.1", port, tls=TlsConfig(ca_file=certificates.ca_file),
                          connect_timeout=0.5)
        with pytest.raises(BrokerConnectionError) as info:
            await conn.connect()
        assert str(info.value).endswith(
            "TCP connected, but the TLS handshake got no answer within 0.5s: the listener "
            "probably speaks plaintext: connect without TLS (leave out the tls argument)")
        # The half-open TLS attempt is closed (and so the listener's side of it).
        await until(lambda: open_sockets() == sockets, "the attempt's socket closed")
    finally:
        server.close()
        await server.wait_closed()


@pytest.mark.parametrize("field", ["cert_file", "key_file"])
def test_a_certificate_path_that_is_not_a_regular_file_is_a_config_error(
        field: str, tmp_path: Path) -> None:
    fifo = tmp_path / "pipe"
    os.mkfifo(fifo)
    (tmp_path / "c.pem").write_text("not checked: the other path fails first")
    for path in (str(fifo), "a\0b"):
        options = {"cert_file": str(tmp_path / "c.pem"), field: path}
        with pytest.raises(ConfigError, match=f"TlsConfig.{field}"):
            TlsConfig(**options).context()  # type: ignore[arg-type]


def _within(seconds: float, call: Callable[[], object]) -> BaseException | None:
    """What ``call()`` raised (``None``: it returned), failing if it has not ended in
    ``seconds`` (a FIFO with no writer blocked opening it for good)."""
    outcome: list[BaseException | None] = []

    def run() -> None:
        try:
            call()
            outcome.append(None)
        except BaseException as exc:  # handed to the test
            outcome.append(exc)

    worker = threading.Thread(target=run, daemon=True)
    worker.start()
    worker.join(seconds)
    assert outcome, f"still blocked after {seconds:g}s"
    return outcome[0]


@pytest.mark.skipif(not hasattr(os, "mkfifo"), reason="needs POSIX FIFOs")
def test_a_ca_file_that_is_a_fifo_is_a_config_error_not_a_hang(tmp_path: Path) -> None:
    """TlsConfig(ca_file=FIFO) and ssl.ca.location=FIFO blocked forever in OpenSSL."""
    from kclient.net.config import client_options_from_config

    fifo = tmp_path / "ca.pem"
    os.mkfifo(fifo)
    for call in (lambda: TlsConfig(ca_file=fifo).context(),
                 lambda: Client.from_config({"bootstrap.servers": "127.0.0.1:9",
                                             "security.protocol": "SSL",
                                             "ssl.ca.location": str(fifo)}),
                 lambda: client_options_from_config({
                     "bootstrap.servers": "127.0.0.1:9", "security.protocol": "SSL",
                     "ssl.endpoint.identification.algorithm": "none",
                     "ssl.ca.location": str(fifo)})):
        error = _within(5, call)
        assert isinstance(error, ConfigError), error
        assert str(error) == (f"TlsConfig.ca_file {fifo} is a FIFO (named pipe), not a "
                              "regular file; kclient reads input only from regular files: "
                              "save the content to a file and give its path")
