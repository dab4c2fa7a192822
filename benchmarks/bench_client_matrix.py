"""Real client libraries against emulated clusters, cell by cell, beside ``kclient compat``.

For one installed release of every profiled line that pip or npm installs (each in
its own venv / npm prefix, :data:`RELEASES`: kafka-python, aiokafka, confluent-kafka,
kafkajs, @platformatic/kafka), every emulated cluster (0.11, 2.0, 3.9,
4.0, 4.1 and a 2.0+4.0 cluster in both bootstrap orders) and every client feature
(produce, consume in a group, idempotence, transactions, zstd, and zstd on a topic
configured ``compression.type=zstd``), the library runs the feature in a subprocess
against a fresh :class:`~kclient.emulator.EmulatedCluster` (every request header
recorded by the brokers), and the real outcome is set beside the verdict of
:func:`kclient.negotiation.clients.check_feature` -- offline (the releases, the first
playing the bootstrap broker) and live (the brokers' own answers, the application
listing them in the cluster's order).  Each cell is bounded in time.

Cells that cannot exist are reported as such, not run (a zstd topic before Kafka 2.1;
a zstd codec package missing from the library's environment).

Usage::

    python -m benchmarks client_matrix -- [--root /tmp/kclient-client-matrix]
        [--install] [--only kafka-python] [--clusters 4.0,2.0+4.0] [--features zstd]
        [--jobs 2] [--json OUT.jsonl]
    python -m benchmarks client_matrix -- --here      # this environment's libraries
    python -m benchmarks client_matrix -- --rejudge OUT.jsonl [MORE.jsonl] --table

``--install`` creates the venvs and npm prefixes under ``--root`` first (PyPI and
npm only, wheels only); without it, releases not installed there are skipped and
named.  ``--rejudge`` keeps the stored real outcomes and asks compat again (after a
profile or a verdict rule changed).  Not part of ``make test`` (it installs dozens
of releases); ``tests/benchmarks/test_bench_client_matrix.py`` runs a few cells with
the test environment's own libraries.
"""

from __future__ import annotations

import argparse
import concurrent.futures
import json
import os
import shutil
import subprocess
import sys
import threading
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import attrs

from kclient.emulator import BrokerSpec, EmulatedBroker, EmulatedCluster, ThreadedEmulator
from kclient.negotiation.clients import (
    Compat,
    UnprofiledRelease,
    check_feature,
    client_profile,
    depends,
    release_key,
)
from kclient.negotiation.model import BrokerVersions
from kclient.negotiation.releases import release_profile, resolve_release
from kclient.protocol.constants import ApiKey

#: One release per profiled line that pip or npm installs: (kind, release, Python).
#: confluent-kafka X bundles librdkafka X; the wheels of 1.x exist for old Pythons only.
RELEASES: tuple[tuple[str, str, str], ...] = (
    *(("kafka-python", v, py) for v, py in (
        ("1.4.7", "3.10"), ("2.0.2", "3.10"), ("2.1.6", "3.11"), ("2.2.21", "3.11"),
        ("2.3.3", "3.11"), ("3.0.12", "3.11"))),
    *(("aiokafka", v, py) for v, py in (
        ("0.8.1", "3.10"), ("0.9.0", "3.10"), ("0.10.0", "3.11"), ("0.11.0", "3.11"),
        ("0.12.0", "3.11"), ("0.13.0", "3.11"), ("0.14.0", "3.11"))),
    *(("confluent-kafka", v, py) for v, py in (
        ("1.0.1", "3.7"), ("1.1.0", "3.7"), ("1.2.0", "3.7"), ("1.3.0", "3.7"),
        ("1.4.2", "3.8"), ("1.5.0", "3.8"), ("1.6.1", "3.9"), ("1.7.0", "3.9"),
        ("1.8.2", "3.9"), ("1.9.2", "3.10"), ("2.0.2", "3.10"), ("2.1.1", "3.11"),
        ("2.2.0", "3.11"), ("2.3.0", "3.11"), ("2.4.0", "3.11"), ("2.5.3", "3.11"),
        ("2.6.1", "3.11"), ("2.7.0", "3.11"), ("2.8.0", "3.11"), ("2.10.1", "3.11"),
        ("2.11.1", "3.11"), ("2.12.2", "3.11"), ("2.13.2", "3.11"), ("2.14.2", "3.11"),
        ("2.15.1", "3.11"), ("2.16.1", "3.11"))),
    # kafkajs 1.1 and 1.2 were never published to npm.
    *(("kafkajs", v, "") for v in (
        "1.0.1", "1.3.1", "1.4.6", "1.5.1", "1.6.0", "1.7.0", "1.8.1", "1.9.3", "1.10.0",
        "1.11.0", "1.12.0", "1.13.0", "1.14.0", "1.15.0", "1.16.0", "2.2.4")),
    # npm holds no 2.9.x (the 2.9 line is read from its tag); 2.12 is read from its package.
    ("platformatic-kafka", "2.12.1", ""),
)
#: The npm packages (kind -> package name); the other kinds are pip's.
NPM = {"kafkajs": "kafkajs", "platformatic-kafka": "@platformatic/kafka"}


def _requirements(kind: str, release: str) -> tuple[str, ...]:
    """What pip / npm installs for ``kind`` ``release`` (with its zstd codec)."""
    if kind in NPM:
        return (f"{NPM[kind]}@{release}",)
    if kind == "confluent-kafka":
        return (f"confluent-kafka=={release}",)
    extra: tuple[str, ...] = ("zstandard",)
    if kind == "aiokafka":
        # aiokafka before 0.10 imports kafka-python's protocol, gone in kafka-python 2.1+;
        # its codecs are kafka-python's (zstandard) up to 0.8, cramjam from 0.9.
        old = release_key(release) < release_key("0.10")
        extra = ("zstandard", "cramjam", *(("kafka-python==2.0.2",) if old else ()))
    return (f"{kind}=={release}", *extra)


#: name -> (kind, python for the venv, pip/npm requirements).
INSTALLS: dict[str, tuple[str, str, tuple[str, ...]]] = {
    f"{kind}-{release}": (kind, python, _requirements(kind, release))
    for kind, release, python in RELEASES}
#: The emulated clusters: brokers in the order the application lists them.
CLUSTERS = {"0.11": ("0.11",), "2.0": ("2.0",), "3.9": ("3.9",), "4.0": ("4.0",),
            "4.1": ("4.1",), "2.0+4.0": ("2.0", "4.0"), "4.0+2.0": ("4.0", "2.0")}
FEATURES = ("produce", "consume_group", "idempotence", "transactions", "zstd", "zstd_topic")
#: Seconds one cell may take (the client's own timeouts are shorter).
CELL_TIMEOUT = 30.0
#: Record-batch attributes: the codec is the low 3 bits; 4 is zstd (KIP-110).
ZSTD = 4

PYTHON_CLIENT = r'''
import sys, time, json, asyncio, logging
logging.disable(logging.CRITICAL)
kind, bootstrap, feature, topic, parts = sys.argv[1:5] + [int(sys.argv[5])]
zstd = feature.startswith("zstd")  # zstd_topic: the same, on a compression.type=zstd topic
consume = feature == "consume_group" or zstd
def codec_missing():
    """The library knows zstd but its codec package is not installed here."""
    import importlib
    for name in {"aiokafka": ("aiokafka.codec", "kafka.codec"),
                 "kafka-python": ("kafka.codec",)}.get(kind, ()):
        try:
            has = getattr(importlib.import_module(name), "has_zstd", None)
        except ImportError:
            continue
        if has is not None:
            return not has()
    return False
if zstd and codec_missing():
    print("NOCODEC"); sys.exit(3)
COUNT = 5
# Compressible values: a codec sends a batch uncompressed when compressing does not shrink it.
values = [(f"m{i}-" + "kclient " * 256).encode() for i in range(COUNT)]
def kafka_python():
    import kafka
    extra = {}
    if feature == "idempotence": extra["enable_idempotence"] = True
    if feature == "transactions": extra["transactional_id"] = "tx-" + topic
    if zstd: extra["compression_type"] = "zstd"
    p = kafka.KafkaProducer(bootstrap_servers=bootstrap.split(","), request_timeout_ms=8000,
                            max_block_ms=10000, **extra)
    if feature == "transactions":
        p.init_transactions(); p.begin_transaction()
    for i, v in enumerate(values): p.send(topic, v, partition=i % parts).get(timeout=15)
    if feature == "transactions":
        oam = kafka.OffsetAndMetadata
        done = oam(1, "", -1) if len(oam._fields) == 3 else oam(1, "")
        p.send_offsets_to_transaction({kafka.TopicPartition(topic, 0): done}, "g-" + topic)
        p.commit_transaction()
    p.close(5)
    if consume:
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
    if zstd: extra["compression_type"] = "zstd"
    p = aiokafka.AIOKafkaProducer(bootstrap_servers=bootstrap, request_timeout_ms=8000, **extra)
    await asyncio.wait_for(p.start(), 15)
    try:
        if feature == "transactions":
            async with p.transaction():
                for i, v in enumerate(values):
                    await asyncio.wait_for(p.send_and_wait(topic, v, partition=i % parts), 15)
                await p.send_offsets_to_transaction(
                    {aiokafka.TopicPartition(topic, 0): 1}, "g-" + topic)
        else:
            for i, v in enumerate(values):
                await asyncio.wait_for(p.send_and_wait(topic, v, partition=i % parts), 15)
    finally:
        await p.stop()
    if consume:
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
    if zstd: conf["compression.type"] = "zstd"
    p = confluent_kafka.Producer(conf)
    errors = []
    if feature == "transactions":
        p.init_transactions(15); p.begin_transaction()
    for i, v in enumerate(values):
        p.produce(topic, v, partition=i % parts,
                  on_delivery=lambda e, m: errors.append(e) if e else None)
    if feature == "transactions":
        group = confluent_kafka.Consumer({"bootstrap.servers": bootstrap,
                                         "group.id": "g-" + topic, "log_level": 0})
        p.send_offsets_to_transaction([confluent_kafka.TopicPartition(topic, 0, 1)],
                                      group.consumer_group_metadata(), 15)
        p.commit_transaction(15)
        group.close()
    left = p.flush(15)
    assert left == 0 and not errors, (left, [str(e) for e in errors[:2]])
    if consume:
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
const [bootstrap, feature, topic, parts] = process.argv.slice(2);
const zstd = feature.startsWith('zstd');  // zstd_topic: on a compression.type=zstd topic
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
  // Keyed records: kafkajs 1.4 cannot encode a record without a key (record/v0 sizes it).
  const messages = values.map((value, i) => ({ key: `k${i}`, value,
                                               partition: i % Number(parts) }));
  if (feature === 'transactions') {
    const tx = await producer.transaction();
    await tx.send({ topic, messages });
    await tx.sendOffsets({ consumerGroupId: 'g-' + topic,
                           topics: [{ topic, partitions: [{ partition: 0, offset: '1' }] }] });
    await tx.commit();
  } else {
    await producer.send({ topic, messages,
      compression: zstd ? CompressionTypes.ZSTD : CompressionTypes.None });
  }
  await producer.disconnect();
  if (feature === 'consume_group' || zstd) {
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

PLATFORMATIC_CLIENT = r'''
// @platformatic/kafka is an ES module: imported by path from the install's node_modules.
const path = require('path'), { pathToFileURL } = require('url');
// It asks for node >= 22.22; of what these cells use, node 20 lacks Promise.withResolvers.
if (!Promise.withResolvers) Promise.withResolvers = () => {
  let resolve, reject;
  const promise = new Promise((yes, no) => { resolve = yes; reject = no; });
  return { promise, resolve, reject };
};
const [bootstrap, feature, topic, parts] = process.argv.slice(2);
const zstd = feature.startsWith('zstd');  // zstd_topic: on a compression.type=zstd topic
// Its zstd codec is node's own zlib zstd (node 22.15 and later), not a package.
if (zstd && !require('zlib').zstdCompressSync) { console.log('NOCODEC'); process.exit(3); }
const COUNT = 5, values = Array.from({length: COUNT}, (_, i) => `m${i}-` + 'kclient '.repeat(256));
(async () => {
  const index = path.join(process.env.NODE_PATH, '@platformatic', 'kafka', 'dist', 'index.js');
  const k = await import(pathToFileURL(index).href);
  const base = { clientId: 'matrix', bootstrapBrokers: bootstrap.split(','), retries: 3,
                 retryDelay: 300, timeout: 8000, connectTimeout: 3000,
                 autocreateTopics: true };  // as the other libraries' Metadata requests do
  const consumerOf = () => new k.Consumer({ ...base, groupId: 'g-' + topic,
    deserializers: k.stringDeserializers, sessionTimeout: 6000, heartbeatInterval: 500,
    rebalanceTimeout: 6000, maxWaitTime: 200 });
  const read = async (consumer, count) => {  // the committed offset, else the earliest
    const stream = await consumer.consume({ topics: [topic], mode: 'committed',
                                            fallbackMode: 'earliest', autocommit: false });
    const got = [];
    const timer = setTimeout(() => stream.destroy(new Error('consumed ' + got.length)), 20000);
    for await (const message of stream) {
      got.push(message);
      if (got.length >= count) break;
    }
    clearTimeout(timer);
    return got;
  };
  const options = { ...base, serializers: k.stringSerializers };
  if (feature === 'idempotence') options.idempotent = true;
  if (feature === 'transactions') Object.assign(options, { idempotent: true,
                                                          transactionalId: 'tx-' + topic });
  if (zstd) options.compression = 'zstd';
  const producer = new k.Producer(options);
  const messages = values.map((value, i) => ({ topic, value, partition: i % Number(parts) }));
  if (feature === 'transactions') {
    // Read-process-write: the consumed record's offset is committed with the transaction.
    const seed = new k.Producer({ ...base, serializers: k.stringSerializers });
    await seed.send({ messages: [{ topic, value: 'seed', partition: 0 }] });
    await seed.close();
    const consumer = consumerOf();
    const [first] = await read(consumer, 1);
    const tx = await producer.beginTransaction();
    await tx.addConsumer(consumer);
    await tx.send({ messages });
    await tx.addOffset(first);
    await tx.commit();
    await consumer.close(true);
  } else {
    await producer.send({ messages });
  }
  await producer.close();
  if (feature === 'consume_group' || zstd) {
    const consumer = consumerOf();
    const got = await read(consumer, COUNT);
    if (got.map((m) => m.value).sort().join() !== [...values].sort().join())
      throw new Error('consumed other records');
    await got[got.length - 1].commit();
    await consumer.close(true);
  }
  console.log('OK');
})().catch((e) => {
  console.error(String(e && e.stack || e));
  // The cause last (the harness keeps the last line): an AggregateError's inner errors.
  const inner = (e && e.errors) || [];
  if (inner.length) console.error(inner.map((x) => String(x && x.message || x)).join('; '));
  process.exit(1);
});
'''
#: The script of each npm kind.
NODE_CLIENTS = {"kafkajs": NODE_CLIENT, "platformatic-kafka": PLATFORMATIC_CLIENT}


@attrs.frozen
class CellResult:
    """One cell: the real outcome, what was sent, and the verdicts offline and live."""

    install: str
    spec: str
    cluster: str
    feature: str
    real: str  # works | breaks | not-run | lenient (the emulator takes what Kafka refuses)
    offline: str
    live: str
    sent: dict[str, list[int]]
    detail: str

    @property
    def agrees(self) -> bool:
        """The real outcome is what both verdicts say (a "depends" verdict allows either
        outcome: the library picks a broker at random).  A lenient cell never agrees: the
        emulator took what Kafka refuses."""
        if self.real == "not-run":
            return True
        return all(v == self.real or (v == "depends" and self.real in ("works", "breaks"))
                   for v in (self.offline, self.live))

    def line(self) -> str:
        """The cell as one printed line (``!!`` marks a disagreement)."""
        mark = "  " if self.agrees else "!!"
        return (f"{mark} {self.install:24} {self.cluster:8} {self.feature:14} "
                f"real={self.real:8} offline={self.offline:8} live={self.live:8} {self.detail}")


def _python(version: str) -> str:
    """The interpreter of Python ``version`` (``3.10``): pyenv's (its shims on the path
    answer only for the selected versions), else the path's."""
    pyenv = sorted(Path.home().glob(f".pyenv/versions/{version}.*/bin/python{version}"))
    return str(pyenv[-1]) if pyenv else shutil.which(f"python{version}") or sys.executable


def install(root: Path, names: Sequence[str]) -> None:
    """Create the venvs and npm prefixes (PyPI and npm only, wheels only), bounded in time."""
    for name in names:
        kind, version, requirements = INSTALLS[name]
        target = root / name
        if (target / "bin" / "python").exists() or (target / "node_modules").exists():
            continue
        print(f"installing {name}", flush=True)
        if kind in NPM:
            target.mkdir(parents=True, exist_ok=True)
            subprocess.run(["npm", "install", "--no-audit", "--no-fund", "--silent", "--prefix",
                            str(target), *requirements], timeout=300, check=False)
            continue
        made = subprocess.run([_python(version), "-m", "venv", str(target)], timeout=120,
                              check=False)
        done = made.returncode == 0 and subprocess.run(
            [str(target / "bin" / "pip"), "install", "-q", "--disable-pip-version-check",
             "--only-binary", ":all:", *requirements], timeout=600, check=False).returncode == 0
        if not done:  # leave no half venv behind: it would look installed
            shutil.rmtree(target, ignore_errors=True)


def _installed_spec(python: str, kind: str) -> str | None:
    """``librdkafka==2.16.0`` / ``aiokafka==0.14.0``: what ``python`` has of ``kind``."""
    if kind == "confluent-kafka":
        code = "import confluent_kafka; print(confluent_kafka.libversion()[0])"
        library = "librdkafka"
    else:
        module = {"kafka-python": "kafka", "aiokafka": "aiokafka"}[kind]
        code = (f"import importlib.metadata as m, {module}; print(m.version('{kind}'))")
        library = kind
    done = subprocess.run([python, "-c", code], capture_output=True, text=True, timeout=60,
                          check=False)
    return f"{library}=={done.stdout.strip()}" if done.returncode == 0 else None


@attrs.frozen
class Runner:
    """How to run one installed release: its kind, the spec compat judges, and where."""

    name: str
    kind: str
    spec: str
    python: str = ""  # the interpreter (Python libraries)
    node_path: str = ""  # the node_modules folder (npm packages)


def runners(root: Path, names: Sequence[str]) -> list[Runner]:
    """The installed releases among ``names`` (the others are named as skipped)."""
    found = []
    for name in names:
        kind = INSTALLS[name][0]
        target = root / name
        if kind in NPM:
            modules = target / "node_modules"
            package = modules / NPM[kind] / "package.json"
            if package.exists():
                version = json.loads(package.read_text())["version"]
                found.append(Runner(name, kind, f"{kind}=={version}", node_path=str(modules)))
                continue
        elif (target / "bin" / "python").exists():
            spec = _installed_spec(str(target / "bin" / "python"), kind)
            if spec is not None:
                found.append(Runner(name, kind, spec, python=str(target / "bin" / "python")))
                continue
        print(f"skipped {name}: not installed under {root} (use --install)", flush=True)
    return found


def here() -> list[Runner]:
    """The Python libraries of this interpreter's environment (the test venv's)."""
    found = []
    for kind in ("kafka-python", "aiokafka", "confluent-kafka"):
        spec = _installed_spec(sys.executable, kind)
        if spec is not None:
            found.append(Runner(f"{kind} (here)", kind, spec, python=sys.executable))
    return found


def _run_cell(runner: Runner, bootstrap: str, feature: str, topic: str, parts: int,
              script_dir: Path) -> tuple[str, str]:
    """Run one feature; records go round robin over the ``parts`` partitions (one led by
    each broker: a partitioner left to itself may send every record to one broker)."""
    if runner.kind in NPM:
        script = script_dir / f"matrix-{runner.kind}.js"
        text = NODE_CLIENTS[runner.kind]
        if not script.exists() or script.read_text() != text:
            script.write_text(text)
        argv = ["node", str(script), bootstrap, feature, topic, str(parts)]
        env = {**os.environ, "NODE_PATH": runner.node_path}
    else:
        argv = [runner.python, "-c", PYTHON_CLIENT, runner.kind, bootstrap, feature, topic,
                str(parts)]
        env = dict(os.environ)
    try:
        done = subprocess.run(argv, capture_output=True, text=True, timeout=CELL_TIMEOUT,
                              env=env, check=False)
    except subprocess.TimeoutExpired:
        return "breaks", f"no result within {CELL_TIMEOUT:.0f} s"
    if done.returncode == 0 and "OK" in done.stdout:
        return "works", ""
    if done.returncode == 3 and "NOCODEC" in done.stdout:
        return "not-run", ("the library's zstd codec is not in its environment (a package, or "
                           "for @platformatic/kafka node's zlib zstd, node 22.15+)")
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
    """A zstd round trip that worked: did every broker get zstd batches, in a Produce a
    Kafka broker takes?  A broker that got its batches otherwise compressed is a silent
    fallback (librdkafka sends uncompressed to a broker that cannot take zstd), so the
    feature breaks there.  (KIP-110: zstd batches need Produce v7+; Kafka's
    ProduceRequest.validateRecords refuses them in older versions.)"""
    zstd_versions: set[int] = set()
    fallback: dict[int, set[int]] = {}
    for b in emulated.brokers:
        for key, version, body in (b.captured or [])[captured[b.node_id]:]:
            if key == ApiKey.PRODUCE:
                for _, codec in _codecs(body):
                    if codec == ZSTD:
                        zstd_versions.add(version)
                    else:
                        fallback.setdefault(b.node_id, set()).add(codec)
    if fallback:
        where = ", ".join(f"broker {n} got codec {sorted(c)}" for n, c in sorted(fallback.items()))
        return "breaks", f"round trip worked but not all in zstd ({where}): a silent fallback"
    if not zstd_versions:
        return "breaks", "round trip worked but no Produce carried a batch"
    if min(zstd_versions) < 7:  # the emulator's rule produce-zstd-version failed
        return "lenient", (f"zstd batches in Produce v{min(zstd_versions)}: Kafka refuses them "
                           "below v7, and so should the emulator")
    return "works", detail


def _not_runnable(feature: str, releases: Sequence[str]) -> str | None:
    if feature == "zstd_topic":
        old = [r for r in releases if release_key(r) < release_key("2.1")]
        if old:
            return f"Kafka {old[0]} has no compression.type=zstd (zstd came in 2.1, KIP-110)"
    return None


#: What each cell's script does besides the feature itself: a consumer cell first
#: produces the records it reads (with the same library), so produce is judged too; a
#: zstd cell produces and reads its records back in a group.
ALSO = {"consume_group": ("produce",), "zstd": ("produce", "consume_group"),
        "zstd_topic": ("produce", "consume_group")}
#: The features whose producer must get a producer id (InitProducerId) to be what it says.
PRODUCER_ID = ("idempotence", "transactions")
_ORDER = ("breaks", "depends", "unknown", "works")


def _verdict(spec: str, brokers: list[BrokerVersions], feature: str,
             bootstrap: tuple[int, ...] | None) -> str:
    """The worst verdict over the features the cell's script uses.

    ``zstd_topic`` is the zstd feature on a topic configured ``compression.type=zstd``:
    where compat says zstd works but consuming breaks on such topics (a caveat), the
    cell's verdict is "breaks".
    """
    try:
        profile = client_profile(spec)
    except UnprofiledRelease:
        return "unknown"
    found = []
    for name in (feature, *ALSO.get(feature, ())):
        result = check_feature(profile, brokers, "zstd" if name == "zstd_topic" else name,
                               bootstrap=bootstrap)
        if result.state is Compat.BREAKS and depends(result.reason):
            found.append("depends")
        elif name == "zstd_topic" and result.state is Compat.WORKS and any(
                c.startswith("consuming breaks") for c in result.caveats):
            found.append("breaks")
        else:
            found.append(result.state.value)
    return min(found, key=_ORDER.index)


def _tables(releases: Sequence[str]) -> tuple[list[BrokerVersions], list[BrokerVersions]]:
    """The brokers as compat sees them offline (release profiles) and live (what the
    emulated brokers advertise)."""
    offline = [BrokerVersions(i, f"kafka-{r}", 9092, release_profile(resolve_release(r)))
               for i, r in enumerate(releases, 1)]
    live = [BrokerVersions(i, "127.0.0.1", 9092 + i, {
        k: (v.min, v.max) for k, v in EmulatedBroker(i, r).profile.items()})
        for i, r in enumerate(releases, 1)]
    return offline, live


def run_unit(runner: Runner, cluster_name: str, features: Sequence[str],
             script_dir: Path) -> list[CellResult]:
    """Every feature of one release on a fresh emulated cluster."""
    releases = CLUSTERS[cluster_name]
    offline, live = _tables(releases)
    listed = tuple(b.node_id for b in live)
    # A partition on every broker: a topic whose only leader is one broker would never
    # send the others a Produce or Fetch, and the cell would not test the cluster.
    emulated = EmulatedCluster([BrokerSpec(r, capture=True) for r in releases],
                               cluster_id=f"matrix-{cluster_name}",
                               default_partitions=len(releases))
    results = []
    with ThreadedEmulator(emulated):
        bootstrap = ",".join(f"{b.host}:{b.port}" for b in emulated.brokers)
        for feature in features:
            topic = f"t-{feature}"
            before = {b.node_id: len(b.received) for b in emulated.brokers}
            captured = {b.node_id: len(b.captured or ()) for b in emulated.brokers}
            why = _not_runnable(feature, releases)
            if why is not None:
                real, detail = "not-run", why
            else:
                if feature == "zstd_topic":
                    emulated.state.create_topic(topic, len(releases),
                                                configs={"compression.type": "zstd"})
                started = time.monotonic()
                real, detail = _run_cell(runner, bootstrap, feature, topic, len(releases),
                                         script_dir)
                detail = detail or f"{time.monotonic() - started:.1f} s"
            sent: dict[str, set[int]] = {}
            for b in emulated.brokers:
                for key, version in list(b.received)[before[b.node_id]:]:
                    name = ApiKey(key).name if key in ApiKey._value2member_map_ else str(key)
                    sent.setdefault(f"{name}@{b.node_id}", set()).add(version)
            missed = [b.node_id for b in emulated.brokers
                      if f"{ApiKey.PRODUCE.name}@{b.node_id}" not in sent]
            if real == "works" and missed:  # the cell did not test every broker
                real, detail = "not-run", f"no Produce reached broker {missed[0]}"
            if real == "works" and feature in PRODUCER_ID and not any(
                    name.startswith(f"{ApiKey.INIT_PRODUCER_ID.name}@") for name in sent):
                # kafkajs before 1.5 takes idempotent: true and sends plain batches
                real, detail = "breaks", ("round trip worked but no InitProducerId was sent: "
                                          "the library ignored the option (a plain producer)")
            if feature.startswith("zstd") and real == "works":
                real, detail = _zstd_outcome(emulated, captured, detail)
            results.append(CellResult(
                runner.name, runner.spec, cluster_name, feature, real,
                _verdict(runner.spec, offline, feature, None),
                _verdict(runner.spec, live, feature, listed),
                {k: sorted(v) for k, v in sorted(sent.items())}, detail))
            print(results[-1].line(), flush=True)
    return results


def run(found: Sequence[Runner], clusters: Sequence[str], features: Sequence[str] = FEATURES,
        *, jobs: int = 1, script_dir: Path, out: Path | None = None) -> list[CellResult]:
    """Every cell of ``found`` x ``clusters`` x ``features``, ``jobs`` units at a time
    (a unit: one release on one fresh cluster); each result is appended to ``out``
    (JSON Lines) as it comes."""
    units = [(runner, cluster) for cluster in clusters for runner in found]
    results: list[CellResult] = []
    lock = threading.Lock()

    def one(unit: tuple[Runner, str]) -> None:
        cells = run_unit(unit[0], unit[1], features, script_dir)
        with lock:
            results.extend(cells)
            if out is not None:
                with out.open("a", encoding="utf-8") as stream:
                    for cell in cells:
                        stream.write(json.dumps(attrs.asdict(cell)) + "\n")

    with concurrent.futures.ThreadPoolExecutor(max(1, jobs)) as pool:
        for future in [pool.submit(one, unit) for unit in units]:
            future.result()
    return results


def rejudge(*paths: Path) -> list[CellResult]:
    """The cells stored in ``paths`` (JSON Lines) with compat's verdicts of today: the real
    outcomes stay, the verdicts are taken afresh (after a profile or a rule changed).  A
    cell stored again (a re-run) replaces the earlier one, in its place."""
    cells: dict[tuple[str, str, str], CellResult] = {}
    for path in paths:
        for line in path.read_text(encoding="utf-8").splitlines():
            cell = CellResult(**json.loads(line))
            cells[cell.install, cell.cluster, cell.feature] = cell
    results = []
    tables: dict[str, tuple[list[BrokerVersions], list[BrokerVersions]]] = {}
    for cell in cells.values():
        if cell.cluster not in tables:
            tables[cell.cluster] = _tables(CLUSTERS[cell.cluster])
        offline, live = tables[cell.cluster]
        results.append(attrs.evolve(
            cell, offline=_verdict(cell.spec, offline, cell.feature, None),
            live=_verdict(cell.spec, live, cell.feature, tuple(b.node_id for b in live))))
    return results


#: A cell's letter in :func:`table`.
LETTERS = {"works": "W", "breaks": "B", "not-run": "-", "lenient": "L"}


def table(results: Sequence[CellResult]) -> str:
    """The matrix as Markdown: a row per install, a column per cluster, a letter per
    feature in :data:`FEATURES` order (``!`` a disagreement, ``.`` not stored)."""
    by_key = {(r.install, r.cluster, r.feature): r for r in results}
    installs = sorted({r.install for r in results},
                      key=lambda n: (INSTALLS[n][0] if n in INSTALLS else n,
                                     release_key(n.rsplit("-", 1)[1])
                                     if n in INSTALLS else ()))
    rows = [f"letters per cell: {' '.join(FEATURES)} (W works, B breaks, - not runnable, "
            "! real outcome and compat disagree)", "",
            f"| release | {' | '.join(CLUSTERS)} |", "|---|" + "---|" * len(CLUSTERS)]
    for name in installs:
        cells = []
        for cluster in CLUSTERS:
            letters = ""
            for feature in FEATURES:
                cell = by_key.get((name, cluster, feature))
                letters += "." if cell is None else LETTERS[cell.real] if cell.agrees else "!"
            cells.append(letters)
        rows.append(f"| {name} | {' | '.join(cells)} |")
    return "\n".join(rows)


def summary(results: Sequence[CellResult]) -> str:
    """Counts: cells, run, not runnable, lenient, disagreements."""
    ran = [r for r in results if r.real not in ("not-run", "lenient")]
    wrong = [r for r in ran if not r.agrees]
    return (f"{len(results)} cells, {len(ran)} run, "
            f"{sum(r.real == 'not-run' for r in results)} not runnable, "
            f"{sum(r.real == 'lenient' for r in results)} where the emulator takes what Kafka "
            f"refuses, {len(wrong)} disagreements")


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(prog="python -m benchmarks client_matrix")
    parser.add_argument("--root", type=Path, default=Path("/tmp/kclient-client-matrix"))
    parser.add_argument("--install", action="store_true")
    parser.add_argument("--here", action="store_true",
                        help="the libraries of this Python environment instead of --root's")
    parser.add_argument("--only", action="append", default=[],
                        help="installs whose name starts with this (repeatable)")
    parser.add_argument("--clusters", default=",".join(CLUSTERS))
    parser.add_argument("--features", default=",".join(FEATURES))
    parser.add_argument("--jobs", type=int, default=1)
    parser.add_argument("--json", type=Path, help="append each cell here (JSON Lines)")
    parser.add_argument("--rejudge", type=Path, nargs="+",
                        help="judge the cells stored in these files afresh (a cell stored "
                        "again replaces the earlier one); run nothing")
    parser.add_argument("--table", action="store_true",
                        help="print the matrix as a Markdown table after the cells")
    args = parser.parse_args(argv)
    started = time.monotonic()
    if args.rejudge is not None:
        results = rejudge(*args.rejudge)
        for cell in results:
            print(cell.line())
    else:
        names = [n for n in INSTALLS if not args.only or any(n.startswith(o) for o in args.only)]
        if args.install and not args.here:
            install(args.root, names)
        found = here() if args.here else runners(args.root, names)
        args.root.mkdir(parents=True, exist_ok=True)
        results = run(found, [c for c in args.clusters.split(",") if c],
                      [f for f in args.features.split(",") if f], jobs=args.jobs,
                      script_dir=args.root, out=args.json)
    if args.table:
        print(table(results))
    print(f"{summary(results)}, {time.monotonic() - started:.0f} s")
    return 1 if any(not r.agrees for r in results) else 0
