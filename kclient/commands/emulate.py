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

from kclient.address import DEFAULT_PORT, address_problem
from kclient.commands.common import RELEASE_FORMS
from kclient.commands.upgrade import add_upgrade_arguments, upgrade_plan
from kclient.errors import ConfigError

if TYPE_CHECKING:
    import ssl

    from kclient.commands.upgrade import RollingUpgrade, UpgradePlan
    from kclient.emulator import BrokerSpec
    from kclient.emulator.sasl import SaslServerConfig

__all__ = [
    "parse_behaviours",
    "parse_feature_levels",
    "parse_releases",
    "parse_sasl_users",
    "register",
    "run_emulate",
]

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
        f"mixed-version cluster, broker i running the i-th release. {RELEASE_FORMS}",
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
    parser.add_argument(
        "--sasl-user", action="append", default=[], metavar="NAME:PASSWORD_FILE",
        help="require SASL authentication (SASL_PLAINTEXT, or SASL_SSL with --tls-cert) and "
        "accept user NAME with the password in PASSWORD_FILE (repeatable)",
    )
    parser.add_argument(
        "--sasl-mechanism", action="append", default=[], metavar="MECHANISM",
        help="a SASL mechanism the brokers enable, in the order they list them (repeatable; "
        "default: PLAIN, SCRAM-SHA-256 and SCRAM-SHA-512); needs --sasl-user",
    )
    parser.add_argument(
        "--finalized-feature", action="append", default=[], metavar="NAME=LEVEL",
        help="a KIP-584 feature level every broker reports as finalized instead of the "
        "level a freshly formatted cluster of the release has, e.g. group.version=0 for a "
        "cluster upgraded from 3.x that kept level 0 (repeatable; 0 leaves the feature "
        "out, as Kafka does; brokers advertise levels in ApiVersions v3+)",
    )
    parser.add_argument(
        "--supported-feature", action="append", default=[], metavar="NAME=MIN-MAX",
        help="a KIP-584 feature range every broker reports as supported instead of the "
        "release's, e.g. streams.version=0-1 (repeatable; a finalized feature the release "
        "does not know is supported from 0 to its level)",
    )
    add_upgrade_arguments(parser)
    parser.add_argument(
        "--inventory", metavar="FILE.jsonl",
        help="when it stops, write the client software of every connection (KIP-511 name "
        "and version, connections, every request per API and version) to this file as "
        "inventory records, for 'kclient compat --inventory'",
    )
    parser.set_defaults(handler=run_emulate)


def _level_pairs(values: list[str], flag: str, ranges: bool) -> dict[str, tuple[int, int]]:
    """``["group.version=1"]`` -> ``{"group.version": (1, 1)}`` (``MIN-MAX`` when ``ranges``)."""
    result: dict[str, tuple[int, int]] = {}
    example = "transaction.version=0-2" if ranges else "group.version=1"
    for value in values:
        name, sep, level = value.partition("=")
        name = name.strip()
        low_text, dash, high_text = level.strip().partition("-")
        if not ranges:
            low_text, high_text = level.strip(), level.strip()
        texts = (low_text, high_text)
        if (not sep or not name or (ranges and not dash)
                or not all(t.isdigit() and int(t) <= 32767 for t in texts)):
            form = "NAME=MIN-MAX" if ranges else "NAME=LEVEL"
            raise ConfigError(f"{flag}: {value!r} is not {form} with levels from 0 to 32767, "
                              f"e.g. {example}")
        low, high = int(low_text), int(high_text)
        if low > high:
            raise ConfigError(f"{flag}: {value!r}: the minimum {low} is above the maximum {high}")
        if name in result:
            raise ConfigError(f"{flag}: feature {name!r} is given twice")
        result[name] = (low, high)
    return result


def parse_feature_levels(finalized: list[str], supported: list[str]
                         ) -> tuple[dict[str, tuple[int, int]], dict[str, tuple[int, int]]]:
    """The ``--finalized-feature`` and ``--supported-feature`` flags as (finalized, supported).

    Both change the levels of the release (a freshly formatted cluster's finalized
    levels, its brokers' supported ranges); a finalized level outside a range given
    by ``--supported-feature`` is an error here, one outside the release's range
    when the brokers are made.
    """
    final = _level_pairs(finalized, "--finalized-feature", ranges=False)
    support = _level_pairs(supported, "--supported-feature", ranges=True)
    for name, (level, _) in final.items():
        low, high = support.get(name, (level, level))
        if not low <= level <= high:
            raise ConfigError(f"--finalized-feature: {name}={level} is outside the supported "
                              f"range {low}-{high} given by --supported-feature")
    return final, dict(sorted(support.items()))


def parse_sasl_users(values: list[str], mechanisms: list[str]) -> SaslServerConfig | None:
    """The ``--sasl-user``/``--sasl-mechanism`` flags as the brokers' SASL settings."""
    from kclient._secret import read_secret_file
    from kclient.emulator.sasl import SaslServerConfig

    if not values:
        if mechanisms:
            raise ConfigError("--sasl-mechanism needs at least one --sasl-user "
                              "NAME:PASSWORD_FILE")
        return None
    users: dict[str, str] = {}
    for value in values:
        name, sep, path = value.partition(":")
        if not sep or not name.strip() or not path.strip():
            raise ConfigError(f"--sasl-user: {value!r} is not NAME:PASSWORD_FILE, e.g. "
                              "alice:alice.password")
        if name in users:
            raise ConfigError(f"--sasl-user: user {name!r} is given twice")
        users[name] = read_secret_file(path.strip(), f"--sasl-user {name}: password file")
    try:
        if mechanisms:
            return SaslServerConfig(users=users, mechanisms=tuple(mechanisms))
        return SaslServerConfig(users=users)
    except ConfigError as exc:
        raise ConfigError(f"--sasl-mechanism: {exc}") from None


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
    import contextlib
    import ssl

    from kclient._inputfile import MAX_SETTINGS_INPUT, opened_input_path

    if not args.tls_cert and not args.tls_key:
        return None
    if not args.tls_cert:
        raise ConfigError("--tls-key needs --tls-cert")
    context = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
    try:
        with contextlib.ExitStack() as files:
            # kclient's input rule (a FIFO is refused, never opened); ssl reads the
            # very files checked.
            cert = files.enter_context(
                opened_input_path(args.tls_cert, "--tls-cert:", limit=MAX_SETTINGS_INPUT))
            key = None if not args.tls_key else files.enter_context(
                opened_input_path(args.tls_key, "--tls-key:", limit=MAX_SETTINGS_INPUT))
            context.load_cert_chain(cert, key)
    except ssl.SSLError as exc:
        raise ConfigError(f"--tls-cert/--tls-key: cannot load {args.tls_cert} "
                          f"({exc.reason or exc}); give a PEM certificate and key") from None
    return context


def run_emulate(args: argparse.Namespace) -> int:
    """Handler of ``kclient emulate``."""
    import asyncio

    from kclient.emulator import BrokerSpec

    # The address rules of kclient.address, before any socket: an over-long DNS
    # label would otherwise fail inside asyncio's resolver with a UnicodeError.
    problem = address_problem(args.host, DEFAULT_PORT)
    if problem is not None:
        raise ConfigError(f"--host: {problem}; give an address to listen on, such as "
                          "127.0.0.1")
    releases = parse_releases(args.release)
    count = args.brokers if args.brokers is not None else len(releases)
    if not 1 <= count <= MAX_BROKERS:
        raise ConfigError(f"--brokers: {count} is not between 1 and {MAX_BROKERS}")
    if not 0 <= args.port <= 65535 or (args.port and args.port + count - 1 > 65535):
        raise ConfigError(f"--port: {args.port} leaves no room for {count} broker(s)")
    behaviours = parse_behaviours(args.behaviour, count)
    finalized, supported = parse_feature_levels(args.finalized_feature, args.supported_feature)
    sasl = parse_sasl_users(args.sasl_user, args.sasl_mechanism)
    tls = _server_tls(args)
    per_broker = [releases[i % len(releases)] for i in range(count)]
    specs = [
        BrokerSpec(release, behaviours.get(index + 1) or None, node_id=index + 1,
                   port=args.port + index if args.port else 0,
                   finalized_features=finalized, supported_features=supported)
        for index, release in enumerate(per_broker)
    ]
    inventory = getattr(args, "inventory", None)
    if inventory is not None:
        _writable(inventory)
    return asyncio.run(_serve(args.host, specs, tls, sasl, upgrade_plan(args), inventory))


def _writable(path: str) -> None:
    """Fail before any broker starts when the inventory cannot be written there."""
    import os

    folder = os.path.dirname(os.path.abspath(path))
    if os.path.isdir(path) or not os.path.isdir(folder) or not os.access(folder, os.W_OK):
        raise ConfigError(f"--inventory {path}: cannot write a file there; give a file in a "
                          "writable directory")


async def _serve(host: str, specs: list[BrokerSpec], tls: ssl.SSLContext | None,
                 sasl: SaslServerConfig | None, upgrade: UpgradePlan | None = None,
                 inventory: str | None = None) -> int:
    import asyncio
    import signal

    from kclient.emulator import EmulatedCluster

    cluster = EmulatedCluster(specs, host=host, ssl=tls, sasl=sasl)
    stop = asyncio.Event()
    loop = asyncio.get_running_loop()
    for sig in (signal.SIGINT, signal.SIGTERM):
        loop.add_signal_handler(sig, stop.set)
    rolling: RollingUpgrade | None = None
    try:
        await cluster.start()  # a busy port is a ConfigError naming the broker and port
        scheme = " with TLS" if tls is not None else ""
        if sasl is not None:
            scheme += f" and SASL ({', '.join(sasl.mechanisms)})" if scheme else (
                f" with SASL ({', '.join(sasl.mechanisms)})")
        print(f"emulated Kafka cluster: {len(specs)} broker(s) on {host}{scheme}")
        for broker in cluster.brokers:
            words = broker.behaviour.words()
            extra = f"  [{', '.join(words)}]" if words else ""
            print(f"  broker {broker.node_id}  {broker.address}  Kafka {broker.release}{extra}")
        first = cluster.brokers[0]
        if first.finalized_features:
            levels = ", ".join(f"{k}={v[1]}" for k, v in first.finalized_features.items())
            print(f"finalized features: {levels} (epoch {first.finalized_features_epoch})")
        if upgrade is not None:
            rolling = upgrade.start(cluster, stop)
        print(f"bootstrap server: {cluster.brokers[0].address}")
        print("press Ctrl-C to stop", flush=True)
        await stop.wait()
        if rolling is not None:
            rolling.raise_failure()
    finally:
        if rolling is not None:
            await rolling.close()
        await cluster.stop()
        for sig in (signal.SIGINT, signal.SIGTERM):
            loop.remove_signal_handler(sig)
    print("emulated cluster stopped", file=sys.stderr)
    if inventory is not None:
        count = cluster.write_inventory(inventory)
        print(f"inventory of {count} client software written to {inventory}", file=sys.stderr)
    return 0
