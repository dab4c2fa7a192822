"""The shared connection options of the commands that talk to brokers."""

from __future__ import annotations

import argparse
import io
import ssl
from pathlib import Path

import pytest

from kclient.commands.common import (
    Progress,
    _negotiate,
    add_connection_arguments,
    bootstrap_from_args,
    client_options_from_args,
    parse_bootstrap,
    parse_client_software,
    tls_context_from_args,
)
from kclient.emulator import EmulatedCluster
from kclient.errors import ConfigError
from tests.extras import needs_trustme


def _parse(*argv: str) -> argparse.Namespace:
    parser = argparse.ArgumentParser()
    add_connection_arguments(parser)
    return parser.parse_args(list(argv))


def test_bootstrap_lists_ports_ipv6_and_duplicates() -> None:
    assert parse_bootstrap(["a:1,b:2", "a:1", "c", "[::1]:9093", "[fe80::2]"]) == [
        ("a", 1), ("b", 2), ("c", 9092), ("::1", 9093), ("fe80::2", 9092)]
    args = _parse("-b", "h1:19092,h2", "--bootstrap-server", "[::1]:5")
    assert bootstrap_from_args(args) == ["h1:19092", "h2:9092", "[::1]:5"]


@pytest.mark.parametrize(("value", "fragment"), [
    ("", "is empty"),
    ("host:0", "not a number from 1 to 65535"),
    ("host:99999", "not a number from 1 to 65535"),
    ("host:abc", "port 'abc'"),
    (":9092", "has no host"),
    ("PLAINTEXT://host:9092", "leave out any scheme"),
    ("host/x", "not HOST:PORT"),
    ("::1", "ambiguous"),
    ("[::1", "without ']'"),
    ("[::1]x", "unexpected"),
])
def test_bad_bootstrap_is_a_config_error(value: str, fragment: str) -> None:
    with pytest.raises(ConfigError, match="--bootstrap-server") as info:
        parse_bootstrap([value])
    assert fragment in str(info.value)


def test_client_software_follows_kip511() -> None:
    assert parse_client_software("my-app/1.4.2") == ("my-app", "1.4.2")
    for bad in ("my-app", "/1.0", "app/", "my app/1.0", "app/1.0-", "-app/1"):
        with pytest.raises(ConfigError, match="--client-software"):
            parse_client_software(bad)



def test_client_software_errors_are_the_librarys_own() -> None:
    from kclient.commands.common import CLI_VOCABULARY
    from kclient.net.connection import validate_client_software

    for name, version in (("my app", "1.0"), ("app", "1.0-")):
        with pytest.raises(ConfigError) as cli:
            parse_client_software(f"{name}/{version}")
        with pytest.raises(ConfigError) as library:
            validate_client_software((name, version))
        assert str(cli.value) == CLI_VOCABULARY.text(library.value)
        assert "--client-software" in str(cli.value)


def test_tls_errors_are_the_librarys_own(tmp_path: Path) -> None:
    from kclient.commands.common import CLI_VOCABULARY
    from kclient.net.tls import TlsConfig

    bad = tmp_path / "ca.pem"
    bad.write_text("not a certificate\n")
    with pytest.raises(ConfigError) as cli:
        tls_context_from_args(_parse("-b", "h", "--ca", str(bad)))
    with pytest.raises(ConfigError) as library:
        TlsConfig(ca_file=bad).context()
    assert str(cli.value) == CLI_VOCABULARY.text(library.value)


def test_plaintext_by_default_and_tls_flags(tmp_path: Path) -> None:
    assert tls_context_from_args(_parse("-b", "h")) is None
    context = tls_context_from_args(_parse("-b", "h", "--tls"))
    assert isinstance(context, ssl.SSLContext)
    assert context.verify_mode == ssl.CERT_REQUIRED and context.check_hostname
    via_protocol = tls_context_from_args(_parse("-b", "h", "--security-protocol", "SSL"))
    assert isinstance(via_protocol, ssl.SSLContext)


def test_ca_and_client_certificate_load(tmp_path: Path) -> None:
    ca = needs_trustme().CA()
    ca_file = tmp_path / "ca.pem"
    ca.cert_pem.write_to_path(str(ca_file))
    cert = ca.issue_cert("client.test")
    cert_file, key_file = tmp_path / "cert.pem", tmp_path / "key.pem"
    cert.cert_chain_pems[0].write_to_path(str(cert_file))
    cert.private_key_pem.write_to_path(str(key_file))
    args = _parse("-b", "h", "--ca", str(ca_file), "--cert", str(cert_file),
                  "--key", str(key_file))
    context = tls_context_from_args(args)
    assert context is not None and context.verify_mode == ssl.CERT_REQUIRED
    assert context.get_ca_certs()


@pytest.mark.parametrize(("argv", "fragment"), [
    (["--key", "k.pem"], "--key needs --cert"),
    (["--ca", "missing.pem"], "--ca: missing.pem does not exist; check the path"),
    (["--cert", "missing.pem"], "--cert: missing.pem does not exist; check the path"),
])
def test_bad_tls_flags(argv: list[str], fragment: str, tmp_path: Path,
                       monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    with pytest.raises(ConfigError) as info:
        tls_context_from_args(_parse("-b", "h", *argv))
    assert fragment in str(info.value)


def test_garbage_ca_file_is_a_config_error(tmp_path: Path) -> None:
    bad = tmp_path / "ca.pem"
    bad.write_text("not a certificate\n")
    with pytest.raises(ConfigError, match="--ca"):
        tls_context_from_args(_parse("-b", "h", "--ca", str(bad)))


def test_insecure_warns_and_disables_verification() -> None:
    stream = io.StringIO()
    context = tls_context_from_args(_parse("-b", "h", "--insecure"), warn_stream=stream)
    assert context is not None and context.verify_mode == ssl.CERT_NONE
    assert not context.check_hostname
    assert "warning: --insecure" in stream.getvalue()


def test_timeout_must_be_positive() -> None:
    parser = argparse.ArgumentParser()
    add_connection_arguments(parser)
    assert parser.parse_args(["-b", "h", "--timeout", "2.5"]).timeout == 2.5
    for bad in ("0", "-1", "nan", "inf", "soon"):
        with pytest.raises(SystemExit):
            parser.parse_args(["-b", "h", "--timeout", bad])


def test_progress_only_on_a_terminal() -> None:
    quiet = io.StringIO()
    progress = Progress("negotiating", stream=quiet)
    progress.update(1, 3, "brokers")
    progress.close()
    assert quiet.getvalue() == ""  # StringIO is not a terminal
    shown = io.StringIO()
    progress = Progress("negotiating", stream=shown, enabled=True)
    progress.update(1, 3, "brokers")
    progress.update(3, 3, "brokers")
    progress.close()
    assert "\rnegotiating: 1/3 brokers" in shown.getvalue()
    assert shown.getvalue().endswith("\r")


@pytest.mark.parametrize("shown", [False, True])
async def test_negotiation_with_and_without_progress(shown: bool) -> None:
    async with EmulatedCluster(("2.8", "3.9", "4.1")) as cluster:
        options = client_options_from_args(_parse("-b", cluster.bootstrap_servers))
        stream = io.StringIO()
        brokers = await _negotiate(options, Progress("negotiating", stream, enabled=shown))
    assert [b.node_id for b in brokers] == [1, 2, 3]
    assert all(b.error is None for b in brokers)
    if shown:
        assert "negotiating: " in stream.getvalue() and stream.getvalue().endswith("\r")
    else:
        assert stream.getvalue() == ""


def _encrypted_client(tmp_path: Path) -> tuple[Path, Path]:
    ca = needs_trustme().CA()  # before cryptography, which it needs: absent, both skip
    from cryptography.hazmat.primitives import serialization

    cert = ca.issue_cert("client.test")
    cert_file, key_file = tmp_path / "cert.pem", tmp_path / "key.pem"
    cert.cert_chain_pems[0].write_to_path(str(cert_file))
    key = serialization.load_pem_private_key(cert.private_key_pem.bytes(), None)
    key_file.write_bytes(key.private_bytes(
        serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8,
        serialization.BestAvailableEncryption(b"pw")))
    return cert_file, key_file


def test_key_password_file(tmp_path: Path) -> None:
    cert_file, key_file = _encrypted_client(tmp_path)
    secret = tmp_path / "pw.txt"
    secret.write_text("pw\n")
    flags = ("-b", "h", "--cert", str(cert_file), "--key", str(key_file))
    assert tls_context_from_args(_parse(*flags, "--key-password-file", str(secret)))
    with pytest.raises(ConfigError) as info:
        tls_context_from_args(_parse(*flags))
    assert str(info.value) == (f"TLS: the private key in {key_file} is encrypted; give its "
                               "password with --key-password-file")
    secret.write_text("wrong\n")
    with pytest.raises(ConfigError, match="wrong password for the encrypted key"):
        tls_context_from_args(_parse(*flags, "--key-password-file", str(secret)))
    secret.write_text("")
    with pytest.raises(ConfigError, match=f"--key-password-file {secret} is empty"):
        tls_context_from_args(_parse(*flags, "--key-password-file", str(secret)))
    with pytest.raises(ConfigError, match="--key-password-file needs --cert"):
        tls_context_from_args(_parse("-b", "h", "--key-password-file", str(secret)))


def test_release_flags_say_how_a_kraft_release_is_written() -> None:
    """Every --release help (emulate, compat) states the -kraft form, and what it says holds."""
    from kclient.cli import build_parser
    from kclient.commands.common import RELEASE_FORMS
    from kclient.negotiation.releases import known_releases, release_mode, resolve_release

    commands = next(a for a in build_parser()._actions
                    if isinstance(a, argparse._SubParsersAction)).choices
    helps = {name: action.help for name, sub in commands.items() for action in sub._actions
             if "--release" in action.option_strings}
    assert set(helps) == {"emulate", "compat"}
    assert all(RELEASE_FORMS in (text or "") for text in helps.values()), helps
    assert "3.9-kraft" in RELEASE_FORMS
    # The facts it states: 3.9 means ZooKeeper mode, 3.9-kraft KRaft mode; releases 2.8 to
    # 3.9 had both modes, 4.0 and later KRaft only.
    assert release_mode(resolve_release("3.9")) == "zookeeper"
    assert release_mode(resolve_release("3.9-kraft")) == "kraft"
    both = sorted({r.removesuffix("-kraft") for r in known_releases() if r.endswith("-kraft")},
                  key=lambda r: tuple(map(int, r.split("."))))
    assert (both[0], both[-1]) == ("2.8", "3.9") and "(2.8 to 3.9)" in RELEASE_FORMS
    assert release_mode(resolve_release("4.0")) == "kraft"
    with pytest.raises(ConfigError, match="no ZooKeeper mode"):
        resolve_release("4.0-zk")
