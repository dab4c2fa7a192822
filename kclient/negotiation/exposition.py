"""Broker metrics in the Prometheus text format, as the JMX exporter writes them: an inventory.

Kafka brokers publish over JMX, per listener and network processor,
``kafka.server:type=socket-server-metrics,clientSoftwareName=N,
clientSoftwareVersion=V,listener=L,networkProcessor=P`` (attribute
``connections``), and per request ``kafka.network:type=RequestMetrics,
name=RequestsPerSec,request=R,version=v`` and, from Kafka 3.7,
``name=DeprecatedRequestsPerSec,request=R,version=v,clientSoftwareName=N,
clientSoftwareVersion=V`` (meters: their ``Count`` is the requests since the
broker started).  The Prometheus JMX exporter turns them into series; this module
reads three namings of them (:data:`FAMILIES`):

* the exporter's default (no rule names them): domain, first key property and
  attribute make the name (``kafka_server_socket_server_metrics_connections``,
  ``kafka_network_RequestMetrics_Count``), the other key properties are labels
  (``name="RequestsPerSec"``, ``clientSoftwareName``...)
  (prometheus/jmx_exporter, ``JmxCollector.Receiver.defaultExport``);
* Strimzi's ``kafka-metrics`` rules (``..._connections_software``,
  ``kafka_network_requestmetrics_requests_total``; their generic two-pair rule folds
  ``request``, ``version`` and ``clientSoftwareName`` of a deprecated request into
  one label name, ``request_Produce_version_2_clientSoftwareName="N"``, which is read
  back here) (strimzi/strimzi-kafka-operator ``examples/metrics/kafka-metrics.yaml``);
* Confluent's jmx-monitoring-stacks rules, as cp-demo runs them
  (``kafka_server_socketservermetrics_connections``,
  ``kafka_network_requestmetrics_deprecatedrequestspersec_count`` with
  ``api_name``/``api_version``/``client_software_name`` labels)
  (confluentinc/jmx-monitoring-stacks ``shared-assets/jmx-exporter/kafka_broker.yml``).

Names are read in any case (``lowercaseOutputName``) and with or without the
``_total`` a counter gets; label names in any case, with or without underscores
(``lowercaseOutputLabelNames``).  Every other family is counted as not read, by
name.  A series names its cluster with the label the caller gives
(``cluster_label``), else the whole file is one cluster.  The text is read line
by line, bounded like every input (:func:`~kclient.negotiation.snapshot.bounded_lines`);
a line that is no sample, a label value that no broker writes, a count that is
no whole number are bad lines, counted and named, never fatal.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping
from functools import lru_cache

from kclient.negotiation.inventory import (
    InventoryBuilder,
    api_key_named,
    count_value,
    software_problem,
    version_value,
)
from kclient.negotiation.software import ClientSoftware

__all__ = [
    "CONFLUENT_RULES",
    "DEFAULT_NAMING",
    "FAMILIES",
    "MAX_CLUSTER_NAME",
    "MAX_LABELS",
    "STRIMZI_RULES",
    "read_exposition",
]

DEFAULT_NAMING = "JMX exporter default naming"
STRIMZI_RULES = "Strimzi's kafka-metrics rules"
CONFLUENT_RULES = "Confluent's jmx-monitoring-stacks rules"

#: The metric families read, by name in lower case without a trailing ``_total``:
#: what each holds and whose naming it is.
FAMILIES: Mapping[str, tuple[str, str]] = {
    "kafka_server_socket_server_metrics_connections": ("connections", DEFAULT_NAMING),
    "kafka_network_requestmetrics_count": ("request metrics", DEFAULT_NAMING),
    "kafka_server_socket_server_metrics_connections_software": ("connections", STRIMZI_RULES),
    "kafka_network_requestmetrics_requests": ("requests", STRIMZI_RULES),
    "kafka_network_requestmetrics_deprecatedrequests": ("deprecated requests", STRIMZI_RULES),
    "kafka_server_socketservermetrics_connections": ("connections", CONFLUENT_RULES),
    "kafka_network_requestmetrics_requestspersec": ("requests", CONFLUENT_RULES),
    "kafka_network_requestmetrics_deprecatedrequestspersec_count": ("deprecated requests",
                                                                    CONFLUENT_RULES),
}

#: The most labels a series may have (Kafka's have five or six; a federation adds a few).
MAX_LABELS = 64
#: The longest cluster name read from a label.
MAX_CLUSTER_NAME = 1024

#: Label names (lower case, without underscores) and what they hold.
_ROLES = {"clientsoftwarename": "name", "clientsoftwareversion": "version",
          "request": "request", "apiname": "request", "version": "api_version",
          "apiversion": "api_version", "name": "metric"}
#: Request metric names that count a request already counted under its API's name
#: (kafka.network.RequestMetrics: FetchConsumer/FetchFollower beside Fetch; verification
#: requests of AddPartitionsToTxn, which clients never send).
_ALIASES = frozenset({"fetchconsumer", "fetchfollower", "addpartitionstotxnverification"})
#: Strimzi's generic rule folds three key properties into one label name.
_FOLDED = re.compile(r"request_([A-Za-z0-9]{1,64})_version_(\d{1,5})_clientsoftwarename",
                     re.IGNORECASE)
_NAME = re.compile(r"[a-zA-Z_:][a-zA-Z0-9_:]*+")
# A label block: name="value" pairs (\\, \" and \n escaped), a "," between them and after
# the last; possessive, so a line is read once, never re-split on a retry.
_BLOCK = re.compile(r'\{[ \t]*+((?:[a-zA-Z_][a-zA-Z0-9_]*+[ \t]*+=[ \t]*+"(?:[^"\\\n]|\\.)*+"'
                    r"[ \t]*+,?+[ \t]*+)*+)\}")
_PAIR = re.compile(r'([a-zA-Z_][a-zA-Z0-9_]*+)[ \t]*+=[ \t]*+"((?:[^"\\\n]|\\.)*+)"')
_ESCAPE = re.compile(r"\\(.)")
_FLOAT = re.compile(r"[+-]?+(?:(?:\d++(?:\.\d*+)?+|\.\d++)(?:[eE][+-]?+\d++)?+|[Ii]nf|NaN)")
_UNESCAPED = {"\\": "\\", '"': '"', "n": "\n"}


@lru_cache(maxsize=4096)
def _role(name: str, cluster_label: str | None) -> tuple[str, tuple[str, str] | None] | None:
    """What a label holds (``"cluster"`` or a role of :data:`_ROLES`), with the request and
    version a folded Strimzi label name carries; ``None`` for a label not read."""
    lowered = name.lower()
    if lowered == cluster_label:
        return "cluster", None
    role = _ROLES.get(lowered.replace("_", ""))
    if role is not None:
        return role, None
    folded = _FOLDED.fullmatch(name)
    return ("name", (folded.group(1), folded.group(2))) if folded is not None else None


class _Series:
    """One sample of a read family: its labels by role, its cluster and count."""

    __slots__ = ("cluster", "count", "fields", "folded")

    def __init__(self, cluster: str | None) -> None:
        self.fields: dict[str, str] = {}
        self.folded: tuple[str, str] | None = None
        self.cluster = cluster
        self.count = 0


def _series(text: str, end: int, cluster_label: str | None, cluster: str
            ) -> _Series | str:
    """Labels and value of the sample ``text`` whose name ends at ``end``, or why not."""
    found = _Series(cluster if cluster_label is None else None)
    rest = end
    if end < len(text) and text[end] == "{":
        block = _BLOCK.match(text, end)
        if block is None:
            return "labels that are not name=\"value\" pairs (an unclosed quote, a raw line break?)"
        pairs = _PAIR.findall(block.group(1))
        if len(pairs) > MAX_LABELS:
            return f"more than {MAX_LABELS} labels"
        rest = block.end()
        for name, value in pairs:
            role = _role(name, cluster_label)
            if role is None:
                continue
            if "\\" in value:
                value = _ESCAPE.sub(lambda m: _UNESCAPED.get(m.group(1), "\\" + m.group(1)),
                                    value)
            if role[0] == "cluster":
                found.cluster = value
            else:
                found.fields[role[0]] = value
                if role[1] is not None:
                    found.folded = role[1]
    parts = text[rest:].split()
    if not 1 <= len(parts) <= 2 or _FLOAT.fullmatch(parts[0]) is None:
        return "not a metric sample (name, labels, value, optional timestamp)"
    count = count_value(float(parts[0]))
    if count is None:
        return f"the value {parts[0][:40]} is not a count (a whole number from 0 to 2**53)"
    found.count = count
    if found.cluster is None:
        return (f"no {cluster_label} label to name the cluster: give the label that names it "
                "(--cluster-label), or one file per cluster")
    if not found.cluster or len(found.cluster) > MAX_CLUSTER_NAME:
        return f"a cluster name of {len(found.cluster):,} characters (1 to {MAX_CLUSTER_NAME})"
    return found


def _software(fields: Mapping[str, str]) -> ClientSoftware | str:
    name, version = fields.get("name"), fields.get("version")
    if name is None or version is None:
        return "no clientSoftwareName and clientSoftwareVersion labels"
    problem = software_problem(name, version)
    return problem if problem is not None else ClientSoftware(name, version)


def _request(fields: Mapping[str, str], folded: tuple[str, str] | None
             ) -> tuple[int, int] | str | None:
    """``(api_key, version)`` of a request series; ``None`` for an alias; else why not."""
    request, version = folded if folded is not None else (
        fields.get("request"), fields.get("api_version"))
    if request is None or version is None:
        return "no request and version labels"
    if request.lower() in _ALIASES:
        return None
    key = api_key_named(request)
    if key is None:
        return f"request {request[:60]!r} is no Kafka API kclient knows"
    number = version_value(version)
    if number is None:
        return f"version {version[:20]!r} is not an API version (0-32767)"
    return key, number


def _read_series(builder: InventoryBuilder, family: str, kind: str, naming: str,
                 series: _Series) -> str | None:
    """Add one series to ``builder``; why it was not read (a bad line), or None."""
    fields = series.fields
    cluster = series.cluster
    assert cluster is not None
    if kind == "request metrics":  # the default naming: name="RequestsPerSec"...
        metric = fields.get("metric", "")
        kind = {"requestspersec": "requests",
                "deprecatedrequestspersec": "deprecated requests"}.get(metric.lower(), "")
        if not kind:
            builder.not_read(f'{family}{{name="{metric[:60]}"}}')
            return None
    if kind == "connections":
        if "name" not in fields and "version" not in fields:
            builder.not_read(f"{family} (without client software labels)")
            return None
        software = _software(fields)
        if isinstance(software, str):
            return software
        builder.connections(cluster, software, series.count)
    else:
        request = _request(fields, series.folded)
        if isinstance(request, str):
            return request
        if request is None:
            builder.recognised[f"{kind} under another name (not counted twice)"] += 1
            return None
        key, version = request
        if kind == "requests":
            builder.cluster_requests(cluster, key, version, series.count)
        else:
            software = _software(fields)
            if isinstance(software, str):
                return software
            builder.requests(cluster, software, key, version, series.count,
                             seen_in="DeprecatedRequestsPerSec", complete=False)
    builder.recognised[f"{kind} ({naming})"] += 1
    return None


def read_exposition(lines: Iterable[tuple[int, str]], file: str,
                    builder: InventoryBuilder, *, cluster: str,
                    cluster_label: str | None = None) -> None:
    """Read broker metrics in the Prometheus text format into ``builder``.

    ``lines`` are ``(number, text)``, each bounded (the readers leave out, and
    count, a line too long or not UTF-8); ``file`` names the input in bad lines;
    every series belongs to ``cluster``, or, with ``cluster_label``, to the value
    of that label (compared in lower case).
    """
    label = cluster_label.lower() if cluster_label is not None else None
    for number, line in lines:
        text = line.strip()
        if not text or text.startswith("#"):
            continue
        match = _NAME.match(text)
        if match is None:
            builder.bad(file, number, "not a metric sample (a line must start with a "
                        "metric name)")
            continue
        name = match.group()
        lowered = name.lower()
        family = lowered[:-6] if lowered.endswith("_total") else lowered
        known = FAMILIES.get(family)
        if known is None:
            builder.not_read(name)
            continue
        series = _series(text, match.end(), label, cluster)
        problem = series if isinstance(series, str) else _read_series(
            builder, family, *known, series)
        if problem is not None:
            builder.bad(file, number, f"{name}: {problem}")
