"""api-versions, features and probe against live peers, through the console script.

The peers are an emulated Kafka 2.0 + 3.9 cluster (``kclient emulate``) and the
real tansu broker; both table and JSON outputs are checked against the release
profiles, and live answers against the same data recorded with ``probe``.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable
from pathlib import Path

import pytest

from kclient.negotiation import release_profile
from kclient.negotiation.snapshot import read_snapshots
from tests.conftest import TansuBroker
from tests.extras import needs_extra

from .conftest import Emulator, run_kclient

pytestmark = [pytest.mark.integration, pytest.mark.timeout(120)]


def _ok(*args: str) -> str:
    result = run_kclient(*args)
    assert result.returncode == 0, result.stderr
    return result.stdout


def test_api_versions_table_has_kafka_layout(mixed_cluster: Emulator) -> None:
    out = _ok("api-versions", "--bootstrap-server", mixed_cluster.bootstrap)
    heads = re.findall(r"^(\S+) \(id: (\d+) rack: null isFenced: false\) -> \($", out,
                       flags=re.MULTILINE)
    assert [int(node) for _, node in heads] == [1, 2]
    # Scripts splitting on "-> (" (as for Kafka's tool) see the two brokers only.
    assert out.count("-> (") == 2
    old, new = release_profile("2.0")[0], release_profile("3.9")[0]
    assert f"\tProduce(0): {old.min} to {old.max} [usable: {old.max}]," in out
    assert f"\tProduce(0): {new.min} to {new.max} [usable: {new.max}]," in out
    assert "\trelease guess: 2.0" in out and "\trelease guess: 3.9" in out
    assert "cluster-wide usable versions" in out
    assert f"Produce(0): {max(old.min, new.min)} to {min(old.max, new.max)} " \
           f"[usable: {min(old.max, new.max)}]" in out


def test_api_versions_json_follows_the_contract(mixed_cluster: Emulator) -> None:
    data = json.loads(_ok("api-versions", "-b", mixed_cluster.bootstrap, "--format", "json"))
    assert data["format"] == "kclient.api-versions/1"
    (cluster,) = data["clusters"]
    brokers = cluster["brokers"]
    assert [b["broker_id"] for b in brokers] == [1, 2]
    assert [b["release_guess"] for b in brokers] == ["2.0", "3.9 (ZooKeeper)"]
    assert all(b["source"] == "api_versions" and b["error"] is None for b in brokers)
    for broker, release in zip(brokers, ("2.0", "3.9"), strict=True):
        profile = release_profile(release)
        assert broker["api_versions"][0] == {
            "api_key": 0, "name": "Produce", "min_version": profile[0].min,
            "max_version": profile[0].max, "usable_version": profile[0].max}
        assert len(broker["api_versions"]) == len(profile)
    produce = cluster["cluster_wide"][0]
    assert produce["name"] == "Produce"
    assert produce["max_version"] == min(release_profile(r)[0].max for r in ("2.0", "3.9"))


def test_features_table_json_and_require(mixed_cluster: Emulator) -> None:
    table = _ok("features", "-b", mixed_cluster.bootstrap)
    # The ZSTD row and its reasons (wrapped under it at the default width of 80).
    zstd = table[table.index("\nZSTD") + 1:].split("\n")
    zstd = [zstd[0], *(line for line in zstd[1:] if line.startswith(" "))][:3]
    assert " no " in zstd[0] and "1 of 2; blocking: 1" in zstd[0]
    assert "broker 1 offers" in " ".join(zstd)
    data = json.loads(_ok("features", "-b", mixed_cluster.bootstrap, "--format", "json"))
    features = {f["name"]: f for f in data["clusters"][0]["features"]}
    assert features["ZSTD"]["available"] is False
    assert features["ZSTD"]["brokers"] == [{"broker_id": 1, "usable": False},
                                           {"broker_id": 2, "usable": True}]
    assert features["IdempotentProducer"]["available"] is True
    ok = run_kclient("features", "-b", mixed_cluster.bootstrap, "--require",
                     "IdempotentProducer")
    assert ok.returncode == 0, ok.stderr
    failed = run_kclient("features", "-b", mixed_cluster.bootstrap, "--require", "ZSTD")
    assert failed.returncode == 1
    assert "requirement failed: ZSTD" in failed.stderr and "Traceback" not in failed.stderr


def test_probe_records_match_live_answers(mixed_cluster: Emulator, tmp_path: Path) -> None:
    record = tmp_path / "fleet.jsonl"
    for _ in range(2):
        result = run_kclient("probe", "-b", mixed_cluster.bootstrap, "--cluster", "lab",
                             "--record", str(record))
        assert result.returncode == 0, result.stderr
    records = read_snapshots(record)
    assert len(records) == 4 and {r.cluster for r in records} == {"lab"}
    assert {r.broker_id for r in records} == {1, 2}
    assert all(r.source == "api_versions" for r in records)
    first = next(r for r in records if r.broker_id == 1)
    assert dict(first.api_versions) == dict(release_profile("2.0"))
    live = json.loads(_ok("features", "-b", mixed_cluster.bootstrap, "--cluster", "lab",
                          "--format", "json"))
    offline = json.loads(_ok("features", "--snapshot", str(record), "--format", "json"))
    assert live == offline
    stdout = _ok("probe", "-b", mixed_cluster.bootstrap, "--cluster", "lab")
    assert [json.loads(line)["broker_id"] for line in stdout.splitlines()] == [1, 2]


def test_probe_records_parquet_that_matches_json_lines(mixed_cluster: Emulator,
                                                       tmp_path: Path) -> None:
    pq = needs_extra("fleet", "pyarrow.parquet")  # Parquet records
    table = tmp_path / "fleet.parquet"
    for _ in range(2):  # the second probe appends to the first one's rows
        result = run_kclient("probe", "-b", mixed_cluster.bootstrap, "--cluster", "lab",
                             "--record", str(table))
        assert result.returncode == 0, result.stderr
    lines = tmp_path / "fleet.jsonl"
    assert run_kclient("probe", "-b", mixed_cluster.bootstrap, "--cluster", "lab",
                       "--record", str(lines)).returncode == 0
    rows = pq.read_table(str(table)).to_pylist()
    assert [row["broker_id"] for row in rows] == [1, 2, 1, 2]
    for row in rows:
        for key in ("supported_features", "finalized_features"):
            row[key] = dict(row[key])
    wanted = [json.loads(line) for line in lines.read_text().splitlines()]
    for row, want in zip(rows[2:], wanted, strict=True):
        row.pop("observed_at")
        want.pop("observed_at")
        assert row == want


def test_probe_unreachable_writes_error_records(tmp_path: Path) -> None:
    import socket

    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]  # closed again: nothing listens there
    record = tmp_path / "down.jsonl"
    result = run_kclient("probe", "-b", f"127.0.0.1:{port}", "--cluster", "down",
                         "--record", str(record), "--timeout", "2")
    assert result.returncode == 2
    assert result.stderr.startswith("kclient: error:") and result.stderr.count("\n") == 1
    (only,) = read_snapshots(record)
    assert only.source == "error" and only.broker_id == -1 and only.port == port
    assert only.error
    # The library's one builder of unreachable-server records made it.
    from kclient.negotiation.snapshot import unreachable_records

    assert [only] == unreachable_records("down", f"127.0.0.1:{port}", only.error,
                                         only.observed_at)


def test_fallback_for_legacy_broker(emulator: Callable[..., Emulator]) -> None:
    emu = emulator("--release", "0.9", "--behaviour", "legacy", "--port", "0")
    failed = run_kclient("api-versions", "-b", emu.bootstrap, "--timeout", "3")
    assert failed.returncode == 2 and "--api-version-fallback" in failed.stderr
    data = json.loads(_ok("api-versions", "-b", emu.bootstrap, "--api-version-fallback",
                          "0.9.0", "--format", "json"))
    assert data["clusters"][0]["brokers"][0]["source"] == "fallback:0.9.0"
    # However the release is written, the label names it as Kafka does.
    data = json.loads(_ok("api-versions", "-b", emu.bootstrap, "--api-version-fallback",
                          "0.9", "--format", "json"))
    assert data["clusters"][0]["brokers"][0]["source"] == "fallback:0.9.0"


def test_client_software_and_bad_flags(mixed_cluster: Emulator, tmp_path: Path) -> None:
    _ok("api-versions", "-b", mixed_cluster.bootstrap, "--client-software", "ci-gate/1.0")
    cases = [
        (["api-versions", "-b", "nohost:"], "--bootstrap-server"),
        (["api-versions", "-b", mixed_cluster.bootstrap, "--client-software", "bad name/1"],
         "--client-software"),
        (["api-versions", "-b", mixed_cluster.bootstrap, "--api-version-fallback", "7.7"],
         "--api-version-fallback"),
        (["features", "-b", mixed_cluster.bootstrap, "--features", "missing.yaml"],
         "missing.yaml"),
        (["api-versions", "-b", mixed_cluster.bootstrap, "--snapshot", "x.jsonl"],
         "not both"),
        (["api-versions", "--no-such-flag"], "unrecognized arguments"),
        (["probe", "-b", mixed_cluster.bootstrap], "--cluster"),
    ]
    for argv, fragment in cases:
        result = run_kclient(*argv, cwd=tmp_path)
        assert result.returncode == 2, (argv, result.stderr)
        assert fragment in result.stderr, (argv, result.stderr)
        assert "Traceback" not in result.stderr and result.stderr.count("\n") == 1, argv


def test_tansu_table_and_json(tansu: TansuBroker) -> None:
    out = _ok("api-versions", "-b", tansu.bootstrap)
    assert re.search(r"^\S+ \(id: -?\d+ rack: \S+ isFenced: false\) -> \($", out,
                     flags=re.MULTILINE)
    assert "\tApiVersions(18): " in out and "release guess: " in out
    data = json.loads(_ok("api-versions", "-b", tansu.bootstrap, "--format", "json"))
    (cluster,) = data["clusters"]
    (broker,) = cluster["brokers"]
    apis = {a["name"]: a for a in broker["api_versions"]}
    assert broker["error"] is None and apis["ApiVersions"]["usable_version"] is not None
    wide = {a["name"]: a for a in cluster["cluster_wide"]}
    assert wide["Metadata"]["usable_version"] is not None
    features = json.loads(_ok("features", "-b", tansu.bootstrap, "--format", "json"))
    verdicts = {f["name"]: f for f in features["clusters"][0]["features"]}
    assert verdicts["ApiVersion"]["available"] is True


def test_legacy_broker_error_names_the_cli_flag(
        emulator: Callable[..., Emulator]) -> None:
    legacy = emulator("--release", "0.9.0", "--port", "0", "--behaviour", "legacy")
    result = run_kclient("api-versions", "-b", legacy.bootstrap, "--timeout", "5")
    assert result.returncode == 2
    assert "--api-version-fallback (e.g. --api-version-fallback 0.9.0)" in result.stderr
    assert "api_version_fallback=" not in result.stderr
    assert len(result.stderr.strip().splitlines()) == 1
    fallback = run_kclient("api-versions", "-b", legacy.bootstrap, "--timeout", "5",
                           "--api-version-fallback", "0.9.0")
    assert fallback.returncode == 0, fallback.stderr
    assert "\tsource: fallback:0.9.0;" in fallback.stdout


def test_probe_keeps_an_authentication_failure_distinct(tmp_path: Path) -> None:
    from kclient.cli import build_parser
    from kclient.commands.probe import run_probe
    from kclient.emulator import EmulatedCluster, ThreadedEmulator
    from kclient.emulator.sasl import SaslServerConfig
    from kclient.errors import AuthenticationError

    secret = tmp_path / "password"
    secret.write_text("wr0ng-pa55\n", encoding="utf-8")
    server = SaslServerConfig(users={"alice": "r1ght-pa55"})
    with ThreadedEmulator(EmulatedCluster(["3.9"], sasl=server)) as emu:
        args = build_parser().parse_args([
            "probe", "-b", emu.bootstrap_servers, "--cluster", "c", "--record",
            str(tmp_path / "c.jsonl"), "--timeout", "5", "--security-protocol",
            "SASL_PLAINTEXT", "--sasl-mechanism", "PLAIN",
            "--sasl-username", "alice", "--sasl-password-file", str(secret)])
        with pytest.raises(AuthenticationError, match="no broker of cluster c reachable"):
            run_probe(args)


@pytest.mark.parametrize("columns", [80, 120])
def test_features_table_fits_the_terminal_with_30_brokers(
        emulator: Callable[..., Emulator], columns: int) -> None:
    import subprocess

    from .conftest import KCLIENT, kclient_env

    releases = ",".join("0.10.2" if node == 7 else "3.9" for node in range(1, 31))
    emu = emulator("--release", releases, "--port", "0")
    env = {**kclient_env(), "COLUMNS": str(columns)}

    def features(*extra: str) -> str:
        result = subprocess.run([str(KCLIENT), "features", "-b", emu.bootstrap, *extra],
                                capture_output=True, text=True, timeout=120, env=env)
        assert result.returncode == 0, result.stderr
        return result.stdout

    table = features()
    lines = table.splitlines()
    assert max(len(line) for line in lines) <= columns, table
    zstd = next(line for line in lines if line.startswith("ZSTD"))
    assert "29 of 30; blocking: 7" in zstd
    # A reason shared by many brokers is said once, for all of them.
    assert "brokers 1-30 lack it" in " ".join(table.split())
    assert table.count("broker 1 lacks it") == 0
    wide = features("--wide")
    zstd_wide = next(line for line in wide.splitlines() if line.startswith("ZSTD"))
    assert all(f"{node}:{'no' if node == 7 else 'yes'}" in zstd_wide.split()
               for node in range(1, 31))
    assert max(len(line) for line in wide.splitlines()) > columns  # --wide does not wrap
