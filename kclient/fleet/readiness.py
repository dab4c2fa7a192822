"""Upgrade readiness in the fleet report: a client inventory judged for a target release.

``kclient fleet report --inventory PATH --target 4.0`` reads a client inventory
(broker metrics as the JMX exporter writes them, CSV, JSON Lines:
:mod:`kclient.negotiation.inventoryfile`) and judges every cluster's client
software on brokers of the target release with the core
(:func:`~kclient.negotiation.readiness.judge_readiness`, whose prediction is
``kclient compat``'s own verdict), on the driver: an inventory is small next to
the snapshots.  What each engine does itself is match the inventory's clusters
with the snapshots' (in memory, or with a Spark join) and write the
``upgrade_readiness`` table, one row per cluster and client software
(:data:`COLUMNS`), plus a row per snapshot cluster no inventory names
(``software_name`` null, state ``unknown``, reason :data:`NO_INVENTORY`) and a row
per cluster whose brokers counted requests of refused versions that no named
software accounts for (``software_name`` null, state ``breaks``).  The report's
section comes from :func:`readiness_summary`, for both engines.
"""

from __future__ import annotations

from collections.abc import Collection, Sequence
from typing import TYPE_CHECKING, Any

import attrs

from kclient.fleet.report import READINESS_TABLE
from kclient.fleet.report.data import (
    SOFTWARE_BARS,
    BlockingSoftware,
    ReadinessSummary,
    SoftwareBar,
)
from kclient.fleet.rows import table_from_rows
from kclient.fleet.summary import REPORT_LIMIT
from kclient.fleet.tables import local_table
from kclient.negotiation.clients import Compat
from kclient.negotiation.inventory import Inventory
from kclient.negotiation.inventoryfile import read_inventory
from kclient.negotiation.readiness import (
    ClusterReadiness,
    Readiness,
    SoftwareVerdict,
    judge_readiness,
    release_cluster,
)

if TYPE_CHECKING:
    import pyarrow as pa
    from pyspark.sql import DataFrame, SparkSession

__all__ = [
    "COLUMNS",
    "NONE_NAMED",
    "NO_INVENTORY",
    "READINESS_TABLE",
    "UNATTRIBUTED",
    "JudgedInventory",
    "ReadinessInput",
    "arrow_schema",
    "inventory_rows",
    "judge_input",
    "local_readiness",
    "readiness_summary",
    "spark_readiness",
]

#: The reason of a snapshot cluster no client inventory names.
NO_INVENTORY = "no client inventory names this cluster"
#: The reason of an inventory cluster with no client software (only request counts).
NONE_NAMED = "the inventory names no client software on this cluster"
#: How the report names requests that no named client software accounts for.
UNATTRIBUTED = "unattributed requests"

#: The table's columns and their Spark SQL types, in order.
COLUMNS: tuple[tuple[str, str], ...] = (
    ("cluster", "string"), ("in_snapshots", "boolean"), ("cluster_state", "string"),
    ("software_name", "string"), ("software_version", "string"), ("connections", "bigint"),
    ("state", "string"), ("observed", "boolean"), ("reason", "string"),
    ("library", "string"), ("release", "string"), ("profile", "string"),
    ("refused", "array<string>"), ("evidence", "array<string>"),
    ("disagreements", "array<string>"),
)


@attrs.frozen
class ReadinessInput:
    """What ``--inventory``, ``--target`` and ``--cluster-label`` ask for."""

    paths: tuple[str, ...]
    release: str
    cluster_label: str | None = None


@attrs.frozen
class JudgedInventory:
    """An inventory and its clusters judged on ``target`` (``Kafka 4.0``)."""

    target: str
    inventory: Inventory
    clusters: tuple[ClusterReadiness, ...]


def judge_input(spec: ReadinessInput) -> JudgedInventory:
    """Read the inventory and judge every cluster on brokers of ``spec.release``."""
    target, brokers = release_cluster(spec.release, "--target")
    inventory = read_inventory(list(spec.paths), cluster_label=spec.cluster_label)
    return JudgedInventory(target, inventory, judge_readiness(inventory, brokers, target))


def _verdict_row(cluster: ClusterReadiness, verdict: SoftwareVerdict) -> tuple[Any, ...]:
    ident = verdict.identification
    return (cluster.cluster, cluster.state.value, verdict.software.name,
            verdict.software.version, verdict.connections, verdict.state.value,
            bool(verdict.refused), verdict.reason, ident.library, ident.release,
            verdict.profile,
            [r.refusal() for r in verdict.refused],
            [f"{e.kind}: {e.text}" for e in verdict.evidence], list(verdict.disagreements))


def _bare_row(cluster: str, cluster_state: str, state: str, observed: bool, reason: str,
              refused: Sequence[str] = (), evidence: Sequence[str] = ()) -> tuple[Any, ...]:
    """A row that names no client software (without ``in_snapshots``)."""
    return (cluster, cluster_state, None, None, None, state, observed, reason, None, None, None,
            list(refused), list(evidence), [])


def inventory_rows(judged: JudgedInventory) -> list[tuple[Any, ...]]:
    """The table's rows of the inventory's clusters, without ``in_snapshots`` (each engine
    adds it)."""
    rows: list[tuple[Any, ...]] = []
    for cluster in judged.clusters:
        state = cluster.state.value
        if not cluster.software and not cluster.unattributed:
            rows.append(_bare_row(cluster.cluster, state, Compat.UNKNOWN.value, False,
                                  NONE_NAMED))
        rows += [_verdict_row(cluster, v) for v in cluster.software]
        for request in cluster.unattributed:
            reason = request.unattributed()
            rows.append(_bare_row(
                cluster.cluster, state, Compat.BREAKS.value, True, reason,
                [request.refusal()],
                [f"observed: {reason}"]))
    return rows


def _no_inventory_row(cluster: str) -> tuple[Any, ...]:
    return _with_flag(_bare_row(cluster, Readiness.UNKNOWN.value, Compat.UNKNOWN.value, False,
                                NO_INVENTORY), True)


def _with_flag(row: tuple[Any, ...], in_snapshots: bool) -> tuple[Any, ...]:
    return (row[0], in_snapshots, *row[1:])


def arrow_schema() -> pa.Schema:
    """The table's Arrow schema (:data:`COLUMNS`)."""
    import pyarrow as pa

    kinds = {"string": pa.string(), "boolean": pa.bool_(), "bigint": pa.int64(),
             "array<string>": pa.list_(pa.string())}
    return pa.schema([(name, kinds[kind]) for name, kind in COLUMNS])


def _rows_and_summary(judged: JudgedInventory, present: Collection[str], missing: int,
                      first_missing: Sequence[str]
                      ) -> tuple[list[tuple[Any, ...]], ReadinessSummary]:
    """The inventory's rows (flagged with ``present``: its clusters the snapshots have) and
    the section, given the snapshot clusters no inventory names (how many, the first)."""
    known = set(present)
    rows = [_with_flag(row, row[0] in known) for row in inventory_rows(judged)]
    outside = sorted(c.cluster for c in judged.clusters if c.cluster not in known)
    return rows, readiness_summary(judged, no_inventory=missing,
                                   no_inventory_names=first_missing, outside=len(outside),
                                   outside_names=outside[:REPORT_LIMIT])


def local_readiness(judged: JudgedInventory, snapshot_clusters: Collection[str]
                    ) -> tuple[pa.Table, ReadinessSummary]:
    """The in-process engine's table and section: the snapshots' clusters in memory."""
    named = {c.cluster for c in judged.clusters}
    missing = sorted(set(snapshot_clusters) - named)
    rows, summary = _rows_and_summary(judged, named & set(snapshot_clusters), len(missing),
                                      missing[:REPORT_LIMIT])
    rows += [_no_inventory_row(cluster) for cluster in missing]
    return table_from_rows(rows, arrow_schema()), summary


def spark_readiness(spark: SparkSession, judged: JudgedInventory, views: DataFrame
                    ) -> tuple[DataFrame, ReadinessSummary]:
    """The Spark engine's table and section: the snapshots' clusters (``views``) matched
    with the inventory's in Spark (a semi join and an anti join with a small table made
    on the driver); the inventory's rows are made on the driver, the others in Spark."""
    from pyspark.sql import functions as F

    names = F.broadcast(local_table(spark, [(c.cluster,) for c in judged.clusters],
                                    "cluster string"))
    clusters = views.select("cluster").distinct()
    present = [str(r["cluster"]) for r in clusters.join(names, "cluster", "left_semi").collect()]
    missing = clusters.join(names, "cluster", "left_anti")
    found = missing.agg(F.count(F.lit(1)).alias("n"), F.slice(
        F.array_sort(F.collect_list("cluster")), 1, REPORT_LIMIT).alias("first")).collect()[0]
    rows, summary = _rows_and_summary(judged, present, int(found["n"]),
                                      [str(c) for c in found["first"]])
    schema = ", ".join(f"{name} {kind}" for name, kind in COLUMNS)
    # The same row as the in-process engine's, its values as Spark literals.
    template = _no_inventory_row("")
    none = missing.select("cluster", *[
        (F.array(*map(F.lit, value)) if isinstance(value, list) else F.lit(value))
        .cast(kind).alias(name)
        for (name, kind), value in zip(COLUMNS[1:], template[1:], strict=True)])
    return local_table(spark, rows, schema).unionByName(none), summary


_STATE_ORDER = {Compat.BREAKS.value: 0, Compat.UNKNOWN.value: 1, Compat.WORKS.value: 2}


def readiness_summary(judged: JudgedInventory, *, no_inventory: int = 0,
                      no_inventory_names: Sequence[str] = (), outside: int = 0,
                      outside_names: Sequence[str] = ()) -> ReadinessSummary:
    """The report's upgrade readiness section (both engines: one home).

    ``no_inventory`` counts the snapshot clusters no inventory names (unknown),
    ``outside`` the inventory's clusters the snapshots lack (the first of each by
    name given).
    """
    counts = {state: sum(1 for c in judged.clusters if c.state is state) for state in Readiness}
    blocked = sorted(c.cluster for c in judged.clusters if c.state is Readiness.BLOCKED)
    shown = set(blocked[:REPORT_LIMIT])
    blocking: list[BlockingSoftware] = []
    for cluster in sorted(judged.clusters, key=lambda c: c.cluster):
        if cluster.cluster not in shown:
            continue
        blocking += [BlockingSoftware(cluster.cluster, v.software.label, v.connections,
                                      bool(v.refused), v.reason) for v in cluster.blocking]
        blocking += [BlockingSoftware(cluster.cluster, UNATTRIBUTED, None, True,
                                      r.unattributed()) for r in cluster.unattributed]
    undecided_names = sorted(c.cluster for c in judged.clusters
                             if c.state is Readiness.UNKNOWN)[:REPORT_LIMIT]
    listed = set(undecided_names)
    undecided = [BlockingSoftware(c.cluster, v.software.label, v.connections, False, v.reason)
                 for c in sorted(judged.clusters, key=lambda c: c.cluster)
                 if c.cluster in listed for v in c.software if v.state is Compat.UNKNOWN]
    bars: dict[tuple[str, str], list[int]] = {}
    for cluster in judged.clusters:
        for verdict in cluster.software:
            bar = bars.setdefault((verdict.software.label, verdict.state.value), [0, 0])
            bar[0] += 1
            bar[1] += verdict.connections or 0
    ordered = sorted(bars.items(), key=lambda item: (_STATE_ORDER[item[0][1]], -item[1][1],
                                                      item[0][0]))
    return ReadinessSummary(
        target=judged.target, ready=counts[Readiness.READY],
        blocked=counts[Readiness.BLOCKED], unknown=counts[Readiness.UNKNOWN] + no_inventory,
        no_inventory=no_inventory, no_inventory_names=tuple(no_inventory_names),
        outside=outside, outside_names=tuple(outside_names),
        blocked_names=tuple(blocked[:REPORT_LIMIT]), blocking=tuple(blocking),
        undecided_names=tuple(undecided_names), undecided=tuple(undecided),
        software=tuple(SoftwareBar(label, state, n, connections)
                       for (label, state), (n, connections) in ordered[:SOFTWARE_BARS]),
        software_total=len(ordered),
        disagreements=sum(len(c.disagreements) for c in judged.clusters),
        notes=tuple(judged.inventory.notes()))
