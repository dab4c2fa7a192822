"""Options shared by the commands that talk to live brokers.

``add_connection_arguments(parser)`` adds ``--bootstrap-server`` and the
connection options (TLS, timeout, fallback release, client software, SASL);
the ``*_from_args`` helpers turn the parsed values into what
:class:`kclient.Client` takes, raising :class:`~kclient.errors.ConfigError` with
a message that names the flag, so the CLI prints one line and exits 2.

Nothing here opens a connection; heavy modules are imported inside functions.
"""

from __future__ import annotations

import argparse
import os
import sys
import warnings
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any, TextIO

from kclient.address import DEFAULT_PORT, format_address
from kclient.address import parse_bootstrap as parse_address_list
from kclient.commands.vocabulary import CLI_VOCABULARY
from kclient.errors import ConfigError
from kclient.net.defaults import (
    DEFAULT_CONNECT_TIMEOUT,
    DEFAULT_MAX_BROKERS,
    DEFAULT_REQUEST_TIMEOUT,
)
from kclient.values import count_problem, seconds_problem

if TYPE_CHECKING:
    import ssl

    from kclient.negotiation import BrokerVersions
    from kclient.net.client import Client

__all__ = [
    "BOOTSTRAP_ENV",
    "CLI_VOCABULARY",
    "DEFAULT_PORT",
    "RELEASE_FORMS",
    "Progress",
    "add_connection_arguments",
    "bootstrap_from_args",
    "client_options_from_args",
    "client_software_from_args",
    "config_from_args",
    "live_requested",
    "negotiate_brokers",
    "parse_bootstrap",
    "parse_client_software",
    "positive_seconds",
    "readable_file",
    "tls_context_from_args",
]

#: How a release is written (the rule is kclient.negotiation.releases.resolve_release),
#: for the help of every flag that takes one.
RELEASE_FORMS = ("3.9 is a ZooKeeper-mode broker where a release had both modes (2.8 to 3.9), "
                 "3.9-kraft its KRaft-mode broker; 4.0 and later are KRaft only")

#: What --cluster-label means, for every command that reads a client inventory.
CLUSTER_LABEL_HELP = ("with --inventory: the metrics label that names each series' cluster "
                      "(e.g. kafka_cluster); default: one cluster per file, named after it")

#: The environment variable naming the bootstrap servers when no flag or setting does.
BOOTSTRAP_ENV = "KAFKA_BOOTSTRAP_SERVERS"


def positive_seconds(text: str) -> float:
    """An argparse ``type``: seconds above 0 (:func:`kclient.values.seconds_problem`)."""
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a number of seconds, got {text!r}") from None
    if (problem := seconds_problem(value)) is not None:
        raise argparse.ArgumentTypeError(problem)
    return value


def _broker_count(text: str) -> int:
    if not (text.isascii() and text.isdigit()) or len(text) > 18:
        raise argparse.ArgumentTypeError(f"expected a whole number of brokers, got "
                                         f"{text[:40]!r}")
    if (problem := count_problem(int(text))) is not None:
        raise argparse.ArgumentTypeError(problem)
    return int(text)


def add_connection_arguments(parser: argparse.ArgumentParser) -> None:
    """Add ``--bootstrap-server`` and every shared connection option to ``parser``.

    ``--bootstrap-server`` may also come from ``bootstrap.servers`` in
    ``--command-config`` / ``-X`` or from :data:`BOOTSTRAP_ENV`; a command that
    connects without any of them fails when it runs (:func:`bootstrap_from_args`).
    """
    parser.add_argument(
        "--bootstrap-server", "-b", dest="bootstrap_server", action="append",
        metavar="HOST:PORT[,HOST:PORT...]", default=None,
        help="brokers to start from (repeatable or comma-separated; port defaults to "
        f"{DEFAULT_PORT}); kclient discovers the other brokers through Metadata. Default: "
        f"bootstrap.servers from --command-config/-X, then ${BOOTSTRAP_ENV}",
    )
    config = parser.add_argument_group(
        "client configuration", "librdkafka / Java client keys (see kclient.net.config); flags "
        "given on the command line win over them")
    config.add_argument(
        "--command-config", metavar="FILE", default=None,
        help="Java properties file of client settings (bootstrap.servers, security.protocol, "
        "ssl.*, sasl.*, request.timeout.ms...), as Kafka's own tools take",
    )
    config.add_argument(
        "-X", dest="config_pairs", action="append", default=None, metavar="KEY=VALUE",
        help="one client setting (repeatable, as in kcat); overrides --command-config",
    )
    group = parser.add_argument_group("connection")
    group.add_argument(
        "--timeout", type=positive_seconds, default=None, metavar="SECONDS",
        help=f"request timeout per broker; connecting waits at most "
        f"{DEFAULT_CONNECT_TIMEOUT:g} s of it (default: "
        f"request.timeout.ms from the client configuration, else {DEFAULT_REQUEST_TIMEOUT:g})",
    )
    group.add_argument(
        "--max-brokers", type=_broker_count, default=DEFAULT_MAX_BROKERS, metavar="N",
        help="the most brokers one cluster may list, in a live Metadata answer or a --snapshot "
        f"file; a cluster listing more is refused (default {DEFAULT_MAX_BROKERS:,})",
    )
    group.add_argument(
        "--api-version-fallback", metavar="RELEASE", default=None,
        help="Kafka release to assume for brokers that cannot answer ApiVersions "
        "(older than 0.10), e.g. 0.9.0; without it such brokers are errors",
    )
    group.add_argument(
        "--client-software", metavar="NAME/VERSION", default=None,
        help="ClientSoftwareName/Version sent in ApiVersions v3+ (KIP-511); "
        "default kclient/<its version>",
    )
    tls = parser.add_argument_group("TLS")
    tls.add_argument("--tls", action="store_true",
                     help="connect with TLS (implied by --ca, --cert, --key, --insecure and "
                     "--security-protocol SSL or SASL_SSL)")
    tls.add_argument("--ca", metavar="FILE", help="CA bundle (PEM) to verify brokers with")
    tls.add_argument("--cert", metavar="FILE", help="client certificate (PEM) for mutual TLS")
    tls.add_argument("--key", metavar="FILE",
                     help="private key (PEM) of --cert, when not in the same file")
    tls.add_argument("--key-password-file", metavar="PATH",
                     help="read the password of an encrypted --key (or --cert) from the file "
                     "PATH (one trailing newline is ignored); never give it on the command "
                     "line")
    tls.add_argument("--insecure", action="store_true",
                     help="do not verify the broker's certificate or host name (prints a "
                     "warning; for test clusters only)")
    from kclient.commands.sasl_options import add_sasl_arguments

    add_sasl_arguments(parser)


def parse_bootstrap(values: Sequence[str]) -> list[tuple[str, int]]:
    """``--bootstrap-server`` values as ``[(host, port), ...]`` (the library's rules)."""
    return parse_address_list(values, option="--bootstrap-server")


def config_from_args(args: argparse.Namespace) -> dict[str, str]:
    """The client configuration of ``--command-config`` overridden by ``-X`` pairs."""
    cached: dict[str, str] | None = getattr(args, "_kclient_config", None)
    if cached is not None:
        return cached
    from kclient.net.config import merge_config, read_properties

    path: str | None = getattr(args, "command_config", None)
    layers: list[dict[str, str]] = [read_properties(path)] if path else []
    pairs: dict[str, str] = {}
    for text in getattr(args, "config_pairs", None) or []:
        key, sep, value = text.partition("=")
        if not sep or not key.strip():
            raise ConfigError(f"-X: expected KEY=VALUE, got {key.strip() or text!r}")
        pairs[key.strip()] = value
    config = merge_config(*layers, pairs)
    args._kclient_config = config
    return config


def live_requested(args: argparse.Namespace) -> bool:
    """True when the flags, the client configuration or the environment name brokers."""
    return bool(getattr(args, "bootstrap_server", None)
                or config_from_args(args).get("bootstrap.servers")
                or os.environ.get(BOOTSTRAP_ENV))


def bootstrap_from_args(args: argparse.Namespace) -> list[str]:
    """The bootstrap servers as ``host:port`` strings.

    From ``--bootstrap-server``, else ``bootstrap.servers`` of the client
    configuration, else the :data:`BOOTSTRAP_ENV` environment variable.
    """
    values: list[str] | None = getattr(args, "bootstrap_server", None)
    option = "--bootstrap-server"
    if not values:
        configured = config_from_args(args).get("bootstrap.servers")
        from_env = os.environ.get(BOOTSTRAP_ENV)
        if configured:
            values, option = [configured], "bootstrap.servers"
        elif from_env:
            values, option = [from_env], BOOTSTRAP_ENV
    if not values:
        raise ConfigError(f"no brokers given: add --bootstrap-server HOST:PORT (or "
                          f"bootstrap.servers in --command-config / -X, or set {BOOTSTRAP_ENV})")
    addresses = parse_address_list(values, option=option)
    return [format_address(h, p) for h, p in addresses]


def parse_client_software(text: str) -> tuple[str, str]:
    """Split ``NAME/VERSION``; the library checks both halves (KIP-511)."""
    from kclient.net.connection import validate_client_software

    name, sep, version = text.partition("/")
    if not sep or not name or not version:
        raise ConfigError(f"--client-software: {text!r} is not NAME/VERSION "
                          "(for example my-app/1.4.2)")
    try:
        return validate_client_software((name, version))
    except ConfigError as exc:
        raise ConfigError(CLI_VOCABULARY.text(exc)) from None


def client_software_from_args(args: argparse.Namespace) -> tuple[str, str] | None:
    """``--client-software`` parsed, or ``None`` for kclient's own name and version."""
    text: str | None = getattr(args, "client_software", None)
    return None if text is None else parse_client_software(text)


def readable_file(path_text: str, flag: str) -> str:
    """``path_text`` if it names a regular file of settings size (:mod:`kclient._inputfile`).

    Else a :class:`ConfigError` naming ``flag``: for files another library reads
    (a CA bundle or certificate, which :mod:`ssl` opens itself).
    """
    from kclient._inputfile import MAX_SETTINGS_INPUT, check_input_file

    return check_input_file(path_text, f"{flag}:", limit=MAX_SETTINGS_INPUT)


def tls_context_from_args(
    args: argparse.Namespace, *, warn_stream: TextIO | None = None
) -> ssl.SSLContext | None:
    """An :class:`ssl.SSLContext` from the TLS flags, or ``None`` for plaintext.

    The flags become a :class:`~kclient.net.tls.TlsConfig`, which builds the
    context (its messages name the flags).  ``--insecure`` turns verification
    off and writes a warning to ``warn_stream`` (stderr by default).
    """
    from kclient._secret import read_secret_file
    from kclient.commands.sasl_options import uses_tls
    from kclient.net.tls import TlsConfig

    ca: str | None = getattr(args, "ca", None)
    cert: str | None = getattr(args, "cert", None)
    key: str | None = getattr(args, "key", None)
    insecure: bool = bool(getattr(args, "insecure", False))
    password_file: str | None = getattr(args, "key_password_file", None)
    if not (getattr(args, "tls", False) or ca or cert or key or password_file or insecure
            or uses_tls(args)):
        return None
    if key and not cert:
        raise ConfigError("--key needs --cert (the client certificate it belongs to)")
    if password_file and not cert:
        raise ConfigError("--key-password-file needs --cert (and --key, unless the key is in "
                          "the --cert file)")
    config = TlsConfig(
        ca_file=readable_file(ca, "--ca") if ca else None,
        cert_file=readable_file(cert, "--cert") if cert else None,
        key_file=readable_file(key, "--key") if key else None,
        key_password=(read_secret_file(password_file, "--key-password-file")
                      if password_file else None),
        verify=not insecure)
    try:
        context = config.context()
    except ConfigError as exc:
        raise ConfigError(CLI_VOCABULARY.text(exc)) from None
    if insecure:
        stream = warn_stream if warn_stream is not None else sys.stderr
        print("kclient: warning: --insecure: broker certificates and host names are NOT "
              "verified; anyone on the path can impersonate the brokers", file=stream)
    return context


def _check_release(release: str | None) -> str | None:
    if release is None:
        return None
    from kclient.negotiation.releases import resolve_release

    try:
        resolve_release(release)
        return release.strip()
    except ConfigError as exc:
        raise ConfigError(f"--api-version-fallback: {exc}") from None


def client_options_from_args(args: argparse.Namespace) -> dict[str, Any]:
    """Keyword arguments for :class:`kclient.net.Client` from the shared flags."""
    from kclient.commands.sasl_options import sasl_config_from_args
    from kclient.net.config import client_options_from_config
    from kclient.net.defaults import DEFAULT_CONNECT_TIMEOUT

    # The client configuration first; flags given on the command line win.
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        options = client_options_from_config(config_from_args(args), unknown="warn",
                                             require_bootstrap=False)
    for warning in caught:
        print(f"kclient: warning: {warning.message}", file=sys.stderr)
    flag_timeout: float | None = getattr(args, "timeout", None)
    timeout = flag_timeout if flag_timeout is not None else float(
        options.get("request_timeout", DEFAULT_REQUEST_TIMEOUT))
    options.update({
        "bootstrap_servers": bootstrap_from_args(args),
        "client_software": client_software_from_args(args),
        "api_version_fallback": _check_release(getattr(args, "api_version_fallback", None)),
        # --timeout is the request timeout; connecting never takes longer than that.
        "connect_timeout": min(timeout, DEFAULT_CONNECT_TIMEOUT),
        "request_timeout": timeout,
        "max_brokers": getattr(args, "max_brokers", DEFAULT_MAX_BROKERS),
    })
    tls = tls_context_from_args(args)
    if tls is not None or "tls" not in options:
        options["tls"] = tls
    sasl = sasl_config_from_args(args)
    if sasl is not None:
        options["sasl"] = sasl
    return options


def negotiate_brokers(args: argparse.Namespace) -> list[BrokerVersions]:
    """Negotiate with every broker of the cluster named by the shared flags.

    Brokers that fail are returned with ``error`` set; when no bootstrap server
    can be reached the client's :class:`~kclient.errors.BrokerConnectionError`
    propagates.  Progress goes to stderr when it is a terminal.
    """
    import asyncio

    options = client_options_from_args(args)
    return asyncio.run(_negotiate(options, Progress("negotiating")))


async def _negotiate(options: dict[str, Any], progress: Progress) -> list[BrokerVersions]:
    from kclient.net.client import Client

    client = Client(**options, metadata_refresh_interval=None)
    try:
        if progress.enabled:
            await _start_with_progress(client, progress, len(options["bootstrap_servers"]))
        else:
            await client.start()
        return list(client.brokers)
    finally:
        progress.close()
        await client.close()


async def _start_with_progress(client: Client, progress: Progress, bootstrap_count: int) -> None:
    import asyncio

    starting = asyncio.ensure_future(client.start())
    try:
        while not starting.done():
            brokers = client.brokers
            if brokers:
                done = sum(1 for b in brokers if b.error is None)
                progress.update(done, len(brokers), "brokers negotiated")
            else:
                progress.update(0, bootstrap_count, "bootstrap servers")
            await asyncio.wait({starting}, timeout=0.1)
        await starting
    finally:
        if not starting.done():
            starting.cancel()


class Progress:
    """One-line progress on stderr, shown only when stderr is a terminal.

    ``update(done, total, what)`` rewrites the line; ``close()`` clears it.
    """

    def __init__(self, label: str, stream: TextIO | None = None,
                 enabled: bool | None = None) -> None:
        self.label = label
        self.stream = stream if stream is not None else sys.stderr
        self.enabled = self.stream.isatty() if enabled is None else enabled
        self._width = 0

    def update(self, done: int, total: int, what: str = "") -> None:
        """Show ``label: done/total what``."""
        if not self.enabled:
            return
        text = f"{self.label}: {done}/{total} {what}".rstrip()
        pad = max(0, self._width - len(text))
        self.stream.write("\r" + text + " " * pad)
        self.stream.flush()
        self._width = len(text)

    def close(self) -> None:
        """Erase the progress line."""
        if self.enabled and self._width:
            self.stream.write("\r" + " " * self._width + "\r")
            self.stream.flush()
        self._width = 0
