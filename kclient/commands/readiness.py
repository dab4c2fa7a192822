"""``kclient compat --inventory``: which client software breaks when clusters move to a release.

The inventory (broker metrics as the JMX exporter writes them, a CSV or JSON Lines
inventory, or what kclient's emulator recorded; :mod:`kclient.negotiation.inventoryfile`)
says which client software connects to each cluster and which request versions its
brokers saw; :func:`~kclient.negotiation.readiness.judge_readiness` judges each on
brokers of the target release (``--release 4.0``).  Exit codes as ``compat``: 0 when
every client software works, 1 when one breaks (or requests nobody can be named for
would be refused), 3 when none breaks but some verdict is unknown, 2 for bad input.
"""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from kclient.contracts import FORMATS
from kclient.errors import ConfigError

if TYPE_CHECKING:
    from kclient.negotiation.inventory import Inventory
    from kclient.negotiation.readiness import (
        ClusterReadiness,
        ObservedRequest,
        SoftwareVerdict,
    )

__all__ = ["FORMAT", "readiness_document", "readiness_exit", "run_inventory",
           "software_json"]

#: The ``"format"`` of ``kclient compat --inventory ... --format json``.
FORMAT = FORMATS["readiness"]

EXIT_OK = 0
EXIT_BREAKS = 1
EXIT_UNKNOWN = 3


def _request_json(request: ObservedRequest) -> dict[str, Any]:
    return {"api_key": request.api_key, "api": request.name, "version": request.version,
            "count": request.count, "refused": request.refused}


def software_json(verdict: SoftwareVerdict) -> dict[str, Any]:
    """One client software's verdict as the readiness contract writes it."""
    ident = verdict.identification
    return {
        "software_name": verdict.software.name, "software_version": verdict.software.version,
        "connections": verdict.connections, "state": verdict.state.value,
        "reason": verdict.reason, "library": ident.library, "release": ident.release,
        "binding": ident.binding, "identified": ident.how, "table_source": ident.source,
        "profile": verdict.profile,
        "predicted": None if verdict.predicted is None else verdict.predicted.value,
        "evidence": [{"kind": e.kind, "text": e.text} for e in verdict.evidence],
        "disagreements": list(verdict.disagreements),
        "observed": [_request_json(r) for r in verdict.observed],
        "features": [{"name": r.feature, "state": r.state.value, "reason": r.reason}
                     for r in verdict.results],
    }


def _inventory_json(inventory: Inventory) -> dict[str, Any]:
    return {
        "files": list(inventory.files),
        "read": {what: count for what, count in inventory.recognised},
        "not_read": {name: count for name, count in inventory.unrecognised},
        "not_read_series": inventory.unrecognised_series,
        "bad_lines": [{"file": b.file, "line": b.line, "reason": b.reason}
                      for b in inventory.bad_lines],
        "bad_count": inventory.bad_count,
        "over_limit": inventory.over_limit,
    }


def readiness_document(release: str, target: str, judged: Sequence[ClusterReadiness],
                       inventory: Inventory) -> dict[str, Any]:
    """The ``kclient compat --inventory --format json`` document (``kclient.readiness/1``)."""
    return {
        "format": FORMAT, "release": release, "target": target,
        "clusters": [{"cluster": c.cluster, "state": c.state.value,
                      "software": [software_json(v) for v in c.software],
                      "unattributed": [_request_json(r) for r in c.unattributed],
                      "disagreements": list(c.disagreements)} for c in judged],
        "inventory": _inventory_json(inventory),
    }


def readiness_exit(judged: Sequence[ClusterReadiness]) -> int:
    """1 when a cluster is blocked, 3 when none is but one is unknown, else 0."""
    from kclient.negotiation.readiness import Readiness

    states = {c.state for c in judged}
    if Readiness.BLOCKED in states:
        return EXIT_BREAKS
    return EXIT_UNKNOWN if Readiness.UNKNOWN in states else EXIT_OK


def _evidence(verdict: SoftwareVerdict) -> str:
    return "; ".join(f"{e.kind}: {e.text}" for e in verdict.evidence)


def _connections(value: int | None) -> str:
    return "-" if value is None else f"{value:,}"


def _cluster_table(cluster: ClusterReadiness) -> str:
    from kclient.commands.compat import table_text

    total = sum(v.connections or 0 for v in cluster.software)
    blocking = cluster.blocking
    held = sum(v.connections or 0 for v in blocking)
    head = (f"cluster {cluster.cluster} on {cluster.target}: {cluster.state.value.upper()}"
            f" ({len(blocking)} of {len(cluster.software)} client software break"
            + (f", {held:,} of {total:,} connections" if total else "") + ")")
    rows = [(v.software.label, _connections(v.connections), v.state.value.upper(),
             _evidence(v)) for v in cluster.software]
    notes = [f"unattributed: {r.unattributed()}" for r in cluster.unattributed]
    notes += [f"disagreement: {d}" for d in cluster.disagreements]
    return table_text(head, ("CLIENT SOFTWARE", "CONNECTIONS", "VERDICT", "EVIDENCE"), rows,
                      notes)


def run_inventory(args: argparse.Namespace, features: list[str] | None) -> int:
    """``kclient compat --inventory FILE --release R``: exit 1 when something breaks."""
    from kclient.negotiation.inventoryfile import read_inventory
    from kclient.negotiation.readiness import judge_readiness, release_cluster

    if args.snapshot or getattr(args, "bootstrap_server", None) or args.client or (
            args.upgrade_from or args.upgrade_to):
        raise ConfigError("--inventory judges the client software the inventory names on one "
                          "--release: leave out --client, --snapshot, --bootstrap-server and "
                          "--from/--to")
    if len(args.release) != 1:
        raise ConfigError("--inventory needs the release the clusters move to: one --release, "
                          "e.g. --release 4.0 (or 3.9,4.0 for the roll)")
    target, brokers = release_cluster(args.release[0])
    inventory = read_inventory(list(args.inventory), cluster_label=args.cluster_label)
    clusters = list(inventory.clusters)
    if args.cluster:
        wanted = set(args.cluster)
        clusters = [c for c in clusters if c.name in wanted]
        missing = sorted(wanted - {c.name for c in clusters})
        if missing:
            raise ConfigError(f"--cluster {missing[0]}: not in the inventory (clusters: "
                              f"{', '.join(c.name for c in inventory.clusters[:10])})")
    judged = judge_readiness(clusters, brokers, target, features)
    for note in inventory.notes():
        print(f"kclient compat: {note}", file=sys.stderr)
    if args.format == "json":
        document = readiness_document(args.release[0], target, judged, inventory)
        sys.stdout.write(json.dumps(document, indent=2) + "\n")
    else:
        sys.stdout.write("\n\n".join(_cluster_table(c) for c in judged) + "\n")
    return readiness_exit(judged)
