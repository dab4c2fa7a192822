"""Compare kclient's release profiles with franz-go's pkg/kversion tables.

franz-go (github.com/twmb/franz-go) keeps per-release max versions for
ZooKeeper brokers (``zNN``) and KRaft brokers (``bNN``) in
``pkg/kversion/requests.go``, built release by release with ``incmax``,
``addkey``, ``addkeyver``, ``setmin`` and ``delete``.  This script reads that
file from a git checkout (bare or not), replays those calls, and prints every
(profile, key) where the max versions differ.  The disagreements and our
verdicts are recorded by hand in ``tools/gen_data.py`` (``CROSS_CHECK``); run
this after changing the release facts.

    python tools/crosscheck_kversion.py /path/to/franz-go[.git]

With ``--write-tables`` it writes franz-go's Kafka 4.0-4.2 broker tables (min
and max per key) to ``tests/data/franz_go_kversion.json`` instead: the
independent tables the "one answer" tests negotiate against.
"""

from __future__ import annotations

import argparse
import json
import re
import subprocess
from pathlib import Path

_FUNC = re.compile(r"^func ([zb])(\d+)\(\) \*release \{(.*?)^\}", re.M | re.S)
_LITERAL = re.compile(r"(\d+):\s*\{key: \d+(?:, vmax: (\d+))?\}")
_CALL = re.compile(r"now\.(incmax|addkey|addkeyver|setmin)\((\d+)(?:, (\d+))?\)"
                   r"|delete\(now\.reqs, (\d+)\)")
_CLONE = re.compile(r"([zb])(\d+)\(\)\.clone|prior := ([zb])(\d+)\(\)")


def replay_ranges(source: str) -> dict[str, dict[int, tuple[int, int]]]:
    """(kind+release) -> key -> (min, max) version, e.g. ``"b40"`` (``setmin`` included)."""
    bodies = {(m.group(1), m.group(2)): m.group(3) for m in _FUNC.finditer(source)}
    done: dict[tuple[str, str], dict[int, tuple[int, int]]] = {}

    def build(kind: str, digits: str) -> dict[int, tuple[int, int]]:
        if (kind, digits) in done:
            return done[(kind, digits)]
        body = bodies[(kind, digits)]
        base = _CLONE.search(body)
        if base is None:
            table = {int(k): (0, int(v or 0)) for k, v in _LITERAL.findall(body)}
        else:
            parent = (base.group(1) or base.group(3), base.group(2) or base.group(4))
            table = dict(build(*parent))
        for op, key, value, gone in _CALL.findall(body):
            if gone:
                table.pop(int(gone), None)
            elif op == "incmax":
                table[int(key)] = (table[int(key)][0], int(value))
            elif op == "addkey":
                table[int(key)] = (0, 0)
            elif op == "addkeyver":
                table[int(key)] = (0, int(value))
            elif op == "setmin":
                table[int(key)] = (int(value), table[int(key)][1])
        done[(kind, digits)] = table
        return table

    return {f"{kind}{digits}": build(kind, digits) for kind, digits in bodies}


def replay(source: str) -> dict[str, dict[int, int]]:
    """(kind+release) -> key -> max version, e.g. ``"b3.7"``."""
    return {name: {key: rng[1] for key, rng in table.items()}
            for name, table in replay_ranges(source).items()}


#: The franz-go tables written by ``--write-tables``: Kafka 4.x KRaft brokers.
TABLES = {"4.0": "b40", "4.1": "b41", "4.2": "b42"}
TABLES_FILE = Path(__file__).resolve().parent.parent / "tests" / "data" / "franz_go_kversion.json"


def write_tables(franz_go: Path, source: str) -> None:
    """Write franz-go's 4.x broker tables, with the commit they come from, for the tests."""
    commit = subprocess.run(["git", "-C", str(franz_go), "rev-parse", "HEAD"], check=True,
                            capture_output=True, text=True).stdout.strip()
    tables = replay_ranges(source)
    data = {
        "source": f"franz-go pkg/kversion/requests.go at {commit}, replayed by "
                  "tools/crosscheck_kversion.py --write-tables",
        "releases": {release: {str(k): list(r) for k, r in sorted(tables[name].items())}
                     for release, name in TABLES.items()},
    }
    TABLES_FILE.write_text(json.dumps(data, indent=1) + "\n")
    print(f"wrote {TABLES_FILE}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("franz_go", type=Path, help="franz-go checkout or bare repository")
    parser.add_argument("--write-tables", action="store_true",
                        help=f"write franz-go's 4.x broker tables to {TABLES_FILE.name} "
                        "(an independent table the one-answer tests negotiate against)")
    args = parser.parse_args()
    source = subprocess.run(
        ["git", "-C", str(args.franz_go), "show", "HEAD:pkg/kversion/requests.go"],
        check=True, capture_output=True, text=True).stdout
    if args.write_tables:
        write_tables(args.franz_go, source)
        return
    theirs = replay(source)
    root = Path(__file__).resolve().parent.parent
    ours = json.loads((root / "kclient" / "negotiation" / "releases.json").read_text())
    for entry in ours["releases"]:
        release, mode = entry["release"], entry["mode"]
        parts = release.split(".")
        if parts[0] == "0" and len(parts) == 2:
            parts.append("0")  # franz-go spells 0.9 and 0.11 as z090 and z0110
        key = ("z" if mode == "zookeeper" else "b") + "".join(parts)
        if key not in theirs:
            print(f"{entry['name']:>10}  (no franz-go table {key})")
            continue
        table = theirs[key]
        mine = {int(k): v[1] for k, v in entry["apis"].items()}
        for api in sorted(set(mine) | set(table)):
            if mine.get(api) != table.get(api):
                print(f"{entry['name']:>10}  key {api:>3}  ours {mine.get(api)!s:>4}  "
                      f"franz-go {table.get(api)!s:>4}")


if __name__ == "__main__":
    main()
