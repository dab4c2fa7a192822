"""Run every benchmark module (``benchmarks/bench_*.py``) or the ones named.

Usage: ``python -m benchmarks [NAME ...] [-- ARGS]`` where NAME is ``codec``,
``handshake``, ``fleet`` ...; arguments after ``--`` go to each benchmark.
"""

from __future__ import annotations

import importlib
import sys
import time
from pathlib import Path


def main(argv: list[str]) -> int:
    split = argv.index("--") if "--" in argv else len(argv)
    names, rest = argv[:split], argv[split + 1 :]
    here = Path(__file__).parent
    available = sorted(p.stem.removeprefix("bench_") for p in here.glob("bench_*.py"))
    selected = names or available
    unknown = [n for n in selected if n not in available]
    if unknown:
        print(f"unknown benchmark(s) {unknown}; available: {available}", file=sys.stderr)
        return 2
    status = 0
    for name in selected:
        module = importlib.import_module(f"benchmarks.bench_{name}")
        print(f"=== {name} ===", flush=True)
        started = time.perf_counter()
        status = module.main(rest) or status  # a benchmark may report failure (fuzz)
        print(f"=== {name}: {time.perf_counter() - started:.1f} s ===\n", flush=True)
    return status


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
