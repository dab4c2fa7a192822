"""Client inventories from files: broker metrics (three namings), CSV, JSON Lines; bounded.

The metrics files under tests/data/inventory are what the Prometheus JMX exporter
writes for the same two Kafka 3.9 brokers (tools of the fixture: the exporter's
naming, read in prometheus/jmx_exporter's JmxCollector, with no rules, with
Strimzi's kafka-metrics rules and with Confluent's jmx-monitoring-stacks rules):
each naming must give the same inventory.
"""

from __future__ import annotations

import json
import os
import re
import time
from pathlib import Path
from typing import Any

import pytest

from kclient.errors import InventoryError
from kclient.negotiation.inventory import (
    NAMED_PROBLEMS,
    ClusterInventory,
    Inventory,
    InventoryBuilder,
    SoftwareUse,
    inventory_record,
)
from kclient.negotiation.inventoryfile import read_inventory
from kclient.negotiation.software import ClientSoftware
from tests.conftest import REPO_ROOT

DATA = REPO_ROOT / "tests" / "data" / "inventory"
DEFAULT = DATA / "prod-eu.prom"
STRIMZI = DATA / "strimzi-federation.prom"
CONFLUENT = DATA / "confluent.prom"

PYTHON = ClientSoftware("confluent-kafka-python", "2.6.1-rdkafka-2.6.1")
UNKNOWN = ClientSoftware("unknown", "unknown")


def _shape(cluster: ClusterInventory) -> dict[str, Any]:
    return {"software": {(u.software.name, u.software.version): (u.connections, u.requests)
                         for u in cluster.software},
            "requests": dict(cluster.requests)}


def _halved(shape: dict[str, Any]) -> dict[str, Any]:
    return {"software": {k: (c // 2, {r: n // 2 for r, n in q.items()})
                         for k, (c, q) in shape["software"].items()},
            "requests": {r: n // 2 for r, n in shape["requests"].items()}}


def test_the_three_namings_give_the_same_inventory() -> None:
    default = read_inventory([str(DEFAULT)])
    strimzi = read_inventory([str(STRIMZI)], cluster_label="strimzi_io_cluster")
    confluent = read_inventory([str(CONFLUENT)])
    assert [c.name for c in default.clusters] == ["prod-eu"]
    assert [c.name for c in strimzi.clusters] == ["orders", "payments"]
    want = _shape(default.clusters[0])
    assert _shape(strimzi.clusters[0]) == want
    assert _shape(confluent.clusters[0]) == _halved(want)  # one broker of the two
    # What a 3.9 broker counts: the nameless clients' deprecated requests, Fetch once
    # (FetchConsumer counts the same requests again), every client's per version.
    unknown = next(u for u in default.clusters[0].software if u.software == UNKNOWN)
    assert unknown.requests == {(0, 2): 340, (1, 3): 1200, (3, 1): 24, (11, 1): 4}
    assert unknown.connections == 6 and not unknown.complete
    assert unknown.seen_in == "DeprecatedRequestsPerSec"
    assert default.clusters[0].requests[0, 9] == 10400
    # payments has no nameless client and no deprecated request.
    assert UNKNOWN not in {u.software for u in strimzi.clusters[1].software}
    assert {u.software for u in strimzi.clusters[1].software} == {
        u.software for u in default.clusters[0].software} - {UNKNOWN}


def test_what_was_read_and_what_was_not_is_said() -> None:
    notes = read_inventory([str(DEFAULT)]).notes()
    assert notes[0].startswith("read 5 client software entries on 1 cluster(s) from 1 file(s)")
    assert "10 connections (JMX exporter default naming)" in notes[0]
    assert "8 deprecated requests (JMX exporter default naming)" in notes[0]
    assert "2 deprecated requests under another name (not counted twice)" in notes[0]
    # Connections by TLS cipher share the family but name no software; rates are not counts.
    assert notes[1].startswith("not read: 25 series of 5 other metric families")
    assert "kafka_server_socket_server_metrics_connections (without client software labels)" \
        in notes[1]
    assert "kafka_network_RequestMetrics_OneMinuteRate (18)" in notes[1]
    strimzi = read_inventory([str(STRIMZI)], cluster_label="strimzi_io_cluster").notes()
    assert "8 deprecated requests (Strimzi's kafka-metrics rules)" in strimzi[0]
    confluent = read_inventory([str(CONFLUENT)]).notes()
    assert "4 deprecated requests (Confluent's jmx-monitoring-stacks rules)" in confluent[0]


def _variant(tmp_path: Path, name: str, text: str) -> Inventory:
    path = tmp_path / name
    path.write_text(text, encoding="utf-8")
    return read_inventory([str(path)])


def test_lower_case_names_labels_and_the_exporters_newer_text_read_alike(
        tmp_path: Path) -> None:
    text = DEFAULT.read_text(encoding="utf-8")
    want = _shape(read_inventory([str(DEFAULT)]).clusters[0])
    # lowercaseOutputName and lowercaseOutputLabelNames (label values keep their case).
    lowered = re.sub(r"^[^{]+", lambda m: m.group().lower(), text, flags=re.M)
    lowered = re.sub(r'([{,])([A-Za-z_]+)=', lambda m: m.group(1) + m.group(2).lower() + "=",
                     lowered)
    assert _shape(_variant(tmp_path, "prod-eu.prom", lowered).clusters[0]) == want
    # Exporter 1.x: HELP/TYPE lines, no trailing comma; OpenMetrics ends with # EOF.
    newer = "# HELP x y\n# TYPE kafka_network_RequestMetrics_Count untyped\n" + text.replace(
        ",}", "}") + "# EOF\n"
    (tmp_path / "newer").mkdir()
    assert _shape(_variant(tmp_path / "newer", "prod-eu.txt", newer).clusters[0]) == want


def test_a_cluster_label_splits_one_file_and_its_absence_is_said(tmp_path: Path) -> None:
    whole = read_inventory([str(STRIMZI)])
    assert [c.name for c in whole.clusters] == ["strimzi-federation"]
    with pytest.raises(InventoryError) as caught:
        read_inventory([str(STRIMZI)], cluster_label="kafka_cluster")
    message = str(caught.value)
    assert "no client software found" in message
    assert re.search(r"strimzi-federation\.prom:3: kafka_server_socket_server_metrics_"
                     r"connections_software: no kafka_cluster label to name the cluster: give "
                     r"the label that names it \(--cluster-label\)", message)


HOSTILE_LINES = [
    # (a line, what the bad line says)
    ('kafka_server_socket_server_metrics_connections{clientSoftwareName="a\\"b",'
     'clientSoftwareVersion="1"} 1', "client software name 'a\"b' is not one a broker reports"),
    ('kafka_server_socket_server_metrics_connections{clientSoftwareName="a\\nb",'
     'clientSoftwareVersion="1"} 1', "is not one a broker reports"),
    ('kafka_server_socket_server_metrics_connections{clientSoftwareName="app', "labels that are"),
    ('",clientSoftwareVersion="1"} 1', "not a metric sample"),
    ('kafka_server_socket_server_metrics_connections{clientSoftwareName="' + "x" * 300
     + '",clientSoftwareVersion="1"} 1', "a client software name of 300 characters"),
    ('kafka_server_socket_server_metrics_connections{clientSoftwareName="app",'
     'clientSoftwareVersion="1"} 1e300', "is not a count"),
    ('kafka_server_socket_server_metrics_connections{clientSoftwareName="app",'
     'clientSoftwareVersion="1"} NaN', "is not a count"),
    ('kafka_server_socket_server_metrics_connections{clientSoftwareName="app",'
     'clientSoftwareVersion="1"} -Inf', "is not a count"),
    ('kafka_server_socket_server_metrics_connections{clientSoftwareName="app",'
     'clientSoftwareVersion="1"} 1_000', "not a metric sample"),
    ('kafka_server_socket_server_metrics_connections{' + ",".join(
        f'l{i}="v"' for i in range(70)) + "} 1", "more than 64 labels"),
    ('kafka_network_RequestMetrics_Count{name="RequestsPerSec",request="Frobnicate",'
     'version="1"} 3', "request 'Frobnicate' is no Kafka API"),
    ('kafka_network_RequestMetrics_Count{name="RequestsPerSec",request="Produce",'
     'version="99999"} 3', "version '99999' is not an API version"),
    ('kafka_network_RequestMetrics_Count{name="DeprecatedRequestsPerSec",request="Produce",'
     'version="2"} 3', "no clientSoftwareName and clientSoftwareVersion labels"),
    ("{oops} 1", "a line must start with a metric name"),
]


def test_hostile_lines_are_counted_and_named_never_read(tmp_path: Path) -> None:
    good = ('kafka_server_socket_server_metrics_connections{clientSoftwareName="app",'
            'clientSoftwareVersion="1.0"} 2\n')
    body = good + "".join(line + "\n" for line, _ in HOSTILE_LINES)
    path = tmp_path / "hostile.prom"
    path.write_bytes(body.encode() + b"kafka_x{a=\"\xff\"} 1\n" + b"y" * (2 << 20) + b"\n"
                     + good.encode())
    found = read_inventory([str(path)])
    assert [(u.software, u.connections) for u in found.clusters[0].software] == [
        (ClientSoftware("app", "1.0"), 4)]
    assert found.bad_count == len(HOSTILE_LINES) + 2
    reasons = [b.text for b in found.bad_lines]
    for number, (_line, why) in enumerate(HOSTILE_LINES, start=2):
        assert any(r.startswith(f"{path}:{number}: ") and why in r for r in reasons), (why,
                                                                                        reasons)
    assert f"{path}:{len(HOSTILE_LINES) + 2}: not UTF-8 text (byte" in " ".join(reasons)
    assert f"{path}:{len(HOSTILE_LINES) + 3}: a line longer than kclient reads" in " ".join(
        reasons)


def test_past_the_bound_entries_are_counted_not_held(tmp_path: Path) -> None:
    path = tmp_path / "many.prom"
    with path.open("w", encoding="utf-8") as out:
        for i in range(5_000):
            out.write(f'kafka_server_socket_server_metrics_connections{{clientSoftwareName='
                      f'"app-{i}",clientSoftwareVersion="1.{i}"}} 1\n')
            out.write(f"jvm_thing_{i % 50}{{x=\"{i}\"}} 1\n")
    found = read_inventory([str(path)], builder=InventoryBuilder(max_entries=1_000))
    assert found.software_count == 1_000 and found.over_limit == 4_000
    assert "4000 entries past kclient's limit" in " ".join(found.notes())
    # Families not read are counted; only the first are named.
    assert found.unrecognised_series == 5_000
    assert len(found.unrecognised) == NAMED_PROBLEMS and found.unrecognised_families == 50


@pytest.mark.slow
def test_a_million_series_stay_bounded_and_typed(tmp_path: Path) -> None:
    path = tmp_path / "million.prom"
    with path.open("w", encoding="utf-8") as out:
        for i in range(1_000_000):
            out.write(f'kafka_network_RequestMetrics_Count{{name="DeprecatedRequestsPerSec",'
                      f'request="Produce",version="2",clientSoftwareName="app-{i}",'
                      f'clientSoftwareVersion="1.{i}",}} {i}.0\n')
    started = time.perf_counter()
    found = read_inventory([str(path)], builder=InventoryBuilder(max_entries=20_000))
    assert time.perf_counter() - started < 240
    assert found.software_count == 10_000  # a software and its request version: 2 entries
    assert found.over_limit == 990_000 + 0  # each refused series counted once
    assert found.recognised == (("deprecated requests (JMX exporter default naming)",
                                 1_000_000),)


# -- CSV and JSON Lines -----------------------------------------------------------------------
def test_a_csv_inventory_adds_up_its_rows_and_names_its_bad_ones(tmp_path: Path) -> None:
    path = tmp_path / "fleet.csv"
    path.write_text(
        "Cluster,Software_Name,software-version,connections,api,api_version,count\n"
        "prod,kafka-python,2.1.5,3,,,\n"
        "prod,kafka-python,2.1.5,2,Produce,2,40\n"
        "prod,kafka-python,2.1.5,,0,2,2\n"
        "prod,unknown,unknown,,Fetch,3,\n"
        ",sarama,dev,1,,,\n"
        "prod,bad name,1,1,,,\n"
        "prod,app,1,one,,,\n"
        "prod,app,1,,Frobnicate,1,1\n"
        "prod,app,1\n", encoding="utf-8")
    found = read_inventory([str(path)])
    assert [c.name for c in found.clusters] == ["fleet", "prod"]
    prod = {u.software.name: u for u in found.clusters[1].software}
    assert prod["kafka-python"].connections == 5
    assert prod["kafka-python"].requests == {(0, 2): 42}
    assert prod["unknown"].requests == {(1, 3): 1}  # an empty count: at least once
    assert found.clusters[0].software[0].software == ClientSoftware("sarama", "dev")
    assert [b.line for b in found.bad_lines] == [7, 8, 9, 10]
    assert "connections 'one' is not a whole number" in found.bad_lines[1].reason
    assert found.bad_lines[3].reason == "3 cells, the header has 7"
    headless = tmp_path / "headless.csv"
    headless.write_text("prod,kafka-python,2.1.5\n", encoding="utf-8")
    with pytest.raises(InventoryError, match=r"headless\.csv:1: a CSV inventory starts with a "
                       "header naming at least software_name and software_version"):
        read_inventory([str(headless)])


def test_json_lines_records_round_trip_and_bad_ones_are_named(tmp_path: Path) -> None:
    use = SoftwareUse("lab", ClientSoftware("kafka-python", "3.0.12"), 7,
                      {(0, 9): 12, (18, 4): 7}, complete=True, seen_in="kclient's emulator")
    path = tmp_path / "lab.jsonl"
    lines = [json.dumps(inventory_record(use)),
             '{"software_name": "kgo", "software_version": "v1.21.5", "requests": '
             '[{"api": "Produce", "version": 12, "count": 3}]}',
             "not json", "[1]", '{"software_name": "a b", "software_version": "1"}',
             '{"software_name": "x", "software_version": "1", "requests": [{"api_key": 0}]}',
             '{"software_name": "x", "software_version": "1", "connections": -1}',
             '[' * 100_000]
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    found = read_inventory([str(path)])
    lab = found.cluster("lab")
    assert lab is not None and lab.software[0] == use  # what was written is read back
    kgo = lab.software[1]  # no cluster: the file's name
    assert kgo.software == ClientSoftware("kgo", "v1.21.5") and kgo.requests == {(0, 12): 3}
    assert not kgo.complete and kgo.seen_in == "the inventory file"
    assert [b.line for b in found.bad_lines] == [3, 4, 5, 6, 7, 8]
    assert found.bad_lines[3].reason == (
        "requests[0]: the API version 'None' is not one (0-32767)")
    assert "nested too deeply" in found.bad_lines[5].reason


def test_files_directories_and_globs(tmp_path: Path) -> None:
    folder = tmp_path / "metrics"
    folder.mkdir()
    for name in ("a.prom", "b.prom", ".hidden.prom"):
        (folder / name).write_text(DEFAULT.read_text(encoding="utf-8"), encoding="utf-8")
    found = read_inventory([str(folder), str(folder / "a.prom")])
    assert [c.name for c in found.clusters] == ["a", "b"]  # a.prom read once
    assert len(found.files) == 2
    assert [c.name for c in read_inventory([str(folder / "*.prom")]).clusters] == ["a", "b"]
    with pytest.raises(InventoryError, match="no file matches"):
        read_inventory([str(tmp_path / "nope-*.prom")])
    with pytest.raises(InventoryError, match="does not exist"):
        read_inventory([str(tmp_path / "missing.prom")])
    fifo = tmp_path / "pipe.prom"
    os.mkfifo(fifo)
    with pytest.raises(InventoryError, match="is a FIFO"):
        read_inventory([str(fifo)])
    empty = tmp_path / "empty.prom"
    empty.write_text("jvm_threads 12\n", encoding="utf-8")
    with pytest.raises(InventoryError, match=r"no client software found \(not read: 1 series"):
        read_inventory([str(empty)])
