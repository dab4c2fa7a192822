"""`kclient api-versions` and `kclient features` on recorded snapshots (no network)."""

from __future__ import annotations

import argparse
import itertools
import json
import re
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from kclient.negotiation import (
    BrokerVersions,
    SnapshotRecord,
    fallback_broker,
    release_profile,
    write_snapshots,
)

pytestmark = pytest.mark.timeout(120)


def _kclient(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "kclient.cli", *args],
                          capture_output=True, text=True, timeout=60, check=False)


@pytest.fixture
def snapshot(tmp_path: Path) -> Path:
    when = "2026-11-22T10:00:00Z"
    records = [
        SnapshotRecord.from_broker("prod", BrokerVersions(
            1, "10.0.0.5", 9092, release_profile("2.1"), software=("apache-kafka", "2.1.1")),
            when),
        SnapshotRecord.from_broker("prod", BrokerVersions(
            2, "10.0.0.6", 9092, release_profile("2.0")), when),
        SnapshotRecord.from_broker("lab", fallback_broker("0.9.0", 7, "old", 9092), when),
        SnapshotRecord.from_broker("lab", BrokerVersions(
            8, "gone", 9092, error="connection refused"), when),
    ]
    path = tmp_path / "fleet.jsonl"
    write_snapshots(path, records)
    with path.open("a", encoding="utf-8") as handle:
        extra = json.loads(path.read_text(encoding="utf-8").splitlines()[0])
        extra["observed_at"] = "2026-11-23T10:00:00Z"
        extra["api_versions"].append({"api_key": 999, "min_version": 0, "max_version": 5})
        extra["note"] = "unknown keys are ignored"
        handle.write(json.dumps(extra) + "\n")
    return path


def test_api_versions_table(snapshot: Path) -> None:
    result = _kclient("api-versions", "--snapshot", str(snapshot))
    assert result.returncode == 0, result.stderr
    out = result.stdout
    assert ("10.0.0.5:9092 (id: 1 rack: null isFenced: false) -> (\n\tProduce(0): 0 to 7 "
            "[usable: 7],\n") in out
    assert "\tUNKNOWN(999): 0 to 5\n)" in out
    assert "\tDescribeCluster(60): UNSUPPORTED," in out
    # Broker 1 is 2.1 plus a key no Kafka release has: a custom build.
    assert "\trelease guess: unknown/custom\n" in out
    assert "\trelease guess: 2.0\n" in out
    assert "cluster prod: 2 broker(s)" in out
    assert "\tProduce(0): 0 to 6 [usable: 6]" in out
    assert "old:9092 (id: 7 rack: null isFenced: false) -> (" in out
    assert "\trelease guess: 0.9.0\n\tsource: fallback:0.9.0\n" in out
    assert "gone:9092 (id: 8 rack: null isFenced: false) -> ERROR: connection refused" in out
    assert "\tsource: none: never answered ApiVersions (connection refused)" in out
    assert ("cluster lab: 2 broker(s), 1 never answered, so verdicts they could change are "
            "unknown (to ignore them: --lenient): 8 (connection refused)") in out


def test_api_versions_json_one_and_many_clusters(snapshot: Path) -> None:
    result = _kclient("api-versions", "--snapshot", str(snapshot), "--format", "json")
    assert result.returncode == 0, result.stderr
    data: dict[str, Any] = json.loads(result.stdout)
    assert data["format"] == "kclient.api-versions/1"
    assert [c["cluster"] for c in data["clusters"]] == ["prod", "lab"]
    one = _kclient("api-versions", "--snapshot", str(snapshot), "--format", "json",
                   "--cluster", "prod")
    data = json.loads(one.stdout)
    # The same shape with one cluster as with several.
    assert set(data) == {"format", "all_apis", "clusters"} and len(data["clusters"]) == 1
    prod = data["clusters"][0]
    assert [b["broker_id"] for b in prod["brokers"]] == [1, 2]
    apis = {a["name"]: a for a in prod["brokers"][0]["api_versions"]}
    assert apis["Produce"] == {"api_key": 0, "name": "Produce", "min_version": 0,
                               "max_version": 7, "usable_version": 7}
    assert apis["UNKNOWN(999)"]["usable_version"] is None
    assert prod["brokers"][1]["release_guess"] == "2.0"
    wide = {a["name"]: a for a in prod["cluster_wide"]}
    assert (wide["Produce"]["min_version"], wide["Produce"]["max_version"],
            wide["Produce"]["usable_version"]) == (0, 6, 6)
    # The APIs missing on some broker are there too, with the brokers that lack them.
    assert wide["UNKNOWN(999)"]["missing_brokers"] == [2]


def test_features_json_and_require(snapshot: Path) -> None:
    result = _kclient("features", "--snapshot", str(snapshot), "--cluster", "prod",
                      "--format", "json", "--require", "IdempotentProducer")
    assert result.returncode == 0, result.stderr
    data = json.loads(result.stdout)
    assert data["format"] == "kclient.features/1"
    features = {f["name"]: f for f in data["clusters"][0]["features"]}
    zstd = features["ZSTD"]
    assert zstd["available"] is False and zstd["state"] == "unavailable"
    assert zstd["brokers"] == [{"broker_id": 1, "usable": True},
                               {"broker_id": 2, "usable": False}]
    assert zstd["blocking_brokers"] == [2]
    assert zstd["reasons"] == ["Produce needs 7+; broker 2 offers 0-6",
                               "Fetch needs 10+; broker 2 offers 0-8"]
    idempotent = features["IdempotentProducer"]
    assert idempotent["available"] is True
    assert idempotent["versions"] == [{"api_key": 22, "name": "InitProducerId", "version": 1}]
    failed = _kclient("features", "--snapshot", str(snapshot), "--cluster", "prod",
                      "--require", "zstd")
    assert failed.returncode == 1
    assert "requirement failed: ZSTD is not available in cluster prod" in failed.stderr
    assert "ZSTD" in failed.stdout and "Produce needs 7+; broker 2 offers 0-6" in failed.stdout


def test_features_unknown_exit_code_and_lenient_opt_in(snapshot: Path, tmp_path: Path) -> None:
    own = tmp_path / "mine.yaml"
    own.write_text("version: 1\nfeatures:\n  - name: Groups\n"
                   "    requires: [{api: JoinGroup}]\n  - name: BigProduce\n"
                   "    requires: [{api: Produce, min: 7}]\n", encoding="utf-8")
    # Broker 8 of "lab" never answered: by default nothing it could block is promised.
    strict = _kclient("features", "--snapshot", str(snapshot), "--cluster", "lab",
                      "--features", str(own), "--require", "Groups")
    assert strict.returncode == 3, strict.stderr
    assert re.search(r"^Groups +unknown +1 of 2; unknown: 8 ", strict.stdout, re.M), strict.stdout
    wide = _kclient("features", "--snapshot", str(snapshot), "--cluster", "lab",
                    "--features", str(own), "--wide")
    assert re.search(r"^Groups +unknown +7:yes 8:\? ", wide.stdout, re.M), wide.stdout
    assert ("requirement failed: Groups is unknown in cluster lab: 1 broker has not answered "
            "ApiVersions yet: broker 8 (gone:9092) (connection refused)") in strict.stderr
    # A definite "no" (the 0.9 broker lacks Produce v7) outranks "cannot tell": exit 1.
    both = _kclient("features", "--snapshot", str(snapshot), "--cluster", "lab",
                    "--features", str(own), "--require", "Groups", "--require", "BigProduce")
    assert both.returncode == 1
    assert "BigProduce is not available in cluster lab" in both.stderr
    lenient = _kclient("features", "--snapshot", str(snapshot), "--cluster", "lab",
                       "--features", str(own), "--require", "Groups", "--lenient")
    assert lenient.returncode == 0, lenient.stderr
    assert re.search(r"^Groups +yes ", lenient.stdout, re.M), lenient.stdout
    assert "--lenient ignored broker(s) that never answered in cluster lab: broker 8" in (
        lenient.stderr)
    merged = _kclient("features", "--snapshot", str(snapshot), "--features", str(own),
                      "--merge-default", "--format", "json")
    lab = json.loads(merged.stdout)["clusters"][1]
    assert lab["cluster"] == "lab"
    features = {f["name"]: f for f in lab["features"]}
    assert features["Groups"]["state"] == "unknown"
    assert features["Groups"]["unknown_brokers"] == [8]
    assert "ZSTD" in features


@pytest.mark.parametrize(
    ("args", "fragment"),
    [
        (["features"], "nothing to inspect: give --snapshot FILE.jsonl"),
        (["features", "--snapshot", "SNAP", "--require", "Nope"], "unknown feature 'Nope'"),
        (["api-versions", "--snapshot", "SNAP", "--cluster", "x"], "no cluster named x"),
        (["api-versions", "--snapshot", "MISSING"], "the snapshot file does not exist"),
        (["features", "--snapshot", "SNAP", "--features", "BADYAML"], "BADYAML:3: invalid YAML"),
        (["features", "--snapshot", "SNAP", "--merge-default"], "--merge-default needs"),
        (["api-versions", "--snapshot", "BROKEN"], "BROKEN:2: invalid snapshot record"),
        (["api-versions", "--snapshot", "SNAP", "--format", "xml"], "invalid choice"),
    ],
)
def test_errors_exit_2_with_one_line(snapshot: Path, tmp_path: Path, args: list[str],
                                     fragment: str) -> None:
    bad_yaml = tmp_path / "bad.yaml"
    bad_yaml.write_text("version: 1\nfeatures: [\n", encoding="utf-8")
    broken = tmp_path / "broken.jsonl"
    lines = snapshot.read_text(encoding="utf-8").splitlines()
    broken.write_text(lines[0] + "\n" + '{"cluster": "x"}\n', encoding="utf-8")
    names = {"SNAP": str(snapshot), "MISSING": str(tmp_path / "none.jsonl"),
             "BADYAML": str(bad_yaml), "BROKEN": str(broken)}
    real = [names.get(a, a) for a in args]
    result = _kclient(*real)
    assert result.returncode == 2
    fragment = fragment.replace("BADYAML", str(bad_yaml)).replace("BROKEN", str(broken))
    assert fragment in result.stderr
    assert len(result.stderr.strip().splitlines()) == 1
    assert "Traceback" not in result.stderr


def test_verbose_adds_the_traceback_but_keeps_the_exit_codes(tmp_path: Path) -> None:
    missing = str(tmp_path / "missing.jsonl")
    plain = _kclient("api-versions", "--snapshot", missing)
    assert "Traceback" not in plain.stderr and plain.stderr.count("\n") == 1
    # -v is taken before the command or after it, where people tend to add it.
    for verbose in (_kclient("-v", "api-versions", "--snapshot", missing),
                    _kclient("api-versions", "--snapshot", missing, "--verbose")):
        assert plain.returncode == verbose.returncode == 2
        assert "Traceback" in verbose.stderr
        assert verbose.stderr.rstrip().splitlines()[-1] == plain.stderr.rstrip()


def test_snapshot_cluster_beyond_max_brokers_is_refused(tmp_path: Path) -> None:
    """The live client's bound (--max-brokers, default as Client's max_brokers) holds here."""
    from kclient.commands.common import add_connection_arguments
    from kclient.net.defaults import DEFAULT_MAX_BROKERS

    parser = argparse.ArgumentParser()
    add_connection_arguments(parser)
    assert parser.parse_args([]).max_brokers == DEFAULT_MAX_BROKERS
    path = tmp_path / "wide.jsonl"
    write_snapshots(path, [SnapshotRecord.from_broker(
        "huge", BrokerVersions(i, f"b{i}", 9092, release_profile("3.9")), "2026-11-22T10:00:00Z")
        for i in range(1, 6)])
    for command in ("api-versions", "features"):
        result = _kclient(command, "--snapshot", str(path), "--max-brokers", "4")
        assert result.returncode == 2, result.stderr
        assert result.stderr == (
            f"kclient: error: {path}:5: cluster 'huge' lists more than 4 brokers, the most "
            "kclient takes per cluster (as from a live cluster's Metadata); if the cluster "
            "really is that large, raise --max-brokers (e.g. --max-brokers 8)\n")
        assert _kclient(command, "--snapshot", str(path), "--max-brokers", "5").returncode == 0
    result = _kclient("api-versions", "--snapshot", str(path), "--max-brokers", "0")
    assert result.returncode == 2 and "must be a whole number, 1 or more; got 0" in result.stderr
    result = _kclient("api-versions", "--snapshot", str(path), "--max-brokers", "9" * 5000)
    assert result.returncode == 2 and "expected a whole number of brokers" in result.stderr


def test_features_states_a_silent_broker_once_in_the_command_lines_words(
        snapshot: Path, tmp_path: Path) -> None:
    import os

    own = tmp_path / "mine.yaml"
    own.write_text("version: 1\nfeatures:\n  - name: Groups\n"
                   "    requires: [{api: JoinGroup}]\n  - name: Offsets\n"
                   "    requires: [{api: OffsetFetch}]\n  - name: ProduceAtAll\n"
                   "    requires: [{api: Produce}]\n", encoding="utf-8")
    env = {**os.environ, "COLUMNS": "80"}
    result = subprocess.run(
        [sys.executable, "-m", "kclient.cli", "features", "--snapshot", str(snapshot),
         "--cluster", "lab", "--features", str(own), "--require", "Groups"],
        capture_output=True, text=True, timeout=60, check=False, env=env)
    assert result.returncode == 3, result.stderr
    assert result.stdout.splitlines() == [
        "cluster lab: 2 broker(s), 1 never answered, so verdicts they could change are",
        "  unknown (to ignore them: --lenient): 8 (connection refused)",
        "FEATURE       AVAILABLE  BROKERS             VERSIONS / REASONS",
        "Groups        unknown    1 of 2; unknown: 8  waiting for broker 8",
        "Offsets       unknown    1 of 2; unknown: 8  waiting for broker 8",
        "ProduceAtAll  unknown    1 of 2; unknown: 8  waiting for broker 8",
    ]
    assert result.stderr == (
        "kclient: requirement failed: Groups is unknown in cluster lab: 1 broker has not "
        "answered ApiVersions yet: broker 8 (gone:9092) (connection refused); the verdicts "
        "they could change are unknown (to ignore them: --lenient)\n")
    assert "strict=False" not in result.stdout + result.stderr


def test_features_table_never_splits_an_api_and_its_version() -> None:
    from kclient.commands import render
    from kclient.negotiation import ApplicationVersions, ClusterView
    from kclient.negotiation.featurefile import default_features

    view = ClusterView([BrokerVersions(1, "h", 1, release_profile("3.9"))],
                       ApplicationVersions.from_catalog(), name="c")
    report = view.evaluate(default_features())
    for width in range(60, 121):
        text = render.features_table(view, report, width=width)
        # An API name never ends a line whose next line starts with its version.
        lines = text.splitlines()
        for before, after in itertools.pairwise(lines):
            assert not (re.search(r"[A-Za-z]$", before) and re.match(r"\s*v\d", after)), (
                width, before, after)
