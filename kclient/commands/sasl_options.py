"""Command-line options for SASL, shared by every ``kclient`` sub-command that connects.

A command module calls :func:`add_sasl_arguments` on its parser and, in its
handler, :func:`sasl_config_from_args` (and :func:`uses_tls` to decide on TLS).
There is deliberately no ``--sasl-password`` option: a password on the command
line shows up in ``ps`` and shell history, so it comes from an environment
variable or a file.
"""

from __future__ import annotations

import argparse

from kclient.errors import ConfigError
from kclient.sasl.config import SaslConfig
from kclient.sasl.mechanism import PLAIN, SCRAM_SHA_256, SCRAM_SHA_512

__all__ = [
    "CLI_MECHANISMS",
    "SECURITY_PROTOCOLS",
    "add_sasl_arguments",
    "sasl_config_from_args",
    "security_protocol",
    "uses_tls",
]

#: Kafka's ``security.protocol`` names.
SECURITY_PROTOCOLS: tuple[str, ...] = ("PLAINTEXT", "SSL", "SASL_PLAINTEXT", "SASL_SSL")
#: Mechanisms usable from the command line (OAUTHBEARER needs an application callback).
CLI_MECHANISMS: tuple[str, ...] = (PLAIN, SCRAM_SHA_256, SCRAM_SHA_512)


def add_sasl_arguments(parser: argparse.ArgumentParser) -> None:
    """Add ``--security-protocol`` and the ``--sasl-*`` options to ``parser``."""
    group = parser.add_argument_group(
        "security", "TLS and SASL authentication (passwords only from a variable or a file)"
    )
    group.add_argument(
        "--security-protocol",
        choices=SECURITY_PROTOCOLS,
        type=str.upper,
        default=None,
        help="how to talk to brokers, as Kafka's security.protocol (default PLAINTEXT)",
    )
    group.add_argument(
        "--sasl-mechanism",
        choices=CLI_MECHANISMS,
        type=str.upper,
        default=None,
        help="SASL mechanism (needs --security-protocol SASL_PLAINTEXT or SASL_SSL)",
    )
    group.add_argument("--sasl-username", metavar="USER", default=None, help="SASL user name")
    group.add_argument(
        "--sasl-password-env",
        metavar="NAME",
        default=None,
        help="read the SASL password from environment variable NAME",
    )
    group.add_argument(
        "--sasl-password-file",
        metavar="PATH",
        default=None,
        help="read the SASL password from the file PATH (one trailing newline is ignored)",
    )


def security_protocol(args: argparse.Namespace) -> str:
    """The chosen security protocol, ``PLAINTEXT`` when none was given."""
    value = getattr(args, "security_protocol", None)
    return str(value) if value else "PLAINTEXT"


def uses_tls(args: argparse.Namespace) -> bool:
    """True for ``SSL`` and ``SASL_SSL``."""
    return security_protocol(args) in ("SSL", "SASL_SSL")


def sasl_config_from_args(args: argparse.Namespace) -> SaslConfig | None:
    """Turn the parsed options into a :class:`SaslConfig`, or ``None`` without SASL.

    Raises :class:`ConfigError` for combinations that cannot work, naming the
    option to add or remove.  The password is read here (never printed).
    """
    protocol = getattr(args, "security_protocol", None)
    mechanism = getattr(args, "sasl_mechanism", None)
    username = getattr(args, "sasl_username", None)
    password_env = getattr(args, "sasl_password_env", None)
    password_file = getattr(args, "sasl_password_file", None)
    sasl_options = {
        "--sasl-mechanism": mechanism,
        "--sasl-username": username,
        "--sasl-password-env": password_env,
        "--sasl-password-file": password_file,
    }
    given = [name for name, value in sasl_options.items() if value is not None]
    wants_sasl = protocol in ("SASL_PLAINTEXT", "SASL_SSL")
    if not wants_sasl:
        if given:
            shown = protocol or "PLAINTEXT (the default)"
            raise ConfigError(
                f"{', '.join(given)} given but --security-protocol is {shown}; "
                "add --security-protocol SASL_PLAINTEXT or SASL_SSL"
            )
        return None
    if mechanism is None:
        raise ConfigError(
            f"--security-protocol {protocol} needs --sasl-mechanism ({', '.join(CLI_MECHANISMS)})"
        )
    if not username:
        raise ConfigError(f"--sasl-mechanism {mechanism} needs --sasl-username")
    if password_env is not None and password_file is not None:
        raise ConfigError("give either --sasl-password-env or --sasl-password-file, not both")
    if password_env is not None:
        return SaslConfig.from_env(mechanism, username, password_env)
    if password_file is not None:
        return SaslConfig.from_file(mechanism, username, password_file)
    raise ConfigError(
        f"--sasl-mechanism {mechanism} needs a password: --sasl-password-env NAME or "
        "--sasl-password-file PATH"
    )
