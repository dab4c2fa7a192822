"""Import cost: what an application pays before it has done anything.

Each statement runs in a fresh interpreter under ``python -X importtime``.
Two figures: *import*, the sum of the cumulative times of the top-level
modules the statement imported (startup excluded: the measure the goal uses),
and *wall*, the statement's own wall time (imports plus any work, such as
parsing features.yaml or compiling a codec).  Medians of ``--repeat`` runs are
printed with the spread of the import figure, next to the peers' usual first
line (kafka-python, confluent-kafka) when they are installed.

Goal (issue "every API"): ``import kclient`` plus ``from kclient import
SyncClient`` under 100 ms.  The asyncio engine, the negotiation core and the
codec load on first use instead; their rows show what that first use costs.

Usage: ``python -m benchmarks imports [-- --repeat 7]``.
"""

from __future__ import annotations

import argparse
import importlib.util
import statistics
import subprocess
import sys

GOAL_MS = 100.0

ROWS: tuple[tuple[str, str], ...] = (
    ("import kclient", "import kclient"),
    ("import kclient + SyncClient", "import kclient; from kclient import SyncClient"),
    ("first SyncClient use (engine)", "import kclient.net.client"),
    ("negotiation core + features", "import kclient.negotiation; "
     "kclient.negotiation.default_features()"),
    ("first encode (one codec compiled)", "import kclient.protocol as p; "
     "p.encode('MetadataRequest', 12, {'topics': None})"),
)
PEERS: tuple[tuple[str, str, str], ...] = (
    ("kafka-python: from kafka import KafkaAdminClient", "kafka",
     "from kafka import KafkaAdminClient"),
    ("confluent-kafka: import confluent_kafka", "confluent_kafka", "import confluent_kafka"),
)


_CHILD = ("import sys, time\nstarted = time.perf_counter()\nexec(sys.argv[1])\n"
          "print((time.perf_counter() - started) * 1000)\n")


def import_ms(statement: str) -> tuple[float, float]:
    """(import ms, wall ms) of ``statement`` from one ``-X importtime`` run."""
    done = subprocess.run([sys.executable, "-X", "importtime", "-c", _CHILD, statement],
                          capture_output=True, text=True, timeout=120, check=True)
    total = 0
    before_statement = True
    for line in done.stderr.splitlines():
        if not line.startswith("import time:") or "cumulative" in line:
            continue
        _, cumulative, name = line.removeprefix("import time:").split("|")
        if name.strip() == "site":
            before_statement = False  # everything above is interpreter start-up
            continue
        if not before_statement and name.startswith(" ") and not name.startswith("  "):
            total += int(cumulative)
    return total / 1000, float(done.stdout.split()[-1])


def _measure(statement: str, repeat: int) -> tuple[float, float, float, float]:
    """Median import ms, its min and max, and the median wall ms."""
    runs = [import_ms(statement) for _ in range(repeat)]
    imports = sorted(r[0] for r in runs)
    wall = statistics.median(r[1] for r in runs)
    return statistics.median(imports), imports[0], imports[-1], wall


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(prog="python -m benchmarks imports")
    parser.add_argument("--repeat", type=int, default=7)
    args = parser.parse_args(argv)
    print(f"{'statement':<52} {'import ms':>10} {'min':>8} {'max':>8} {'wall ms':>9}")
    results: dict[str, float] = {}
    for label, statement in ROWS:
        median, low, high, wall = _measure(statement, args.repeat)
        results[label] = median
        print(f"{label:<52} {median:>10.1f} {low:>8.1f} {high:>8.1f} {wall:>9.1f}")
    target = results["import kclient + SyncClient"]
    for label, module, statement in PEERS:
        if importlib.util.find_spec(module) is None:
            print(f"{label:<52} {'not installed':>10}")
            continue
        median, low, high, wall = _measure(statement, args.repeat)
        print(f"{label:<52} {median:>10.1f} {low:>8.1f} {high:>8.1f} {wall:>9.1f}"
              f"   (kclient + SyncClient: {target / median:.2f}x)")
    verdict = "meets" if target < GOAL_MS else "MISSES"
    print(f"goal: import kclient + SyncClient < {GOAL_MS:.0f} ms: {verdict} ({target:.1f} ms)")
    return 0
