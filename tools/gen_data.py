"""Regenerate kclient's shipped data from the reference material in ../shared.

Writes ``schemas/api_catalog.json`` (every API key a broker can advertise, with
the version range kclient applications may use by default) and
``kclient/negotiation/releases.json`` (what brokers of each Apache Kafka release
advertise).  Only facts are carried over: keys, names and version numbers.  The
descriptions are our own and live in this file.

Run from the repository root:  python tools/gen_data.py [--shared ../shared]
"""

from __future__ import annotations

import argparse
import json
import re
from pathlib import Path
from typing import Any

# Our one-line descriptions of each API, keyed by API key.
ABOUT: dict[int, str] = {
    0: "Append record batches to partitions.",
    1: "Read record batches from partitions (consumers and followers).",
    2: "Look up offsets by timestamp, earliest or latest.",
    3: "Learn the brokers, topics, partitions and leaders of the cluster.",
    4: "Controller tells a broker which replicas it leads or follows (ZooKeeper mode).",
    5: "Controller tells a broker to stop replicas (ZooKeeper mode).",
    6: "Controller pushes cluster metadata to brokers (ZooKeeper mode).",
    7: "A broker asks the controller for a clean shutdown.",
    8: "Store committed offsets for a consumer group.",
    9: "Read committed offsets of a consumer group.",
    10: "Find the broker that coordinates a group or transaction.",
    11: "Join a consumer group (classic protocol).",
    12: "Keep a classic group membership alive.",
    13: "Leave a classic consumer group.",
    14: "Distribute partition assignments in a classic group.",
    15: "Describe consumer groups and their members.",
    16: "List the groups a broker coordinates.",
    17: "Pick a SASL mechanism before authenticating.",
    18: "Ask a broker which API versions it supports.",
    19: "Create topics.",
    20: "Delete topics.",
    21: "Delete records below an offset.",
    22: "Obtain a producer id and epoch (idempotence, transactions).",
    23: "Find the end offset of a leader epoch (log truncation).",
    24: "Add partitions to an ongoing transaction.",
    25: "Add a group's offsets to an ongoing transaction.",
    26: "Commit or abort a transaction.",
    27: "Coordinator writes transaction markers to partition leaders.",
    28: "Commit offsets inside a transaction.",
    29: "Describe access control entries.",
    30: "Create access control entries.",
    31: "Delete access control entries.",
    32: "Read broker, topic and other resource configurations.",
    33: "Replace resource configurations (superseded by incremental alter).",
    34: "Move replicas between log directories.",
    35: "Describe log directories and their replicas.",
    36: "Carry SASL authentication tokens inside Kafka requests.",
    37: "Add partitions to existing topics.",
    38: "Create a delegation token.",
    39: "Extend a delegation token's lifetime.",
    40: "Expire a delegation token.",
    41: "Describe delegation tokens.",
    42: "Delete consumer groups.",
    43: "Trigger preferred or unclean leader election.",
    44: "Change resource configurations key by key.",
    45: "Start or cancel partition reassignments.",
    46: "List ongoing partition reassignments.",
    47: "Delete committed offsets of a group.",
    48: "Describe client quotas.",
    49: "Change client quotas.",
    50: "Describe SCRAM credentials of users.",
    51: "Create or delete SCRAM credentials.",
    52: "KRaft: ask for a vote in a leader election.",
    53: "KRaft: a new leader announces its epoch.",
    54: "KRaft: a leader gives up its epoch.",
    55: "Describe the KRaft controller quorum.",
    56: "Leader asks the controller to change a partition's ISR.",
    57: "Change finalized feature levels of the cluster.",
    58: "Forward a request to the controller inside an envelope.",
    59: "KRaft: fetch a metadata snapshot.",
    60: "Describe the cluster: brokers, controller, cluster id.",
    61: "Describe active producers of partitions.",
    62: "A KRaft broker registers with the controller.",
    63: "A KRaft broker heartbeats to the controller.",
    64: "Remove a broker registration.",
    65: "Describe transactions.",
    66: "List transactions.",
    67: "Allocate a block of producer ids.",
    68: "Heartbeat of the consumer group protocol of KIP-848.",
    69: "Describe groups of the KIP-848 consumer protocol.",
    70: "A KRaft controller registers with the quorum.",
    71: "Ask which client metrics to push (KIP-714).",
    72: "Push client metrics to the broker (KIP-714).",
    73: "Assign replicas to log directories (JBOD in KRaft).",
    74: "List client configuration resources (formerly client metrics resources).",
    75: "Describe topic partitions with pagination.",
    76: "Heartbeat of a share group member (KIP-932).",
    77: "Describe share groups (KIP-932).",
    78: "Fetch records for a share group (KIP-932).",
    79: "Acknowledge records delivered to a share group (KIP-932).",
    80: "Add a voter to the KRaft quorum.",
    81: "Remove a voter from the KRaft quorum.",
    82: "Update a voter's endpoints in the KRaft quorum.",
    83: "Initialize persisted share-group state.",
    84: "Read persisted share-group state.",
    85: "Write persisted share-group state.",
    86: "Delete persisted share-group state.",
    87: "Read a summary of persisted share-group state.",
    88: "Heartbeat of a Kafka Streams group member (KIP-1071).",
    89: "Describe Kafka Streams groups (KIP-1071).",
    90: "Describe offsets of share groups.",
    91: "Alter offsets of share groups.",
    92: "Delete offsets of share groups.",
}

LATEST_RELEASE = "4.3"


def _strip_comments(text: str) -> str:
    return re.sub(r"^\s*//.*$", "", text, flags=re.M)


def _parse_versions(text: str | None) -> tuple[int, int] | None:
    if text is None or text == "none":
        return None
    if text.endswith("+"):
        return int(text[:-1]), 1 << 15
    lo, _, hi = text.partition("-")
    return int(lo), int(hi or lo)


def build_catalog(shared: Path) -> dict[str, Any]:
    raw = json.loads((shared / "kafka-releases" / "broker-api-versions.json").read_text())
    latest = raw["releases"][LATEST_RELEASE]
    specs: dict[int, dict[str, Any]] = {}
    for path in sorted((shared / "kafka-specs" / "message").glob("*Request.json")):
        spec = json.loads(_strip_comments(path.read_text()))
        if spec.get("type") == "request":
            specs[int(spec["apiKey"])] = spec
    apis = []
    for key_text, name in sorted(raw["api_names"].items(), key=lambda kv: int(kv[0])):
        key = int(key_text)
        spec = specs.get(key)
        broker = latest.get(key_text)
        if spec is not None:
            lo, hi = _parse_versions(spec["validVersions"]) or (0, 0)
            if broker is not None:
                hi = max(hi, broker[1])
            flexible = _parse_versions(spec.get("flexibleVersions"))
            deprecated = _parse_versions(spec.get("deprecatedVersions"))
        else:
            if broker is None:
                raise SystemExit(f"no facts for api key {key}")
            lo, hi = broker
            flexible, deprecated = (0, 1 << 15), None
        apis.append(
            {
                "key": key,
                "name": name,
                "min_version": lo,
                "max_version": hi,
                "flexible_from": flexible[0] if flexible else None,
                "deprecated": list(deprecated) if deprecated else None,
                "about": ABOUT[key],
            }
        )
    return {
        "format": 1,
        "about": "Kafka API keys with the version range kclient applications use by default "
        f"(the Apache Kafka {LATEST_RELEASE} client's).",
        "apis": apis,
    }


def build_releases(shared: Path) -> dict[str, Any]:
    raw = json.loads((shared / "kafka-releases" / "broker-api-versions.json").read_text())
    releases = []
    for name, apis in raw["releases"].items():
        ordered = {k: list(v) for k, v in sorted(apis.items(), key=lambda kv: int(kv[0]))}
        releases.append({"name": name, "apis": ordered})
    return {
        "format": 1,
        "about": "Version ranges advertised by Apache Kafka brokers, oldest release first.",
        "api_names": dict(sorted(raw["api_names"].items(), key=lambda kv: int(kv[0]))),
        "api_name_aliases": raw.get("api_name_aliases", {}),
        "releases": releases,
    }


def _dump(path: Path, data: dict[str, Any]) -> None:
    path.write_text(json.dumps(data, indent=1) + "\n")
    print(f"wrote {path}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    root = Path(__file__).resolve().parent.parent
    parser.add_argument("--shared", type=Path, default=root.parent / "shared")
    args = parser.parse_args()
    _dump(root / "schemas" / "api_catalog.json", build_catalog(args.shared))
    _dump(root / "kclient" / "negotiation" / "releases.json", build_releases(args.shared))


if __name__ == "__main__":
    main()
