"""kclient compat: client libraries against releases, snapshots and live emulated clusters."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from kclient.contracts import load_schema
from kclient.emulator import EmulatedCluster, ThreadedEmulator
from tests.contract_check import validate

from .conftest import run_kclient

pytestmark = [pytest.mark.timeout(120)]


def _json(*args: str) -> tuple[int, Any]:
    result = run_kclient("compat", *args, "--format", "json")
    assert result.returncode in (0, 1, 3), result.stderr
    document = json.loads(result.stdout)
    errors = validate(document, load_schema("compat"), strict=True)
    assert errors == [], errors[:5]
    return result.returncode, document


def _verdicts(document: Any) -> dict[tuple[str, str, str], dict[str, Any]]:
    return {(cluster["cluster"], f"{c['client']} {c['version'] or c['line']}", f["name"]): f
            for cluster in document["clusters"] for c in cluster["clients"]
            for f in c["features"]}


def test_release_4_0_judges_each_client_with_its_own_versions() -> None:
    code, document = _json("--release", "4.0", "--client", "aiokafka==0.14.0",
                           "--client", "kafka-python==2.0.2", "--client", "java==2.0")
    found = _verdicts(document)
    aiokafka = found[("Kafka 4.0", "aiokafka 0.14.0", "idempotence")]
    assert aiokafka["state"] == "works"
    assert {"api_key": 22, "name": "InitProducerId", "version": 0, "highest_version": 0,
            "blocking_brokers": []} in aiokafka["apis"]
    # zstd works on default topics (Fetch v4 reads zstd batches); it breaks only on topics
    # configured compression.type=zstd, and the verdict says so.
    zstd = found[("Kafka 4.0", "kafka-python 2.0.2", "zstd")]
    assert zstd["state"] == "works" and zstd["reason"] is None
    assert zstd["caveats"] == ["consuming breaks on topics with compression.type=zstd (it "
                               "sends Fetch v4; those topics need Fetch v10+, KIP-110)"]
    java = found[("Kafka 4.0", "java 2.0", "produce")]
    assert java["state"] == "works" and java["support"][0].startswith(
        "Apache calls Java clients 0.x, 1.x and 2.0 'not compatible' with Kafka 4.0")
    assert ("Kafka 4.0", "java 2.0", "zstd") not in found  # zstd came in 2.1: not its feature
    # kafka-python 2.0.2's producer sends Metadata v1, its admin client v5.
    produce = found[("Kafka 4.0", "kafka-python 2.0.2", "produce")]
    admin = found[("Kafka 4.0", "kafka-python 2.0.2", "admin")]
    assert ("Metadata", 1) in [(a["name"], a["version"]) for a in produce["apis"]]
    assert ("Metadata", 5) in [(a["name"], a["version"]) for a in admin["apis"]]
    assert code == 0  # works on the wire, support statements beside


def test_a_mixed_cluster_breaks_one_table_clients_only() -> None:
    # kafkajs picks Produce v7 from the 4.0 broker's answer and sends it to the 2.0
    # broker too (0-6); librdkafka picks per broker.
    code, document = _json("--release", "4.0,2.0", "--client", "kafkajs==2.2.4",
                           "--client", "librdkafka==2.15.0", "--feature", "produce")
    found = _verdicts(document)
    cluster = document["clusters"][0]["cluster"]
    kafkajs = found[(cluster, "kafkajs 2.2.4", "produce")]
    assert kafkajs["state"] == "breaks"
    assert "picks v7 from broker 1" in kafkajs["reason"] and "broker 2 offers 0-6" in (
        kafkajs["reason"])
    assert found[(cluster, "librdkafka 2.15.0", "produce")]["state"] == "works"
    assert code == 1


def test_kip_896_breaks_an_old_library_that_one_old_broker_decides_for() -> None:
    # kafka-python 1.4.7 guesses the release from the first broker (0.10.2: Produce v2)
    # and sends v2 to the 4.0 broker too, which removed it; librdkafka picks per broker.
    code, document = _json("--release", "0.10.2,4.0", "--client", "kafka-python==1.4.7",
                           "--client", "librdkafka==2.3.0", "--feature", "produce")
    found = _verdicts(document)
    cluster = document["clusters"][0]["cluster"]
    old = found[(cluster, "kafka-python 1.4.7", "produce")]
    assert old["state"] == "breaks"
    assert old["reason"].endswith("broker 2 offers 3-12; Produce v2 removed in Kafka 4.0 (KIP-896)")
    modern = found[(cluster, "librdkafka 2.3.0", "produce")]
    produce = next(a for a in modern["apis"] if a["name"] == "Produce")
    assert modern["state"] == "works" and (produce["version"], produce["highest_version"]) == (
        2, 7)
    assert code == 1


def test_everything_works_exits_0_and_the_table_names_versions() -> None:
    result = run_kclient("compat", "--release", "3.9", "--client", "aiokafka==0.14.0",
                         "--feature", "produce")
    assert result.returncode == 0, result.stderr
    assert "aiokafka 0.14.0" in result.stdout and "Produce v7" in result.stdout
    assert "WORKS" in result.stdout


def test_a_silent_broker_makes_verdicts_unknown(tmp_path: Path) -> None:
    records = [
        {"cluster": "c", "broker_id": 1, "host": "10.0.0.1", "port": 9092,
         "observed_at": "2026-11-22T10:00:00Z", "source": "api_versions",
         "api_versions": [{"api_key": 0, "min_version": 3, "max_version": 12},
                          {"api_key": 3, "min_version": 0, "max_version": 12},
                          {"api_key": 18, "min_version": 0, "max_version": 4}]},
        {"cluster": "c", "broker_id": 2, "host": "10.0.0.2", "port": 9092,
         "observed_at": "2026-11-22T10:00:00Z", "source": "error", "api_versions": [],
         "error": "connection refused"},
    ]
    snapshot = tmp_path / "s.jsonl"
    snapshot.write_text("".join(json.dumps(r) + "\n" for r in records), encoding="utf-8")
    code, document = _json("--snapshot", str(snapshot), "--client", "aiokafka==0.14.0",
                           "--feature", "produce")
    produce = _verdicts(document)[("c", "aiokafka 0.14.0", "produce")]
    assert produce["state"] == "unknown" and "not answered" in produce["reason"]
    assert code == 3
    code, document = _json("--snapshot", str(snapshot), "--client", "aiokafka==0.14.0",
                           "--feature", "produce", "--lenient")
    assert _verdicts(document)[("c", "aiokafka 0.14.0", "produce")]["state"] == "works"
    assert code == 0


@pytest.mark.integration
def test_live_cluster_is_judged_like_its_releases() -> None:
    with ThreadedEmulator(EmulatedCluster(["2.0", "4.0"], cluster_id="compat")) as emulator:
        code, live = _json("--bootstrap-server", emulator.bootstrap_servers,
                           "--client", "kafkajs==2.2.4", "--client", "sarama==1.45.2")
    _, offline = _json("--release", "2.0,4.0", "--client", "kafkajs==2.2.4",
                       "--client", "sarama==1.45.2")

    def states(document: Any) -> dict[tuple[str, str], str]:
        return {(k[1], k[2]): v["state"] for k, v in _verdicts(document).items()}

    assert states(live) == states(offline)
    assert code == 1


@pytest.mark.integration
@pytest.mark.parametrize("release", ["2.0", "3.9", "4.0"])
def test_every_client_live_on_an_emulated_release_matches_the_offline_verdicts(
        release: str) -> None:
    with ThreadedEmulator(EmulatedCluster([release], cluster_id=f"c-{release}")) as emulator:
        _, live = _json("--bootstrap-server", emulator.bootstrap_servers)
    _, offline = _json("--release", release)

    def states(document: Any) -> dict[tuple[str, str], tuple[str, Any]]:
        return {(k[1], k[2]): (v["state"], [(a["name"], a["version"]) for a in v["apis"]])
                for k, v in _verdicts(document).items()}

    found = states(live)
    assert found == states(offline)
    clients = {client for client, _ in found}
    assert len(clients) == len(live["clusters"][0]["clients"]) >= 8


@pytest.mark.parametrize(("args", "message"), [
    (["--release", "9.9"], "--release 9.9: unknown Kafka release"),
    (["--release", "4.0", "--client", "nosuch"], "--client nosuch: no profile"),
    (["--release", "4.0", "--feature", "nope"], "unknown client feature 'nope'"),
    (["--release", "4.0", "--client", "installed:kafkajs"], "not a Python library"),
    ([], "nothing to inspect"),
])
def test_bad_input_is_one_line_and_exit_2(args: list[str], message: str) -> None:
    result = run_kclient("compat", *args)
    assert result.returncode == 2
    assert message in result.stderr and result.stderr.count("\n") == 1
    assert "Traceback" not in result.stderr


def test_an_unprofiled_release_is_unknown_and_the_others_are_judged() -> None:
    code, document = _json("--release", "4.0", "--client", "kafkajs==1.16.0",
                           "--client", "aiokafka==9.9", "--client", "aiokafka==0.11",
                           "--feature", "produce")
    clients = document["clusters"][0]["clients"]
    unknown = next(c for c in clients if c["version"] == "9.9")
    assert unknown["profiled"] is False and unknown["features"] == []
    assert unknown["nearest"] == "aiokafka 0.14.x" and "is not profiled" in unknown["note"]
    judged = [c for c in clients if c["profiled"]]
    assert [(c["client"], c["line"], c["features"][0]["state"]) for c in judged] == [
        ("kafkajs", "1.16", "works"), ("aiokafka", "0.11", "works")]
    assert code == 3
    table = run_kclient("compat", "--release", "4.0", "--client", "aiokafka==9.9")
    assert table.returncode == 3
    assert "aiokafka 9.9  *        UNKNOWN  aiokafka 9.9 is not profiled" in table.stdout


def test_aiokafka_before_0_13_is_judged_by_the_worst_broker_it_may_ask() -> None:
    # It asks any broker of the cluster, at random: both orders give the same verdict.
    for order in ("2.0,4.0", "4.0,2.0"):
        _, document = _json("--release", order, "--client", "aiokafka==0.11.0",
                            "--feature", "produce")
        produce = document["clusters"][0]["clients"][0]["features"][0]
        assert produce["state"] == "breaks", order
        assert produce["reason"].startswith(
            "depends on which broker it asks at start-up (any broker of the cluster, at "
            "random): Produce: aiokafka 0.11.0 picks v7 from broker "), order


def test_the_aiokafka_0_8_line_sends_the_group_versions_of_its_source() -> None:
    _, document = _json("--release", "3.9", "--client", "aiokafka==0.8.1",
                        "--client", "aiokafka==0.12.0", "--feature", "consume_group")
    sent = [{a["name"]: a["version"] for a in c["features"][0]["apis"]}
            for c in document["clusters"][0]["clients"]]
    assert (sent[0]["JoinGroup"], sent[0]["SyncGroup"]) == (2, 1)
    assert (sent[1]["JoinGroup"], sent[1]["SyncGroup"]) == (5, 3)


def test_upgrade_shows_only_what_changes_newly_broken_first() -> None:
    code, document = _json("--from", "3.6", "--to", "4.0", "--client", "java 1.1",
                           "--client", "java 0.10.2", "--feature", "produce")
    changes = document["changes"]
    assert [(c["client"], c["line"], c["phase"], c["change"]) for c in changes] == [
        ("java", "0.10.2", "during", "breaks"), ("java", "1.1", "during", "support")]
    assert changes[0]["before"]["state"] == "works" and changes[0]["after"]["state"] == (
        "breaks")
    assert [c["cluster"] for c in document["clusters"]] == [
        "Kafka 3.6 (ZooKeeper)", "Kafka 3.6 (ZooKeeper) + 4.0 (during the roll)", "Kafka 4.0"]
    assert code == 1
    nothing = run_kclient("compat", "--from", "3.9", "--to", "4.0", "--client",
                          "librdkafka==2.15.0", "--feature", "produce")
    assert nothing.returncode == 0, nothing.stderr
    assert "breaks nothing new for these clients" in nothing.stdout
    unknown = run_kclient("compat", "--from", "3.9", "--to", "4.0", "--client",
                          "aiokafka==9.9")
    assert unknown.returncode == 3 and "is not profiled" in unknown.stdout


@pytest.mark.integration
def test_live_one_table_clients_take_the_broker_listed_first() -> None:
    # kafkajs takes every version from the first broker the application lists: listing
    # the 2.0 broker first, it sends 2.0's versions to both and works.
    with ThreadedEmulator(EmulatedCluster(["4.0", "2.0"], cluster_id="boot")) as emulator:
        old_first = ",".join(reversed(emulator.bootstrap_servers.split(",")))
        code, document = _json("--bootstrap-server", old_first, "--client", "kafkajs==2.2.4",
                               "--feature", "produce")
        assert document["clusters"][0]["bootstrap"] == [2, 1]
        assert document["clusters"][0]["clients"][0]["features"][0]["state"] == "works"
        assert code == 0
        code, document = _json("--bootstrap-server", emulator.bootstrap_servers,
                               "--client", "kafkajs==2.2.4", "--feature", "produce")
        assert document["clusters"][0]["clients"][0]["features"][0]["state"] == "breaks"
        assert code == 1
