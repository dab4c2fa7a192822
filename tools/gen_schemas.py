"""Regenerate the message specs kclient ships in ``schemas/``.

Only the structure (names, types, version ranges, tags, defaults) is taken from
the reference specs in ``../shared/kafka-specs``; comments and the upstream
field descriptions are dropped and replaced by our own one-line descriptions
where we have one.  MetadataRequest/Response are extended to v13, which Kafka
4.0 added: the request keeps v12's layout, the response gains a top-level
ErrorCode (KIP-1102); DescribeClusterRequest/Response to v2 (Kafka 4.0, KIP-1073:
fenced brokers can be asked for and are flagged).

Run from the repository root:  python tools/gen_schemas.py [--shared ../shared]
"""

from __future__ import annotations

import argparse
import json
import re
from pathlib import Path
from typing import Any

SHIPPED = (
    "RequestHeader",
    "ResponseHeader",
    "ApiVersionsRequest",
    "ApiVersionsResponse",
    "MetadataRequest",
    "MetadataResponse",
    "DescribeClusterRequest",
    "DescribeClusterResponse",
    "SaslHandshakeRequest",
    "SaslHandshakeResponse",
    "SaslAuthenticateRequest",
    "SaslAuthenticateResponse",
)

# Our descriptions of the shipped messages.
MESSAGE_ABOUT = {
    "RequestHeader": "Precedes every request body: which API, which version, correlation and "
    "client id.",
    "ResponseHeader": "Precedes every response body: the correlation id of the request answered.",
    "ApiVersionsRequest": "Asks a broker for the version range of every API it serves.",
    "ApiVersionsResponse": "The broker's API ranges and, from v3, its feature levels.",
    "MetadataRequest": "Asks for brokers, topics and partition leaders.",
    "MetadataResponse": "Brokers, controller, topics and partitions as the broker sees them.",
    "DescribeClusterRequest": "Asks for the brokers and controller of the cluster.",
    "DescribeClusterResponse": "Brokers, controller and cluster id.",
    "SaslHandshakeRequest": "Names the SASL mechanism the client wants to use.",
    "SaslHandshakeResponse": "Accepts the mechanism or lists the enabled ones.",
    "SaslAuthenticateRequest": "Carries one client SASL token.",
    "SaslAuthenticateResponse": "Carries one server SASL token or the failure message.",
}

KEEP_KEYS = (
    "apiKey", "type", "listeners", "name", "validVersions", "flexibleVersions",
    "deprecatedVersions", "latestVersionUnstable", "fields", "commonStructs",
)
FIELD_KEYS = (
    "name", "type", "versions", "nullableVersions", "taggedVersions", "tag", "default",
    "ignorable", "entityType", "mapKey", "flexibleVersions", "zeroCopy", "fields",
)


def _strip(text: str) -> str:
    return re.sub(r"^\s*//.*$", "", text, flags=re.M)


def _field(raw: dict[str, Any]) -> dict[str, Any]:
    out = {k: raw[k] for k in FIELD_KEYS if k in raw and k != "fields"}
    if "fields" in raw:
        out["fields"] = [_field(f) for f in raw["fields"]]
    return out


def convert(raw: dict[str, Any]) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for key in KEEP_KEYS:
        if key not in raw:
            continue
        if key == "fields":
            out["fields"] = [_field(f) for f in raw["fields"]]
        elif key == "commonStructs":
            out["commonStructs"] = [
                {"name": s["name"], "versions": s["versions"],
                 "fields": [_field(f) for f in s["fields"]]}
                for s in raw["commonStructs"]
            ]
        else:
            out[key] = raw[key]
    out["about"] = MESSAGE_ABOUT[raw["name"]]
    if raw["name"] in ("MetadataRequest", "MetadataResponse"):
        out["validVersions"] = "0-13"
    if raw["name"] == "MetadataResponse":
        # Kafka 4.0 (KIP-1102): v13 ends with a top-level error code.
        out["fields"].append({"name": "ErrorCode", "type": "int16", "versions": "13+",
                              "ignorable": True})
    if raw["name"] == "DescribeClusterRequest":
        out["validVersions"] = "0-2"
        out["fields"].append({"name": "IncludeFencedBrokers", "type": "bool",
                              "versions": "2+", "default": "false"})
    if raw["name"] == "DescribeClusterResponse":
        out["validVersions"] = "0-2"
        for field in out["fields"]:
            if field["name"] == "Brokers":
                field["fields"].append({"name": "IsFenced", "type": "bool", "versions": "2+",
                                        "default": "false"})
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    root = Path(__file__).resolve().parent.parent
    parser.add_argument("--shared", type=Path, default=root.parent / "shared")
    args = parser.parse_args()
    for name in SHIPPED:
        source = args.shared / "kafka-specs" / "message" / f"{name}.json"
        spec = convert(json.loads(_strip(source.read_text())))
        target = root / "schemas" / f"{name}.json"
        target.write_text(json.dumps(spec, indent=2) + "\n")
        print(f"wrote {target}")


if __name__ == "__main__":
    main()
