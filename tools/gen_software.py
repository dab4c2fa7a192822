"""Write kclient/negotiation/software.json (client software names) from tools/facts/software.json.

The facts file holds what each Kafka client library sends as ClientSoftwareName and
ClientSoftwareVersion in ApiVersions v3+ (KIP-511) and how its version string is
formed, read in the library's source at a release tag (repository, tag, commit and
file for every entry, in our own words); the libraries that send no name; and the
Confluent Platform releases' Apache Kafka releases (for the Java client's ``-ccs``
versions).  This tool checks those facts (names brokers accept, libraries kclient
profiles in kclient/negotiation/clients.json, known version rules, a source on
every entry, Confluent Platform lines in order) and writes the shipped table with
its provenance.  The table maps a name and version to a library release; the
library's profile lines stay in clients.json.

Run from the repository root:  python tools/gen_software.py [--check]
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
FACTS = ROOT / "tools" / "facts" / "software.json"
CLIENTS = ROOT / "kclient" / "negotiation" / "clients.json"
OUT = ROOT / "kclient" / "negotiation" / "software.json"

#: How a version string names the library's release (the words kclient shows).
RULES = {
    "own": "the version is the library's release",
    "after": "the library's release follows a marker in the version",
    "java": "the version is the Java client's release, or a Confluent Platform release "
            "(N.M.P-ccs) read through the Confluent Platform table",
}
_RELEASE = re.compile(r"\d+(\.\d+){1,3}")
_MINOR = re.compile(r"\d+\.\d+")
_COMMIT = re.compile(r"[0-9a-f]{40}")


class FactsError(ValueError):
    """The facts file is wrong; the message says where."""


def _kip511() -> re.Pattern[str]:
    """Kafka's pattern for ClientSoftwareName and ClientSoftwareVersion (kclient's one copy)."""
    sys.path.insert(0, str(ROOT))
    from kclient.negotiation.software import SOFTWARE_PATTERN

    return SOFTWARE_PATTERN


def _key(text: str) -> tuple[int, ...]:
    return tuple(int(p) for p in text.split("."))


def _source(raw: Any, where: str, fields: tuple[str, ...]) -> dict[str, str]:
    if not isinstance(raw, dict) or not all(raw.get(k) for k in fields):
        raise FactsError(f"{where}: needs {', '.join(fields)}")
    if not _COMMIT.fullmatch(str(raw["commit"])):
        raise FactsError(f"{where}: commit must be 40 hex digits, got {raw['commit']!r}")
    return {k: str(raw[k]) for k in fields}


def _version_rule(raw: Any, where: str) -> dict[str, Any]:
    if not isinstance(raw, dict) or raw.get("rule") not in RULES:
        raise FactsError(f"{where}: version.rule must be one of {sorted(RULES)}")
    rule: dict[str, Any] = {"rule": raw["rule"], "marker": None, "own_from": None,
                            "no_release": {}}
    if raw["rule"] == "after":
        marker = raw.get("marker")
        if not isinstance(marker, str) or not marker.startswith("-") or not marker.endswith("-"):
            raise FactsError(f"{where}: an 'after' rule names its marker, e.g. -rdkafka-")
        rule["marker"] = marker
    own_from = raw.get("own_from")
    if own_from is not None:
        if not _RELEASE.fullmatch(str(own_from)):
            raise FactsError(f"{where}: own_from must be a release, got {own_from!r}")
        rule["own_from"] = str(own_from)
    for value, why in (raw.get("no_release") or {}).items():
        if not _kip511().fullmatch(value) or not why:
            raise FactsError(f"{where}: no_release maps versions brokers accept to a reason")
        rule["no_release"][value] = str(why)
    return rule


def _names(facts: dict[str, Any], libraries: set[str]) -> list[dict[str, Any]]:
    names: list[dict[str, Any]] = []
    seen: set[str] = set()
    for index, entry in enumerate(facts["names"]):
        where = f"names[{index}] ({entry.get('name')})"
        name = entry.get("name")
        if not isinstance(name, str) or not _kip511().fullmatch(name):
            raise FactsError(f"{where}: the name must be one Kafka accepts "
                             "([a-zA-Z0-9](?:[a-zA-Z0-9\\-.]*[a-zA-Z0-9])?)")
        if name.lower() in seen:
            raise FactsError(f"{where}: the name is listed twice")
        seen.add(name.lower())
        if entry.get("library") not in libraries:
            raise FactsError(f"{where}: library {entry.get('library')!r} has no profile in "
                             f"clients.json ({', '.join(sorted(libraries))})")
        if not _RELEASE.fullmatch(str(entry.get("since", ""))):
            raise FactsError(f"{where}: since must be the first release that sends the name")
        if not entry.get("sent_by") or not entry.get("version_text"):
            raise FactsError(f"{where}: needs sent_by and version_text")
        names.append({
            "name": name, "library": entry["library"], "sent_by": entry["sent_by"],
            "since": entry["since"], "version": _version_rule(entry.get("version"), where),
            "version_text": entry["version_text"],
            "source": _source(entry.get("source"), f"{where}.source",
                              ("repo", "tag", "commit", "file", "how")),
            "first": _source({**(entry.get("first") or {}),
                              "repo": (entry.get("source") or {}).get("repo")},
                             f"{where}.first", ("repo", "tag", "commit", "how")),
        })
    return names


def _nameless(facts: dict[str, Any], libraries: set[str]) -> list[dict[str, Any]]:
    out = []
    for index, entry in enumerate(facts["nameless"]):
        where = f"nameless[{index}] ({entry.get('library')})"
        if entry.get("library") not in libraries or not entry.get("how") or not entry.get(
                "releases"):
            raise FactsError(f"{where}: needs a profiled library, releases and how")
        out.append({"library": entry["library"], "releases": entry["releases"],
                    "how": entry["how"],
                    "source": _source(entry.get("source"), f"{where}.source",
                                      ("repo", "tag", "commit", "file"))})
    return out


def _platform(facts: dict[str, Any]) -> dict[str, Any]:
    raw = facts["confluent_platform"]
    suffixes = raw.get("suffixes")
    if not suffixes or not all(isinstance(s, str) and s.isalnum() for s in suffixes):
        raise FactsError("confluent_platform.suffixes: the version suffixes, e.g. ccs")
    lines = []
    for index, line in enumerate(raw["lines"]):
        where = f"confluent_platform.lines[{index}]"
        if not all(_MINOR.fullmatch(str(line.get(k, ""))) for k in ("from", "to", "kafka_from")):
            raise FactsError(f"{where}: from, to and kafka_from are MAJOR.MINOR releases")
        first, last = _key(line["from"]), _key(line["to"])
        if first[0] != last[0] or first > last or not line.get("source"):
            raise FactsError(f"{where}: one Confluent Platform major release, from <= to, "
                             "with a source")
        lines.append({k: line[k] for k in ("from", "to", "kafka_from", "source")})
    for older, newer in itertools.pairwise(lines):
        if _key(older["to"]) >= _key(newer["from"]):
            raise FactsError(f"confluent_platform: {older['from']}-{older['to']} overlaps "
                             f"{newer['from']}-{newer['to']}")
    return {"about": raw["about"], "suffixes": list(suffixes), "lines": lines}


def build_software(facts_path: Path = FACTS, clients_path: Path = CLIENTS) -> dict[str, Any]:
    """The shipped software-name table, from the facts and the profiled libraries."""
    facts = json.loads(facts_path.read_text(encoding="utf-8"))
    if facts.get("format") != 1:
        raise FactsError(f"{facts_path}: unsupported format {facts.get('format')!r}")
    clients = json.loads(clients_path.read_text(encoding="utf-8"))
    libraries = {str(c["name"]) for c in clients["clients"]}
    names = _names(facts, libraries)
    return {
        "format": 1,
        "about": ("The client software names Kafka client libraries send in ApiVersions v3+ "
                  "(KIP-511), how each version string names the library's release, the "
                  "libraries that send no name, and the Confluent Platform releases' Apache "
                  "Kafka releases. Generated by tools/gen_software.py; do not edit."),
        "rules": RULES,
        "names": names,
        "nameless": _nameless(facts, libraries),
        "confluent_platform": _platform(facts),
        "provenance": {
            "tool": "tools/gen_software.py",
            "inputs": ["tools/facts/software.json (read at each library's release tag)",
                       "kclient/negotiation/clients.json (the profiled libraries)"],
            "read_at": {n["name"]: f"{n['source']['repo']} {n['source']['tag']}" for n in names},
        },
    }


def render(data: dict[str, Any]) -> str:
    """The file's text (stable: the drift test compares it)."""
    return json.dumps(data, indent=1, ensure_ascii=False) + "\n"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--check", action="store_true",
                        help="exit 1 when the shipped file differs from a fresh generation")
    args = parser.parse_args()
    text = render(build_software())
    if args.check:
        current = OUT.read_text(encoding="utf-8") if OUT.exists() else ""
        if current != text:
            print(f"{OUT.relative_to(ROOT)} is stale: run python tools/gen_software.py")
            sys.exit(1)
        return
    OUT.write_text(text, encoding="utf-8")
    print(f"wrote {OUT.relative_to(ROOT)}")


if __name__ == "__main__":
    main()
