"""``python -m kclient.emulator``: run an emulated cluster until stdin closes or a signal.

Once every broker listens it prints one line, ``READY <bootstrap servers>``, to
stdout (and writes the servers to ``--ready-file`` when given), so a parent
process can wait for it.  Examples::

    python -m kclient.emulator 2.8 3.9 4.1
    python -m kclient.emulator 0.9.0:legacy 2.8:pre-kip511 --port 9092
    python -m kclient.emulator --count 100 --release 3.9
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import signal
import sys
from collections.abc import Sequence
from pathlib import Path

from kclient.emulator.behaviour import BEHAVIOUR_WORDS
from kclient.emulator.cluster import BrokerSpec, EmulatedCluster, parse_broker_spec
from kclient.errors import KClientError

__all__ = ["build_parser", "main"]


def build_parser() -> argparse.ArgumentParser:
    """The command line of the emulator runner."""
    parser = argparse.ArgumentParser(
        prog="python -m kclient.emulator",
        description="Run emulated Kafka brokers on 127.0.0.1 until stdin closes or SIGTERM.",
        epilog="behaviours: " + ", ".join(BEHAVIOUR_WORDS),
    )
    parser.add_argument("brokers", nargs="*", metavar="RELEASE[:BEHAVIOUR]",
                        help="one broker per argument, e.g. 2.8 or 3.9:slow:0.2")
    parser.add_argument("--count", type=int, default=0,
                        help="add this many brokers of --release (default 0)")
    parser.add_argument("--release", default="3.9", metavar="RELEASE[:BEHAVIOUR]",
                        help="release (and behaviour) of the --count brokers")
    parser.add_argument("--port", type=int, default=0,
                        help="first broker's port (the others take free ports)")
    parser.add_argument("--ready-file", type=Path, default=None,
                        help="write the bootstrap servers to this file when ready")
    parser.add_argument("--no-stdin", action="store_true",
                        help="do not stop when stdin closes (stop on SIGINT/SIGTERM only)")
    return parser


def _specs(args: argparse.Namespace) -> list[BrokerSpec]:
    specs = [parse_broker_spec(text) for text in args.brokers]
    # --release takes the same RELEASE[:BEHAVIOUR] form as the positional brokers.
    specs.extend(parse_broker_spec(args.release) for _ in range(max(args.count, 0)))
    if not specs:
        specs = [parse_broker_spec(args.release)]
    if args.port:
        first = specs[0]
        specs[0] = BrokerSpec(first.release, first.behaviour, first.node_id, first.rack,
                              args.port)
    return specs


async def _run(args: argparse.Namespace) -> None:
    cluster = EmulatedCluster(_specs(args))
    stop = asyncio.Event()
    loop = asyncio.get_running_loop()
    for sig in (signal.SIGINT, signal.SIGTERM):
        with contextlib.suppress(NotImplementedError, RuntimeError):
            loop.add_signal_handler(sig, stop.set)
    if not args.no_stdin:
        def watch_stdin() -> None:
            sys.stdin.buffer.read()
            loop.call_soon_threadsafe(stop.set)

        loop.run_in_executor(None, watch_stdin)
    async with cluster:
        servers = cluster.bootstrap_servers
        if args.ready_file is not None:
            args.ready_file.write_text(servers + "\n", encoding="utf-8")
        print(f"READY {servers}", flush=True)
        await stop.wait()


def main(argv: Sequence[str] | None = None) -> int:
    """Entry point; returns the exit code."""
    args = build_parser().parse_args(argv)
    try:
        asyncio.run(_run(args))
    except KClientError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        return 0
    return 0


if __name__ == "__main__":
    sys.exit(main())
