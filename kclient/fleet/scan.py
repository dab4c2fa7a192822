"""``fleet scan``: negotiate with every cluster of a targets file, then the report runs.

In-process (:func:`run_local_scan`), one event loop probes every cluster; on
Spark (:func:`run_scan`), each task probes its share.

The targets file is JSON Lines, one cluster per line::

    {"cluster": "prod-eu-1", "bootstrap_servers": "10.0.0.5:9092,10.0.0.6:9092"}
    {"cluster": "legacy", "bootstrap_servers": "10.1.0.9:9092", "fallback": "0.9.0"}
    {"cluster": "secure", "bootstrap_servers": "k.example:9093",
     "tls": {"ca_file": "/etc/ssl/kafka-ca.pem", "server_name": "k.example"}}

``tls`` is ``true`` (system CAs) or an object of :class:`kclient.net.tls.TlsConfig`
fields; ``fallback`` is the release to assume for brokers that cannot answer
ApiVersions.  Each event loop (one per Spark task) probes its clusters
with :class:`kclient.Client`, at most ``concurrency`` at a time and each within
``timeout`` seconds; a cluster that cannot be reached yields error records
(broker id -1, one per bootstrap server) instead of failing the job.  The
records are written as JSON Lines under ``OUT/snapshots`` and then reported on
like any other snapshots.
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import Callable, Iterable, Iterator
from pathlib import Path
from typing import TYPE_CHECKING, Any

import attrs

from kclient._inputfile import MAX_SETTINGS_INPUT, read_input_text
from kclient._json import loads as json_loads
from kclient._outputfile import fresh_folder
from kclient.errors import ConfigError, FleetError, KClientError
from kclient.fleet.local import run_local_report
from kclient.fleet.pipeline import run_report
from kclient.fleet.reader import refused_input
from kclient.fleet.report import prepare_out
from kclient.fleet.session import spark_failure
from kclient.negotiation.features import FeatureSet
from kclient.negotiation.releases import resolve_release
from kclient.negotiation.snapshot import record_to_json, unreachable_records, utc_now
from kclient.net.client import Client
from kclient.net.tls import TlsConfig

if TYPE_CHECKING:
    from pyspark.sql import SparkSession

    from kclient.fleet.report import ReportData

__all__ = ["Target", "probe_targets", "read_targets", "run_local_scan", "run_scan"]

_TARGET_KEYS = ("cluster", "bootstrap_servers", "tls", "fallback")
_TLS_KEYS = ("ca_file", "cert_file", "key_file", "server_name", "verify")


@attrs.frozen
class Target:
    """One cluster to probe."""

    cluster: str
    bootstrap_servers: str
    tls: bool | dict[str, Any] | None = attrs.field(default=None, hash=False)
    fallback: str | None = None

    def to_json(self) -> dict[str, Any]:
        """The target as a JSON-ready dict (how it travels to Spark tasks)."""
        return attrs.asdict(self)


def _target(obj: Any, where: str) -> Target:
    if not isinstance(obj, dict):
        raise ConfigError(f"{where}: a target is a JSON object such as "
                          '{"cluster": "prod", "bootstrap_servers": "host:9092"}')
    unknown = sorted(set(obj) - set(_TARGET_KEYS))
    if unknown:
        raise ConfigError(f"{where}: unknown key(s) {', '.join(unknown)}; allowed: "
                          f"{', '.join(_TARGET_KEYS)}")
    cluster = obj.get("cluster")
    servers = obj.get("bootstrap_servers")
    if isinstance(servers, list) and all(isinstance(s, str) for s in servers):
        servers = ",".join(servers)
    if not isinstance(cluster, str) or not cluster.strip():
        raise ConfigError(f"{where}: 'cluster' must be a non-empty name")
    if not isinstance(servers, str) or not servers.strip():
        raise ConfigError(f"{where}: 'bootstrap_servers' must be 'host:port[,host:port]'")
    tls = obj.get("tls")
    if isinstance(tls, dict):
        bad = sorted(set(tls) - set(_TLS_KEYS))
        if bad:
            raise ConfigError(f"{where}: unknown tls key(s) {', '.join(bad)}; allowed: "
                              f"{', '.join(_TLS_KEYS)}")
    elif tls is not None and not isinstance(tls, bool):
        raise ConfigError(f"{where}: 'tls' must be true, false or an object of TLS options")
    fallback = obj.get("fallback")
    if fallback is not None:
        if not isinstance(fallback, str):
            raise ConfigError(f"{where}: 'fallback' must be a release name such as '0.9.0'")
        try:
            resolve_release(fallback)
        except ConfigError as exc:
            raise ConfigError(f"{where}: {exc}") from None
    return Target(cluster.strip(), servers.strip(), tls, fallback)


def read_targets(path: str | Path) -> list[Target]:
    """Parse a targets file (JSON Lines); errors name ``file:line``."""
    # A regular file of settings' size, as kclient reads every file it is named.
    text = read_input_text(path, "the targets file", limit=MAX_SETTINGS_INPUT,
                           error=refused_input)
    targets: list[Target] = []
    seen: set[str] = set()
    for number, line in enumerate(text.split("\n"), start=1):
        if not line.strip() or line.lstrip().startswith("#"):
            continue
        where = f"{path}:{number}"
        try:
            obj = json_loads(line)
        except ValueError as exc:
            raise ConfigError(f"{where}: not valid JSON ({exc}); one target object per line"
                              ) from None
        target = _target(obj, where)
        if target.cluster in seen:
            raise ConfigError(f"{where}: cluster {target.cluster!r} is listed twice; keep one")
        seen.add(target.cluster)
        targets.append(target)
    if not targets:
        raise FleetError(f"{path}: the targets file lists no cluster")
    return targets


def _error_records(target: Target, message: str, observed: str) -> list[dict[str, Any]]:
    return [record_to_json(r) for r in unreachable_records(
        target.cluster, target.bootstrap_servers, message, observed)]


async def _probe(target: Target, timeout: float, gate: asyncio.Semaphore
                 ) -> list[dict[str, Any]]:
    tls: Any = TlsConfig(**target.tls) if isinstance(target.tls, dict) else target.tls
    async with gate:
        observed = utc_now()
        step = max(0.5, min(10.0, timeout / 3))
        try:
            async with asyncio.timeout(timeout):
                client = Client(target.bootstrap_servers, cluster_name=target.cluster,
                                api_version_fallback=target.fallback, tls=tls or None,
                                connect_timeout=step, request_timeout=step,
                                metadata_refresh_interval=None)
                async with client:
                    records = client.snapshot(target.cluster)
        except TimeoutError:
            return _error_records(target, f"no answer from cluster {target.cluster} within "
                                  f"{timeout:g} s", observed)
        except (KClientError, OSError) as exc:
            return _error_records(target, str(exc) or type(exc).__name__, observed)
    return [record_to_json(r) for r in records]


async def _probe_all(targets: list[Target], timeout: float, concurrency: int
                     ) -> list[dict[str, Any]]:
    gate = asyncio.Semaphore(concurrency)
    batches = await asyncio.gather(*(_probe(t, timeout, gate) for t in targets))
    return [record for batch in batches for record in batch]


def probe_targets(targets: Iterable[dict[str, Any]], timeout: float, concurrency: int
                  ) -> Iterator[str]:
    """Probe ``targets`` (dicts of :class:`Target`) and yield snapshot records as JSON text.

    This is what each Spark task runs on its partition.
    """
    chosen = [Target(**t) for t in targets]
    if not chosen:
        return iter(())
    records = asyncio.run(_probe_all(chosen, timeout, concurrency))
    return (json.dumps(r, separators=(",", ":")) for r in records)


def run_scan(spark: SparkSession, targets_path: str, out: str, *,
             features: FeatureSet | None = None, timeout: float = 30.0, concurrency: int = 8,
             log: Callable[[str], None] | None = None) -> ReportData:
    """Probe every target from Spark tasks, write the records, then run the report."""
    say = log or (lambda _text: None)
    targets = read_targets(targets_path)
    snapshots = prepare_out(out) / "snapshots"  # refused before any probing if unfit
    slices = max(1, min(len(targets), spark.sparkContext.defaultParallelism * 2))
    say(f"probing {len(targets)} cluster(s) in {slices} Spark task(s)")
    payload = [t.to_json() for t in targets]
    lines = spark.sparkContext.parallelize(payload, slices).mapPartitions(
        lambda part: probe_targets(part, timeout, concurrency))
    frame = spark.createDataFrame(lines.map(lambda text: (text,)), "value string")
    try:
        frame.write.mode("overwrite").text(str(snapshots))
    except Exception as exc:  # Py4J errors from the job carry the task's failure
        if "No module named 'kclient'" in str(exc):
            raise FleetError(
                "probing failed: the Spark executors' Python cannot import kclient; install "
                "it on every node, or ship it with spark-submit --py-files kclient.zip (its "
                "wheel renamed .zip: PySpark leaves .whl files off the executors' path)"
            ) from None
        raise spark_failure(exc, "probing the targets") from None
    return run_report(spark, str(snapshots / "part-*"), out, features=features, log=say)


def run_local_scan(targets_path: str, out: str, *, features: FeatureSet | None = None,
                   timeout: float = 30.0, concurrency: int = 8,
                   log: Callable[[str], None] | None = None) -> ReportData:
    """Probe every target from this process, write the records, then the in-process report.

    The records go to ``OUT/snapshots/part-00000.jsonl`` (as the Spark scan
    writes them, one file per task); at most ``concurrency`` clusters are
    probed at once, each within ``timeout`` seconds.
    """
    say = log or (lambda _text: None)
    targets = read_targets(targets_path)
    snapshots = prepare_out(out) / "snapshots"  # refused before any probing if unfit
    say(f"probing {len(targets)} cluster(s) in this process, {concurrency} at a time")
    lines = probe_targets([t.to_json() for t in targets], timeout, concurrency)
    try:
        # Emptied without following a link there; the file inside is new, in a folder
        # this process just made.
        fresh_folder(snapshots)
        with (snapshots / "part-00000.jsonl").open("x", encoding="utf-8") as handle:
            for line in lines:
                handle.write(line + "\n")
    except OSError as exc:
        raise FleetError(f"cannot write the probed records to {snapshots}: "
                         f"{exc.strerror or exc}; choose another --out") from None
    return run_local_report(str(snapshots), out, features=features, log=say)
