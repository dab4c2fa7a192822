"""Real client libraries against emulated clusters, cell by cell, beside ``kclient compat``.

For every installed library release (each in its own venv / npm prefix), every
emulated cluster (0.11, 2.0, 3.9, 4.0, 4.1 and a 2.0+4.0 cluster in both bootstrap
orders) and every client feature (produce, consume in a group, idempotence,
transactions, zstd), the library runs the feature in a subprocess against
:class:`~kclient.emulator.EmulatedCluster` (every request header recorded by the
brokers), and the real outcome is set beside the verdict of
:func:`kclient.negotiation.clients.check_feature` -- offline (the releases, the
first playing the bootstrap broker) and live (the brokers' own answers, the
application listing them in the cluster's order).  Each cell is bounded in time.

Cells the emulator cannot run yet are reported as such, not run: transactions
need a transaction coordinator.  zstd cells run (the emulator stores batches
without decoding them), but it keeps no topic configs, so the
``compression.type=zstd`` caveat cannot be checked yet.

Usage::

    python -m benchmarks client_matrix -- [--root /tmp/kclient-client-matrix]
        [--install] [--only kafka-python] [--clusters 4.0,2.0+4.0] [--json OUT]

``--install`` creates the venvs and npm prefixes under ``--root`` first (PyPI and
npm only); without it, releases not installed there are skipped and named.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import attrs

from kclient.emulator import BrokerSpec, EmulatedCluster, ThreadedEmulator
from kclient.emulator.apis import HANDLERS
from kclient.negotiation.clients import (
    Compat,
    UnprofiledRelease,
    check_feature,
    client_profile,
)
from kclient.negotiation.model import BrokerVersions
from kclient.negotiation.releases import release_profile, resolve_release
from kclient.protocol.constants import ApiKey

#: name -> (kind, spec, python for the venv, pip/npm requirements).
INSTALLS: dict[str, tuple[str, str, str, tuple[str, ...]]] = {
    "kafka-python-1.4.7": ("kafka-python", "kafka-python==1.4.7", "3.10",
                           ("kafka-python==1.4.7", "zstandard")),
    "kafka-python-2.0.2": ("kafka-python", "kafka-python==2.0.2", "3.10",
                           ("kafka-python==2.0.2", "zstandard")),
    "kafka-python-2.2": ("kafka-python", "", "3.11", ("kafka-python>=2.2,<2.3", "zstandard")),
    "kafka-python-2.3": ("kafka-python", "", "3.11", ("kafka-python>=2.3,<2.4", "zstandard")),
    "kafka-python-3.0": ("kafka-python", "", "3.11", ("kafka-python>=3.0,<3.1", "zstandard")),
    # aiokafka 0.8 imports kafka-python's protocol (kafka.conn...), gone in kafka-python 2.1+.
    "aiokafka-0.8.1": ("aiokafka", "aiokafka==0.8.1", "3.10",
                       ("aiokafka==0.8.1", "kafka-python==2.0.2", "zstandard")),
    "aiokafka-0.11.0": ("aiokafka", "aiokafka==0.11.0", "3.11",
                        ("aiokafka==0.11.0", "zstandard", "cramjam")),
    "aiokafka-0.12.0": ("aiokafka", "aiokafka==0.12.0", "3.11",
                        ("aiokafka==0.12.0", "zstandard", "cramjam")),
    "aiokafka-0.13.0": ("aiokafka", "aiokafka==0.13.0", "3.11",
                        ("aiokafka==0.13.0", "zstandard", "cramjam")),
    "confluent-kafka-1.9.2": ("confluent-kafka", "", "3.10", ("confluent-kafka==1.9.2",)),
    "confluent-kafka-2.3.0": ("confluent-kafka", "", "3.11", ("confluent-kafka==2.3.0",)),
    "confluent-kafka-2.16.1": ("confluent-kafka", "", "3.11", ("confluent-kafka==2.16.1",)),
    "kafkajs-1.16.0": ("kafkajs", "kafkajs==1.16.0", "", ("kafkajs@1.16.0",)),
    "kafkajs-2.2.4": ("kafkajs", "kafkajs==2.2.4", "", ("kafkajs@2.2.4",)),
}
#: The emulated clusters: brokers in the order the application lists them.
CLUSTERS = {"0.11": ("0.11",), "2.0": ("2.0",), "3.9": ("3.9",), "4.0": ("4.0",),
            "4.1": ("4.1",), "2.0+4.0": ("2.0", "4.0"), "4.0+2.0": ("4.0", "2.0")}
FEATURES = ("produce", "consume_group", "idempotence", "transactions", "zstd")
#: Seconds one cell may take (the client's own timeouts are shorter).
CELL_TIMEOUT = 30.0
#: Record-batch attributes: the codec is the low 3 bits; 4 is zstd (KIP-110).
ZSTD = 4

PYTHON_CLIENT = r'''
import sys, time, json, asyncio, logging
logging.disable(logging.CRITICAL)
kind, bootstrap, feature, topic = sys.argv[1:5]
COUNT = 5
# Compressible values: a codec sends a batch uncompressed when compressing does not shrink it.
values = [(f"m{i}-" + "kclient " * 256).encode() for i in range(COUNT)]
def kafka_python():
    import kafka
    extra = {}
    if feature == "idempotence": extra["enable_idempotence"] = True
    if feature == "transactions": extra["transactional_id"] = "tx-" + topic
    if feature == "zstd": extra["compression_type"] = "zstd"
    p = kafka.KafkaProducer(bootstrap_servers=bootstrap.split(","), request_timeout_ms=8000,
                            max_block_ms=10000, **extra)
    if feature == "transactions":
        p.init_transactions(); p.begin_transaction()
    for v in values: p.send(topic, v).get(timeout=15)
    if feature == "transactions": p.commit_transaction()
    p.close(5)
    if feature in ("consume_group", "zstd"):
        c = kafka.KafkaConsumer(topic, bootstrap_servers=bootstrap.split(","),
                                group_id="g-" + topic, auto_offset_reset="earliest",
                                enable_auto_commit=False,
                                request_timeout_ms=10000, session_timeout_ms=6000,
                                heartbeat_interval_ms=1000, consumer_timeout_ms=15000)
        got = []
        deadline = time.time() + 20
        while len(got) < COUNT and time.time() < deadline:
            for recs in c.poll(500).values(): got += [r.value for r in recs]
        c.commit(); c.close()
        assert sorted(got) == sorted(values), got
async def aiokafka_run():
    import aiokafka
    extra = {}
    if feature == "idempotence": extra["enable_idempotence"] = True
    if feature == "transactions": extra["transactional_id"] = "tx-" + topic
    if feature == "zstd": extra["compression_type"] = "zstd"
    p = aiokafka.AIOKafkaProducer(bootstrap_servers=bootstrap, request_timeout_ms=8000, **extra)
    await asyncio.wait_for(p.start(), 15)
    try:
        if feature == "transactions":
            async with p.transaction():
                for v in values: await asyncio.wait_for(p.send_and_wait(topic, v), 15)
        else:
            for v in values: await asyncio.wait_for(p.send_and_wait(topic, v), 15)
    finally:
        await p.stop()
    if feature in ("consume_group", "zstd"):
        c = aiokafka.AIOKafkaConsumer(topic, bootstrap_servers=bootstrap, group_id="g-" + topic,
                                      auto_offset_reset="earliest", enable_auto_commit=False,
                                      request_timeout_ms=10000)
        await asyncio.wait_for(c.start(), 15)
        got = []
        try:
            deadline = time.time() + 20
            while len(got) < COUNT and time.time() < deadline:
                batch = await c.getmany(timeout_ms=500)
                for recs in batch.values(): got += [r.value for r in recs]
            await c.commit()
        finally:
            await c.stop()
        assert sorted(got) == sorted(values), got
def confluent():
    import confluent_kafka
    conf = {"bootstrap.servers": bootstrap, "socket.timeout.ms": 8000, "message.timeout.ms": 15000,
            "log_level": 0}
    if feature == "idempotence": conf["enable.idempotence"] = True
    if feature == "transactions": conf["transactional.id"] = "tx-" + topic
    if feature == "zstd": conf["compression.type"] = "zstd"
    p = confluent_kafka.Producer(conf)
    errors = []
    if feature == "transactions":
        p.init_transactions(15); p.begin_transaction()
    for v in values:
        p.produce(topic, v, on_delivery=lambda e, m: errors.append(e) if e else None)
    if feature == "transactions": p.commit_transaction(15)
    left = p.flush(15)
    assert left == 0 and not errors, (left, [str(e) for e in errors[:2]])
    if feature in ("consume_group", "zstd"):
        c = confluent_kafka.Consumer({"bootstrap.servers": bootstrap, "group.id": "g-" + topic,
                                      "auto.offset.reset": "earliest", "enable.auto.commit": False,
                                      "session.timeout.ms": 6000, "log_level": 0})
        c.subscribe([topic]); got = []
        deadline = time.time() + 20
        while len(got) < COUNT and time.time() < deadline:
            m = c.poll(0.5)
            if m is not None and not m.error(): got.append(m.value())
        c.commit(asynchronous=False); c.close()
        assert sorted(got) == sorted(values), got
{"kafka-python": kafka_python, "aiokafka": lambda: asyncio.run(aiokafka_run()),
 "confluent-kafka": confluent}[kind]()
print("OK")
'''

NODE_CLIENT = r'''
const { Kafka, logLevel, CompressionTypes } = require('kafkajs');
const [bootstrap, feature, topic] = process.argv.slice(2);
const COUNT = 5, values = Array.from({length: COUNT}, (_, i) => `m${i}-` + 'kclient '.repeat(256));
(async () => {
  const kafka = new Kafka({ clientId: 'matrix', brokers: bootstrap.split(','),
    logLevel: logLevel.NOTHING, connectionTimeout: 3000, requestTimeout: 10000,
    retry: { retries: 3, maxRetryTime: 2000 } });
  const opts = feature === 'idempotence' ? { idempotent: true, maxInFlightRequests: 1 }
    : feature === 'transactions'
      ? { transactionalId: 'tx-' + topic, idempotent: true, maxInFlightRequests: 1 } : {};
  const producer = kafka.producer(opts);
  await producer.connect();
  const messages = values.map((value) => ({ value }));
  if (feature === 'transactions') {
    const tx = await producer.transaction();
    await tx.send({ topic, messages }); await tx.commit();
  } else {
    await producer.send({ topic, messages,
      compression: feature === 'zstd' ? CompressionTypes.ZSTD : CompressionTypes.None });
  }
  await producer.disconnect();
  if (feature === 'consume_group' || feature === 'zstd') {
    const consumer = kafka.consumer({ groupId: 'g-' + topic, sessionTimeout: 6000,
                                      heartbeatInterval: 500, maxWaitTimeInMs: 200 });
    await consumer.connect(); await consumer.subscribe({ topic, fromBeginning: true });
    const got = [];
    await new Promise((resolve, reject) => {
      const timer = setTimeout(() => reject(new Error('consumed ' + got.length)), 20000);
      consumer.run({ eachMessage: async ({ message }) => { got.push(message.value.toString());
        if (got.length >= COUNT) { clearTimeout(timer); resolve(); } } });
    });
    await consumer.disconnect();
  }
  console.log('OK');
})().catch((e) => { console.error(String(e && e.stack || e)); process.exit(1); });
'''


@attrs.frozen
class CellResult:
    """One cell: the real outcome, what was sent, and the verdicts offline and live."""

    install: str
    cluster: str
    feature: str
    real: str  # works | breaks | not-run | lenient (the emulator takes what Kafka refuses)
    offline: str
    live: str
    sent: dict[str, list[int]]
    detail: str

    @property
    def agrees(self) -> bool:
        """The real outcome is what both verdicts say (an unknown verdict promises
        nothing, so it never disagrees)."""
        if self.real in ("not-run", "lenient"):
            return True
        return all(v in (self.real, "unknown") or (v.startswith("depends") and self.real in (
            "works", "breaks")) for v in (self.offline, self.live))


def _python(version: str) -> str:
    found = shutil.which(f"python{version}") or str(
        Path(f"/root/.pyenv/versions/{version}.13/bin/python{version}"))
    return found


def install(root: Path, names: Sequence[str]) -> None:
    """Create the venvs and npm prefixes (PyPI and npm only), bounded in time."""
    for name in names:
        kind, _, version, requirements = INSTALLS[name]
        target = root / name
        if (target / "bin" / "python").exists() or (target / "node_modules").exists():
            continue
        if kind == "kafkajs":
            target.mkdir(parents=True, exist_ok=True)
            subprocess.run(["npm", "install", "--no-audit", "--no-fund", "--silent", "--prefix",
                            str(target), *requirements], timeout=300, check=False)
            continue
        python = shutil.which(f"python{version}") or sys.executable
        subprocess.run([python, "-m", "venv", str(target)], timeout=120, check=False)
        subprocess.run([str(target / "bin" / "pip"), "install", "-q", *requirements],
                       timeout=600, check=False)


def _installed_spec(root: Path, name: str) -> str | None:
    kind, spec, _, _ = INSTALLS[name]
    target = root / name
    if kind == "kafkajs":
        return spec if (target / "node_modules" / "kafkajs").exists() else None
    if not (target / "bin" / "python").exists():
        return None
    if kind == "confluent-kafka":
        code = "import confluent_kafka; print(confluent_kafka.libversion()[0])"
        library = "librdkafka"
    else:
        code = f"import importlib.metadata as m; print(m.version('{kind}'))"
        library = kind
    done = subprocess.run([str(target / "bin" / "python"), "-c", code], capture_output=True,
                          text=True, timeout=60, check=False)
    return f"{library}=={done.stdout.strip()}" if done.returncode == 0 else None


def _run_cell(root: Path, name: str, bootstrap: str, feature: str, topic: str) -> tuple[str, str]:
    kind = INSTALLS[name][0]
    target = root / name
    if kind == "kafkajs":
        script = root / "matrix-client.js"
        script.write_text(NODE_CLIENT)
        argv = ["node", str(script), bootstrap, feature, topic]
        env = {**os.environ, "NODE_PATH": str(target / "node_modules")}
    else:
        argv = [str(target / "bin" / "python"), "-c", PYTHON_CLIENT, kind, bootstrap, feature,
                topic]
        env = dict(os.environ)
    try:
        done = subprocess.run(argv, capture_output=True, text=True, timeout=CELL_TIMEOUT,
                              env=env, check=False)
    except subprocess.TimeoutExpired:
        return "breaks", f"no result within {CELL_TIMEOUT:.0f} s"
    if done.returncode == 0 and "OK" in done.stdout:
        return "works", ""
    return "breaks", (done.stderr.strip().splitlines() or [f"exit {done.returncode}"])[-1][:200]


def _codecs(body: Any) -> set[tuple[int, int]]:
    """(magic, codec) of every record batch in a decoded Produce body."""
    found = set()
    for topic in getattr(body, "topic_data", None) or ():
        for part in getattr(topic, "partition_data", None) or ():
            data = getattr(part, "records", None)
            if isinstance(data, (bytes, bytearray)) and len(data) > 22:
                magic = data[16]  # v2: attributes are int16 at 21-22; v0/v1: int8 at 17
                attributes = data[22] if magic >= 2 else data[17]
                found.add((magic, attributes & 7))
    return found


def _zstd_outcome(emulated: EmulatedCluster, captured: dict[int, int],
                  detail: str) -> tuple[str, str]:
    """A zstd round trip that worked: did zstd batches go out, and in a Produce a Kafka
    broker takes?  (KIP-110: zstd batches need Produce v7+; Kafka's
    ProduceRequest.validateRecords refuses them in older versions.)"""
    zstd_versions: set[int] = set()
    codecs: set[int] = set()
    for b in emulated.brokers:
        for key, version, body in (b.captured or [])[captured[b.node_id]:]:
            if key == ApiKey.PRODUCE:
                for _, codec in _codecs(body):
                    codecs.add(codec)
                    if codec == ZSTD:
                        zstd_versions.add(version)
    if not codecs or ZSTD not in codecs:
        return "breaks", f"round trip worked but no batch was zstd (codecs {sorted(codecs)}): " \
                         "a silent fallback"
    if min(zstd_versions) < 7:
        return "lenient", (f"zstd batches in Produce v{min(zstd_versions)}: Kafka refuses them "
                           "below v7, the emulator does not yet (issue #44 item 1)")
    return "works", detail


def _not_runnable(feature: str) -> str | None:
    if feature == "transactions" and ApiKey.ADD_PARTITIONS_TO_TXN not in HANDLERS:
        return "the emulator has no transaction coordinator yet (issue #44 item 2)"
    return None


#: What each cell's script does besides the feature itself: a consumer cell first
#: produces the records it reads (with the same library), so produce is judged too.
ALSO = {"consume_group": ("produce",)}
_ORDER = ("breaks", "depends", "unknown", "works")


def _verdict(spec: str, brokers: list[BrokerVersions], feature: str,
             bootstrap: tuple[int, ...] | None) -> str:
    """The worst verdict over the features the cell's script uses."""
    try:
        profile = client_profile(spec)
    except UnprofiledRelease:
        return "unknown"
    found = []
    for name in (feature, *ALSO.get(feature, ())):
        result = check_feature(profile, brokers, name, bootstrap=bootstrap)
        if result.state is Compat.BREAKS and (result.reason or "").startswith("depends"):
            found.append("depends")
        else:
            found.append(result.state.value)
    return min(found, key=_ORDER.index)


def run(root: Path, names: Sequence[str], clusters: Sequence[str]) -> list[CellResult]:
    """Every cell of ``names`` x ``clusters`` x :data:`FEATURES`."""
    results = []
    specs = {name: _installed_spec(root, name) for name in names}
    for missing in [n for n, s in specs.items() if s is None]:
        print(f"skipped {missing}: not installed under {root} (use --install)", flush=True)
    cell = 0
    for cluster_name in clusters:
        releases = CLUSTERS[cluster_name]
        offline = [BrokerVersions(i, f"kafka-{r}", 9092, release_profile(resolve_release(r)))
                   for i, r in enumerate(releases, 1)]
        # A partition on every broker: a topic whose only leader is one broker would never
        # send the others a Produce or Fetch, and the cell would not test the cluster.
        emulated = EmulatedCluster([BrokerSpec(r, capture=True) for r in releases],
                                   cluster_id=f"matrix-{cluster_name}",
                                   default_partitions=len(releases))
        with ThreadedEmulator(emulated):
            live = [BrokerVersions(b.node_id, b.host, b.port, {
                k: (r.min, r.max) for k, r in b.profile.items()}) for b in emulated.brokers]
            listed = tuple(b.node_id for b in emulated.brokers)
            bootstrap = ",".join(f"{b.host}:{b.port}" for b in emulated.brokers)
            for name, spec in specs.items():
                if spec is None:
                    continue
                for feature in FEATURES:
                    cell += 1
                    topic = f"t{cell}"
                    before = {b.node_id: len(b.received) for b in emulated.brokers}
                    captured = {b.node_id: len(b.captured or ()) for b in emulated.brokers}
                    why = _not_runnable(feature)
                    if why is not None:
                        real, detail = "not-run", why
                    else:
                        started = time.monotonic()
                        real, detail = _run_cell(root, name, bootstrap, feature, topic)
                        detail = detail or f"{time.monotonic() - started:.1f} s"
                    sent: dict[str, set[int]] = {}
                    for b in emulated.brokers:
                        for key, version in list(b.received)[before[b.node_id]:]:
                            name_ = ApiKey(key).name if key in ApiKey._value2member_map_ \
                                else str(key)
                            label = f"{name_}@{b.node_id}"
                            sent.setdefault(label, set()).add(version)
                    if feature == "zstd" and real == "works":
                        real, detail = _zstd_outcome(emulated, captured, detail)
                    result = CellResult(
                        name, cluster_name, feature, real,
                        _verdict(spec, offline, feature, None),
                        _verdict(spec, live, feature, listed),
                        {k: sorted(v) for k, v in sorted(sent.items())}, detail)
                    results.append(result)
                    mark = "  " if result.agrees else "!!"
                    print(f"{mark} {name:24} {cluster_name:8} {feature:14} real={real:8} "
                          f"offline={result.offline:8} live={result.live:8} {detail}",
                          flush=True)
    return results


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(prog="python -m benchmarks client_matrix")
    parser.add_argument("--root", type=Path, default=Path("/tmp/kclient-client-matrix"))
    parser.add_argument("--install", action="store_true")
    parser.add_argument("--only", action="append", default=[],
                        help="installs whose name starts with this (repeatable)")
    parser.add_argument("--clusters", default=",".join(CLUSTERS))
    parser.add_argument("--json", type=Path)
    args = parser.parse_args(argv)
    names = [n for n in INSTALLS if not args.only or any(n.startswith(o) for o in args.only)]
    if args.install:
        install(args.root, names)
    started = time.monotonic()
    results = run(args.root, names, [c for c in args.clusters.split(",") if c])
    ran = [r for r in results if r.real not in ("not-run", "lenient")]
    wrong = [r for r in ran if not r.agrees]
    print(f"{len(results)} cells, {len(ran)} run, {len(results) - len(ran)} not runnable yet, "
          f"{sum(r.real == 'lenient' for r in results)} where the emulator takes what Kafka "
          f"refuses, {len(wrong)} disagreements, {time.monotonic() - started:.0f} s")
    if args.json is not None:
        args.json.write_text(json.dumps([attrs.asdict(r) for r in results], indent=1))
    return 1 if wrong else 0
