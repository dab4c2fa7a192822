"""``kclient watch``: follow a cluster's versions and features as brokers restart and upgrade.

It connects, prints the current summary (brokers with their state and release
guess, features available / unavailable / unknown), then one line per change as
the client's ``on_change`` reports it (:meth:`ViewDiff.lines`).  ``--format
json`` writes JSON Lines (one ``summary`` object, then one ``change`` object per
change).  ``--until-available FEATURE`` exits 0 as soon as the whole cluster
supports FEATURE; at ``--duration`` it exits 1 (unavailable) or 3 (unknown), as
``kclient features --require`` does.  Without ``--duration`` it runs until
interrupted.  ``--duration`` bounds the whole run, the first connection
included: when no broker answered by then it exits 3 (unknown).

A broker that stops answering is *unreachable* and its last answer still
counts ("unreachable, last answer (3.9) still counts"); its JSON keeps the
``release_guess`` of that last answer.  The text output lists only the API
changes clients notice (the version kclient sends changed, broker-internal
APIs left out) and counts the others; ``-v`` or ``--format json`` lists them all.
"""

from __future__ import annotations

import argparse
import json
import sys
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any

from kclient.address import format_address
from kclient.commands.common import add_connection_arguments, positive_seconds

if TYPE_CHECKING:
    from kclient.negotiation.diff import ViewDiff
    from kclient.negotiation.model import BrokerVersions, ClusterView
    from kclient.net.client import Client

__all__ = ["change_lines", "register", "run_watch"]

EXIT_OK = 0
EXIT_UNAVAILABLE = 1
EXIT_UNKNOWN = 3
#: How often the watcher asks Metadata for brokers that joined or left (seconds).
METADATA_INTERVAL = 5.0


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
    parser.add_argument("--duration", type=positive_seconds, metavar="SECONDS", default=None,
                        help="stop after SECONDS, the first connection included (default: "
                        "run until interrupted)")
    parser.add_argument("--lenient", action="store_true", default=False,
                        help="ignore brokers that never answered (default: what they could "
                        "block is unknown)")
    add_connection_arguments(parser)
    parser.set_defaults(handler=run_watch)


def _now() -> str:
    return datetime.now(UTC).isoformat(timespec="milliseconds").replace("+00:00", "Z")


def _broker(broker: BrokerVersions) -> dict[str, Any]:
    from kclient.commands.render import broker_summary_json
    from kclient.negotiation.releases import last_release_guess
    from kclient.negotiation.verdict import BrokerState

    record = broker_summary_json(broker)
    if broker.state is BrokerState.STALE:
        # Its last answer still counts, and so does the release it showed.
        record["release_guess"] = last_release_guess(broker)
    return record


def _broker_line(b: dict[str, Any]) -> str:
    """How one broker stands, in words: ``answered, release 3.9`` or
    ``unreachable, last answer (3.9) still counts``."""
    if b["state"] == "stale":
        return (f"unreachable, last answer ({b['release_guess'] or 'release unknown'}) "
                "still counts")
    return f"{b['state']}, release {b['release_guess'] or 'unknown'}"


def _touched(diff: ViewDiff, view: ClusterView) -> dict[int, dict[str, Any]]:
    """The brokers added or changed, by node id, as their JSON (looked up, not searched)."""
    touched = sorted({*diff.brokers_added, *diff.brokers_changed})
    return {node: _broker(view.broker(node)) for node in touched}


def change_lines(diff: ViewDiff, view: ClusterView, verbose: bool) -> list[str]:
    """The text lines of one change: brokers in words, then the diff.

    A broker that merely became unreachable is not "a new answer"; without
    ``verbose`` only the API changes clients notice are listed, the rest counted
    (:meth:`~kclient.negotiation.diff.ViewDiff.api_lines`).
    """
    states = _touched(diff, view)
    lines = [f"broker {node}: {_broker_line(b)}"
             + (f" ({b['error']})" if b["error"] else "") for node, b in states.items()]
    if diff.brokers_added:
        lines.append("brokers added: " + ", ".join(map(str, diff.brokers_added)))
    if diff.brokers_removed:
        lines.append("brokers removed: " + ", ".join(map(str, diff.brokers_removed)))
    answered = [n for n in diff.brokers_changed
                if n in states and states[n]["state"] == "answered"]
    if answered:
        lines.append("brokers with a new answer: " + ", ".join(map(str, answered)))
    lines += diff.api_lines(verbose, elsewhere="-v or --format json lists them")
    lines.extend(diff.feature_lines())
    return lines


def _features(client: Client) -> dict[str, list[str]]:
    from kclient.negotiation.verdict import Verdict

    report = client.report()
    return {str(state): report.names_in(state) for state in Verdict}


class _Printer:
    def __init__(self, json_lines: bool, verbose: bool) -> None:
        self.json_lines = json_lines
        self.verbose = verbose

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
        lines += [f"broker {b['broker_id']} ({format_address(b['host'], b['port'])}) "
                  f"{_broker_line(b)}" for b in brokers]
        lines += [f"features {state}: {', '.join(names) or '-'}"
                  for state, names in features.items()]
        self.emit({"event": "summary", "time": _now(), "cluster": client.cluster_id,
                   "brokers": brokers, "features": features}, lines)

    def change(self, diff: ViewDiff, view: ClusterView) -> None:
        brokers = list(_touched(diff, view).values())
        lines = change_lines(diff, view, self.verbose)
        self.emit({"event": "change", "time": _now(), "brokers": brokers,
                   "brokers_removed": list(diff.brokers_removed),
                   "apis": [{"api_key": c.key, "name": c.name, "kind": c.kind,
                             "old": str(c.old) if c.old else None,
                             "new": str(c.new) if c.new else None} for c in diff.apis],
                   "features_gained": list(diff.features_gained),
                   "features_lost": list(diff.features_lost),
                   "features_unknown": list(diff.features_unknown),
                   "lines": change_lines(diff, view, verbose=True)}, lines)


async def _watch(args: argparse.Namespace, options: dict[str, Any]) -> int:
    import asyncio

    from kclient.negotiation.verdict import Verdict
    from kclient.net.client import Client

    printer: _Printer | None = None
    wanted: str | None = args.until_available
    changed = asyncio.Event()

    def on_change(diff: ViewDiff, view: ClusterView) -> None:
        assert printer is not None  # set before the client starts
        printer.change(diff, view)
        changed.set()

    client = Client(**options, metadata_refresh_interval=METADATA_INTERVAL,
                    on_change=on_change, strict=not getattr(args, "lenient", False))
    printer = _Printer(args.format == "json", bool(getattr(args, "verbose", False)))
    if wanted is not None:
        client.feature(wanted)  # an unknown name fails before connecting
    loop = asyncio.get_running_loop()
    deadline = None if args.duration is None else loop.time() + args.duration
    try:
        async with asyncio.timeout_at(deadline):
            await client.start()  # cancelled at the deadline, start() closes what it opened
    except TimeoutError:
        # Not the client's own timeouts (those are typed errors): --duration ran out.
        print(f"kclient watch: no broker answered within --duration {args.duration:g} s",
              file=sys.stderr)
        return EXIT_UNKNOWN
    try:
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
    finally:
        await client.close()
    if wanted is None:
        return EXIT_OK
    result = client.feature(wanted)
    print(f"kclient watch: {result.name} is {result.state} after {args.duration:g} s: "
          f"{_why(client.view, result)}", file=sys.stderr)
    return EXIT_UNKNOWN if result.state is Verdict.UNKNOWN else EXIT_UNAVAILABLE


def _why(view: ClusterView, result: Any) -> str:
    """A feature's reasons, a silent broker said in the command line's words."""
    from kclient.commands.common import CLI_VOCABULARY
    from kclient.commands.render import reasons_in_words

    return "; ".join(reasons_in_words(view, result, CLI_VOCABULARY)) or str(result.state)


def run_watch(args: argparse.Namespace) -> int:
    """Handler of ``kclient watch``."""
    import asyncio

    from kclient.commands.common import client_options_from_args

    options = client_options_from_args(args)
    return asyncio.run(_watch(args, options))
