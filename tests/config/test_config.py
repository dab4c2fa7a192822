"""Reading the configuration users already have: properties files, librdkafka/Java keys, -X."""

from __future__ import annotations

import json
import ssl
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from kclient import ConfigError, SaslConfig, SyncClient, TlsConfig
from kclient.emulator import EmulatedCluster, ThreadedEmulator
from kclient.emulator.sasl import SaslServerConfig
from kclient.net import Client
from kclient.net.config import (
    KNOWN_KEYS,
    MAX_MILLIS,
    UnknownConfigWarning,
    client_options_from_config,
    parse_jaas,
    parse_properties,
)
from tests.conftest import REPO_ROOT

SECRET = "s3cr3t-Pa55"
JAAS = ('org.apache.kafka.common.security.plain.PlainLoginModule required '
        f'username="alice" password="{SECRET}";')


def test_properties_syntax() -> None:
    text = ("# a comment\n! another\n\nbootstrap.servers = b1:9092,\\\n    b2:9092\n"
            "client.id: my-app\nsecurity.protocol SASL_SSL\nempty=\n"
            "path=C:\\\\certs\\\\ca.pem\nkey\\=with\\:seps=v\n")
    assert parse_properties(text) == {
        "bootstrap.servers": "b1:9092,b2:9092", "client.id": "my-app",
        "security.protocol": "SASL_SSL", "empty": "", "path": "C:\\certs\\ca.pem",
        "key=with:seps": "v"}


def test_jaas_line_gives_user_and_password() -> None:
    module, options = parse_jaas(JAAS)
    assert module.endswith("PlainLoginModule")
    assert options == {"username": "alice", "password": SECRET}
    options = client_options_from_config({
        "bootstrap.servers": "b1:9092", "security.protocol": "SASL_PLAINTEXT",
        "sasl.mechanism": "PLAIN", "sasl.jaas.config": JAAS, "client.id": "app",
        "request.timeout.ms": "1500", "reconnect.backoff.ms": "100",
        "reconnect.backoff.max.ms": "2000"})
    assert options == {"bootstrap_servers": "b1:9092", "client_id": "app",
                       "sasl": SaslConfig("PLAIN", "alice", SECRET), "request_timeout": 1.5,
                       "reconnect_backoff": 0.1, "reconnect_backoff_max": 2.0}


def test_librdkafka_keys_and_tls(tmp_path: Path) -> None:
    options = client_options_from_config({
        "bootstrap.servers": "b1", "security.protocol": "sasl_ssl",
        "sasl.mechanisms": "SCRAM-SHA-512",
        "sasl.username": "bob", "sasl.password": SECRET, "ssl.ca.location": "/ca.pem"})
    assert options["sasl"] == SaslConfig("SCRAM-SHA-512", "bob", SECRET)
    assert options["tls"] == TlsConfig(ca_file="/ca.pem")
    relaxed = client_options_from_config({"bootstrap.servers": "b1",
                                          "security.protocol": "SSL",
                                          "ssl.endpoint.identification.algorithm": "none"})
    context = relaxed["tls"]
    assert isinstance(context, ssl.SSLContext)
    assert context.check_hostname is False and context.verify_mode == ssl.CERT_REQUIRED


@pytest.mark.parametrize("config, words", [
    ({"security.protocol": "PLAINTEXT", "sasl.password": SECRET}, ["sasl.password"]),
    ({"security.protocol": "SASL_SSL", "sasl.mechanism": "PLAIN",
      "sasl.jaas.config": f'Bogus required password="{SECRET}";'}, ["Bogus"]),
    ({"security.protocol": "SASL_SSL", "sasl.mechanism": "SCRAM-SHA-256",
      "sasl.jaas.config": JAAS}, ["PlainLoginModule", "SCRAM-SHA-256"]),
    ({"security.protocol": "SASL_SSL", "sasl.jaas.config": f"nonsense {SECRET}"},
     ["sasl.jaas.config"]),
    ({"security.protocol": "SASL_PLAINTEXT", "sasl.username": "a"}, ["GSSAPI"]),
    ({"request.timeout.ms": "soon"}, ["request.timeout.ms"]),
    ({"security.protocol": "TLS"}, ["security.protocol"]),
])
def test_errors_name_the_keys_and_never_the_secret(config: dict[str, str],
                                                   words: list[str]) -> None:
    with pytest.raises(ConfigError) as caught:
        client_options_from_config(config)
    text = str(caught.value)
    assert SECRET not in text
    for word in words:
        assert word in text


def test_unknown_keys_can_be_warnings() -> None:
    with pytest.warns(UnknownConfigWarning, match="acks"):
        options = client_options_from_config({"bootstrap.servers": "b:1", "acks": "all"},
                                             unknown="warn")
    assert options == {"bootstrap_servers": "b:1"}


APPLICATION = {"bootstrap.servers": "b:1", "acks": "all", "linger.ms": "5",
               "group.id": "orders", "enable.idempotence": "true"}


def test_an_applications_whole_configuration_is_accepted(
        caplog: pytest.LogCaptureFixture) -> None:
    with caplog.at_level("DEBUG", logger="kclient.net.config"):
        assert client_options_from_config(APPLICATION) == {"bootstrap_servers": "b:1"}
    assert [r.getMessage() for r in caplog.records] == [
        "configuration keys kclient does not use: acks, enable.idempotence, group.id, "
        f"linger.ms (kclient reads {', '.join(sorted(KNOWN_KEYS))}); ignored"]
    with pytest.raises(ConfigError, match=r"does not use: acks, enable\.idempotence"):
        client_options_from_config(APPLICATION, unknown="error")
    with pytest.raises(ConfigError, match="unknown must be 'ignore', 'warn' or 'error'"):
        client_options_from_config(APPLICATION, unknown="loud")  # type: ignore[arg-type]


@pytest.mark.parametrize("build", [Client.from_config, SyncClient.from_config])
def test_from_config_passes_unknown_through(build: Any) -> None:
    assert build(APPLICATION).__class__ is build.__self__
    with pytest.warns(UnknownConfigWarning, match=r"linger\.ms"):
        build(APPLICATION, unknown="warn")
    with pytest.raises(ConfigError, match=r"group\.id"):
        build(APPLICATION, unknown="error")


# -- a SASL PLAIN emulated broker, reached through a properties file ---------------------


@pytest.fixture(scope="module")
def sasl_cluster() -> Iterator[ThreadedEmulator]:
    server = SaslServerConfig({"alice": SECRET}, mechanisms=("PLAIN",))
    with ThreadedEmulator(EmulatedCluster(["2.8", "3.9"], sasl=server)) as emulator:
        yield emulator


def _properties(tmp_path: Path, bootstrap: str, extra: str = "") -> Path:
    path = tmp_path / "client.properties"
    path.write_text(f"# as for kafka-topics.sh --command-config\nbootstrap.servers={bootstrap}\n"
                    "security.protocol=SASL_PLAINTEXT\nsasl.mechanism=PLAIN\n"
                    f"sasl.jaas.config={JAAS[:60]}\\\n    {JAAS[60:]}\n{extra}",
                    encoding="utf-8")
    return path


def test_sync_client_from_config(sasl_cluster: ThreadedEmulator, tmp_path: Path) -> None:
    from kclient.net.config import read_properties

    config = read_properties(_properties(tmp_path, sasl_cluster.bootstrap_servers))
    with SyncClient.from_config(config, metadata_refresh_interval=None) as client:
        assert sorted(b.node_id for b in client.brokers if b.error is None) == [1, 2]


def _kclient(*args: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    import os

    environ = {k: v for k, v in os.environ.items() if k != "KAFKA_BOOTSTRAP_SERVERS"}
    environ.update({"PYTHONPATH": str(REPO_ROOT), **(env or {})})
    return subprocess.run([sys.executable, "-m", "kclient.cli", *args], capture_output=True,
                          text=True, timeout=60, env=environ)


def test_cli_command_config_and_x(sasl_cluster: ThreadedEmulator, tmp_path: Path) -> None:
    path = _properties(tmp_path, sasl_cluster.bootstrap_servers, "acks=all\n")
    result = _kclient("api-versions", "--command-config", str(path), "--format", "json")
    assert result.returncode == 0, result.stderr
    (cluster,) = json.loads(result.stdout)["clusters"]
    assert len(cluster["brokers"]) == 2
    assert "acks" in result.stderr and SECRET not in result.stderr + result.stdout
    # -X wins over the file: a wrong password is refused (and not shown).
    wrong = _kclient("api-versions", "--command-config", str(path), "-X",
                     "sasl.jaas.config=org.apache.kafka.common.security.plain.PlainLoginModule"
                     ' required username="alice" password="wrong-one";', "--timeout", "3")
    assert wrong.returncode == 2
    assert "wrong-one" not in wrong.stderr and SECRET not in wrong.stderr
    bad = _kclient("api-versions", "-X", "no-equals-sign")
    assert bad.returncode == 2 and "KEY=VALUE" in bad.stderr


def test_cli_bootstrap_from_environment(sasl_cluster: ThreadedEmulator, tmp_path: Path) -> None:
    path = tmp_path / "auth.properties"
    path.write_text(f"security.protocol=SASL_PLAINTEXT\nsasl.mechanism=PLAIN\n"
                    f"sasl.username=alice\nsasl.password={SECRET}\n", encoding="utf-8")
    result = _kclient("features", "--command-config", str(path), "--format", "json",
                      env={"KAFKA_BOOTSTRAP_SERVERS": sasl_cluster.bootstrap_servers})
    assert result.returncode == 0, result.stderr
    (cluster,) = json.loads(result.stdout)["clusters"]
    features = {f["name"]: f for f in cluster["features"]}
    assert features["IdempotentProducer"]["available"] is True
    missing = _kclient("probe", "--cluster", "x")
    assert missing.returncode == 2 and "KAFKA_BOOTSTRAP_SERVERS" in missing.stderr


# -- what from_config is given: typed errors at the front (issue 36) ----------------------


@pytest.mark.parametrize("config, words", [
    (["bootstrap.servers", "b1:9092"], ["mapping", "list"]),
    ("bootstrap.servers=b1:9092", ["mapping", "str"]),
    (None, ["mapping", "NoneType"]),
    ({}, ["bootstrap.servers is missing"]),
    ({"bootstrap.servers": ""}, ["bootstrap.servers is missing"]),
    ({"security.protocol": "PLAINTEXT"}, ["bootstrap.servers is missing"]),
    ({5: "b1:9092"}, ["keys are text", "int"]),
    ({"bootstrap.servers": ["b1:9092"]}, ["bootstrap.servers", "list"]),
    ({"bootstrap.servers": None}, ["bootstrap.servers", "NoneType"]),
    ({"bootstrap.servers": "b1:9092,::1"}, ["bootstrap.servers", "ambiguous"]),
])
def test_from_config_refuses_what_is_not_a_configuration(config: Any, words: list[str]
                                                         ) -> None:
    for build in (client_options_from_config, Client.from_config, SyncClient.from_config):
        with pytest.raises(ConfigError) as caught:
            build(config)
        for word in words:
            assert word in str(caught.value), (build, str(caught.value))


def test_secret_values_of_the_wrong_type_stay_hidden() -> None:
    with pytest.raises(ConfigError) as caught:
        client_options_from_config({"bootstrap.servers": "b1", "sasl.password": [SECRET]})
    assert SECRET not in str(caught.value)
    assert "sasl.password: expected text or a number, got <hidden> (list)" in str(caught.value)


def test_the_command_line_may_give_the_brokers_elsewhere() -> None:
    assert client_options_from_config({"client.id": "x"}, require_bootstrap=False) == {
        "client_id": "x"}


@pytest.mark.parametrize("value, problem", [
    (str(10**30), "is out of range: at most 2147483647 ms"),
    (10**30, "is out of range: at most 2147483647 ms"),
    (str(MAX_MILLIS + 1), "is out of range"),
    ("9" * 5000, "is out of range"),
    ("1_000", "expected a whole number of milliseconds"),
    ("\u0663", "expected a whole number of milliseconds"),  # an Arabic-Indic three
    ("1e3", "expected a whole number of milliseconds"),
    ("0", "must be more than 0 ms"),
    ("-5", "must be more than 0 ms"),
])
@pytest.mark.parametrize("key", ["request.timeout.ms", "reconnect.backoff.ms",
                                 "reconnect.backoff.max.ms"])
def test_milliseconds_out_of_range_name_the_key(key: str, value: object, problem: str
                                                ) -> None:
    with pytest.raises(ConfigError) as caught:
        client_options_from_config({"bootstrap.servers": "b1", key: value})
    assert str(caught.value).startswith(f"{key}: ")
    assert problem in str(caught.value)
    assert len(str(caught.value)) < 200


def test_largest_milliseconds_accepted() -> None:
    options = client_options_from_config({"bootstrap.servers": "b1",
                                          "request.timeout.ms": f"+{MAX_MILLIS}"})
    assert options["request_timeout"] == MAX_MILLIS / 1000


_PLAIN_MODULE = "org.apache.kafka.common.security.plain.PlainLoginModule"


def test_large_jaas_lines_parse_correctly() -> None:
    """800 KB lines of each shape parse to the right options (the time: bench_fuzz's
    jaas figure, which reports the scaling; the quadratic reader took 15 s here)."""
    many = " ".join(f"k{i}=v{i}" for i in range(80_000))
    module, options = parse_jaas(f"{_PLAIN_MODULE} required {many} ;")
    assert module == _PLAIN_MODULE
    assert len(options) == 80_000 and options["k79999"] == "v79999"
    long_value = "x" * 800_000
    assert parse_jaas(f'{_PLAIN_MODULE} required password="{long_value}";')[1] == {
        "password": long_value}
    escaped = '\\"' * 300_000
    assert parse_jaas(f'{_PLAIN_MODULE} required password="{escaped}"')[1] == {
        "password": '"' * 300_000}
    with pytest.raises(ConfigError, match="cannot read the options"):
        parse_jaas(f'{_PLAIN_MODULE} required password="{long_value}')  # unterminated
    with pytest.raises(ConfigError, match="cannot read the options"):
        parse_jaas(f"{_PLAIN_MODULE} required a=b ; c=d")  # text after the end


def test_a_port_of_5000_digits_is_a_config_error() -> None:
    """Found by the fuzz target 'properties': int() refuses 4,301+ digits with ValueError."""
    with pytest.raises(ConfigError) as caught:
        client_options_from_config({"bootstrap.servers": "b1:9092,b2:" + "9" * 5000})
    assert "bootstrap.servers: port '99999" in str(caught.value)
    assert len(str(caught.value)) < 200
    assert client_options_from_config({"bootstrap.servers": "b1:0009092"})[
        "bootstrap_servers"] == "b1:0009092"  # leading zeros still read as Kafka reads them


@pytest.mark.parametrize("key", ["ssl.ca.location", "ssl.certificate.location",
                                 "ssl.key.location"])
def test_a_nul_in_a_tls_path_is_a_config_error(key: str) -> None:
    """Found by the fuzz target 'properties': ssl raised ValueError (embedded null byte)."""
    config = {"bootstrap.servers": "b1", "security.protocol": "SSL",
              "ssl.endpoint.identification.algorithm": "none", key: "/x/ca.\0pem"}
    if key == "ssl.key.location":
        config["ssl.certificate.location"] = "/x/cert.pem"
    with pytest.raises(ConfigError, match=f"{key}: the path contains a NUL character"):
        client_options_from_config(config)


@pytest.mark.parametrize("build", [Client.from_config, SyncClient.from_config])
def test_bootstrap_may_come_from_the_overrides(build: Any) -> None:
    client = build({"acks": "all"}, bootstrap_servers="127.0.0.1:9092")
    assert client is not None
    with pytest.raises(ConfigError, match=r"bootstrap\.servers"):
        build({"acks": "all"})
