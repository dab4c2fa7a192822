"""``kclient emulate``: run an emulated Kafka cluster in the foreground.

Brokers speak real Kafka on loopback (ApiVersions with each era's behaviour,
Metadata, DescribeCluster) with the API ranges of the chosen releases, so people
can test their own applications against releases they do not run.  Ctrl-C
(SIGINT) or SIGTERM closes every connection and exits 0.
"""

from __future__ import annotations

import argparse
import sys
from typing import TYPE_CHECKING, Any

from kclient.errors import ConfigError

if TYPE_CHECKING:
    import ssl

__all__ = ["parse_behaviours", "parse_releases", "register", "run_emulate"]

MAX_BROKERS = 64


def register(subparsers: Any) -> None:
    """Add the ``emulate`` sub-command."""
    parser = subparsers.add_parser(
        "emulate",
        help="run an emulated Kafka cluster of any release in the foreground (Ctrl-C stops)",
        description="Run emulated Kafka brokers on this machine, each advertising the API "
        "versions of a Kafka release, until Ctrl-C. Prints the bootstrap address.",
    )
    parser.add_argument(
        "--release", default="3.9", metavar="RELEASE[,RELEASE...]",
        help="Kafka release of the brokers (default 3.9); a comma-separated list makes a "
        "mixed-version cluster, broker i running the i-th release",
    )
    parser.add_argument("--brokers", type=int, default=None, metavar="N",
                        help="number of brokers (default: one per listed release)")
    parser.add_argument("--port", type=int, default=9092, metavar="PORT",
                        help="port of the first broker, the others take the next ports; 0 picks "
                        "free ports (default 9092)")
    parser.add_argument("--host", default="127.0.0.1",
                        help="address to listen on (default 127.0.0.1)")
    parser.add_argument(
        "--behaviour", action="append", default=[], metavar="[ID=]NAME",
        help="odd behaviour for every broker or broker ID (repeatable): legacy, pre-kip511, "
        "closes-on-flexible, zero-length-for-unknown, slow:SECONDS, hang, drop-after:N",
    )
    parser.add_argument("--tls-cert", metavar="FILE", help="serve TLS with this certificate")
    parser.add_argument("--tls-key", metavar="FILE", help="private key of --tls-cert")
    parser.set_defaults(handler=run_emulate)


def parse_releases(text: str) -> list[str]:
    """``"2.0,3.9"`` -> canonical release names; :class:`ConfigError` when unknown."""
    from kclient.negotiation.releases import resolve_release

    names = [part.strip() for part in text.split(",") if part.strip()]
    if not names:
        raise ConfigError("--release: give at least one Kafka release, e.g. 2.8")
    try:
        return [resolve_release(name) for name in names]
    except ConfigError as exc:
        raise ConfigError(f"--release: {exc}") from None


def parse_behaviours(values: list[str], brokers: int) -> dict[int, list[str]]:
    """``["legacy", "2=slow:2"]`` -> behaviour words per node id (1 to ``brokers``).

    Words are checked here, so a typo is one clear error before anything starts.
    """
    from kclient.emulator import Behaviour

    result: dict[int, list[str]] = {node: [] for node in range(1, brokers + 1)}
    for value in values:
        target, sep, name = value.partition("=")
        if not sep:
            target, name = "", value
        name = name.strip()
        if not name:
            raise ConfigError(f"--behaviour: {value!r} names no behaviour")
        try:
            Behaviour.parse(name)
        except ConfigError as exc:
            raise ConfigError(f"--behaviour: {exc}") from None
        if target:
            text = target.strip()
            if not text.isdigit() or int(text) not in result:
                raise ConfigError(f"--behaviour: {value!r}: broker {target!r} is not one of "
                                  f"1-{brokers} (broker ids start at 1)")
            result[int(text)].append(name)
        else:
            for items in result.values():
                items.append(name)
    return result


def _server_tls(args: argparse.Namespace) -> ssl.SSLContext | None:
    import ssl

    from kclient.commands.common import readable_file

    if not args.tls_cert and not args.tls_key:
        return None
    if not args.tls_cert:
        raise ConfigError("--tls-key needs --tls-cert")
    readable_file(args.tls_cert, "--tls-cert")
    if args.tls_key:
        readable_file(args.tls_key, "--tls-key")
    context = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
    try:
        context.load_cert_chain(args.tls_cert, args.tls_key)
    except ssl.SSLError as exc:
        raise ConfigError(f"--tls-cert/--tls-key: cannot load {args.tls_cert} "
                          f"({exc.reason or exc}); give a PEM certificate and key") from None
    return context


def run_emulate(args: argparse.Namespace) -> int:
    """Handler of ``kclient emulate``."""
    import asyncio

    releases = parse_releases(args.release)
    count = args.brokers if args.brokers is not None else len(releases)
    if not 1 <= count <= MAX_BROKERS:
        raise ConfigError(f"--brokers: {count} is not between 1 and {MAX_BROKERS}")
    if not 0 <= args.port <= 65535 or (args.port and args.port + count - 1 > 65535):
        raise ConfigError(f"--port: {args.port} leaves no room for {count} broker(s)")
    behaviours = parse_behaviours(args.behaviour, count)
    tls = _server_tls(args)
    per_broker = [releases[i % len(releases)] for i in range(count)]
    return asyncio.run(_serve(args.host, args.port, per_broker, behaviours, tls))


async def _serve(host: str, port: int, releases: list[str], behaviours: dict[int, list[str]],
                 tls: ssl.SSLContext | None) -> int:
    import asyncio
    import signal

    from kclient.emulator import BrokerSpec, EmulatedCluster

    specs = [
        BrokerSpec(release, behaviours.get(index + 1) or None, node_id=index + 1,
                   port=port + index if port else 0)
        for index, release in enumerate(releases)
    ]
    cluster = EmulatedCluster(specs, host=host, ssl=tls)
    stop = asyncio.Event()
    loop = asyncio.get_running_loop()
    for sig in (signal.SIGINT, signal.SIGTERM):
        loop.add_signal_handler(sig, stop.set)
    try:
        await cluster.start()  # a busy port is a ConfigError naming the broker and port
        scheme = " with TLS" if tls is not None else ""
        print(f"emulated Kafka cluster: {len(releases)} broker(s) on {host}{scheme}")
        for broker in cluster.brokers:
            words = broker.behaviour.words()
            extra = f"  [{', '.join(words)}]" if words else ""
            print(f"  broker {broker.node_id}  {broker.address}  Kafka {broker.release}{extra}")
        print(f"bootstrap server: {cluster.brokers[0].address}")
        print("press Ctrl-C to stop", flush=True)
        await stop.wait()
    finally:
        await cluster.stop()
        for sig in (signal.SIGINT, signal.SIGTERM):
            loop.remove_signal_handler(sig)
    print("emulated cluster stopped", file=sys.stderr)
    return 0
