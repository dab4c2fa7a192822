"""Write kclient/negotiation/clients.json, the client profiles, from tools/facts/clients.json.

The facts file holds what each Kafka client library sends, per release line, as
read from the library's source at a release tag (repository, tag, commit and
file for every cell, in our own words).  This tool checks those facts (known
API names, well-formed version lists, a source on every cell, release lines in
order, known strategies and features), derives the Apache Kafka Java client's
lines from kclient's own release profiles (the client of release X speaks the
specs of X) and writes the shipped file with its provenance.

Run from the repository root:  python tools/gen_clients.py [--check]
"""

from __future__ import annotations

import argparse
import itertools
import json
import re
import sys
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
FACTS = ROOT / "tools" / "facts" / "clients.json"
RELEASES = ROOT / "kclient" / "negotiation" / "releases.json"
OUT = ROOT / "kclient" / "negotiation" / "clients.json"

#: How a library picks the version of a request (the words kclient shows).
STRATEGIES = {
    "per_broker": "the highest version it and each broker share, per broker",
    "one_table": "one broker's ApiVersions answer decides the version for every broker",
    "first_broker": "the first broker's ApiVersions answer decides the version for every broker",
    "release_guess": ("the release guessed from one broker decides every request's version, "
                      "for every broker"),
    "pinned": "versions fixed by the application's configuration, whatever the brokers offer",
}

#: The APIs the Java client sends (clients/src/main/resources/common/message
#: specs whose listeners include a broker and that KafkaProducer, KafkaConsumer
#: or Admin build); the versions come from the release profile.
JAVA_APIS = (
    "Produce", "Fetch", "ListOffsets", "Metadata", "OffsetCommit", "OffsetFetch",
    "FindCoordinator", "JoinGroup", "Heartbeat", "LeaveGroup", "SyncGroup", "DescribeGroups",
    "ListGroups", "SaslHandshake", "ApiVersions", "CreateTopics", "DeleteTopics",
    "DeleteRecords", "InitProducerId", "OffsetForLeaderEpoch", "AddPartitionsToTxn",
    "AddOffsetsToTxn", "EndTxn", "TxnOffsetCommit", "DescribeAcls", "CreateAcls", "DeleteAcls",
    "DescribeConfigs", "AlterConfigs", "AlterReplicaLogDirs", "DescribeLogDirs",
    "SaslAuthenticate", "CreatePartitions", "CreateDelegationToken", "RenewDelegationToken",
    "ExpireDelegationToken", "DescribeDelegationToken", "DeleteGroups", "ElectLeaders",
    "IncrementalAlterConfigs", "AlterPartitionReassignments", "ListPartitionReassignments",
    "OffsetDelete", "DescribeClientQuotas", "AlterClientQuotas",
    "DescribeUserScramCredentials", "AlterUserScramCredentials", "DescribeQuorum",
    "UpdateFeatures", "DescribeCluster", "DescribeProducers", "DescribeTransactions",
    "ListTransactions", "ConsumerGroupHeartbeat", "ConsumerGroupDescribe",
    "GetTelemetrySubscriptions", "PushTelemetry", "DescribeTopicPartitions",
    "ShareGroupHeartbeat", "ShareGroupDescribe", "ShareFetch", "ShareAcknowledge",
    "DescribeShareGroupOffsets", "AlterShareGroupOffsets", "DeleteShareGroupOffsets",
    "StreamsGroupHeartbeat", "StreamsGroupDescribe",
)

_VERSIONS = re.compile(r"^\d+(-\d+)?(,\d+(-\d+)?)*$")
_NEED = re.compile(r"^(\d+)\+$|^(\d+)-(\d+)$")


class FactsError(ValueError):
    """The facts file is wrong; the message says where."""


def _release_key(text: str) -> tuple[int, ...]:
    return tuple(int(p) for p in text.split("."))


def parse_versions(text: str, where: str) -> list[int]:
    """``"0-3,5"`` as ``[0, 1, 2, 3, 5]``."""
    if not isinstance(text, str) or not _VERSIONS.match(text):
        raise FactsError(f"{where}: versions must look like 0-7 or 0,1,2,5, got {text!r}")
    found: set[int] = set()
    for part in text.split(","):
        low, _, high = part.partition("-")
        lo, hi = int(low), int(high or low)
        if lo > hi:
            raise FactsError(f"{where}: {part} is an empty range")
        found.update(range(lo, hi + 1))
    return sorted(found)


def _need(text: str, where: str) -> list[int | None]:
    match = _NEED.match(text) if isinstance(text, str) else None
    if match is None:
        raise FactsError(f"{where}: a need is N+ or N-M, got {text!r}")
    if match.group(1) is not None:
        return [int(match.group(1)), None]
    return [int(match.group(2)), int(match.group(3))]


def _cell(versions: list[int], source: str, pinned: int | None = None) -> dict[str, Any]:
    low, high = versions[0], versions[-1]
    cell: dict[str, Any] = {"min": low, "max": high,
                            "avoid": [v for v in range(low, high + 1) if v not in versions],
                            "source": source}
    if pinned is not None:
        cell["pinned"] = pinned
    return cell


def _java_apis(release: str, releases: dict[str, Any], keys: dict[str, int]
               ) -> dict[str, dict[str, Any]]:
    """The Java client of ``release``: its release profile, less rejected and broker versions."""
    sys.path.insert(0, str(ROOT))
    from kclient.negotiation.clientrules import CLIENT_MAX_VERSIONS
    from kclient.negotiation.releases import advertised_but_rejected

    by_name = {r["name"]: r for r in releases["releases"]}
    profile = by_name[release]
    rejected = advertised_but_rejected(release)
    apis: dict[str, dict[str, Any]] = {}
    for name in JAVA_APIS:
        key = keys[name]
        rng = profile["apis"].get(str(key))
        if rng is None:
            continue
        low, high = int(rng[0]), int(rng[1])
        notes = [f"advertised {low}-{high}"]
        gone = rejected.get(key)
        if gone is not None and gone.min <= low <= gone.max:
            low = gone.max + 1
            notes.append(f"{gone.min}-{gone.max} rejected (KIP-896), not in the client's specs")
        rule = CLIENT_MAX_VERSIONS.get(key)
        if rule is not None and high > rule.value:
            high = rule.value
            notes.append(f"capped at {rule.value}: a client rule (kclient.negotiation.clientrules)")
        if low > high:
            continue
        apis[str(key)] = _cell(list(range(low, high + 1)), "; ".join(notes))
    return apis


def _franz_cap(release: str, releases: dict[str, Any]) -> dict[int, int]:
    by_name = {r["name"]: r for r in releases["releases"]}
    caps = {int(k): int(v[1]) for k, v in by_name[release]["apis"].items()}
    # kversion.Stable() also carries the ZooKeeper-mode table of 3.9 for keys 4.x dropped.
    for key, rng in by_name["3.9"]["apis"].items():
        caps.setdefault(int(key), int(rng[1]))
    return caps


ROLES = ("producer", "consumer", "admin")
#: Which broker decides, for a library where one broker's answer decides for all.
ASKS = ("bootstrap", "listed", "any")


def _needs(raw: dict[str, str], keys: dict[str, int], where: str) -> dict[str, Any]:
    needs = {}
    for api, text in raw.items():
        if api not in keys:
            raise FactsError(f"{where}: unknown API {api!r}")
        needs[str(keys[api])] = _need(text, f"{where}.{api}")
    return needs


def _features(facts: dict[str, Any], keys: dict[str, int]) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for name, spec in facts["features"].items():
        roles = spec.get("roles", [])
        if not roles or any(r not in ROLES for r in roles):
            raise FactsError(f"features.{name}: roles must be some of {ROLES}")
        conditions = []
        for index, cond in enumerate(spec.get("conditions", [])):
            where = f"features.{name}.conditions[{index}]"
            if not all(cond.get(k) for k in ("when", "effect", "needs", "source")):
                raise FactsError(f"{where}: needs when, effect, needs and source")
            conditions.append({"when": cond["when"], "effect": cond["effect"],
                               "needs": _needs(cond["needs"], keys, where),
                               "source": cond["source"]})
        out[name] = {"about": spec["about"], "roles": roles,
                     "needs": _needs(spec["needs"], keys, f"features.{name}"),
                     "conditions": conditions}
        levels = spec.get("levels", {})
        if not isinstance(levels, dict) or not all(
                isinstance(k, str) and "." in k and isinstance(v, int) and v >= 1
                for k, v in levels.items()):
            raise FactsError(f"features.{name}.levels: KIP-584 feature names (group.version) "
                             "to the level the brokers must finalize, 1 or more")
        if levels:
            out[name]["levels"] = dict(sorted(levels.items()))
        opt_in = spec.get("opt_in")
        if opt_in is not None:
            if not isinstance(opt_in, str) or not opt_in:
                raise FactsError(f"features.{name}.opt_in: how an application chooses the "
                                 "feature, as text")
            out[name]["opt_in"] = opt_in
    return out


def _next_minor(tag: str) -> str:
    """``v2.15.0`` -> ``2.16.0``: where the newest line read stops covering releases."""
    parts = [int(p) for p in tag.lstrip("v").split(".")[:2]]
    return f"{parts[0]}.{parts[1] + 1}.0"


def _line_cells(raw: dict[str, Any], keys: dict[str, int], caps: dict[int, int],
                cap_source: str | None, where: str) -> dict[str, Any]:
    apis = {}
    for name, cell in raw.items():
        if name not in keys:
            raise FactsError(f"{where}: unknown API {name!r}")
        if not cell.get("source"):
            raise FactsError(f"{where}: {name} has no source")
        versions = parse_versions(cell["versions"], f"{where}: {name}")
        text = cell["source"]
        cap = caps.get(keys[name])
        if caps and cap is None:
            continue  # not in the capping table: the client refuses the request
        if cap is not None and versions[-1] > cap:
            versions = [v for v in versions if v <= cap]
            text += f"; capped at {cap}: {cap_source}"
        apis[str(keys[name])] = _cell(versions, text, cell.get("pinned"))
    return dict(sorted(apis.items(), key=lambda kv: int(kv[0])))


def _observed_cells(client: dict[str, Any], line: dict[str, Any], keys: dict[str, int],
                    where: str) -> tuple[dict[str, Any], dict[str, Any]]:
    """A line observed live (``observed``) on top of a source reading: its own (a line
    read at a tag and observed too) or that of ``from_line`` (a release whose tag could
    not be read).

    Per API: the version the library sent against an emulator offering up to ``caps``
    is its ceiling when below the emulator's maximum; where it reached that maximum
    (kclient decodes no higher), or was not observed, the reading's ceiling stands.
    Floors always come from the reading.  An API observed but absent from the reading
    is an error: read it first.
    """
    seen = line["observed"]
    for field in ("release", "package", "on", "how", "sent", "caps"):
        if not seen.get(field):
            raise FactsError(f"{where}: observed needs {field}")
    base = line if "tag" in line else next(
        (raw for raw in client["lines"] if raw["line"] == line.get("from_line")
         and "tag" in raw and "observed" not in raw), None)
    if base is None:
        raise FactsError(f"{where}: from_line must name a line read at a tag")
    tag = base["tag"]
    apis = {}
    for name in sorted(set(base["apis"]) | set(seen["sent"])):
        if name not in keys:
            raise FactsError(f"{where}: unknown API {name!r}")
        if name not in base["apis"]:
            raise FactsError(f"{where}: {name} was observed but {tag} was not read for it")
        cell = base["apis"][name]
        if not cell.get("source"):
            raise FactsError(f"{where}: {name} has no source")
        versions = parse_versions(cell["versions"], f"{where}: {name}")
        reading = f"{cell['source']} (read at {tag})"
        sent, cap = seen["sent"].get(name), seen["caps"].get(name)
        if sent is None:
            text = f"not observed live; {reading}"
        elif cap is None or sent > cap:
            raise FactsError(f"{where}: {name} sent v{sent} needs the emulator's cap")
        elif base is line and sent > versions[-1]:
            raise FactsError(f"{where}: {name} was observed at v{sent}, above the v"
                             f"{versions[-1]} read at {tag}: read it again")
        elif sent == cap:
            text = (f"observed live: v{sent}, the emulator's maximum (kclient decodes no "
                    f"higher), so the ceiling is the reading's: {reading}")
        else:
            text = (f"observed live: v{sent} against an emulator offering up to v{cap}; "
                    f"floor: {reading}")
            if sent != versions[-1]:
                text += f" (which read v{versions[-1]})"
            versions = sorted({v for v in versions if v <= sent} | {sent})
        apis[str(keys[name])] = _cell(versions, text, cell.get("pinned"))
    # A line read at its own tag is checked by its observation; one read at an older
    # line's tag is completed by it.
    source = {"repo": client["repo"], "tag": tag, "commit": base["commit"],
              "checked_live" if base is line else "observed": (
                  f"{seen['package']} ({client['name']} {seen['release']}) observed live "
                  f"on {seen['on']}")}
    return dict(sorted(apis.items(), key=lambda kv: int(kv[0]))), source


def _check_reading(line: dict[str, Any], where: str) -> dict[str, Any]:
    """Where a line was read: at a tag of the library's repository (its 40-hex commit),
    or, for a release whose tag the source snapshot lacks, in the package the registry
    publishes (``package``: registry, name, version and the tarball's integrity hash)."""
    if not line.get("how_read"):
        raise FactsError(f"{where}: how_read says how the versions were read")
    package = line.get("package")
    if package is not None:
        if not all(package.get(k) for k in ("registry", "name", "version", "integrity")) \
                or not str(package["integrity"]).startswith("sha512-"):
            raise FactsError(f"{where}: package needs registry, name, version and its sha512 "
                             "integrity")
        return {"package": (f"{package['registry']} {package['name']}@{package['version']} "
                            f"({package['integrity'][:19]}...)")}
    if not re.fullmatch(r"[0-9a-f]{40}", str(line.get("commit", ""))) or not line.get("tag"):
        raise FactsError(f"{where}: needs the tag and the 40-hex commit it was read at")
    return {"tag": line["tag"], "commit": line["commit"]}


def _line(client: dict[str, Any], line: dict[str, Any], keys: dict[str, int],
          releases: dict[str, Any], feature_names: set[str], everyday: tuple[str, ...]
          ) -> dict[str, Any]:
    where = f"{client['name']} {line.get('line')}"
    strategy = line.get("strategy") or client.get("strategy")
    handshake = line.get("handshake") or client.get("handshake")
    if not strategy or strategy.get("kind") not in STRATEGIES or not strategy.get("source"):
        raise FactsError(f"{where}: strategy must be one of {sorted(STRATEGIES)} with a source")
    if not handshake or not all(handshake.get(k) for k in (
            "api_versions", "unsupported_version", "pre_0_10", "source")):
        raise FactsError(f"{where}: handshake needs api_versions, unsupported_version, pre_0_10 "
                         "and source")
    if "release" in line:
        apis = _java_apis(str(line["release"]), releases, keys)
        if line.get("pin_newest"):  # no negotiation: the newest version of each request
            apis.pop(str(keys["ApiVersions"]), None)
            for cell in apis.values():
                cell["pinned"] = cell["max"]
        source: dict[str, Any] = {"repo": client["repo"], "derived_from_release": line["release"],
                                  "rule": client["derive"]}
    elif "observed" in line:
        if "tag" in line:
            _check_reading(line, where)
        apis, source = _observed_cells(client, line, keys, where)
        source["how_read"] = "; ".join(
            text for text in (line.get("how_read"), line["observed"]["how"]) if text)
    else:
        source = {"repo": client["repo"], **_check_reading(line, where),
                  "how_read": line["how_read"]}
        caps = _franz_cap(line["cap_release"], releases) if "cap_release" in line else {}
        apis = _line_cells(line["apis"], keys, caps, line.get("cap_source"), where)
        if caps:
            source["cap"] = line["cap_source"]
    roles = {}
    for role, cells in line.get("roles", {}).items():
        if role not in ROLES:
            raise FactsError(f"{where}: role {role!r} is not one of {ROLES}")
        roles[role] = _line_cells(cells, keys, {}, None, f"{where} ({role})")
    asks = strategy.get("asks")
    if (asks is None) == (strategy["kind"] in ("one_table", "first_broker", "release_guess")):
        raise FactsError(f"{where}: a library where one broker decides says which it asks "
                         f"(asks: one of {ASKS}), and only such a library")
    if asks is not None and asks not in ASKS:
        raise FactsError(f"{where}: asks must be one of {ASKS}")
    features = {}
    overrides = line.get("feature_overrides", {})
    for name in everyday:
        features[name] = {"uses": True, "source": "everyday use: every profiled line has a "
                          "producer and a group consumer built on these requests"}
    for name, use in client["features"].items():
        if name not in feature_names or not use.get("source"):
            raise FactsError(f"{where}: feature {name!r} is unknown or has no source")
        override = overrides.get(name, True)
        text = use["source"]
        if isinstance(override, dict):  # the line's own reading, with its source
            if not override.get("source") or not isinstance(override.get("uses"), bool):
                raise FactsError(f"{where}: feature_overrides.{name} needs uses and source")
            override, text = override["uses"], override["source"]
        uses = None if use["uses"] is None or override is None else (
            bool(use["uses"]) and bool(override))
        since = use.get("from")
        if since is not None and _release_key(line["first"]) < _release_key(since):
            uses = False
        features[name] = {"uses": uses, "source": text + (f" (from {since})" if since else "")}
        if use.get("fallback"):
            features[name]["fallback"] = use["fallback"]
    before = line.get("before")
    if before is None:  # the newest line read covers its minor release, no more
        before = _next_minor(str(line.get("observed", {}).get("release") or line.get("tag")
                                 or line.get("package", {}).get("version") or line["release"]))
    return {
        "line": line["line"], "first": line["first"], "before": before,
        "source": source,
        "strategy": {"kind": strategy["kind"], "text": STRATEGIES[strategy["kind"]],
                     "source": strategy["source"], "asks": asks},
        "handshake": {k: handshake[k] for k in ("api_versions", "unsupported_version",
                                                "pre_0_10", "source")},
        "apis": dict(sorted(apis.items(), key=lambda kv: int(kv[0]))),
        "roles": roles,
        "features": features,
        "note": line.get("note"),
    }


def _packages(client: dict[str, Any]) -> list[dict[str, Any]]:
    """The packages that bundle the library (confluent-kafka bundles librdkafka): the
    package releases whose bundled release has another number, each with its source."""
    out = []
    for package in client.get("packages", []):
        where = f"{client['name']} package {package.get('name')}"
        if not all(package.get(k) for k in ("name", "spellings", "rule", "source")):
            raise FactsError(f"{where}: needs name, spellings, rule and source")
        aliases = {a.lower() for a in client.get("aliases", [])}
        if any(s.lower() not in aliases for s in package["spellings"]):
            raise FactsError(f"{where}: its spellings must be aliases of {client['name']}")
        differs = {}
        for release, bundled in package.get("differs", {}).items():
            if not bundled.get("source") or not re.fullmatch(r"\d+(\.\d+){1,3}", release) \
                    or not re.fullmatch(r"\d+(\.\d+){1,3}", str(bundled.get("release"))):
                raise FactsError(f"{where}: {release} needs the bundled release and a source")
            differs[release] = {"release": bundled["release"], "source": bundled["source"]}
        out.append({"name": package["name"], "spellings": package["spellings"],
                    "rule": package["rule"], "source": package["source"],
                    "differs": differs})
    return out


def build_clients(facts_path: Path = FACTS, releases_path: Path = RELEASES) -> dict[str, Any]:
    """The shipped client data, from the facts and the release data."""
    facts = json.loads(facts_path.read_text(encoding="utf-8"))
    releases = json.loads(releases_path.read_text(encoding="utf-8"))
    keys = {str(name): int(key) for key, name in releases["api_names"].items()}
    if facts.get("format") != 2:
        raise FactsError(f"{facts_path}: unsupported format {facts.get('format')!r}")
    features = _features(facts, keys)
    clients = []
    names: set[str] = set()
    for client in facts["clients"]:
        spellings = {client["name"].lower(), *(a.lower() for a in client.get("aliases", []))}
        if spellings & names:
            raise FactsError(f"{client['name']}: a name or alias is used twice")
        names |= spellings
        everyday = tuple(n for n, f in facts["features"].items() if f.get("everyday"))
        lines = [_line(client, line, keys, releases, set(features), everyday)
                 for line in client["lines"]]
        for older, newer in itertools.pairwise(lines):
            if older["before"] is None or not (
                    _release_key(older["first"]) < _release_key(older["before"])
                    <= _release_key(newer["first"])):
                raise FactsError(f"{client['name']}: line {older['line']} must end before "
                                 f"{newer['line']} starts (a gap is allowed: not profiled)")
        clients.append({"name": client["name"], "aliases": client.get("aliases", []),
                        "language": client["language"], "repo": client["repo"],
                        "note": client.get("note"), "lines": lines,
                        "packages": _packages(client)})
    support = []
    for index, item in enumerate(facts["support"]):
        if not (item.get("library") and item.get("text") and item.get("source")):
            raise FactsError(f"support[{index}]: needs library, text and source")
        support.append({k: item.get(k) for k in (
            "library", "text", "source", "clients_from", "clients_before", "brokers_from",
            "brokers_before")})
    return {
        "format": 2,
        "about": ("Kafka client libraries per release line: the versions each sends per API "
                  "(key: {min, max, avoid, source}), how it picks a version, its handshake and "
                  "its features. Generated by tools/gen_clients.py; do not edit."),
        "features": features,
        "clients": clients,
        "support": support,
        "provenance": {
            "tool": "tools/gen_clients.py",
            "inputs": ["tools/facts/clients.json (read at each library's release tag)",
                       "kclient/negotiation/releases.json (the Java client's lines)"],
            "read_at": {c["name"]: [ln["source"].get("observed") or ln["source"].get("tag") or
                                    ln["source"].get("package") or
                                    f"release {ln['source']['derived_from_release']}"
                                    for ln in c["lines"]] for c in clients},
        },
    }


def render(data: dict[str, Any]) -> str:
    """The file's text (stable: the drift test compares it)."""
    return json.dumps(data, indent=None, separators=(",", ":")).replace(
        '},"', '},\n"') + "\n"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--check", action="store_true",
                        help="exit 1 when the shipped file differs from a fresh generation")
    args = parser.parse_args()
    text = render(build_clients())
    if args.check:
        current = OUT.read_text(encoding="utf-8") if OUT.exists() else ""
        if current != text:
            print(f"{OUT.relative_to(ROOT)} is stale: run python tools/gen_clients.py")
            sys.exit(1)
        return
    OUT.write_text(text, encoding="utf-8")
    print(f"wrote {OUT.relative_to(ROOT)}")


if __name__ == "__main__":
    main()
