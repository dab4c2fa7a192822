"""``kclient compat``: which client libraries work on a cluster, per feature, and why not.

For each client library release (``--client aiokafka==0.14.0``, repeatable;
default: the newest line of every profiled library) and each feature it uses
(``produce``, ``consume_group``, ``idempotence``, ``transactions``, ``kip848``,
``share_groups``, ``streams_groups``, ``zstd``, ``admin``), the verdict is *works*,
*breaks* or *unknown*, judged from the library's profile
(:mod:`kclient.negotiation.clients`) with its own version strategy and, for Kafka 4's
group protocols, the feature levels the brokers finalized.  The cluster comes from
live brokers (``-b``; a library where one broker decides asks the first one listed),
a recorded snapshot (``--snapshot``) or a release (``--release 4.0``: brokers of that
release, at the feature levels a freshly formatted cluster of it finalizes;
``--release 3.9,4.0``
mixes them in one cluster, the first release playing the bootstrap broker;
repeatable for several clusters).  ``--from 3.6 --to 4.0`` shows only what an
upgrade changes, during the roll (both releases in one cluster) and after it.

A release no profiled line covers is judged *unknown* (its row names the
nearest line), and the other clients are judged all the same.

With ``--inventory`` the clients are those a cluster's brokers saw (a client
inventory: broker metrics, CSV, JSON Lines), judged on one ``--release``
(:mod:`kclient.commands.readiness`).

Exit codes follow ``kclient features --require``: 0 when everything works, 1
when some feature breaks, 3 when none breaks but some verdict is unknown (a
broker never answered, a release not profiled), 2 for bad input.  With
``--from/--to``: 1 only for what the upgrade newly breaks, 3 when it breaks
nothing new but some verdict after it is unknown, 0 otherwise.
"""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

import attrs

from kclient.commands import live
from kclient.commands.common import CLUSTER_LABEL_HELP, RELEASE_FORMS
from kclient.contracts import FORMATS
from kclient.errors import ConfigError
from kclient.text import printable

if TYPE_CHECKING:
    from kclient.negotiation import BrokerVersions, ClusterView
    from kclient.negotiation.clients import ClientProfile, CompatResult, UnprofiledRelease

__all__ = ["FORMAT", "Judged", "compat_document", "register", "run_compat", "table_text",
           "upgrade_changes"]

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
        "transactions, kip848, share_groups, streams_groups, zstd, admin; default: every "
        "feature the library uses",
    )
    parser.add_argument(
        "--release", metavar="RELEASE[,RELEASE...]", action="append", default=[],
        help="judge against brokers of this Kafka release instead of live brokers (e.g. 4.0; "
        "3.9,4.0 for one mixed cluster whose first release plays the bootstrap broker; "
        f"repeatable for several clusters). {RELEASE_FORMS}",
    )
    parser.add_argument(
        "--from", dest="upgrade_from", metavar="RELEASE[,RELEASE...]",
        help="with --to: show only the verdicts an upgrade from this release changes, "
        "during the roll and after it (newly broken first)",
    )
    parser.add_argument(
        "--to", dest="upgrade_to", metavar="RELEASE[,RELEASE...]",
        help="with --from: the release the cluster moves to",
    )
    parser.add_argument(
        "--snapshot", metavar="FILE.jsonl",
        help="read recorded snapshot records (as written by 'kclient probe --record')",
    )
    parser.add_argument(
        "--cluster", metavar="NAME", action="append",
        help="only this cluster of the snapshot or inventory (repeatable); default: every "
        "cluster",
    )
    parser.add_argument(
        "--inventory", metavar="FILE", action="append", default=[],
        help="judge the client software this inventory names instead of --client: broker "
        "metrics as the JMX exporter writes them (socket-server-metrics connections, "
        "RequestsPerSec, DeprecatedRequestsPerSec), a CSV or a JSON Lines inventory; a file, "
        "a directory or a glob (repeatable); with one --release, the release the clusters move "
        "to",
    )
    parser.add_argument(
        "--cluster-label", metavar="LABEL",
        help=CLUSTER_LABEL_HELP,
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


@attrs.frozen
class Judged:
    """One client on one cluster: its profile and verdicts, or the unprofiled release."""

    profile: ClientProfile | None
    results: tuple[CompatResult, ...] = ()
    unprofiled: UnprofiledRelease | None = None

    @property
    def label(self) -> str:
        """How the rows name the client."""
        if self.profile is not None:
            return self.profile.label
        assert self.unprofiled is not None
        return f"{self.unprofiled.library} {self.unprofiled.version}"


def _clients(specs: list[str]) -> list[ClientProfile | UnprofiledRelease]:
    from kclient.installed import INSTALLED_PREFIX, installed_profile
    from kclient.negotiation.clients import UnprofiledRelease, client_profile, known_clients

    if not specs:
        return [client_profile(name) for name in known_clients()]
    found: list[ClientProfile | UnprofiledRelease] = []
    for spec in specs:
        try:
            if spec.startswith(INSTALLED_PREFIX):
                found.append(installed_profile(spec[len(INSTALLED_PREFIX):]))
            else:
                found.append(client_profile(spec))
        except UnprofiledRelease as exc:
            found.append(exc)  # judged unknown; the other clients are judged all the same
        except ConfigError as exc:
            raise ConfigError(f"--client {spec}: {exc}") from None
    return found


#: One cluster to judge: its view, where it came from and the node ids the application
#: lists (live), first first; ``None`` offline (the first broker plays the bootstrap broker).
Source = tuple["ClusterView", str, "tuple[int, ...] | None"]


def _live_bootstrap(args: argparse.Namespace, brokers: Sequence[BrokerVersions]
                    ) -> tuple[int, ...]:
    from kclient.commands.common import bootstrap_from_args

    by_address = {b.address: b.node_id for b in brokers}
    listed = [by_address[a] for a in bootstrap_from_args(args) if a in by_address]
    return tuple(dict.fromkeys(listed))


def _views(args: argparse.Namespace) -> list[Source]:
    from kclient.commands.inspect import collect_brokers
    from kclient.negotiation import ClusterView
    from kclient.negotiation.readiness import release_cluster

    strict = not bool(args.lenient)
    if args.release:
        if args.snapshot or getattr(args, "bootstrap_server", None):
            raise ConfigError("give one source: --release, --snapshot or --bootstrap-server")
        return [(ClusterView(brokers, strict=strict, name=name), "release", None)
                for name, brokers in (release_cluster(v) for v in args.release)]
    clusters = collect_brokers(args)
    if args.snapshot:
        return [(ClusterView(brokers, strict=strict, name=name), "snapshot", None)
                for name, brokers in clusters.items()]
    return [(ClusterView(brokers, strict=strict, name=name), "live",
             _live_bootstrap(args, brokers)) for name, brokers in clusters.items()]


def _check(source: Source, clients: list[ClientProfile | UnprofiledRelease],
           features: list[str] | None) -> list[Judged]:
    from kclient.negotiation.clients import ClientProfile, check_client

    view, _, bootstrap = source
    known = list(view.known_brokers)
    unknown = view.unknown_reason()
    judged = []
    for client in clients:
        if isinstance(client, ClientProfile):
            judged.append(Judged(client, check_client(client, known, features, unknown,
                                                      bootstrap=bootstrap)))
        else:
            judged.append(Judged(None, unprofiled=client))
    return judged


def _broker_json(broker: BrokerVersions) -> dict[str, Any]:
    from kclient.negotiation.releases import guess_release

    guess = guess_release(broker.apis).text if broker.apis else None
    return {"broker_id": broker.node_id, "host": broker.host, "port": broker.port,
            "state": broker.state.value, "release_guess": guess}


def _result_json(r: CompatResult) -> dict[str, Any]:
    return {"name": r.feature, "state": r.state.value, "reason": r.reason,
            "caveats": list(r.caveats), "support": list(r.support),
            "apis": [{"api_key": a.key, "name": a.name, "version": a.version,
                      "highest_version": a.highest, "blocking_brokers": list(a.blocking)}
                     for a in r.apis]}


def _client_json(judged: Judged) -> dict[str, Any]:
    profile = judged.profile
    if profile is None:
        assert judged.unprofiled is not None
        gone = judged.unprofiled
        return {"client": gone.library, "version": gone.version, "profiled": False,
                "line": None, "covers": None, "read_at": None, "strategy": None,
                "asks": None, "nearest": gone.nearest, "note": str(gone), "features": []}
    return {"client": profile.library, "version": profile.version, "profiled": True,
            "line": profile.line, "covers": profile.covers, "read_at": profile.read_at,
            "strategy": profile.strategy.value,
            "asks": None if profile.asks is None else profile.asks.value, "nearest": None,
            "note": profile.note, "features": [_result_json(r) for r in judged.results]}


def _cluster_json(source: Source, judged: list[Judged]) -> dict[str, Any]:
    view, kind, bootstrap = source
    return {"cluster": view.name, "source": kind,
            "bootstrap": list(bootstrap) if bootstrap is not None else None,
            "brokers": [_broker_json(b) for b in view.brokers],
            "clients": [_client_json(j) for j in judged]}


def compat_document(checked: list[tuple[Source, list[Judged]]],
                    changes: list[dict[str, Any]] | None = None) -> dict[str, Any]:
    """The ``kclient compat --format json`` document (contract ``kclient.compat/2``).

    ``changes`` (``--from/--to``) lists the verdicts the upgrade changes, each
    with both sides.
    """
    document: dict[str, Any] = {
        "format": FORMAT, "clusters": [_cluster_json(s, j) for s, j in checked]}
    if changes is not None:
        document["changes"] = changes
    return document


def _offline_note(source: Source, judged: Judged) -> str | None:
    from kclient.negotiation.clients import Asks

    view, _, bootstrap = source
    profile = judged.profile
    if (profile is None or profile.asks is not Asks.BOOTSTRAP or bootstrap is not None
            or len(view.brokers) < 2):
        return None
    first = view.brokers[0]
    return (f"note: {profile.label} takes every version from {profile.asks.text}; offline, "
            f"{first.label} (the first release listed) plays it: list another release first "
            "to judge another, or judge the live cluster with -b")


def _rows(judged: list[Judged]) -> list[tuple[str, str, str, str]]:
    rows = []
    for j in judged:
        if j.profile is None:
            assert j.unprofiled is not None
            rows.append((j.label, "*", "UNKNOWN", str(j.unprofiled)))
            continue
        rows += [(j.label, r.feature, r.state.value.upper(), r.detail) for r in j.results]
    return rows


def table_text(head: str, header: tuple[str, ...], rows: Sequence[tuple[str, ...]],
               notes: list[str]) -> str:
    """A heading, aligned columns (the last one free) and notes, every cell printable."""
    shown = [tuple(printable(cell) for cell in row) for row in [header, *rows]]
    columns = len(header)
    widths = [max(len(row[i]) for row in shown) for i in range(columns - 1)]
    lines = [printable(head)]
    lines += ["  ".join(cell.ljust(widths[i]) for i, cell in enumerate(row[:-1])) + "  "
              + row[-1] for row in shown]
    return "\n".join(lines + [printable(n) for n in notes])


def _table(source: Source, judged: list[Judged]) -> str:
    view = source[0]
    notes = [f"note: {j.profile.note}" for j in judged if j.profile and j.profile.note]
    notes += [n for j in judged if (n := _offline_note(source, j)) is not None]
    head = f"cluster {view.name}: " + ", ".join(b.label for b in view.brokers)
    return table_text(head, ("CLIENT", "FEATURE", "VERDICT", "DETAIL"), _rows(judged), notes)


def _exit(states: set[Any], unknown_clients: bool) -> int:
    from kclient.negotiation.clients import Compat

    if Compat.BREAKS in states:
        return EXIT_BREAKS
    return EXIT_UNKNOWN if Compat.UNKNOWN in states or unknown_clients else EXIT_OK


# -- --from / --to ---------------------------------------------------------------------------
#: The order changes are shown in: newly broken first.
_CHANGE_ORDER = {"breaks": 0, "unknown": 1, "support": 2, "works": 3}


def upgrade_changes(phases: list[tuple[str, list[Judged]]], before: list[Judged]
                    ) -> list[dict[str, Any]]:
    """The verdicts that change from ``before`` in each phase (``during``, ``after``).

    A verdict changed during the roll and the same after it is listed once, at
    the phase where it first changed.  Newly broken first, then newly unknown,
    then verdicts that still hold on the wire but gain a support statement
    (``support``: Apache or the library no longer supports the pair), then what
    works now.
    """
    changes: list[dict[str, Any]] = []
    seen: set[tuple[str, str]] = set()
    for phase, judged in phases:
        for old, new in zip(before, judged, strict=True):
            if old.profile is None or new.profile is None:
                continue
            for was, now in zip(old.results, new.results, strict=True):
                if (new.label, now.feature) in seen:
                    continue
                if was.state is not now.state:
                    change = now.state.value
                elif set(now.support) - set(was.support):
                    change = "support"  # works on the wire, a project's statement changes
                else:
                    continue
                seen.add((new.label, now.feature))
                profile = new.profile
                changes.append({
                    "client": profile.library, "version": profile.version,
                    "line": profile.line, "feature": now.feature, "phase": phase,
                    "change": change,
                    "before": _result_json(was), "after": _result_json(now),
                    "_label": new.label, "_detail": now.detail, "_was": was.state.value,
                    "_now": now.state.value.upper() + (", UNSUPPORTED" if change == "support"
                                                       else "")})
    changes.sort(key=lambda c: _CHANGE_ORDER[c["change"]])
    return changes


def _run_upgrade(args: argparse.Namespace, clients: list[ClientProfile | UnprofiledRelease],
                 features: list[str] | None) -> int:
    from kclient.negotiation import ClusterView
    from kclient.negotiation.clients import Compat
    from kclient.negotiation.readiness import release_cluster

    if not (args.upgrade_from and args.upgrade_to):
        raise ConfigError("--from and --to go together: e.g. --from 3.6 --to 4.0")
    if args.release or args.snapshot or getattr(args, "bootstrap_server", None):
        raise ConfigError("--from/--to judge releases: leave out --release, --snapshot and "
                          "--bootstrap-server")
    strict = not bool(args.lenient)
    old_name, old = release_cluster(args.upgrade_from, "--from")
    new_name, new = release_cluster(args.upgrade_to, "--to")
    clusters = [("before", old_name, old)]
    if [b.apis for b in old] != [b.apis for b in new]:
        mixed = [attrs.evolve(b, node_id=i) for i, b in enumerate([*old, *new], 1)]
        clusters.append(("during", f"{old_name} + {new_name.removeprefix('Kafka ')} "
                         "(during the roll)", mixed))
    clusters.append(("after", new_name, new))
    checked = []
    for phase, name, brokers in clusters:
        source: Source = (ClusterView(brokers, strict=strict, name=name), "release", None)
        checked.append((phase, source, _check(source, clients, features)))
    before = checked[0][2]
    changes = upgrade_changes([(p, j) for p, _, j in checked[1:]], before)
    unknown_clients = any(j.profile is None for j in before)
    after_states = {r.state for _, _, judged in checked[1:] for j in judged for r in j.results}
    if args.format == "json":
        public = [{k: v for k, v in c.items() if not k.startswith("_")} for c in changes]
        sys.stdout.write(json.dumps(compat_document(
            [(s, j) for _, s, j in checked], public), indent=2) + "\n")
    else:
        head = f"upgrade {old_name} -> {new_name}: the verdicts that change"
        rows = [(c["_label"], c["feature"], "during the roll" if c["phase"] == "during"
                 else "after", c["_was"], c["_now"], c["_detail"]) for c in changes]
        notes = [f"note: {j.label}: {j.unprofiled}" for j in before if j.unprofiled]
        if not any(c["change"] == "breaks" for c in changes):
            notes.insert(0, f"the upgrade from {old_name} to {new_name} breaks nothing new "
                         "for these clients")
        sys.stdout.write(table_text(head, ("CLIENT", "FEATURE", "WHEN", "BEFORE", "NOW",
                                            "DETAIL"), rows, notes) + "\n")
    if any(c["change"] == "breaks" for c in changes):
        return EXIT_BREAKS
    states = after_states - {Compat.BREAKS}
    return _exit(states, unknown_clients)


def run_compat(args: argparse.Namespace) -> int:
    """Handler of ``kclient compat``: exit 1 when something breaks, 3 when unknown."""
    from kclient.negotiation.clients import client_feature

    for name in args.feature:
        client_feature(name)  # an unknown name fails before any broker is asked
    features = list(args.feature) or None
    if args.inventory:
        from kclient.commands.readiness import run_inventory

        return run_inventory(args, features)
    if args.cluster_label:
        raise ConfigError("--cluster-label goes with --inventory")
    if args.upgrade_from or args.upgrade_to:
        return _run_upgrade(args, _clients(list(args.client)), features)
    clients = _clients(list(args.client))
    checked = [(source, _check(source, clients, features)) for source in _views(args)]
    if args.format == "json":
        sys.stdout.write(json.dumps(compat_document(checked), indent=2) + "\n")
    else:
        sys.stdout.write("\n\n".join(_table(s, j) for s, j in checked) + "\n")
    states = {r.state for _, judged in checked for j in judged for r in j.results}
    return _exit(states, any(j.profile is None for _, judged in checked for j in judged))
