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
import re
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any, TextIO

from kclient.address import DEFAULT_PORT, format_address
from kclient.address import parse_bootstrap as parse_address_list
from kclient.errors import BrokerConnectionError, ConfigError

if TYPE_CHECKING:
    import ssl

    from kclient.negotiation import BrokerVersions
    from kclient.net.client import Client

__all__ = [
    "DEFAULT_PORT",
    "DEFAULT_TIMEOUT",
    "Progress",
    "add_connection_arguments",
    "add_format_argument",
    "bootstrap_from_args",
    "client_options_from_args",
    "client_software_from_args",
    "negotiate_brokers",
    "parse_bootstrap",
    "parse_client_software",
    "readable_file",
    "tls_context_from_args",
]

DEFAULT_TIMEOUT = 10.0

# KIP-511: what a broker accepts as ClientSoftwareName / ClientSoftwareVersion.
_SOFTWARE_PATTERN = re.compile(r"[a-zA-Z0-9](?:[a-zA-Z0-9\-.]*[a-zA-Z0-9])?")


def _positive_seconds(text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a number of seconds, got {text!r}") from None
    if not value > 0 or value != value or value == float("inf"):
        raise argparse.ArgumentTypeError(f"must be a positive number of seconds, got {text!r}")
    return value


def add_format_argument(parser: argparse.ArgumentParser) -> None:
    """``--format table|json`` (default ``table``)."""
    parser.add_argument(
        "--format", choices=("table", "json"), default="table",
        help="output layout: a table for people (default) or JSON for scripts",
    )


def add_connection_arguments(
    parser: argparse.ArgumentParser, *, bootstrap_required: bool = True
) -> None:
    """Add ``--bootstrap-server`` and every shared connection option to ``parser``."""
    parser.add_argument(
        "--bootstrap-server", "-b", dest="bootstrap_server", action="append",
        metavar="HOST:PORT[,HOST:PORT...]", required=bootstrap_required,
        help="brokers to start from (repeatable or comma-separated; port defaults to "
        f"{DEFAULT_PORT}); kclient discovers the other brokers through Metadata",
    )
    group = parser.add_argument_group("connection")
    group.add_argument(
        "--timeout", type=_positive_seconds, default=DEFAULT_TIMEOUT, metavar="SECONDS",
        help=f"connect and request timeout per broker (default {DEFAULT_TIMEOUT:g})",
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
    from kclient.sasl.cli_options import add_sasl_arguments

    add_sasl_arguments(parser)


def parse_bootstrap(values: Sequence[str]) -> list[tuple[str, int]]:
    """``--bootstrap-server`` values as ``[(host, port), ...]`` (the library's rules)."""
    return parse_address_list(values, option="--bootstrap-server")


def bootstrap_from_args(args: argparse.Namespace) -> list[str]:
    """The bootstrap servers as ``host:port`` strings."""
    addresses = parse_bootstrap(args.bootstrap_server or [])
    return [format_address(h, p) for h, p in addresses]


def parse_client_software(text: str) -> tuple[str, str]:
    """Split ``NAME/VERSION`` and check both halves against the KIP-511 pattern."""
    name, sep, version = text.partition("/")
    if not sep or not name or not version:
        raise ConfigError(f"--client-software: {text!r} is not NAME/VERSION "
                          "(for example my-app/1.4.2)")
    for what, part in (("name", name), ("version", version)):
        if not _SOFTWARE_PATTERN.fullmatch(part):
            raise ConfigError(
                f"--client-software: {what} {part!r} would be rejected by brokers; use "
                "letters, digits, '.' and '-', starting and ending with a letter or digit"
            )
    return name, version


def client_software_from_args(args: argparse.Namespace) -> tuple[str, str] | None:
    """``--client-software`` parsed, or ``None`` for kclient's own name and version."""
    text: str | None = getattr(args, "client_software", None)
    return None if text is None else parse_client_software(text)


def readable_file(path_text: str, flag: str) -> str:
    """``path_text`` if it names a file, else a :class:`ConfigError` naming ``flag``."""
    path = Path(path_text)
    if not path.is_file():
        raise ConfigError(f"{flag}: {path_text} is not a readable file")
    return str(path)


def tls_context_from_args(
    args: argparse.Namespace, *, warn_stream: TextIO | None = None
) -> ssl.SSLContext | None:
    """An :class:`ssl.SSLContext` from the TLS flags, or ``None`` for plaintext.

    ``--insecure`` turns verification off and writes a warning to
    ``warn_stream`` (stderr by default).
    """
    import ssl

    from kclient._secret import read_secret_file
    from kclient.net.tls import load_client_certificate

    ca: str | None = getattr(args, "ca", None)
    cert: str | None = getattr(args, "cert", None)
    key: str | None = getattr(args, "key", None)
    insecure: bool = bool(getattr(args, "insecure", False))
    from kclient.sasl.cli_options import uses_tls

    password_file: str | None = getattr(args, "key_password_file", None)
    if not (getattr(args, "tls", False) or ca or cert or key or password_file or insecure
            or uses_tls(args)):
        return None
    if key and not cert:
        raise ConfigError("--key needs --cert (the client certificate it belongs to)")
    if password_file and not cert:
        raise ConfigError("--key-password-file needs --cert (and --key, unless the key is in "
                          "the --cert file)")
    try:
        context = ssl.create_default_context(
            cafile=readable_file(ca, "--ca") if ca else None
        )
    except ssl.SSLError as exc:
        raise ConfigError(f"--ca: {ca} is not a PEM CA bundle ({exc.reason or exc})") from None
    if cert:
        cert_file = readable_file(cert, "--cert")
        key_file = readable_file(key, "--key") if key else None
        password = (read_secret_file(password_file, "--key-password-file")
                    if password_file else None)
        load_client_certificate(context, cert_file, key_file, password,
                                password_option="--key-password-file PATH")
    if insecure:
        context.check_hostname = False
        context.verify_mode = ssl.CERT_NONE
        stream = warn_stream if warn_stream is not None else sys.stderr
        print("kclient: warning: --insecure: broker certificates and host names are NOT "
              "verified; anyone on the path can impersonate the brokers", file=stream)
    return context


def _check_release(release: str | None) -> str | None:
    if release is None:
        return None
    from kclient.negotiation.releases import resolve_release

    try:
        return resolve_release(release)
    except ConfigError as exc:
        raise ConfigError(f"--api-version-fallback: {exc}") from None


def client_options_from_args(args: argparse.Namespace) -> dict[str, Any]:
    """Keyword arguments for :class:`kclient.net.Client` from the shared flags."""
    from kclient.sasl.cli_options import sasl_config_from_args

    timeout = float(getattr(args, "timeout", DEFAULT_TIMEOUT))
    options: dict[str, Any] = {
        "bootstrap_servers": bootstrap_from_args(args),
        "client_software": client_software_from_args(args),
        "api_version_fallback": _check_release(getattr(args, "api_version_fallback", None)),
        "tls": tls_context_from_args(args),
        "connect_timeout": timeout,
        "request_timeout": timeout,
    }
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

    from kclient.negotiation.ladder import FALLBACK_OPTION_HINT

    options = client_options_from_args(args)
    try:
        return asyncio.run(_negotiate(options, Progress("negotiating")))
    except BrokerConnectionError as exc:
        # The library names its keyword argument; on the command line it is a flag.
        text = str(exc)
        if FALLBACK_OPTION_HINT not in text:
            raise
        cli_error = type(exc)(text.replace(
            FALLBACK_OPTION_HINT, "--api-version-fallback (e.g. --api-version-fallback 0.9.0)"))
        cli_error.broker = exc.broker  # the text already names it
        raise cli_error from None


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
