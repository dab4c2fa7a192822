"""Observe, live, the request versions the installed librdkafka sends.

A librdkafka release whose source we cannot read at its own tag (confluent-kafka
2.16.1 bundles librdkafka 2.16.0; the newest tag read is v2.15.0), or one whose
versions hang on feature flags as much as on call sites (the 1.x releases), is run
instead: a producer (plain, idempotent, zstd, transactional with offsets), a classic
and a KIP-848 group consumer and the admin client, through confluent-kafka, against
two emulated brokers whose ``apis=`` advertise every version kclient can decode.  A
library picks the highest version it and the broker share, so what it sends is its
own ceiling -- unless that equals the emulator's (kclient's decodable maximum), where
the true ceiling may be higher and the reading of the source must say.

The library runs in a subprocess of ``--python`` (default: this interpreter), so a
release whose wheels exist only for an old Python (confluent-kafka 1.0 needs 3.7) is
observed from its own venv; the steps a release does not have (transactions before
librdkafka 1.4, the KIP-848 consumer before 2.10, most admin calls) fail on their own
and are noted, the next step runs.

It prints JSON: the librdkafka and confluent-kafka versions, ``sent`` (the highest
version seen per API) and ``caps`` (the emulator's maximum for each of those APIs),
which ``tools/facts/clients.json`` records under a line's ``observed`` key
(``tools/gen_clients.py`` combines it with the source reading the line names).

Run from the repository root:
    python tools/observe_librdkafka.py [--python /path/to/venv/bin/python]
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from kclient.emulator import BrokerSpec, EmulatedCluster, ThreadedEmulator
from kclient.protocol import default_catalog, default_registry

#: Seconds the whole client run may take (each call's own bound is 15 s).
RUN_TIMEOUT = 300

#: The client side, run by the observed release's own Python (3.7 and later, no kclient):
#: every step in its own try, so a step the release lacks is noted and the next one runs.
CLIENT = r'''
import json, sys, time
import confluent_kafka as ck
try:
    import importlib.metadata as md
    package = md.version("confluent-kafka")
except ImportError:  # Python 3.7
    package = ck.version()[0]
bootstrap = sys.argv[1]
CALL = 15
VALUES = [("m%d-" % i + "kclient " * 256).encode() for i in range(5)]
base = {"bootstrap.servers": bootstrap, "log_level": 0}
failures = []
def attempt(label, call):
    try:
        result = call()
        for future in (result.values() if isinstance(result, dict) else ()):
            future.result(CALL)
        if hasattr(result, "result"):
            result.result(CALL)
        return result
    except Exception as exc:
        failures.append("%s: %s" % (label, str(exc)[:120]))
def produce(topic, extra):
    producer = ck.Producer(dict(base, **extra))
    if "transactional.id" in extra:
        producer.init_transactions(CALL); producer.begin_transaction()
    for value in VALUES:
        producer.produce(topic, value)
    if "transactional.id" in extra:
        producer.commit_transaction(CALL)
    producer.flush(CALL)
def consume(group, extra):
    consumer = ck.Consumer(dict(base, **{"group.id": group, "auto.offset.reset": "earliest",
                                         "enable.auto.commit": False}, **extra))
    consumer.subscribe(["plain"])
    got, deadline = 0, time.time() + CALL
    while got < len(VALUES) and time.time() < deadline:
        message = consumer.poll(0.5)
        got += message is not None and not message.error()
    return consumer
for topic, extra in (("plain", {}), ("idempotent", {"enable.idempotence": True}),
                     ("zstd", {"compression.type": "zstd"}),
                     ("txn", {"transactional.id": "observe-1"})):
    attempt("produce " + topic, lambda t=topic, e=extra: produce(t, e))
consumer = attempt("classic consumer", lambda: consume("observe-classic",
                                                       {"session.timeout.ms": 6000}))
if consumer is not None:
    attempt("commit", lambda: consumer.commit(asynchronous=False))
    def offsets_in_transaction():
        producer = ck.Producer(dict(base, **{"transactional.id": "observe-2"}))
        producer.init_transactions(CALL); producer.begin_transaction()
        producer.produce("txn", b"x")
        producer.send_offsets_to_transaction(consumer.position(consumer.assignment()),
                                             consumer.consumer_group_metadata(), CALL)
        producer.commit_transaction(CALL)
    attempt("send_offsets_to_transaction", offsets_in_transaction)
    attempt("offsets_for_times", lambda: consumer.offsets_for_times(
        [ck.TopicPartition("plain", 0, 0)], CALL))
    attempt("close", lambda: consumer.close())
attempt("KIP-848 consumer", lambda: consume("observe-848", {"group.protocol": "consumer"}).close())
from confluent_kafka import admin
client = admin.AdminClient(base)
topic = lambda: admin.ConfigResource("topic", "observed")
partition = ck.TopicPartition("plain", 0)
steps = [
    ("create_topics", lambda: client.create_topics([admin.NewTopic("observed", 2, 1)])),
    ("create_partitions", lambda: client.create_partitions([admin.NewPartitions("observed", 3)])),
    ("describe_configs", lambda: client.describe_configs([topic()])),
    ("alter_configs", lambda: client.alter_configs([admin.ConfigResource(
        "topic", "observed", set_config={"retention.ms": "1000"})])),
    ("incremental_alter_configs", lambda: client.incremental_alter_configs([
        admin.ConfigResource("topic", "observed", incremental_configs=[
            admin.ConfigEntry("retention.ms", "1000",
                              incremental_operation=admin.AlterConfigOpType.SET)])])),
    ("list_consumer_groups", lambda: client.list_consumer_groups()),
    ("describe_consumer_groups", lambda: client.describe_consumer_groups(["observe-classic"])),
    ("list_offsets", lambda: client.list_offsets({partition: admin.OffsetSpec.latest()})),
    ("delete_records", lambda: client.delete_records([ck.TopicPartition("plain", 0, 1)])),
    ("describe_cluster", lambda: client.describe_cluster()),
    ("describe_topics", lambda: client.describe_topics(ck.TopicCollection(["plain"]))),
    ("delete_topics", lambda: client.delete_topics(["observed"])),
    ("delete_consumer_groups", lambda: client.delete_consumer_groups(["observe-848"])),
]
for label, step in steps:
    attempt(label, step)
print(json.dumps({"librdkafka": ck.libversion()[0], "confluent_kafka": package,
                  "failures": failures}))
'''


def decodable() -> dict[int, tuple[int, int]]:
    """Every API kclient can decode, with the highest version it decodes."""
    registry = default_registry()
    return {info.key: (0, registry.spec(f"{info.name}Request").valid.hi)
            for info in default_catalog() if f"{info.name}Request" in registry}


def observe(python: str = sys.executable) -> dict[str, Any]:
    """Run the librdkafka that ``python`` imports against the emulator; what it sent,
    per API."""
    apis = decodable()
    cluster = EmulatedCluster([BrokerSpec("4.3", apis=apis, capture=True) for _ in range(2)],
                              cluster_id="observe-librdkafka", default_partitions=2)
    with ThreadedEmulator(cluster) as emulator:
        done = subprocess.run([python, "-c", CLIENT, emulator.bootstrap_servers],
                              capture_output=True, text=True, timeout=RUN_TIMEOUT, check=False)
    if done.returncode != 0:
        tail = (done.stderr.strip().splitlines() or [f"exit {done.returncode}"])[-1]
        raise SystemExit(f"{python}: the client run failed: {tail[:300]}")
    ran = json.loads(done.stdout.strip().splitlines()[-1])
    catalog = default_catalog()
    sent: dict[str, int] = {}
    for broker in cluster.brokers:
        for key, version in broker.received:
            name = catalog.name_of(key)
            sent[name] = max(version, sent.get(name, -1))
    return {"librdkafka": ran["librdkafka"], "confluent_kafka": ran["confluent_kafka"],
            "sent": dict(sorted(sent.items())),
            "caps": {catalog.name_of(k): hi for k, (_, hi) in sorted(apis.items())
                     if catalog.name_of(k) in sent},
            "failures": ran["failures"]}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--python", default=sys.executable,
                        help="the interpreter whose confluent-kafka is observed")
    args = parser.parse_args()
    print(json.dumps(observe(args.python), indent=1))


if __name__ == "__main__":
    main()
