"""Java clients' key and trust stores (ssl.truststore.* / ssl.keystore.*) in a client config."""

from __future__ import annotations

import os
import ssl
import sys
from pathlib import Path

import attrs
import pytest

from kclient import Client
from kclient.emulator import EmulatedBroker
from kclient.errors import ConfigError
from kclient.net.config import client_options_from_config
from tests.extras import needs_trustme

trustme = needs_trustme()
serialization = pytest.importorskip("cryptography.hazmat.primitives.serialization")
pkcs12 = pytest.importorskip("cryptography.hazmat.primitives.serialization.pkcs12")
x509 = pytest.importorskip("cryptography.x509")

PASSWORD = "changeit"


@attrs.frozen
class Stores:
    ca: object
    server: object
    truststore: Path
    keystore: Path


@pytest.fixture(scope="module")
def stores(tmp_path_factory: pytest.TempPathFactory) -> Stores:
    folder = tmp_path_factory.mktemp("stores")
    ca = trustme.CA()
    server = ca.issue_cert("127.0.0.1", "localhost")
    client = ca.issue_cert("kclient-test-client")
    encryption = serialization.BestAvailableEncryption(PASSWORD.encode())
    ca_cert = x509.load_pem_x509_certificate(ca.cert_pem.bytes())
    truststore = folder / "truststore.p12"
    truststore.write_bytes(pkcs12.serialize_key_and_certificates(
        None, None, None, [ca_cert], encryption))
    keystore = folder / "keystore.p12"
    keystore.write_bytes(pkcs12.serialize_key_and_certificates(
        b"client", serialization.load_pem_private_key(client.private_key_pem.bytes(), None),
        x509.load_pem_x509_certificate(client.cert_chain_pems[0].bytes()), None, encryption))
    return Stores(ca, server, truststore, keystore)


def _config(stores: Stores, port: int, **extra: str) -> dict[str, str]:
    return {"bootstrap.servers": f"127.0.0.1:{port}", "security.protocol": "SSL",
            "ssl.truststore.location": str(stores.truststore),
            "ssl.truststore.password": PASSWORD, "ssl.truststore.type": "PKCS12",
            "ssl.keystore.location": str(stores.keystore), "ssl.keystore.password": PASSWORD,
            **extra}


async def test_pkcs12_stores_make_a_mutual_tls_connection(stores: Stores) -> None:
    server = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
    stores.server.configure_cert(server)  # type: ignore[attr-defined]
    server.verify_mode = ssl.CERT_REQUIRED  # the broker asks for the key store's certificate
    stores.ca.configure_trust(server)  # type: ignore[attr-defined]
    open_before = len(os.listdir("/proc/self/fd")) if os.path.isdir("/proc/self/fd") else 0
    async with EmulatedBroker(1, "3.9", ssl=server) as broker:
        options = client_options_from_config(_config(stores, broker.port))
        context = options["tls"]
        assert isinstance(context, ssl.SSLContext)
        # The trust store replaces the system CAs, as in Java: only its CA is trusted.
        assert [c["subject"] for c in context.get_ca_certs()] == [
            x509_subject(stores)]
        assert context.check_hostname is True
        async with Client(**options, metadata_refresh_interval=None) as client:
            assert client.view.broker(1).apis
    if open_before:  # the decoded stores lived in memory files, all closed again
        assert len(os.listdir("/proc/self/fd")) <= open_before


def x509_subject(stores: Stores) -> tuple[tuple[tuple[str, str], ...], ...]:
    context = ssl.create_default_context(cadata=stores.ca.cert_pem.bytes().decode())  # type: ignore[attr-defined]
    subject: tuple[tuple[tuple[str, str], ...], ...] = context.get_ca_certs()[0]["subject"]
    return subject


def test_wrong_store_password_is_a_config_error(stores: Stores) -> None:
    config = _config(stores, 9093, **{"ssl.truststore.password": "nope"})
    with pytest.raises(ConfigError) as failed:
        client_options_from_config(config)
    assert str(failed.value) == (
        f"ssl.truststore.location: cannot read {stores.truststore} as a PKCS12 store: wrong "
        "ssl.truststore.password, or not a PKCS12 file")
    assert "nope" not in str(failed.value)


def test_a_jks_store_says_how_to_export_it(tmp_path: Path, stores: Stores) -> None:
    jks = tmp_path / "client.truststore.jks"
    jks.write_bytes(b"\xfe\xed\xfe\xed\x00\x00\x00\x02" + b"\x00" * 64)
    config = {"bootstrap.servers": "b:9093", "security.protocol": "SSL",
              "ssl.truststore.location": str(jks), "ssl.truststore.password": PASSWORD}
    with pytest.raises(ConfigError) as failed:
        client_options_from_config(config)
    assert str(failed.value) == (
        f"ssl.truststore.location: {jks} is a JKS key store, which only Java reads; export "
        f"it to PKCS12 with keytool -importkeystore -srckeystore {jks} -destkeystore "
        "store.p12 -deststoretype PKCS12 and set ssl.truststore.location=store.p12 with "
        "ssl.truststore.type=PKCS12 (pip install 'kclient-kafka[pkcs12]'), or on to PEM: "
        "openssl pkcs12 -in store.p12 -nokeys -out ca.pem, then ssl.ca.location=ca.pem")
    # A declared JKS type is refused the same way, whatever the file holds.
    declared = {**_config(stores, 9093), "ssl.keystore.type": "JKS"}
    with pytest.raises(ConfigError, match=r"^ssl\.keystore\.location: .* is a JKS key store"
                       r".* openssl pkcs12 -in store\.p12 -nocerts -nodes -out client\.key"):
        client_options_from_config(declared)


def test_without_cryptography_the_error_names_the_extra(
        stores: Stores, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, "cryptography.hazmat.primitives.serialization.pkcs12",
                        None)
    with pytest.raises(ConfigError) as failed:
        client_options_from_config(_config(stores, 9093))
    assert str(failed.value) == (
        "ssl.truststore.location: reading a PKCS12 store needs the cryptography package: "
        "pip install 'kclient-kafka[pkcs12]'; or give PEM files (ssl.ca.location, "
        "ssl.certificate.location, ssl.key.location)")


def test_stores_are_secrets_and_need_tls(stores: Stores) -> None:
    from kclient.net.config import SECRET_KEYS

    assert {"ssl.truststore.password", "ssl.keystore.password"} <= SECRET_KEYS
    with pytest.raises(ConfigError, match=r"^ssl\.truststore\.location, "
                       r"ssl\.truststore\.password given but security\.protocol is PLAINTEXT"):
        client_options_from_config({"bootstrap.servers": "b:9092",
                                    "ssl.truststore.location": str(stores.truststore),
                                    "ssl.truststore.password": PASSWORD})
    with pytest.raises(ConfigError, match=r"^ssl\.ca\.location and ssl\.truststore\.location "
                       r"both given; give one of them$"):
        client_options_from_config({**_config(stores, 9093), "ssl.ca.location": "/ca.pem"})


def test_command_config_with_a_jks_store_is_one_line_exit_2(tmp_path: Path) -> None:
    import subprocess

    from tests.cli.conftest import run_kclient

    jks = tmp_path / "kafka.client.truststore.jks"
    jks.write_bytes(b"\xfe\xed\xfe\xed" + b"\x00" * 64)
    props = tmp_path / "client.properties"
    props.write_text(f"security.protocol=SSL\nssl.truststore.location={jks}\n"
                     "ssl.truststore.password=changeit\n", encoding="utf-8")
    done: subprocess.CompletedProcess[str] = run_kclient(
        "api-versions", "-b", "127.0.0.1:9", "--command-config", str(props))
    assert done.returncode == 2
    assert done.stdout == ""
    assert done.stderr == (
        f"kclient: error: ssl.truststore.location: {jks} is a JKS key store, which only Java "
        f"reads; export it to PKCS12 with keytool -importkeystore -srckeystore {jks} "
        "-destkeystore store.p12 -deststoretype PKCS12 and set "
        "ssl.truststore.location=store.p12 with ssl.truststore.type=PKCS12 (pip install "
        "'kclient-kafka[pkcs12]'), or on to PEM: openssl pkcs12 -in store.p12 -nokeys -out "
        "ca.pem, then ssl.ca.location=ca.pem\n")


#: A password whose bytes a leak would show: as text, or as cryptography's panic lists them.
_NUL_SECRET = "TOPSECRET\0pw"
_LEAKS = ("TOPSECRET", ", ".join(str(b) for b in _NUL_SECRET.encode()))


@pytest.mark.parametrize("kind", ["truststore", "keystore"])
def test_a_nul_in_a_store_password_is_refused_without_showing_it(
        stores: Stores, kind: str, capfd: pytest.CaptureFixture[str]) -> None:
    """cryptography's Rust panicked with NulError([84, 79, ...]): the password's bytes, on
    stderr and in a BaseException that escaped every `except Exception`."""
    with pytest.raises(ConfigError) as failed:
        client_options_from_config(_config(stores, 9093, **{f"ssl.{kind}.password":
                                                            _NUL_SECRET}))
    assert str(failed.value) == (
        f"ssl.{kind}.password contains a NUL character, which no TLS key or key store "
        "password can hold; check the password (its value is not shown)")
    assert failed.value.__context__ is None and failed.value.__cause__ is None
    captured = capfd.readouterr()
    assert not [leak for leak in _LEAKS if leak in captured.out + captured.err]


def test_a_panic_of_the_dependency_is_a_typed_error_without_the_secret(stores: Stores) -> None:
    """The safety net under the check: the real panic, made on purpose, comes out typed,
    with neither its text nor its traceback attached."""
    from kclient._secret import without_panics

    with pytest.raises(ConfigError, match=r"^the store failed$") as failed:
        without_panics(lambda: pkcs12.load_pkcs12(stores.keystore.read_bytes(),
                                                  _NUL_SECRET.encode()),
                       lambda: ConfigError("the store failed"))
    error = failed.value
    assert error.__context__ is None and error.__cause__ is None
    assert error.__traceback__ is not None
    # Exceptions and Python's own signals pass unchanged.
    with pytest.raises(ValueError, match="Invalid password"):
        without_panics(lambda: pkcs12.load_pkcs12(stores.keystore.read_bytes(), b"wrong"),
                       lambda: ConfigError("unused"))
    with pytest.raises(KeyboardInterrupt):
        without_panics(lambda: (_ for _ in ()).throw(KeyboardInterrupt),
                       lambda: ConfigError("unused"))


def test_command_config_with_a_nul_in_the_store_password_is_one_line_without_it(
        tmp_path: Path, stores: Stores) -> None:
    """The CLI printed a traceback listing the password's bytes, twice, and exited 1."""
    from tests.cli.conftest import run_kclient

    props = tmp_path / "client.properties"
    props.write_bytes(f"security.protocol=SSL\nssl.keystore.location={stores.keystore}\n"
                      f"ssl.keystore.password={_NUL_SECRET}\n".encode())
    for verbose in ((), ("-v",)):
        done = run_kclient(*verbose, "api-versions", "-b", "127.0.0.1:9",
                           "--command-config", str(props))
        assert done.returncode == 2, done.stderr
        assert done.stderr.splitlines()[-1] == (
            "kclient: error: ssl.keystore.password contains a NUL character, which no TLS "
            "key or key store password can hold; check the password (its value is not shown)")
        assert not [leak for leak in _LEAKS if leak in done.stdout + done.stderr]
