"""Real Kafka client libraries at work against the emulator, and what they sent.

Each ``run_*`` function makes one library create a topic (where it has an admin
client), produce ``count`` messages (idempotently when asked), and consume them
all in a consumer group, committing offsets, against a running
:class:`~kclient.emulator.ThreadedEmulator`.  It returns a :class:`Run` with
what was consumed and how long it took.  :func:`sent_table` reads what the
library put on the wire from the brokers' own ``received`` logs: every
(API key, version) per broker.  Every client timeout is short and every loop has
a deadline, so a broken emulator fails the test instead of hanging it.
"""

from __future__ import annotations

import asyncio
import json
import logging
import os
import shutil
import subprocess
import time
from collections.abc import Iterable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import attrs

from kclient.emulator import ThreadedEmulator
from kclient.negotiation.clients import ClientProfile, Strategy, judge_for_client
from kclient.negotiation.model import BrokerVersions
from kclient.protocol.constants import ApiKey

TOPIC = "orders"
PARTITIONS = 3
#: Longest wait for the messages to come back (the whole run stays well under it).
CONSUME_DEADLINE = 30.0


@attrs.frozen
class Run:
    """What one library did: the values it consumed back and the seconds it took."""

    library: str
    produced: int
    consumed: tuple[bytes, ...]
    seconds: float
    #: Messages each consumer of the group got (when the run had several).
    per_consumer: tuple[int, ...] = ()


def expected_values(count: int) -> list[bytes]:
    return [f"message-{i}".encode() for i in range(count)]


def sent_table(emulator: ThreadedEmulator) -> dict[int, dict[int, list[int]]]:
    """Per broker node id: API key -> the sorted versions the client sent it."""
    out: dict[int, dict[int, list[int]]] = {}
    for broker in emulator.cluster.brokers:
        table: dict[int, set[int]] = {}
        for key, version in list(broker.received):
            table.setdefault(key, set()).add(version)
        out[broker.node_id] = {k: sorted(v) for k, v in sorted(table.items())}
    return out


def merged_table(emulator: ThreadedEmulator) -> dict[int, list[int]]:
    """API key -> every version sent to any broker."""
    merged: dict[int, set[int]] = {}
    for table in sent_table(emulator).values():
        for key, versions in table.items():
            merged.setdefault(key, set()).update(versions)
    return {k: sorted(v) for k, v in sorted(merged.items())}


def _broker_views(emulator: ThreadedEmulator) -> dict[int, BrokerVersions]:
    return {b.node_id: BrokerVersions(b.node_id, b.host, b.port, {
        k: (r.min, r.max) for k, r in b.profile.items()}) for b in emulator.cluster.brokers}


def unpredicted(profile: ClientProfile, emulator: ThreadedEmulator) -> list[str]:
    """Every (API, version) a library sent that its profile does not predict.

    A version must be one the profile says the library can send; for a library
    that picks per broker it must also be the very version
    :func:`~kclient.negotiation.clients.judge_for_client` predicts for that
    broker; for one where one broker's answer decides, each API must go at one
    version to every broker.  ApiVersions is the handshake (tried top-down, then
    lowered), judged by range only; Metadata goes before any table is chosen.
    """
    views = _broker_views(emulator)
    problems = []
    tables = sent_table(emulator)
    if profile.strategy.one_broker_decides:
        # One broker's answer decides: each API goes at one version to every broker.
        spread: dict[int, set[int]] = {}
        for table in tables.values():
            for key, versions in table.items():
                if key not in (ApiKey.API_VERSIONS, ApiKey.METADATA):
                    spread.setdefault(key, set()).update(versions)
        problems += [f"{ApiKey(k).name} sent at v{sorted(v)} to different brokers, profile: "
                     f"{profile.strategy_text}" for k, v in sorted(spread.items()) if len(v) > 1]
    # A library's roles (producer, consumer, admin client) may send an API each their
    # own way: a version is predicted when any role sends it.
    role_cells = [profile.apis, *profile.roles.values()]
    for node_id, table in tables.items():
        for key, versions in table.items():
            cells = [c[key] for c in role_cells if key in c]
            name = ApiKey(key).name if key in ApiKey._value2member_map_ else str(key)
            if not cells:
                problems.append(f"broker {node_id}: {name} v{versions} sent, profile has none")
                continue
            allowed: set[int] = set()
            for cell in cells:
                allowed |= {cell.pinned} if (profile.strategy is Strategy.PINNED
                                              and cell.pinned is not None) else set(cell.versions)
                if key == ApiKey.API_VERSIONS:
                    allowed |= set(range(cell.range.min, cell.range.max + 1))
            for version in versions:
                if version not in allowed:
                    problems.append(f"broker {node_id}: {name} v{version} sent, profile "
                                    f"{profile.sends(key)}")
            if profile.strategy is Strategy.PER_BROKER and key != ApiKey.API_VERSIONS:
                predicted = judge_for_client(profile, [views[node_id]], key).version
                wrong = [v for v in versions if v != predicted]
                if wrong:
                    problems.append(f"broker {node_id}: {name} v{wrong} sent, profile predicts "
                                    f"v{predicted}")
    return problems


@contextmanager
def _quiet(*names: str) -> Iterator[None]:
    loggers = [logging.getLogger(n) for n in names]
    levels = [lg.level for lg in loggers]
    for lg in loggers:
        lg.setLevel(logging.CRITICAL)
    try:
        yield
    finally:
        for lg, level in zip(loggers, levels, strict=True):
            lg.setLevel(level)


# -- kafka-python ---------------------------------------------------------------------------
def run_kafka_python(emulator: ThreadedEmulator, count: int, idempotent: bool,
                     create: bool = True, deadline: float = CONSUME_DEADLINE) -> Run:
    import kafka
    from kafka.admin import NewTopic

    bootstrap = emulator.bootstrap_servers
    start = time.monotonic()
    with _quiet("kafka"):
        if create:
            admin = kafka.KafkaAdminClient(bootstrap_servers=bootstrap, request_timeout_ms=5000)
            try:
                admin.create_topics([NewTopic(TOPIC, PARTITIONS, 1)])
            finally:
                admin.close()
        # kafka-python 2.0.x has no idempotence (and no such setting).
        extra = {"enable_idempotence": True} if idempotent else {}
        producer = kafka.KafkaProducer(bootstrap_servers=bootstrap, request_timeout_ms=5000,
                                       linger_ms=5, **extra)
        try:
            for i, value in enumerate(expected_values(count)):
                producer.send(TOPIC, key=str(i % 7).encode(), value=value)
            producer.flush(15)
        finally:
            producer.close(5)
        consumer = kafka.KafkaConsumer(
            TOPIC, bootstrap_servers=bootstrap, group_id="kafka-python-group",
            auto_offset_reset="earliest", enable_auto_commit=False,
            request_timeout_ms=10000, session_timeout_ms=6000, heartbeat_interval_ms=1000)
        got: list[bytes] = []
        try:
            until = time.monotonic() + deadline
            while len(got) < count and time.monotonic() < until:
                for records in consumer.poll(500).values():
                    got.extend(r.value for r in records)
            consumer.commit()
        finally:
            consumer.close()
    return Run("kafka-python", count, tuple(got), time.monotonic() - start)


# -- confluent-kafka (librdkafka) ---------------------------------------------------------------
def run_confluent_kafka(emulator: ThreadedEmulator, count: int, idempotent: bool,
                        create: bool = True, consumers: int = 1) -> Run:
    import confluent_kafka
    from confluent_kafka.admin import AdminClient, NewTopic

    bootstrap = emulator.bootstrap_servers
    common = {"bootstrap.servers": bootstrap, "socket.timeout.ms": 5000, "log_level": 0,
              "reconnect.backoff.max.ms": 500}
    start = time.monotonic()
    if create:
        admin = AdminClient(common)
        for future in admin.create_topics([NewTopic(TOPIC, PARTITIONS, 1)]).values():
            future.result(10)
    producer = confluent_kafka.Producer({**common, "enable.idempotence": idempotent,
                                         "linger.ms": 5, "message.timeout.ms": 15000})
    failures: list[Any] = []
    for i, value in enumerate(expected_values(count)):
        producer.produce(TOPIC, key=str(i % 7), value=value,
                         on_delivery=lambda err, _msg: failures.append(err) if err else None)
        producer.poll(0)
    left = producer.flush(15)
    assert left == 0 and not failures, (left, failures[:3])
    group = [confluent_kafka.Consumer({
        **common, "group.id": "librdkafka-group", "auto.offset.reset": "earliest",
        "enable.auto.commit": False, "session.timeout.ms": 6000,
        "heartbeat.interval.ms": 500}) for _ in range(consumers)]
    got: list[bytes] = []
    counts = [0] * consumers
    try:
        for consumer in group:
            consumer.subscribe([TOPIC])
        deadline = time.monotonic() + CONSUME_DEADLINE
        while len(got) < count and time.monotonic() < deadline:
            for index, consumer in enumerate(group):
                batch = [m for m in consumer.consume(500, 0.1) if not m.error()]
                if batch:
                    counts[index] += len(batch)
                    got.extend(m.value() for m in batch)
                    consumer.commit(asynchronous=False)
    finally:
        for consumer in group:
            consumer.close()
    return Run("confluent-kafka", count, tuple(got), time.monotonic() - start, tuple(counts))


# -- aiokafka -----------------------------------------------------------------------------------
async def _aiokafka(bootstrap: str, count: int, idempotent: bool, create: bool) -> list[bytes]:
    import aiokafka
    from aiokafka.admin import AIOKafkaAdminClient, NewTopic

    if create:
        admin = AIOKafkaAdminClient(bootstrap_servers=bootstrap, request_timeout_ms=5000)
        await admin.start()
        try:
            await admin.create_topics([NewTopic(TOPIC, PARTITIONS, 1)])
        finally:
            await admin.close()
    producer = aiokafka.AIOKafkaProducer(bootstrap_servers=bootstrap, request_timeout_ms=5000,
                                         enable_idempotence=idempotent)
    await producer.start()
    try:
        for i, value in enumerate(expected_values(count)):
            await producer.send(TOPIC, key=str(i % 7).encode(), value=value)
        await producer.flush()
    finally:
        await producer.stop()
    consumer = aiokafka.AIOKafkaConsumer(
        TOPIC, bootstrap_servers=bootstrap, group_id="aiokafka-group",
        auto_offset_reset="earliest", enable_auto_commit=False, request_timeout_ms=10000)
    await consumer.start()
    got: list[bytes] = []
    try:
        async with asyncio.timeout(CONSUME_DEADLINE):
            while len(got) < count:
                for records in (await consumer.getmany(timeout_ms=500)).values():
                    got.extend(r.value for r in records)
        await consumer.commit()
    finally:
        await consumer.stop()
    return got


def run_aiokafka(emulator: ThreadedEmulator, count: int, idempotent: bool,
                 create: bool = True) -> Run:
    start = time.monotonic()
    with _quiet("aiokafka"):
        got = asyncio.run(_aiokafka(emulator.bootstrap_servers, count, idempotent, create))
    return Run("aiokafka", count, tuple(got), time.monotonic() - start)


# -- Node.js: kafkajs and @platformatic/kafka -----------------------------------------------------
KAFKAJS = r"""
const { Kafka, logLevel } = require('kafkajs');
const [brokers, count, idempotent] = [process.argv[2].split(','), +process.argv[3],
                                      process.argv[4] === '1'];
(async () => {
  const kafka = new Kafka({ clientId: 'kafkajs-emu', brokers, logLevel: logLevel.NOTHING,
                            connectionTimeout: 3000, requestTimeout: 10000,
                            retry: { retries: 5, maxRetryTime: 2000 } });
  const admin = kafka.admin();
  await admin.connect();
  await admin.createTopics({ topics: [{ topic: 'orders', numPartitions: 3 }] });
  await admin.disconnect();
  const producer = kafka.producer(idempotent ? { idempotent: true, maxInFlightRequests: 1 } : {});
  await producer.connect();
  const messages = [];
  for (let i = 0; i < count; i++) messages.push({ key: String(i % 7), value: `message-${i}` });
  for (let i = 0; i < count; i += 50)
    await producer.send({ topic: 'orders', messages: messages.slice(i, i + 50) });
  await producer.disconnect();
  const consumer = kafka.consumer({ groupId: 'kafkajs-group', sessionTimeout: 6000,
                                    heartbeatInterval: 500, maxWaitTimeInMs: 200 });
  await consumer.connect();
  await consumer.subscribe({ topic: 'orders', fromBeginning: true });
  const got = [];
  await new Promise((resolve) => {
    consumer.run({ eachMessage: async ({ message }) => {
      got.push(message.value.toString());
      if (got.length >= count) resolve();
    } });
  });
  await consumer.disconnect();
  console.log(JSON.stringify(got));
})().catch((e) => { console.error(String(e && e.stack || e)); process.exit(1); });
"""

PLATFORMATIC = r"""
const { Admin, Producer, Consumer, stringSerializers, stringDeserializers } =
  require('@platformatic/kafka');
const [brokers, count, idempotent] = [process.argv[2].split(','), +process.argv[3],
                                      process.argv[4] === '1'];
(async () => {
  const admin = new Admin({ clientId: 'platformatic-emu', bootstrapBrokers: brokers });
  await admin.createTopics({ topics: ['orders'], partitions: 3, replicas: 1 });
  await admin.close();
  const producer = new Producer({ clientId: 'platformatic-emu', bootstrapBrokers: brokers,
                                  serializers: stringSerializers, idempotent });
  const messages = [];
  for (let i = 0; i < count; i++)
    messages.push({ topic: 'orders', key: String(i % 7), value: `message-${i}` });
  for (let i = 0; i < count; i += 50) await producer.send({ messages: messages.slice(i, i + 50) });
  await producer.close();
  const consumer = new Consumer({ groupId: 'platformatic-group', clientId: 'platformatic-emu',
                                  bootstrapBrokers: brokers, deserializers: stringDeserializers,
                                  maxWaitTime: 200 });
  const stream = await consumer.consume({ topics: ['orders'], mode: 'earliest',
                                          autocommit: false, sessionTimeout: 6000,
                                          heartbeatInterval: 500 });
  const got = [];
  for await (const message of stream) {
    got.push(message.value);
    await message.commit();
    if (got.length >= count) break;
  }
  await stream.close();
  await consumer.close();
  console.log(JSON.stringify(got));
})().catch((e) => { console.error(String(e && e.stack || e)); process.exit(1); });
"""

NODE_PACKAGES = {"kafkajs": "kafkajs@2", "@platformatic/kafka": "@platformatic/kafka@1"}


def install_node_packages(directory: Path,
                          packages: Iterable[str] = NODE_PACKAGES.values()) -> str | None:
    """``npm install`` ``packages`` (kafkajs and @platformatic/kafka) into ``directory``;
    the reason it could not, or None."""
    npm, node = shutil.which("npm"), shutil.which("node")
    if npm is None or node is None:
        return "node or npm is not installed"
    try:
        done = subprocess.run(
            [npm, "install", "--no-audit", "--no-fund", "--silent", "--prefix", str(directory),
             *packages], capture_output=True, text=True, timeout=180, check=False)
    except subprocess.TimeoutExpired:
        return "npm install took more than 180 s (offline?)"
    if done.returncode != 0:
        return f"npm install failed (offline?): {done.stderr.strip()[-300:]}"
    return None


def node_json(directory: Path, name: str, script: str, *args: str) -> Any:
    """Run ``script`` (saved as ``name`` in ``directory``) with node and the packages
    installed there; the JSON of its last output line."""
    path = directory / name
    path.write_text(script)
    env = {**os.environ, "NODE_PATH": str(directory / "node_modules")}
    done = subprocess.run([str(shutil.which("node")), str(path), *args], capture_output=True,
                          text=True, timeout=60, cwd=directory, env=env, check=False)
    assert done.returncode == 0, f"{name} failed: {done.stderr[-2000:]}"
    return json.loads(done.stdout.strip().splitlines()[-1])


def run_node(library: str, directory: Path, emulator: ThreadedEmulator, count: int,
             idempotent: bool) -> Run:
    start = time.monotonic()
    values = node_json(directory, "kafkajs.js" if library == "kafkajs" else "platformatic.js",
                       KAFKAJS if library == "kafkajs" else PLATFORMATIC,
                       emulator.bootstrap_servers, str(count), "1" if idempotent else "0")
    return Run(library, count, tuple(v.encode() for v in values), time.monotonic() - start)
