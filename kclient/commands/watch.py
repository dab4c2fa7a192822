"""``kclient watch``: follow a cluster's versions and features as brokers restart and upgrade.

It connects, prints the current summary (brokers with their state and release
guess, features available / unavailable / unknown), then one line per change as
the client's ``on_change`` reports it (:meth:`ViewDiff.lines`).  ``--format
json`` writes JSON Lines (one ``summary`` object, then one ``change`` object per
change).  ``--until-available FEATURE`` exits 0 as soon as the whole cluster
supports FEATURE; at ``--duration`` it exits 1 (unavailable) or 3 (unknown), as
``kclient features --require`` does.  Without ``--duration`` it runs until
interrupted.
"""

from __future__ import annotations

import argparse
import json
import sys
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any

from kclient.commands.common import add_connection_arguments
from kclient.values import seconds_problem

if TYPE_CHECKING:
    from kclient.negotiation.diff import ViewDiff
    from kclient.negotiation.model import BrokerVersions, ClusterView
    from kclient.net.client import Client

__all__ = ["register", "run_watch"]

EXIT_OK = 0
EXIT_UNAVAILABLE = 1
EXIT_UNKNOWN = 3
#: How often the watcher asks Metadata for brokers that joined or left (seconds).
METADATA_INTERVAL = 5.0


def _seconds(text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected seconds, got {text!r}") from None
    if (problem := seconds_problem(value)) is not None:
        raise argparse.ArgumentTypeError(problem)
    return value


def register(subparsers: Any) -> None:
    """Add the ``watch`` sub-command."""
    parser = subparsers.add_parser(
        "watch",
        help="print the cluster's versions and features, then every change (restarts, "
        "upgrades)",
        description="Connect, print the brokers (state, release guess) and the features, "
        "then one line per change as brokers restart, upgrade, join or leave.",
    )
    parser.add_argument("--format", choices=("text", "json"), default="text",
                        help="text lines (default) or JSON Lines")
    parser.add_argument("--until-available", metavar="FEATURE", default=None,
                        help="exit 0 once FEATURE is available on the whole cluster; at "
                        "--duration exit 1 (unavailable) or 3 (unknown)")
    parser.add_argument("--duration", type=_seconds, metavar="SECONDS", default=None,
                        help="stop after SECONDS (default: run until interrupted)")
    add_connection_arguments(parser)
    parser.set_defaults(handler=run_watch)


def _now() -> str:
    return datetime.now(UTC).isoformat(timespec="milliseconds").replace("+00:00", "Z")


def _broker(broker: BrokerVersions) -> dict[str, Any]:
    from kclient.render import broker_summary_json

    return broker_summary_json(broker)


def _features(client: Client) -> dict[str, list[str]]:
    from kclient.negotiation.verdict import Verdict

    report = client.report()
    return {str(state): report.names_in(state) for state in Verdict}


class _Printer:
    def __init__(self, json_lines: bool) -> None:
        self.json_lines = json_lines

    def emit(self, record: dict[str, Any], lines: list[str]) -> None:
        if self.json_lines:
            from kclient.contracts import FORMATS

            print(json.dumps({"format": FORMATS["watch"], **record}), flush=True)
            return
        for line in lines:
            print(f"{record['time']} {line}", flush=True)

    def summary(self, client: Client) -> None:
        view = client.view
        brokers = [_broker(b) for b in view.brokers]
        features = _features(client)
        lines = [f"cluster {client.cluster_id or 'unnamed'}: {len(brokers)} broker(s)"]
        lines += [f"broker {b['broker_id']} ({b['host']}:{b['port']}) {b['state']}, release "
                  f"{b['release_guess'] or 'unknown'}" for b in brokers]
        lines += [f"features {state}: {', '.join(names) or '-'}"
                  for state, names in features.items()]
        self.emit({"event": "summary", "time": _now(), "cluster": client.cluster_id,
                   "brokers": brokers, "features": features}, lines)

    def change(self, diff: ViewDiff, view: ClusterView) -> None:
        touched = set(diff.brokers_added) | set(diff.brokers_changed)
        brokers = [_broker(b) for b in view.brokers if b.node_id in touched]
        lines = [f"broker {b['broker_id']}: {b['state']}, release {b['release_guess'] or 'unknown'}"
                 + (f" ({b['error']})" if b["error"] else "") for b in brokers]
        lines += diff.lines()
        self.emit({"event": "change", "time": _now(), "brokers": brokers,
                   "brokers_removed": list(diff.brokers_removed),
                   "apis": [{"api_key": c.key, "name": c.name, "kind": c.kind,
                             "old": str(c.old) if c.old else None,
                             "new": str(c.new) if c.new else None} for c in diff.apis],
                   "features_gained": list(diff.features_gained),
                   "features_lost": list(diff.features_lost),
                   "features_unknown": list(diff.features_unknown),
                   "lines": diff.lines()}, lines)


async def _watch(args: argparse.Namespace, options: dict[str, Any]) -> int:
    import asyncio

    from kclient.negotiation.verdict import Verdict
    from kclient.net.client import Client

    printer = _Printer(args.format == "json")
    wanted: str | None = args.until_available
    changed = asyncio.Event()

    def on_change(diff: ViewDiff, view: ClusterView) -> None:
        printer.change(diff, view)
        changed.set()

    client = Client(**options, metadata_refresh_interval=METADATA_INTERVAL,
                    on_change=on_change)
    if wanted is not None:
        client.feature(wanted)  # an unknown name fails before connecting
    loop = asyncio.get_running_loop()
    deadline = None if args.duration is None else loop.time() + args.duration
    async with client:
        printer.summary(client)
        while True:
            if wanted is not None and client.feature(wanted).state is Verdict.AVAILABLE:
                return EXIT_OK
            left = None if deadline is None else deadline - loop.time()
            if left is not None and left <= 0:
                break
            changed.clear()
            try:
                async with asyncio.timeout(left):
                    await changed.wait()
            except TimeoutError:
                continue
    if wanted is None:
        return EXIT_OK
    state = client.feature(wanted).state
    print(f"kclient watch: {wanted} is {state} after {args.duration:g} s: "
          f"{client.explain(wanted)}", file=sys.stderr)
    return EXIT_UNKNOWN if state is Verdict.UNKNOWN else EXIT_UNAVAILABLE


def run_watch(args: argparse.Namespace) -> int:
    """Handler of ``kclient watch``."""
    import asyncio

    from kclient.commands.common import client_options_from_args

    options = client_options_from_args(args)
    return asyncio.run(_watch(args, options))
