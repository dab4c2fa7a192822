"""Blank lines cost what their bytes cost: snapshot readers against reading the bytes.

A snapshot file of nothing but line ends (``--mib`` MiB of them, 256 by default:
268 million blank lines; gzipped, 254 KiB) is read by

* ``core`` -- :func:`kclient.negotiation.snapshot.read_snapshots` on the plain
  file (what ``kclient features --snapshot`` reads);
* ``fleet`` -- the in-process fleet engine
  (:func:`kclient.fleet.local.run_local_report`, report written) on the gzipped
  file;

each against its yardstick in the same run: ``lines plain`` and ``lines gzip``,
the same bytes read in 1 MiB pieces (for the gzipped file, decompressed) and
their line ends counted, the least any reader that numbers lines must do.  Each path runs
``--repeat`` times in this process (GC on), the paths taking turns; medians
of the CPU time are printed.  Goal: each reader within ``GOAL_RATIO`` times
its yardstick (a line at a time, the 256 MiB file cost about 3 minutes).

Usage: ``python -m benchmarks blank [-- --mib 256 --repeat 3]``.
"""

from __future__ import annotations

import argparse
import gzip
import shutil
import statistics
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

from kclient.errors import FleetError
from kclient.fleet.local import run_local_report
from kclient.negotiation.snapshot import read_snapshots

#: The most a reader may cost, as a multiple of reading its file's bytes.
GOAL_RATIO = 5.0
_PIECE = 1 << 20


def write_blank_files(folder: Path, mib: int) -> tuple[Path, Path]:
    """``mib`` MiB of line ends, as ``blank.jsonl`` and ``blank.jsonl.gz``."""
    plain, packed = folder / "blank.jsonl", folder / "blank.jsonl.gz"
    piece = b"\n" * _PIECE
    with plain.open("wb") as out, gzip.open(packed, "wb", compresslevel=9) as zipped:
        for _ in range(mib):
            out.write(piece)
            zipped.write(piece)
    return plain, packed


def count_lines(path: Path) -> int:
    """The yardstick: every byte of ``path`` read (decompressed) in 1 MiB pieces, and
    its line ends counted."""
    lines = 0
    with (gzip.open(path, "rb") if path.suffix == ".gz" else path.open("rb")) as handle:
        while piece := handle.read(_PIECE):
            lines += piece.count(b"\n")
    return lines


def fleet_report(path: Path, out: Path) -> None:
    """The in-process engine's whole report of ``path`` (no record in it: refused)."""
    shutil.rmtree(out, ignore_errors=True)
    try:
        run_local_report(str(path), str(out))
    except FleetError as exc:
        assert "no valid snapshot record" in str(exc), exc


def cpu_seconds(work: Callable[[], object]) -> float:
    started = time.process_time()
    work()
    return time.process_time() - started


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(prog="python -m benchmarks blank")
    parser.add_argument("--mib", type=int, default=256)
    parser.add_argument("--repeat", type=int, default=3)
    args = parser.parse_args(argv)
    with tempfile.TemporaryDirectory(prefix="kclient-bench-blank-") as temp:
        folder = Path(temp)
        plain, packed = write_blank_files(folder, args.mib)
        print(f"{args.mib} MiB of line ends: {plain.stat().st_size:,} bytes plain, "
              f"{packed.stat().st_size:,} gzipped")
        paths: dict[str, Callable[[], object]] = {
            "lines plain": lambda: count_lines(plain),
            "core": lambda: read_snapshots(plain),
            "lines gzip": lambda: count_lines(packed),
            "fleet": lambda: fleet_report(packed, folder / "out"),
        }
        times: dict[str, list[float]] = {name: [] for name in paths}
        for _ in range(args.repeat):
            for name, work in paths.items():
                times[name].append(cpu_seconds(work))
    median = {name: statistics.median(found) for name, found in times.items()}
    for name, found in times.items():
        print(f"  {name:11} {median[name]:7.2f} s CPU (min {min(found):.2f}, "
              f"max {max(found):.2f})")
    failed = False
    for reader, yardstick in (("core", "lines plain"), ("fleet", "lines gzip")):
        ratio = median[reader] / max(median[yardstick], 1e-9)
        ok = ratio <= GOAL_RATIO
        failed |= not ok
        print(f"  {reader} / {yardstick}: {ratio:.1f}x (goal <= {GOAL_RATIO:g}x) "
              f"{'ok' if ok else 'FAIL'}")
    return 1 if failed else 0
