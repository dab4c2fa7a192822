"""A synthetic fleet of snapshot records, built from the release profiles.

The fleet looks like what a platform team runs: mostly recent releases with a
tail of old ones, rolling upgrades in progress (some brokers already on the
next release), KRaft clusters with finalized feature levels (not always
finalized yet after an upgrade), unreachable brokers (``error`` records), whole
clusters behind a proxy whose brokers had to be described by the fallback
ladder (``fallback:<release>``), custom builds advertising an API key Kafka
does not have, and earlier observations of the same brokers (a day before) so
that "latest record per broker" matters.  With ``history=N`` every broker has
one record per UTC day for N days instead (``fleet report --history``).  An unreachable
broker with an earlier observation is *stale* (its earlier answer counts), one
without is *unknown* (its cluster's verdicts become unknown).

The same ``seed`` always gives the same records.  Pure Python: no Spark needed.
"""

from __future__ import annotations

import json
import random
from collections.abc import Iterable, Iterator
from datetime import UTC, datetime, timedelta
from functools import cache
from pathlib import Path
from typing import Any

import attrs

from kclient._inputfile import opened_input_path
from kclient.errors import ConfigError, FleetError
from kclient.extras import require
from kclient.fleet.reader import refused_input
from kclient.negotiation.releases import (
    fallback_source,
    known_releases,
    release_number,
    release_profile,
)

__all__ = ["SynthSummary", "cluster_name", "synth_records", "write_fleet",
           "write_parquet_records"]

# How often each release shows up as a cluster's base release (weights).
_RELEASE_WEIGHTS: dict[str, int] = {
    "0.9": 1, "0.10.2": 1, "0.11": 1, "1.1": 2, "2.0": 2, "2.3": 2, "2.4": 2, "2.6": 3,
    "2.8": 5, "3.0": 3, "3.3": 4, "3.5": 5, "3.6": 6, "3.7": 7, "3.8": 7, "3.9": 10,
    "4.0": 8, "4.1": 7, "4.2": 4, "4.3": 3,
}
# The metadata.version level a KRaft cluster of each release runs at (synthetic values).
_METADATA_LEVEL: dict[str, int] = {
    "3.3": 7, "3.4": 8, "3.5": 11, "3.6": 14, "3.7": 19, "3.8": 20, "3.9": 21,
    "4.0": 25, "4.1": 27, "4.2": 28, "4.3": 29,
}
_GROUP_PROTOCOL_FROM = "4.0"
_BROKER_COUNTS = (1, 3, 3, 3, 4, 5, 5, 6, 6, 9, 12)
_ENVIRONMENTS = ("prod", "staging", "dev", "perf")
_REGIONS = ("eu-west", "eu-central", "us-east", "us-west", "ap-south", "ap-northeast")
_UNKNOWN_KEY = 1000
# Parquet output: records turned into Arrow columns at a time, records per row group.
_PARQUET_CHUNK = 500
_PARQUET_ROW_GROUP = 5000
_START = datetime(2026, 11, 22, 10, 0, tzinfo=UTC)
_ERRORS = (
    "connection refused by {addr}",
    "timed out after 10.0 s waiting for ApiVersions from {addr}",
    "connection reset by {addr} during the handshake",
)


@attrs.frozen
class SynthSummary:
    """What :func:`write_fleet` wrote."""

    path: str
    clusters: int
    brokers: int
    records: int
    api_rows: int


def _time(moment: datetime) -> str:
    return moment.strftime("%Y-%m-%dT%H:%M:%SZ")


@cache
def _default_releases() -> tuple[str, ...]:
    """Each release's default profile (ZooKeeper mode up to 3.9): the upgrade path."""
    return tuple(n for n in known_releases() if release_number(n) == n)


def _index(name: str) -> int:
    return _default_releases().index(name)


def _record(cluster: str, broker_id: int, host: str, when: datetime, release: str | None,
            *, source: str = "api_versions", error: str | None = None,
            finalized: dict[str, list[int]] | None = None,
            supported: dict[str, list[int]] | None = None, epoch: int = -1,
            extra_key: bool = False) -> dict[str, Any]:
    apis: list[dict[str, int]] = []
    if error is None and release is not None:
        apis = [{"api_key": k, "min_version": r.min, "max_version": r.max}
                for k, r in sorted(release_profile(release).items())]
        if extra_key:
            apis.append({"api_key": _UNKNOWN_KEY, "min_version": 0, "max_version": 1})
    return {
        "cluster": cluster, "broker_id": broker_id, "host": host, "port": 9092,
        "observed_at": _time(when), "source": "error" if error else source,
        "api_versions": apis,
        "supported_features": supported or {},
        "finalized_features": finalized or {},
        "finalized_features_epoch": epoch,
        "software": None, "error": error,
    }


def _levels(release: str, rng: random.Random, finalize_new: bool
            ) -> tuple[dict[str, list[int]], dict[str, list[int]], int]:
    level = _METADATA_LEVEL.get(release)
    if level is None:
        return {}, {}, -1
    supported = {"metadata.version": [1, level], "kraft.version": [0, 1]}
    finalized = {"metadata.version": [level, level]}
    if _index(release) >= _index(_GROUP_PROTOCOL_FROM):
        supported["group.version"] = [0, 1]
        supported["transaction.version"] = [0, 2]
        if finalize_new:
            finalized["group.version"] = [1, 1]
            finalized["transaction.version"] = [2, 2]
    return supported, finalized, rng.randint(1, 500)


@attrs.frozen
class _Plan:
    """What one synthetic cluster is: its brokers, releases and mishaps."""

    name: str
    count: int
    base: str
    target: str
    upgrading: bool
    upgraded: int
    proxied: bool
    custom: bool
    dark: bool
    finalize_new: bool
    seen_before: bool
    first_id: int
    observed: datetime
    unreachable: int
    index: int

    def host(self, slot: int) -> str:
        """The address of the broker in ``slot``."""
        return f"10.{(self.index >> 8) & 255}.{self.index & 255}.{slot + 1}"


def cluster_name(index: int) -> str:
    """The name of the synthetic fleet's cluster ``index`` (from 0): ``prod-eu-west-1``."""
    env = _ENVIRONMENTS[index % len(_ENVIRONMENTS)]
    region = _REGIONS[(index // len(_ENVIRONMENTS)) % len(_REGIONS)]
    return f"{env}-{region}-{index + 1}"


def _plans(clusters: int, rng: random.Random, brokers_per_cluster: int | None
           ) -> Iterator[_Plan]:
    if clusters < 1:
        raise ConfigError(f"--clusters must be 1 or more, got {clusters}")
    if brokers_per_cluster is not None and brokers_per_cluster < 1:
        raise ConfigError(f"brokers per cluster must be 1 or more, got {brokers_per_cluster}")
    names = _default_releases()
    bases = list(_RELEASE_WEIGHTS)
    weights = list(_RELEASE_WEIGHTS.values())
    for index in range(clusters):
        count = brokers_per_cluster or rng.choice(_BROKER_COUNTS)
        base = rng.choices(bases, weights)[0]
        position = _index(base)
        upgrading = position + 1 < len(names) and rng.random() < 0.15
        target = names[position + 1] if upgrading else base
        upgraded = rng.randint(1, max(1, count - 1)) if upgrading and count > 1 else 0
        proxied = rng.random() < 0.05
        custom = rng.random() < 0.02
        dark = rng.random() < 0.01
        finalize_new = rng.random() < 0.7
        seen_before = rng.random() < 0.3
        first_id = rng.choice((0, 1, 1, 1, 100))
        observed = _START + timedelta(minutes=rng.randint(0, 600))
        unreachable = rng.randrange(count) if rng.random() < 0.08 else -1
        yield _Plan(cluster_name(index), count, base, target, upgrading, upgraded,
                    proxied, custom, dark, finalize_new, seen_before, first_id, observed,
                    unreachable, index)


def synth_records(clusters: int, seed: int = 0, *, brokers_per_cluster: int | None = None,
                  history: int | None = None) -> Iterator[dict[str, Any]]:
    """Yield the snapshot records (contract dicts) of ``clusters`` clusters.

    Without ``history`` each broker has its latest record (and some an earlier
    one, a day before).  With ``history=N`` every broker has exactly one
    record per UTC day for N consecutive days ending on the day the plain
    fleet is observed: some clusters upgrade part-way (or all the way) through
    the window, and on some days a broker is unreachable (an error record).
    The records of a cluster are consecutive.  Records are made one at a
    time: nothing is held beyond the cluster being written.
    """
    if history is not None and history < 1:
        raise ConfigError(f"--history must be 1 day or more, got {history}")
    rng = random.Random(seed)
    plans = _plans(clusters, rng, brokers_per_cluster)
    if history is not None:
        for plan in plans:
            yield from _daily_records(plan, history, rng)
        return
    for plan in plans:
        for slot in range(plan.count):
            broker_id = plan.first_id + slot
            host = plan.host(slot)
            release = plan.target if slot < plan.upgraded else plan.base
            if plan.seen_before:  # an earlier record, a day before
                supported, finalized, epoch = _levels(plan.base, rng, plan.finalize_new)
                yield _record(plan.name, broker_id, host, plan.observed - timedelta(days=1),
                              plan.base, supported=supported, finalized=finalized,
                              epoch=epoch)
            addr = f"{host}:9092"
            if plan.dark or slot == plan.unreachable:
                message = rng.choice(_ERRORS).format(addr=addr)
                yield _record(plan.name, broker_id, host, plan.observed, None, error=message)
                continue
            if plan.proxied:
                yield _record(plan.name, broker_id, host, plan.observed, release,
                              source=fallback_source(release))
                continue
            # An upgraded broker runs the new software but the cluster finalizes
            # new feature levels only when every broker is upgraded.
            supported, finalized, epoch = _levels(plan.base if plan.upgrading else release,
                                                  rng, plan.finalize_new)
            yield _record(plan.name, broker_id, host, plan.observed, release,
                          supported=supported, finalized=finalized, epoch=epoch,
                          extra_key=plan.custom)


# With --history: the chance that a broker does not answer on a given day.
_DAILY_OUTAGE = 0.03


def _daily_records(plan: _Plan, days: int, rng: random.Random) -> Iterator[dict[str, Any]]:
    """One record per broker and UTC day for ``days`` days (``synth_records(history=)``).

    An upgrading cluster starts its rolling upgrade on a random day and moves a
    few brokers a day; once every broker runs the new release its new feature
    levels are finalized (a cluster may finish inside the window or not).  A
    dark cluster stops answering from a random day on.
    """
    first_day = plan.observed - timedelta(days=days - 1)
    upgrade_from = rng.randrange(days) if plan.upgrading else days
    per_day = rng.randint(1, max(1, plan.count // 2))
    dark_from = rng.randrange(days) if plan.dark else days
    midnight = first_day.replace(hour=0, minute=0, second=0)
    minute = plan.observed.hour * 60 + plan.observed.minute  # 10:00 to 20:00
    for day in range(days):
        # About the same time every day (give or take an hour): never past midnight.
        moment = midnight + timedelta(days=day, minutes=minute + rng.randint(-60, 60))
        upgraded = 0 if day < upgrade_from else min(plan.count,
                                                     (day - upgrade_from + 1) * per_day)
        finished = plan.upgrading and upgraded == plan.count
        for slot in range(plan.count):
            broker_id = plan.first_id + slot
            host = plan.host(slot)
            release = plan.target if slot < upgraded else plan.base
            if day >= dark_from or rng.random() < _DAILY_OUTAGE:
                message = rng.choice(_ERRORS).format(addr=f"{host}:9092")
                yield _record(plan.name, broker_id, host, moment, None, error=message)
                continue
            if plan.proxied:
                yield _record(plan.name, broker_id, host, moment, release,
                              source=fallback_source(release))
                continue
            supported, finalized, epoch = _levels(plan.target if finished else plan.base,
                                                  rng, plan.finalize_new)
            yield _record(plan.name, broker_id, host, moment, release, supported=supported,
                          finalized=finalized, epoch=epoch, extra_key=plan.custom)


def write_fleet(path: str | Path, clusters: int, seed: int = 0, *,
                brokers_per_cluster: int | None = None, history: int | None = None
                ) -> SynthSummary:
    """Write a synthetic fleet to ``path``: JSON Lines, or Parquet when it ends in .parquet.

    ``history=N`` writes one record per broker and UTC day for N days (see
    :func:`synth_records`).  The records are streamed to the file: memory stays
    flat however many are written.
    """
    target = Path(path)
    records = 0
    api_rows = 0
    brokers = 0
    clusters_seen = 0

    def counted() -> Iterator[dict[str, Any]]:
        nonlocal records, api_rows, brokers, clusters_seen
        # A cluster's records are consecutive: only its broker ids are remembered.
        current: str | None = None
        ids: set[int] = set()
        for record in synth_records(clusters, seed, brokers_per_cluster=brokers_per_cluster,
                                    history=history):
            records += 1
            api_rows += len(record["api_versions"])
            if record["cluster"] != current:
                current = record["cluster"]
                clusters_seen += 1
                ids = set()
            if record["broker_id"] not in ids:
                ids.add(record["broker_id"])
                brokers += 1
            yield record

    try:
        if target.parent != Path(""):
            target.parent.mkdir(parents=True, exist_ok=True)
        if target.suffix == ".parquet":
            write_parquet_records(target, counted())
        else:
            with target.open("w", encoding="utf-8") as out:
                for record in counted():
                    out.write(json.dumps(record, separators=(",", ":")) + "\n")
    except OSError as exc:
        raise FleetError(f"cannot write the synthetic fleet to {target}: "
                         f"{exc.strerror or exc}; choose another --out") from None
    return SynthSummary(str(target), clusters_seen, brokers, records, api_rows)


def write_parquet_records(target: Path, records: Iterable[dict[str, Any]], *,
                          append: bool = False) -> int:
    """Write snapshot records (contract dicts) to a Parquet file; return how many.

    The columns have the types the fleet reader takes without a JSON round
    trip (its fast path).  ``append`` keeps the rows already in ``target``
    (a Parquet file cannot grow in place: it is rewritten with the old rows
    first, which suits the few records of one ``probe --record``).
    """
    require("fleet", "writing Parquet (a path ending in .parquet; JSON Lines needs no extra)",
            ("pyarrow",), FleetError)
    import pyarrow as pa
    import pyarrow.parquet as pq

    api = pa.struct([("api_key", pa.int64()), ("min_version", pa.int64()),
                     ("max_version", pa.int64())])
    levels = pa.map_(pa.string(), pa.list_(pa.int64()))
    schema = pa.schema([
        ("cluster", pa.string()), ("broker_id", pa.int64()), ("host", pa.string()),
        ("port", pa.int64()), ("observed_at", pa.string()), ("source", pa.string()),
        ("api_versions", pa.list_(api)), ("supported_features", levels),
        ("finalized_features", levels), ("finalized_features_epoch", pa.int64()),
        ("software", pa.struct([("name", pa.string()), ("version", pa.string())])),
        ("error", pa.string()),
    ])
    earlier = None
    if append and target.exists():
        try:
            # kclient's input rule (a regular file), and pyarrow reads that very file.
            with opened_input_path(target, "the Parquet file to append to", limit=None,
                                   error=refused_input) as path:
                earlier = pq.read_table(path).select(schema.names).cast(schema)
        except (pa.ArrowException, KeyError, ValueError) as exc:
            raise FleetError(f"{target}: cannot append to this Parquet file ({exc}); it does "
                             "not hold snapshot records: choose another --record") from None
    written = 0
    with pq.ParquetWriter(str(target), schema) as writer:
        if earlier is not None:
            writer.write_table(earlier)
        # Few records are held as Python objects at a time (they are large): each
        # chunk becomes Arrow columns at once; chunks make up a row group.
        batch: list[dict[str, Any]] = []
        chunks: list[Any] = []
        for record in records:
            record = dict(record)
            for key in ("supported_features", "finalized_features"):
                record[key] = list((record.get(key) or {}).items())
            batch.append(record)
            written += 1
            if len(batch) >= _PARQUET_CHUNK:
                chunks.append(pa.RecordBatch.from_pylist(batch, schema))
                batch = []
                if len(chunks) * _PARQUET_CHUNK >= _PARQUET_ROW_GROUP:
                    writer.write_table(pa.Table.from_batches(chunks, schema))
                    chunks = []
        if batch:
            chunks.append(pa.RecordBatch.from_pylist(batch, schema))
        if chunks:
            writer.write_table(pa.Table.from_batches(chunks, schema))
    return written
