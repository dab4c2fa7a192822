"""``kclient compat``: which client libraries work on a cluster, per feature, and why not.

For each client library release (``--client aiokafka==0.14.0``, repeatable;
default: the newest line of every profiled library) and each feature it uses
(``produce``, ``consume_group``, ``idempotence``, ``transactions``, ``kip848``,
``zstd``), the verdict is *works*, *breaks* or *unknown*, judged from the
library's profile (:mod:`kclient.negotiation.clients`) with its own version
strategy.  The cluster comes from live brokers (``-b``), a recorded snapshot
(``--snapshot``) or a release (``--release 4.0``: brokers of that release;
``--release 3.9,4.0`` mixes them in one cluster; repeatable for several clusters).

Exit codes follow ``kclient features --require``: 0 when everything works, 1
when some feature breaks, 3 when none breaks but some verdict is unknown (a
broker never answered), 2 for bad input.
"""

from __future__ import annotations

import argparse
import json
import sys
from typing import TYPE_CHECKING, Any

from kclient.commands import live
from kclient.commands.common import RELEASE_FORMS
from kclient.contracts import FORMATS
from kclient.errors import ConfigError
from kclient.text import printable

if TYPE_CHECKING:
    from kclient.negotiation import BrokerVersions, ClusterView
    from kclient.negotiation.clients import ClientProfile, CompatResult

__all__ = ["FORMAT", "compat_document", "register", "run_compat"]

#: The ``"format"`` of ``kclient compat --format json`` (kclient/contracts/compat.schema.json).
FORMAT = FORMATS["compat"]

EXIT_OK = 0
EXIT_BREAKS = 1
EXIT_UNKNOWN = 3


def register(subparsers: Any) -> None:
    """Add the ``compat`` sub-command."""
    parser = subparsers.add_parser(
        "compat",
        help="which Kafka client libraries work on a cluster, per feature (upgrade check)",
        description="Judge Kafka client libraries (librdkafka/confluent-kafka, the Java "
        "client, kafka-python, aiokafka, kafkajs, @platformatic/kafka, franz-go, sarama) "
        "against a cluster: per feature the library uses, works / breaks / unknown with the "
        "reason, from each library's profile (the versions it sends, read from its source).",
    )
    parser.add_argument(
        "--client", metavar="LIBRARY[==VERSION]", action="append", default=[],
        help="a client library release, e.g. aiokafka==0.14.0, confluent-kafka==2.6.0, "
        "'java 3.9', kafkajs, or installed:aiokafka for the one installed here (repeatable; "
        "default: the newest profiled line of every library)",
    )
    parser.add_argument(
        "--feature", metavar="NAME", action="append", default=[],
        help="only this client feature (repeatable): produce, consume_group, idempotence, "
        "transactions, kip848, zstd; default: every feature the library uses",
    )
    parser.add_argument(
        "--release", metavar="RELEASE[,RELEASE...]", action="append", default=[],
        help="judge against brokers of this Kafka release instead of live brokers (e.g. 4.0; "
        f"3.9,4.0 for one mixed cluster; repeatable for several clusters). {RELEASE_FORMS}",
    )
    parser.add_argument(
        "--snapshot", metavar="FILE.jsonl",
        help="read recorded snapshot records (as written by 'kclient probe --record')",
    )
    parser.add_argument(
        "--cluster", metavar="NAME", action="append",
        help="only this cluster of the snapshot (repeatable); default: every cluster",
    )
    parser.add_argument(
        "--lenient", action="store_true",
        help="ignore brokers that never answered instead of making verdicts unknown",
    )
    parser.add_argument(
        "--format", choices=("table", "json"), default="table",
        help=f"a table for people (default) or JSON for scripts ({FORMAT}; the schema is "
        "kclient/contracts/compat.schema.json)",
    )
    live.add_arguments(parser)
    parser.set_defaults(handler=run_compat)


def _profiles(specs: list[str]) -> list[ClientProfile]:
    from kclient.installed import INSTALLED_PREFIX, installed_profile
    from kclient.negotiation.clients import client_profile, known_clients

    if not specs:
        return [client_profile(name) for name in known_clients()]
    found = []
    for spec in specs:
        try:
            if spec.startswith(INSTALLED_PREFIX):
                found.append(installed_profile(spec[len(INSTALLED_PREFIX):]))
            else:
                found.append(client_profile(spec))
        except ConfigError as exc:
            raise ConfigError(f"--client {spec}: {exc}") from None
    return found


def _release_clusters(values: list[str]) -> dict[str, list[BrokerVersions]]:
    from kclient.negotiation import BrokerVersions
    from kclient.negotiation.releases import release_label, release_profile, resolve_release

    clusters: dict[str, list[BrokerVersions]] = {}
    for value in values:
        names = [part.strip() for part in value.split(",") if part.strip()]
        if not names:
            raise ConfigError(f"--release {value!r}: name a Kafka release, e.g. 4.0")
        brokers = []
        for node, text in enumerate(names, 1):
            try:
                release = resolve_release(text)
            except ConfigError as exc:
                raise ConfigError(f"--release {text}: {exc}") from None
            brokers.append(BrokerVersions(node, f"kafka-{text}", 9092, release_profile(release),
                                          source="configured"))
        clusters["Kafka " + " + ".join(release_label(resolve_release(n)) for n in names)] = (
            brokers)
    return clusters


def _views(args: argparse.Namespace) -> list[tuple[ClusterView, str]]:
    from kclient.commands.inspect import collect_brokers
    from kclient.negotiation import ClusterView

    strict = not bool(args.lenient)
    if args.release:
        if args.snapshot or getattr(args, "bootstrap_server", None):
            raise ConfigError("give one source: --release, --snapshot or --bootstrap-server")
        clusters = _release_clusters(args.release)
        source = "release"
    else:
        clusters = collect_brokers(args)
        source = "snapshot" if args.snapshot else "live"
    return [(ClusterView(brokers, strict=strict, name=name), source)
            for name, brokers in clusters.items()]


def _check(view: ClusterView, profiles: list[ClientProfile], features: list[str] | None
           ) -> list[tuple[ClientProfile, tuple[CompatResult, ...]]]:
    from kclient.negotiation.clients import check_client

    known = list(view.known_brokers)
    unknown = view.unknown_reason()
    return [(p, check_client(p, known, features, unknown)) for p in profiles]


def _broker_json(broker: BrokerVersions) -> dict[str, Any]:
    from kclient.negotiation.releases import guess_release

    guess = guess_release(broker.apis).text if broker.apis else None
    return {"broker_id": broker.node_id, "host": broker.host, "port": broker.port,
            "state": broker.state.value, "release_guess": guess}


def compat_document(checked: list[tuple[ClusterView, str, list[
        tuple[ClientProfile, tuple[CompatResult, ...]]]]]) -> dict[str, Any]:
    """The ``kclient compat --format json`` document (contract ``kclient.compat/1``)."""
    clusters = []
    for view, source, results in checked:
        clients = []
        for profile, found in results:
            clients.append({
                "client": profile.library, "version": profile.version, "line": profile.line,
                "read_at": profile.read_at, "strategy": profile.strategy.value,
                "note": profile.note,
                "features": [{
                    "name": r.feature, "state": r.state.value, "reason": r.reason,
                    "apis": [{"api_key": a.key, "name": a.name, "version": a.version,
                              "highest_version": a.highest,
                              "blocking_brokers": list(a.blocking)} for a in r.apis],
                } for r in found],
            })
        clusters.append({"cluster": view.name, "source": source,
                         "brokers": [_broker_json(b) for b in view.brokers],
                         "clients": clients})
    return {"format": FORMAT, "clusters": clusters}


def _table(view: ClusterView, results: list[tuple[ClientProfile, tuple[CompatResult, ...]]]
           ) -> str:
    rows = [("CLIENT", "FEATURE", "VERDICT", "DETAIL")]
    notes = []
    for profile, found in results:
        for r in found:
            rows.append((profile.label, r.feature, r.state.value.upper(),
                         r.reason if r.reason is not None else r.versions_text))
        if profile.note:
            notes.append(f"note: {profile.note}")
    shown = [tuple(printable(cell) for cell in row) for row in rows]
    widths = [max(len(row[i]) for row in shown) for i in range(3)]
    lines = [printable(f"cluster {view.name}: " + ", ".join(b.label for b in view.brokers))]
    lines += ["  ".join(cell.ljust(widths[i]) for i, cell in enumerate(row[:3])) + "  " + row[3]
              for row in shown]
    return "\n".join(lines + [printable(n) for n in notes])


def run_compat(args: argparse.Namespace) -> int:
    """Handler of ``kclient compat``: exit 1 when something breaks, 3 when unknown."""
    from kclient.negotiation.clients import Compat, client_feature

    for name in args.feature:
        client_feature(name)  # an unknown name fails before any broker is asked
    profiles = _profiles(list(args.client))
    features = list(args.feature) or None
    checked = [(view, source, _check(view, profiles, features))
               for view, source in _views(args)]
    if args.format == "json":
        sys.stdout.write(json.dumps(compat_document(checked), indent=2) + "\n")
    else:
        sys.stdout.write("\n\n".join(_table(v, r) for v, _, r in checked) + "\n")
    states = {r.state for _, _, results in checked for _, found in results for r in found}
    if Compat.BREAKS in states:
        return EXIT_BREAKS
    return EXIT_UNKNOWN if Compat.UNKNOWN in states else EXIT_OK
