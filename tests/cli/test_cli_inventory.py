"""kclient compat --inventory and kclient emulate --inventory, through the console script."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from kclient.contracts import load_schema
from tests.conftest import REPO_ROOT
from tests.contract_check import validate

from .conftest import Emulator, run_kclient

pytestmark = [pytest.mark.timeout(120)]

DATA = REPO_ROOT / "tests" / "data" / "inventory"


def _json(*args: str) -> tuple[int, Any]:
    result = run_kclient("compat", *args, "--format", "json")
    assert result.returncode in (0, 1, 3), result.stderr
    document = json.loads(result.stdout)
    errors = validate(document, load_schema("readiness"), strict=True)
    assert errors == [], errors[:5]
    return result.returncode, document


def test_broker_metrics_name_the_blocking_client_first() -> None:
    result = run_kclient("compat", "--inventory", str(DATA / "prod-eu.prom"), "--release", "4.0")
    assert result.returncode == 1, result.stderr
    lines = result.stdout.splitlines()
    assert lines[0] == ("cluster prod-eu on Kafka 4.0: BLOCKED (1 of 5 client software break, "
                        "6 of 28 connections)")
    assert lines[1].split() == ["CLIENT", "SOFTWARE", "CONNECTIONS", "VERDICT", "EVIDENCE"]
    assert lines[2].startswith("unknown (no name sent)")
    assert "BREAKS   observed: the brokers saw it send Fetch v3 (1,200 requests), Produce v2 " \
           "(340 requests): removed in Kafka 4.0 (KIP-896)" in lines[2]
    assert "kclient compat: read 5 client software entries on 1 cluster(s)" in result.stderr


def test_json_follows_the_readiness_contract_and_exit_codes_follow_compat() -> None:
    code, document = _json("--inventory", str(DATA / "strimzi-federation.prom"),
                           "--cluster-label", "strimzi_io_cluster", "--release", "4.0")
    assert code == 1
    assert [(c["cluster"], c["state"]) for c in document["clusters"]] == [
        ("orders", "blocked"), ("payments", "unknown")]
    first = document["clusters"][0]["software"][0]
    assert first["state"] == "breaks" and first["evidence"][0]["kind"] == "observed"
    assert {"api": "Produce", "api_key": 0, "version": 2, "count": 340,
            "refused": "removed in Kafka 4.0 (KIP-896)"} in first["observed"]
    python = next(s for s in document["clusters"][1]["software"]
                  if s["software_name"] == "confluent-kafka-python")
    assert (python["library"], python["release"], python["binding"], python["profile"]) == (
        "librdkafka", "2.6.1", "confluent-kafka-python 2.6.1", "librdkafka 2.6.1")
    assert document["inventory"]["read"]["connections (Strimzi's kafka-metrics rules)"] == 18
    code, payments = _json("--inventory", str(DATA / "strimzi-federation.prom"),
                           "--cluster-label", "strimzi_io_cluster", "--release", "4.0",
                           "--cluster", "payments")
    assert code == 3 and [c["cluster"] for c in payments["clusters"]] == ["payments"]


def test_a_csv_inventory_of_clients_that_work_exits_0(tmp_path: Path) -> None:
    path = tmp_path / "fleet.csv"
    path.write_text("cluster,software_name,software_version,connections\n"
                    "prod,apache-kafka-java,3.9.0,4\nprod,kafka-python,3.0.12,2\n",
                    encoding="utf-8")
    result = run_kclient("compat", "--inventory", str(path), "--release", "4.0")
    assert result.returncode == 0, result.stdout + result.stderr
    assert result.stdout.startswith("cluster prod on Kafka 4.0: READY (0 of 2 client software "
                                     "break, 0 of 6 connections)")


@pytest.mark.parametrize("args, message", [
    (["--inventory", "missing.prom", "--release", "4.0"], "missing.prom: the inventory file"),
    (["--inventory", "x.prom", "--client", "kafkajs", "--release", "4.0"], "leave out --client"),
    (["--inventory", "x.prom", "--release", "3.9", "--release", "4.0"], "one --release"),
    (["--inventory", "x.prom"], "one --release"),
    (["--release", "4.0", "--cluster-label", "x"], "--cluster-label goes with --inventory"),
])
def test_bad_input_is_one_line_and_exit_2(tmp_path: Path, args: list[str],
                                          message: str) -> None:
    (tmp_path / "x.prom").write_text("", encoding="utf-8")
    result = run_kclient("compat", *args, cwd=tmp_path)
    assert result.returncode == 2
    assert message in result.stderr and len(result.stderr.strip().splitlines()) == 1
    assert "Traceback" not in result.stderr


@pytest.mark.integration
def test_emulate_writes_the_inventory_of_its_connections(
        emulator: Callable[..., Emulator], tmp_path: Path) -> None:
    path = tmp_path / "lab.jsonl"
    emu = emulator("--release", "3.9", "--port", "0", "--inventory", str(path))
    for name in ("first-app/1.0.0", "second-app/2.1"):
        probe = run_kclient("probe", "-b", emu.bootstrap, "--cluster", "lab",
                            "--client-software", name)
        assert probe.returncode == 0, probe.stderr
    code, _out, err = emu.stop()
    assert code == 0 and f"inventory of 2 client software written to {path}" in err
    records = [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines()]
    for record in records:
        assert validate(record, load_schema("inventory-record"), strict=True) == []
    assert {(r["software_name"], r["software_version"], r["connections"]) for r in records} == {
        ("first-app", "1.0.0", 1), ("second-app", "2.1", 1)}
    assert all(r["complete"] and r["source"] == "kclient's emulator" for r in records)
    assert {(q["api"], q["version"]) for q in records[0]["requests"]} >= {
        ("ApiVersions", 4), ("Metadata", 12)}
    code, document = _json("--inventory", str(path), "--release", "4.0")
    assert code == 3  # names no library knows: unknown, nothing they sent is refused
    assert {s["state"] for s in document["clusters"][0]["software"]} == {"unknown"}
