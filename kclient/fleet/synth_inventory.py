"""A synthetic client inventory of the synthetic fleet: broker metrics from the JMX exporter.

For the clusters of :func:`kclient.fleet.synth.synth_records` (same names), what
their brokers would report about their clients: the ``socket-server-metrics``
connections per client software, ``RequestsPerSec`` per request and version, and
``DeprecatedRequestsPerSec`` per client software (brokers of 3.7 and later), in
the JMX exporter's default naming (no rules), one file for the fleet with a
``kafka_cluster`` label per series as a Prometheus federation gives it (read it
with ``--cluster-label kafka_cluster``).  The client software names and versions
are those real libraries send (:mod:`kclient.negotiation.software`): most work on
Kafka 4.0, some clusters have clients that send no name, a few of them requests of
versions Kafka 4.0 removed.  The same ``seed`` always gives the same text.
"""

from __future__ import annotations

import random
from collections.abc import Iterator
from pathlib import Path

from kclient.errors import FleetError
from kclient.fleet.synth import cluster_name

__all__ = ["CLUSTER_LABEL", "inventory_lines", "write_inventory"]

#: The label that names each series' cluster.
CLUSTER_LABEL = "kafka_cluster"

#: Client software (name, version), the requests it sends per broker, and its weight.
_CLIENTS: tuple[tuple[str, str, tuple[tuple[str, int], ...], int], ...] = (
    ("confluent-kafka-python", "2.6.1-rdkafka-2.6.1",
     (("Produce", 10), ("Fetch", 16), ("Metadata", 12)), 8),
    ("confluent-kafka-python", "1.9.2-rdkafka-1.9.2",
     (("Produce", 7), ("Fetch", 11), ("Metadata", 9)), 3),
    ("confluent-kafka-go", "2.8.0", (("Produce", 10), ("Fetch", 16), ("Metadata", 12)), 4),
    ("apache-kafka-java", "3.6.1", (("Produce", 9), ("Fetch", 15), ("Metadata", 12)), 6),
    ("apache-kafka-java", "7.7.1-ccs", (("Produce", 10), ("Fetch", 16), ("Metadata", 12)), 3),
    ("apache-kafka-java", "2.8.2", (("Produce", 9), ("Fetch", 12), ("Metadata", 11)), 2),
    ("kafka-python", "2.1.5", (("Produce", 8), ("Fetch", 11), ("Metadata", 8)), 3),
    ("kgo", "v1.21.5", (("Produce", 12), ("Fetch", 17), ("Metadata", 13)), 2),
    ("sarama", "dev", (("Produce", 7), ("Fetch", 10), ("Metadata", 7)), 2),
    ("platformatic-kafka", "2.9.0", (("Produce", 11), ("Fetch", 17), ("Metadata", 12)), 1),
)
#: What clients that send no name send: deprecated versions Kafka 4.0 still takes, or
#: also versions it removed (an old client).
_NAMELESS_TAKEN = (("Produce", 5), ("Fetch", 4), ("Metadata", 1))
_NAMELESS_REMOVED = (("Produce", 2), ("Fetch", 3), ("Metadata", 1), ("JoinGroup", 1))
#: Versions a Kafka 3.7-3.9 broker counts as deprecated (its specs' deprecatedVersions).
_DEPRECATED = {("Produce", 2), ("Produce", 5), ("Fetch", 3), ("Metadata", 1),
               ("JoinGroup", 1)}


_CONNECTIONS = "kafka_server_socket_server_metrics_connections"
_REQUESTS = "kafka_network_RequestMetrics_Count"


def _sample(metric: str, cluster: str, broker: int, value: int, **labels: str) -> str:
    pairs = {CLUSTER_LABEL: cluster, "instance": f"{cluster}-kafka-{broker}:7071", **labels}
    text = ",".join(f'{name}="{value_}"' for name, value_ in pairs.items())
    return f"{metric}{{{text}}} {float(value)}"


def _cluster(index: int, rng: random.Random) -> Iterator[str]:
    cluster = cluster_name(index)
    brokers = rng.choice((3, 3, 3, 5, 6))
    sent = [_CLIENTS[i] for i in rng.sample(range(len(_CLIENTS)), rng.randint(3, 6))]
    nameless = rng.random()
    if nameless < 0.35:
        sent.append(("unknown", "unknown",
                     _NAMELESS_REMOVED if nameless < 0.15 else _NAMELESS_TAKEN,
                     rng.randint(1, 4)))
    sent.append(("apache-kafka-java", "3.9.0", (("Fetch", 17),), 1))  # the brokers' own
    for broker in range(brokers):
        requests: dict[tuple[str, int], int] = {}
        for name, version, apis, weight in sent:
            software = {"clientSoftwareName": name, "clientSoftwareVersion": version}
            connections = weight * rng.randint(1, 4)
            yield _sample(_CONNECTIONS, cluster, broker, connections, **software,
                          listener="PLAINTEXT", networkProcessor=str(broker % 3))
            for api, api_version in apis:
                count = connections * rng.randint(50, 5000)
                requests[api, api_version] = requests.get((api, api_version), 0) + count
                if (api, api_version) in _DEPRECATED:
                    yield _sample(_REQUESTS, cluster, broker, count,
                                  name="DeprecatedRequestsPerSec", request=api,
                                  version=str(api_version), **software)
        for (api, api_version), count in sorted(requests.items()):
            yield _sample(_REQUESTS, cluster, broker, count, name="RequestsPerSec", request=api,
                          version=str(api_version))
        yield _sample("jvm_threads_current", cluster, broker, rng.randint(80, 200))


def inventory_lines(clusters: int, seed: int = 0) -> Iterator[str]:
    """The lines of the synthetic inventory of ``clusters`` clusters (see the module text)."""
    rng = random.Random(f"inventory-{seed}")
    yield "# TYPE kafka_server_socket_server_metrics_connections untyped"
    for index in range(clusters):
        yield from _cluster(index, rng)


def write_inventory(path: str | Path, clusters: int, seed: int = 0) -> int:
    """Write the synthetic inventory to ``path``; returns how many series."""
    target = Path(path)
    written = 0
    try:
        if target.parent != Path(""):
            target.parent.mkdir(parents=True, exist_ok=True)
        with target.open("w", encoding="utf-8") as out:
            for line in inventory_lines(clusters, seed):
                out.write(line + "\n")
                written += not line.startswith("#")
    except OSError as exc:
        raise FleetError(f"cannot write the synthetic inventory to {target}: "
                         f"{exc.strerror or exc}; choose another path") from None
    return written
