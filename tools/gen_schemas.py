"""Regenerate the message specs kclient ships in ``schemas/``.

Every request and response of ``../shared/kafka-specs/message`` is shipped, plus
the request and response headers.  Only the structure (names, types, version
ranges, tags, defaults) is taken from the reference specs; comments and the upstream
field descriptions are dropped and replaced by our own one-line descriptions
where we have one.  MetadataRequest/Response are extended to v13, which Kafka
4.0 added: the request keeps v12's layout, the response gains a top-level
ErrorCode (KIP-1102); DescribeClusterRequest/Response to v2 (Kafka 4.0, KIP-1073:
fenced brokers can be asked for and are flagged).

Descriptions: the messages listed in ``MESSAGE_ABOUT`` have ours; every other
request and response is described from the one-line API descriptions of
``tools/gen_data.py`` (one home for them).  Fields carry no description.

Run from the repository root:  python tools/gen_schemas.py [--shared ../shared]
(``--check`` compares instead of writing and exits 1 on drift).
"""

from __future__ import annotations

import argparse
import json
import re
import sys
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))
from gen_data import ABOUT  # this directory; the one home of the API descriptions

# Message kinds shipped: every request and response, and the two headers.
SHIPPED_TYPES = ("request", "response", "header")

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


def _about(raw: dict[str, Any]) -> str:
    """Our one-line description of a message."""
    name = raw["name"]
    if name in MESSAGE_ABOUT:
        return MESSAGE_ABOUT[name]
    api = ABOUT[int(raw["apiKey"])]
    if raw["type"] == "request":
        return api
    return f"The answer to {name.removesuffix('Response')}Request ({api[0].lower()}{api[1:]})"


def shipped_specs(shared: Path) -> dict[str, dict[str, Any]]:
    """File name -> the spec kclient ships, built from ``shared``'s message specs."""
    out: dict[str, dict[str, Any]] = {}
    for source in sorted((shared / "kafka-specs" / "message").glob("*.json")):
        raw = json.loads(_strip(source.read_text()))
        if raw.get("type") in SHIPPED_TYPES:
            out[f"{raw['name']}.json"] = convert(raw)
    return out


def render(spec: dict[str, Any]) -> str:
    """The text of one shipped spec file."""
    return json.dumps(spec, indent=2) + "\n"


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
    out["about"] = _about(raw)
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
    parser.add_argument("--check", action="store_true",
                        help="compare with schemas/ instead of writing; exit 1 on drift")
    args = parser.parse_args()
    fresh = shipped_specs(args.shared)
    target_dir = root / "schemas"
    shipped = {p.name for p in target_dir.glob("*.json") if p.name != "api_catalog.json"}
    if args.check:
        stale = sorted(n for n, spec in fresh.items()
                       if not (target_dir / n).is_file()
                       or (target_dir / n).read_text() != render(spec))
        extra = sorted(shipped - set(fresh))
        for name in stale + extra:
            print(f"drift: schemas/{name}")
        raise SystemExit(1 if stale or extra else 0)
    for name in sorted(shipped - set(fresh)):
        (target_dir / name).unlink()
        print(f"removed {target_dir / name}")
    for name, spec in fresh.items():
        (target_dir / name).write_text(render(spec))
    print(f"wrote {len(fresh)} specs to {target_dir}")


if __name__ == "__main__":
    main()
