"""Re-read client libraries' sources at the facts' tags; compare with tools/facts/clients.json.

The facts of the client profiles were read by hand, helped by the extractors
below, from each library's repository at a release tag.  This tool repeats the
mechanical part: for every line whose facts name a tag, it reads the files at
that tag from a local git mirror and prints, per API, where the versions the
source gives differ from the facts.  Hand-read cells (kafka-python's and old
aiokafka's call sites, librdkafka's Produce/Metadata/ApiVersions ceilings,
sarama's pinned versions) are not re-derived; the tool says which lines it
checked.

The mirror directory holds one bare repository per library, named
``<owner>+<name>/repo`` (as the ``fetch`` helper of the development
environment lays them out); pass it with ``--mirror``.  Nothing is fetched from
the network.

Run from the repository root:  python tools/crosscheck_clients.py --mirror DIR
"""

from __future__ import annotations

import argparse
import json
import re
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
FACTS = ROOT / "tools" / "facts" / "clients.json"
RELEASES = ROOT / "kclient" / "negotiation" / "releases.json"

Extracted = dict[str, set[int]]


class Mirror:
    """Read files of one repository at a tag, from a bare git mirror."""

    def __init__(self, root: Path, repo: str) -> None:
        self.git_dir = root / repo.replace("/", "+") / "repo"

    def _git(self, *args: str) -> str:
        return subprocess.run(["git", f"--git-dir={self.git_dir}", *args], capture_output=True,
                              text=True, check=False, timeout=120).stdout

    def show(self, tag: str, path: str) -> str:
        """The file's text at ``tag`` (empty when absent)."""
        return self._git("show", f"{tag}:{path}")

    def files(self, tag: str, under: str) -> list[str]:
        """Every file under ``under`` at ``tag``."""
        return self._git("ls-tree", "-r", "--name-only", tag, under).split()

    def commit(self, tag: str) -> str:
        """The commit ``tag`` names."""
        return self._git("rev-list", "-n1", tag).strip()


def _add(out: Extracted, name: str, versions: range | list[int]) -> None:
    out.setdefault(name, set()).update(versions)


_RDK = re.compile(r"ApiVersion_supported0?\s*\(\s*\w+\s*,\s*RD_KAFKAP_(\w+)\s*,\s*(\d+)\s*,"
                  r"\s*(\d+)", re.S)


def librdkafka(m: Mirror, tag: str, names: dict[int, str]) -> Extracted:
    """Union of the min..max each call site asks rd_kafka_broker_ApiVersion_supported for."""
    out: Extracted = {}
    for path in m.files(tag, "src"):
        if path.endswith(".c"):
            for found in _RDK.finditer(m.show(tag, path)):
                _add(out, found.group(1), range(int(found.group(2)), int(found.group(3)) + 1))
    for hand_read in ("Produce", "Metadata", "ApiVersions", "SaslAuthenticate"):
        out.pop(hand_read, None)
    return out


def kafkajs(m: Mirror, tag: str, names: dict[int, str]) -> Extracted:
    """The keys of each request module's ``versions`` table."""
    out: Extracted = {}
    for path in m.files(tag, "src/protocol/requests"):
        if path.endswith("/index.js") and path.count("/") == 4:
            folder = path.split("/")[3]
            table = re.search(r"const versions = \{(.*?)\n\}", m.show(tag, path), re.S)
            if table:
                _add(out, folder[0].upper() + folder[1:],
                     [int(v) for v in re.findall(r"^\s{2}(\d+):", table.group(1), re.M)])
    return out


_SARAMA_NAMES = {"Offset": "ListOffsets", "InitProducerID": "InitProducerId"}
_SARAMA = re.compile(r"func \(\w+ \*(\w+)Request\) isValidVersion\(\) bool \{\s*return "
                     r"\w+\.Version >= (\d+) && \w+\.Version <= (\d+)", re.S)


def sarama(m: Mirror, tag: str, names: dict[int, str]) -> Extracted:
    """isValidVersion() of each request (the floor; the ceiling is the pinned version)."""
    out: Extracted = {}
    for path in m.files(tag, "."):
        if path.endswith("_request.go") and "/" not in path:
            for found in _SARAMA.finditer(m.show(tag, path)):
                name = _SARAMA_NAMES.get(found.group(1), found.group(1))
                _add(out, name, [int(found.group(2))])
    return out


def franz_go(m: Mirror, tag: str, names: dict[int, str]) -> Extracted:
    """kmsg's MaxVersion() per request (before the kversion.Stable() cap)."""
    out: Extracted = {}
    text = m.show(tag, "pkg/kmsg/generated.go")
    for found in re.finditer(r"func \(\*(\w+)Request\) MaxVersion\(\) int16\s*\{ return (\d+) \}",
                             text):
        _add(out, found.group(1), range(int(found.group(2)) + 1))
    return out


def platformatic(m: Mirror, tag: str, names: dict[int, str]) -> Extracted:
    """One module per version: createAPI(key, version)."""
    out: Extracted = {}
    for path in m.files(tag, "src/apis"):
        if re.search(r"-v\d+\.ts$", path):
            found = re.search(r"createAPI<[^(]*\(\s*(\d+),\s*(\d+)", m.show(tag, path), re.S)
            if found and int(found.group(1)) in names:
                _add(out, names[int(found.group(1))], [int(found.group(2))])
    return out


def aiokafka(m: Mirror, tag: str, names: dict[int, str]) -> Extracted:
    """The versions in each Request class's union of RequestStruct classes (0.13 on)."""
    out: Extracted = {}
    for path in m.files(tag, "aiokafka/protocol"):
        if not path.endswith(".py"):
            continue
        text = m.show(tag, path)
        # A struct class's version is the API_VERSION it declares, not the one its name says.
        declared = {found.group(1): int(found.group(2)) for found in re.finditer(
            r"^class (\w+_v\d+)\(\w+\):\s*\n\s*API_KEY = \d+\s*\n\s*API_VERSION = (\d+)",
            text, re.M)}
        aliases = {}
        for found in re.finditer(r"^(\w+Struct)(?:: TypeAlias)? = (\(.*?\n\)|[^\n]+)", text,
                                 re.M | re.S):
            body = "\n".join(line.split("#")[0] for line in found.group(2).splitlines())
            aliases[found.group(1)] = re.findall(r"\w+_v\d+\b", body)
        for found in re.finditer(r"^class (\w+)\(\s*Request\[(\w+)\]\s*\):\s*\n\s*API_KEY = "
                                 r"(\d+)", text, re.M):
            structs = aliases.get(found.group(2), [found.group(2)])
            body = text[found.end():].split("\nclass ", 1)[0]
            if re.search(r"ALLOW_UNKNOWN_API_VERSION\b.*= True", body):
                structs = structs[:1]  # sent before any broker table: the first struct
            _add(out, names[int(found.group(3))],
                 [declared.get(c, int(c.rpartition("_v")[2])) for c in structs])
    return out


#: The extractor per (library, first release of the line); lines not listed are hand-read.
EXTRACTORS: dict[str, Callable[[Mirror, str, dict[int, str]], Extracted]] = {
    "librdkafka": librdkafka, "kafkajs": kafkajs, "sarama": sarama, "franz-go": franz_go,
    "@platformatic/kafka": platformatic, "aiokafka": aiokafka,
}
_HAND_READ_LINES = {("aiokafka", "0.8"),
                    # kafkajs 1.2/1.3: lookup drops Produce v3 and Fetch v4 by default
                    # (allowExperimentalV011=false), which the versions tables still list
                    ("kafkajs", "1.2"), ("kafkajs", "1.3")}


def _versions(text: str) -> set[int]:
    found: set[int] = set()
    for part in text.split(","):
        low, _, high = part.partition("-")
        found.update(range(int(low), int(high or low) + 1))
    return found


def crosscheck(mirror: Path) -> list[str]:
    """Every disagreement between the facts and a fresh reading, as text."""
    facts = json.loads(FACTS.read_text(encoding="utf-8"))
    names = {int(k): str(v) for k, v in
             json.loads(RELEASES.read_text(encoding="utf-8"))["api_names"].items()}
    problems: list[str] = []
    for client in facts["clients"]:
        extract = EXTRACTORS.get(client["name"])
        for line in client["lines"]:
            where = f"{client['name']} {line['line']} ({line.get('tag')})"
            if "tag" not in line:
                origin = (f"read from the published package {line['package']['name']}@"
                          f"{line['package']['version']}" if "package" in line else
                          f"observed live on top of line {line['from_line']}" if "observed" in line
                          else f"derived from release {line['release']} by tools/gen_clients.py")
                print(f"{where}: {origin}")
                continue
            if extract is None or (client["name"], line["line"]) in _HAND_READ_LINES:
                print(f"{where}: hand-read, not re-derived")
                continue
            m = Mirror(mirror, client["repo"])
            if m.commit(line["tag"]) != line["commit"]:
                problems.append(f"{where}: the tag names {m.commit(line['tag']) or 'nothing'}, "
                                f"the facts {line['commit']}")
                continue
            # Libraries spell some names their own way (franz-go: InitProducerID).
            canonical = {n.lower(): n for n in names.values()}
            canonical["alterpartitionassignments"] = "AlterPartitionReassignments"
            fresh: Extracted = {}
            for raw, versions in extract(m, line["tag"], names).items():
                fresh.setdefault(canonical.get(raw.lower(), raw), set()).update(versions)
            for api, cell in line["apis"].items():
                if api not in fresh:
                    continue
                ours = _versions(cell["versions"])
                theirs = fresh[api]
                if client["name"] == "sarama":  # the facts' floor only
                    if min(ours) != min(theirs):
                        problems.append(f"{where}: {api} floor {min(ours)}, source {min(theirs)}")
                elif ours != theirs:
                    problems.append(f"{where}: {api} facts {sorted(ours)}, source "
                                    f"{sorted(theirs)}")
            print(f"{where}: {len(line['apis'])} APIs compared")
    return problems


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--mirror", type=Path, required=True,
                        help="directory of bare mirrors, <owner>+<name>/repo each")
    args = parser.parse_args()
    problems = crosscheck(args.mirror)
    for problem in problems:
        print(f"disagreement: {problem}")
    sys.exit(1 if problems else 0)


if __name__ == "__main__":
    main()
