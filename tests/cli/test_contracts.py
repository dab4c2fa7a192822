"""Every JSON kclient writes follows its published contract (kclient/contracts/*.schema.json).

The console script runs against emulated clusters (mixed releases, a broker that
never answers, SASL, finalized feature levels) and recorded snapshots; each
output is validated in strict mode (every field written must be declared).  The
examples of docs/reference/contracts.md are validated the same way.
"""

from __future__ import annotations

import json
import re
import socket
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from kclient.contracts import FORMATS, SCHEMA_NAMES, load_schema, schema_path
from kclient.negotiation.snapshot import read_snapshots
from tests.conftest import REPO_ROOT
from tests.contract_check import validate

from .conftest import Emulator, run_kclient

pytestmark = [pytest.mark.integration, pytest.mark.timeout(180)]

CONTRACTS_PAGE = REPO_ROOT / "docs" / "reference" / "contracts.md"


def _valid(document: Any, name: str) -> None:
    errors = validate(document, load_schema(name), strict=True)
    assert errors == [], f"{name}: " + "; ".join(errors[:10])


def _json(*args: str) -> Any:
    result = run_kclient(*args)
    assert result.returncode in (0, 1, 3), result.stderr
    return json.loads(result.stdout)


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port: int = sock.getsockname()[1]
        return port  # closed again: nothing listens there


def test_schemas_ship_with_the_package_and_name_their_format() -> None:
    package = REPO_ROOT / "kclient"
    for name in SCHEMA_NAMES:
        path = schema_path(name)
        assert path.parent == package / "contracts" and path.is_file()
        schema = load_schema(name)
        assert schema["$schema"] == "https://json-schema.org/draft/2020-12/schema"
        if name in FORMATS:
            assert schema["properties"]["format"]["const"] == FORMATS[name]
    # The wheel takes the whole package directory; nothing may hide the schemas.
    ignored = (REPO_ROOT / ".gitignore").read_text(encoding="utf-8").split()
    assert not any(p in ("*.json", "contracts/", "kclient/contracts") for p in ignored)


def test_snapshot_schema_requires_what_the_reader_requires() -> None:
    from kclient.negotiation import snapshot

    assert set(load_schema("snapshot-record")["required"]) == set(snapshot._REQUIRED)


def test_the_checker_rejects_what_the_schema_forbids() -> None:
    schema = load_schema("snapshot-record")
    good = {"cluster": "c", "broker_id": 1, "host": "h", "port": 9092,
            "observed_at": "2026-11-22T10:00:00Z", "source": "fallback:0.9.0",
            "api_versions": [{"api_key": 0, "min_version": 0, "max_version": 2}]}
    assert validate(good, schema, strict=True) == []
    bad_cases = {
        "port": 0, "broker_id": "1", "source": "guessed", "observed_at": "yesterday",
        "api_versions": [{"api_key": 0, "min_version": 0}], "software": {"name": "k"},
        "supported_features": {"x": [1]}, "surprise": True,
    }
    for key, value in bad_cases.items():
        errors = validate({**good, key: value}, schema, strict=True)
        assert errors, f"{key}={value!r} passed"
    assert validate({**good, "surprise": True}, schema) == []  # readers ignore unknown keys
    missing = {k: v for k, v in good.items() if k != "host"}
    assert validate(missing, schema) == ["$: missing required 'host'"]
    with pytest.raises(ValueError, match="outside the checked subset"):
        validate(1, {"oneOf": []})


def test_probe_records_follow_the_snapshot_contract(mixed_cluster: Emulator,
                                                    tmp_path: Path) -> None:
    record = tmp_path / "fleet.jsonl"
    ok = run_kclient("probe", "-b", mixed_cluster.bootstrap, "--cluster", "lab",
                     "--record", str(record))
    assert ok.returncode == 0, ok.stderr
    down = run_kclient("probe", "-b", f"127.0.0.1:{_free_port()}", "--cluster", "down",
                       "--record", str(record), "--timeout", "2")
    assert down.returncode == 2
    lines = record.read_text(encoding="utf-8").splitlines()
    assert len(lines) == 3
    for line in lines:
        _valid(json.loads(line), "snapshot-record")
    assert [r.source for r in read_snapshots(record)] == ["api_versions", "api_versions",
                                                          "error"]


@pytest.fixture
def snapshot(mixed_cluster: Emulator, emulator: Callable[..., Emulator],
             tmp_path: Path) -> Path:
    """Three clusters: lab (2.0 + 3.9), legacy (a 0.9 broker by fallback), down (no broker)."""
    path = tmp_path / "fleet.jsonl"
    legacy = emulator("--release", "0.9.0", "--behaviour", "legacy", "--port", "0")
    runs = [
        (0, "-b", mixed_cluster.bootstrap, "--cluster", "lab"),
        (0, "-b", legacy.bootstrap, "--cluster", "legacy", "--api-version-fallback", "0.9",
         "--timeout", "3"),
        (2, "-b", f"127.0.0.1:{_free_port()}", "--cluster", "down", "--timeout", "2"),
    ]
    for code, *argv in runs:
        result = run_kclient("probe", *map(str, argv), "--record", str(path))
        assert result.returncode == code, result.stderr
    return path


def test_api_versions_json_follows_its_contract(mixed_cluster: Emulator,
                                                snapshot: Path) -> None:
    live = _json("api-versions", "-b", mixed_cluster.bootstrap, "--format", "json")
    _valid(live, "api-versions")
    assert len(live["clusters"]) == 1
    every = _json("api-versions", "--snapshot", str(snapshot), "--format", "json")
    _valid(every, "api-versions")
    assert [c["cluster"] for c in every["clusters"]] == ["lab", "legacy", "down"]
    lab, legacy, down = every["clusters"]
    # The fallback label names the release as Kafka does, however it was written.
    assert [b["source"] for b in legacy["brokers"]] == ["fallback:0.9.0"]
    assert legacy["brokers"][0]["release_guess"] == "0.9.0"
    assert [b["source"] for b in down["brokers"]] == ["error"]
    assert down["unknown_brokers"] == [-1] and down["cluster_wide"] == []
    assert lab["cluster_wide"] and all(b["api_versions"] for b in lab["brokers"])
    everything = _json("api-versions", "--snapshot", str(snapshot), "--all",
                       "--format", "json", "--lenient")
    _valid(everything, "api-versions")
    assert everything["all_apis"] is True


def test_features_json_follows_its_contract(mixed_cluster: Emulator, snapshot: Path) -> None:
    live = _json("features", "-b", mixed_cluster.bootstrap, "--format", "json")
    _valid(live, "features")
    offline = _json("features", "--snapshot", str(snapshot), "--format", "json")
    _valid(offline, "features")
    lab, legacy, down = offline["clusters"]
    zstd = next(f for f in lab["features"] if f["name"] == "ZSTD")
    assert zstd["blocking_brokers"] == [1] and zstd["reasons"]
    # No broker answered: every feature is unknown (kclient itself speaks every API the
    # shipped features need, the share- and streams-group ones included).
    assert {f["state"] for f in down["features"]} == {"unknown"}
    assert legacy["brokers"][0]["source"] == "fallback:0.9.0"


def test_secured_kip584_cluster_json_follows_the_contracts(
        emulator: Callable[..., Emulator], tmp_path: Path) -> None:
    password = tmp_path / "pw"
    password.write_text("s3cret\n", encoding="utf-8")
    emu = emulator("--release", "3.9", "--brokers", "2", "--port", "0", "--sasl-user",
                   f"bob:{password}", "--finalized-feature", "transaction.version=2",
                   "--supported-feature", "group.version=0-1")
    login = ("--security-protocol", "SASL_PLAINTEXT", "--sasl-mechanism", "PLAIN",
             "--sasl-username", "bob", "--sasl-password-file", str(password))
    data = _json("api-versions", "-b", emu.bootstrap, *login, "--format", "json")
    _valid(data, "api-versions")
    broker = data["clusters"][0]["brokers"][0]
    assert broker["finalized_features"] == {"transaction.version": [2, 2]}
    assert broker["supported_features"] == {"group.version": [0, 1],
                                            "transaction.version": [0, 2]}
    _valid(_json("features", "-b", emu.bootstrap, *login, "--format", "json"), "features")
    records = run_kclient("probe", "-b", emu.bootstrap, *login, "--cluster", "sec")
    assert records.returncode == 0, records.stderr
    for line in records.stdout.splitlines():
        _valid(json.loads(line), "snapshot-record")


def _page_examples() -> list[tuple[str, str]]:
    text = CONTRACTS_PAGE.read_text(encoding="utf-8")
    found = re.findall(r"<!-- contract: ([\w-]+) -->\n```json\n(.*?)\n```", text, re.S)
    return [(name, body) for name, body in found]


def test_contracts_page_examples_follow_their_schemas() -> None:
    examples = _page_examples()
    assert {name for name, _ in examples} == set(SCHEMA_NAMES)
    for name, body in examples:
        _valid(json.loads(body), name)


def test_contracts_page_lists_every_schema_and_format() -> None:
    text = CONTRACTS_PAGE.read_text(encoding="utf-8")
    for name in SCHEMA_NAMES:
        assert f"`{name}.schema.json`" in text
    for fmt in FORMATS.values():
        assert f"`{fmt}`" in text


def test_fleet_synth_records_follow_the_snapshot_contract(tmp_path: Path) -> None:
    out = tmp_path / "synth.jsonl"
    result = run_kclient("fleet", "synth", "--clusters", "300", "--out", str(out))
    assert result.returncode == 0, result.stderr
    sources: set[str] = set()
    for line in out.read_text(encoding="utf-8").splitlines():
        record = json.loads(line)
        _valid(record, "snapshot-record")
        sources.add(record["source"])
    # Fallback brokers are labelled with the release as Kafka names it.
    fallbacks = {s for s in sources if s.startswith("fallback:")}
    assert fallbacks and not {"fallback:0.9", "fallback:0.11", "fallback:0.10"} & fallbacks
