"""SaslConfig validation, secret hiding, env/file constructors and the CLI helper."""

from __future__ import annotations

import argparse
from pathlib import Path

import pytest

from kclient.commands.sasl_options import add_sasl_arguments, sasl_config_from_args, uses_tls
from kclient.errors import ConfigError
from kclient.sasl import OAuthBearerClient, PlainClient, SaslConfig, ScramClient

SECRET = "Tr0ub4dor&3-very-secret"


def test_repr_and_str_hide_the_password() -> None:
    config = SaslConfig("scram-sha-256", "alice", SECRET)
    assert config.mechanism == "SCRAM-SHA-256"
    for text in (repr(config), str(config), f"{config}", repr([config])):
        assert SECRET not in text
        assert "password='***'" in text
    assert "alice" in repr(config)


def test_validation() -> None:
    with pytest.raises(ConfigError, match="unsupported SASL mechanism 'GSSAPI'"):
        SaslConfig("GSSAPI", "a", "b")
    with pytest.raises(ConfigError, match="needs a user name"):
        SaslConfig("PLAIN", None, "b")
    with pytest.raises(ConfigError, match="needs a password"):
        SaslConfig("PLAIN", "a", "")
    with pytest.raises(ConfigError, match="token_provider"):
        SaslConfig("OAUTHBEARER")
    with pytest.raises(ConfigError, match="only apply"):
        SaslConfig("PLAIN", "a", "b", oauth_extensions={"k": "v"})
    with pytest.raises(ConfigError, match="letters only"):
        SaslConfig("OAUTHBEARER", token_provider=lambda: "t", oauth_extensions={"1": "v"})


def test_create_client_per_mechanism() -> None:
    assert isinstance(SaslConfig("PLAIN", "a", "b").create_client(), PlainClient)
    assert isinstance(SaslConfig("SCRAM-SHA-512", "a", "b").create_client(), ScramClient)
    oauth = SaslConfig("OAUTHBEARER", token_provider=lambda: "zq-tkn", oauth_extensions={"x": "1"})
    assert "zq-tkn" not in repr(oauth) and "token_provider='***'" in repr(oauth)
    with pytest.raises(ConfigError):
        oauth.create_client()
    assert isinstance(oauth.create_client("zq-tkn"), OAuthBearerClient)


def test_from_env() -> None:
    config = SaslConfig.from_env("PLAIN", "alice", "KC_PW", environ={"KC_PW": SECRET})
    assert config.password == SECRET
    with pytest.raises(ConfigError, match="KC_MISSING is not set") as info:
        SaslConfig.from_env("PLAIN", "alice", "KC_MISSING", environ={"KC_PW": SECRET})
    assert SECRET not in str(info.value)


def test_from_file(tmp_path: Path) -> None:
    path = tmp_path / "pw"
    path.write_text(SECRET + "\n", encoding="utf-8")
    assert SaslConfig.from_file("PLAIN", "alice", path).password == SECRET
    path.write_text(SECRET + "\r\n", encoding="utf-8")
    assert SaslConfig.from_file("PLAIN", "alice", path).password == SECRET
    path.write_text(" spaced \n\n", encoding="utf-8")
    assert SaslConfig.from_file("PLAIN", "alice", path).password == " spaced \n"
    path.write_text("\n", encoding="utf-8")
    with pytest.raises(ConfigError, match="is empty"):
        SaslConfig.from_file("PLAIN", "alice", path)
    with pytest.raises(ConfigError, match="does not exist"):
        SaslConfig.from_file("PLAIN", "alice", tmp_path / "nope")
    path.write_bytes(b"\xff" + SECRET.encode())
    with pytest.raises(ConfigError, match="is not UTF-8 text") as info:
        SaslConfig.from_file("PLAIN", "alice", path)
    assert SECRET not in str(info.value)


def _parse(*argv: str) -> argparse.Namespace:
    parser = argparse.ArgumentParser()
    add_sasl_arguments(parser)
    return parser.parse_args(list(argv))


def test_cli_options(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    assert sasl_config_from_args(_parse()) is None
    assert sasl_config_from_args(_parse("--security-protocol", "ssl")) is None
    assert uses_tls(_parse("--security-protocol", "SASL_SSL"))
    assert not uses_tls(_parse("--security-protocol", "SASL_PLAINTEXT"))
    assert not uses_tls(argparse.Namespace())
    monkeypatch.setenv("KC_TEST_PW", SECRET)
    args = _parse(
        "--security-protocol", "SASL_SSL", "--sasl-mechanism", "scram-sha-512",
        "--sasl-username", "alice", "--sasl-password-env", "KC_TEST_PW",
    )
    config = sasl_config_from_args(args)
    assert config is not None and config.mechanism == "SCRAM-SHA-512"
    assert config.password == SECRET
    path = tmp_path / "pw"
    path.write_text(SECRET, encoding="utf-8")
    args = _parse(
        "--security-protocol", "SASL_PLAINTEXT", "--sasl-mechanism", "PLAIN",
        "--sasl-username", "alice", "--sasl-password-file", str(path),
    )
    config = sasl_config_from_args(args)
    assert config is not None and config.password == SECRET


@pytest.mark.parametrize(
    ("argv", "reason"),
    [
        (["--sasl-mechanism", "PLAIN"], "add --security-protocol"),
        (["--security-protocol", "SSL", "--sasl-username", "a"], "is SSL"),
        (["--security-protocol", "SASL_SSL"], "needs --sasl-mechanism"),
        (["--security-protocol", "SASL_SSL", "--sasl-mechanism", "PLAIN"], "--sasl-username"),
        (
            ["--security-protocol", "SASL_SSL", "--sasl-mechanism", "PLAIN",
             "--sasl-username", "a"],
            "needs a password",
        ),
        (
            ["--security-protocol", "SASL_SSL", "--sasl-mechanism", "PLAIN",
             "--sasl-username", "a", "--sasl-password-env", "X", "--sasl-password-file", "Y"],
            "not both",
        ),
    ],
)
def test_cli_bad_combinations(argv: list[str], reason: str) -> None:
    with pytest.raises(ConfigError, match=reason):
        sasl_config_from_args(_parse(*argv))


def test_cli_rejects_unknown_mechanism() -> None:
    with pytest.raises(SystemExit):
        _parse("--security-protocol", "SASL_SSL", "--sasl-mechanism", "GSSAPI")
