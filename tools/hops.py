"""Which kclient modules two walks cross, measured with a profiling hook on a real run.

Walk (a) is ``Client.request("Metadata", {})`` from the call to the returned
value: the version choice, the field check, the encoding, the socket write,
the reader task that takes the answer off the socket and decodes it, and the
awaiting caller.  Walk (b) starts when the ApiVersions answer of a reconnect
arrives (the step of the task that received it, found as the outermost kclient
frame under the ApiVersions decoder) and ends when the ``on_change`` callback
is called with the new view: the one broker of a cluster restarts on another
release, so every API and feature is judged again.  Walk (c) is the same walk
in a rolling upgrade's middle step, the common case: of five brokers (three on
3.9, two on 4.1), broker 3 restarts on 4.1 (unrecorded), then broker 1 does: an
answer other brokers already gave, while one more still runs 3.9.

Both run against kclient's emulator on 127.0.0.1, served from a thread of its
own; :func:`sys.setprofile` watches this thread only, so the emulator's code
is not counted.  Every Python function called (or resumed) in the window is
recorded; a module is counted once however often it is entered.  The request
is measured after one warm-up request (caches filled, lazy imports done).

Run from the repository root:  python tools/hops.py [--json]
"""

from __future__ import annotations

import argparse
import asyncio
import json
import sys
import threading
from collections import Counter
from pathlib import Path
from types import FrameType
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from kclient.emulator import EmulatedCluster, ThreadedEmulator
from kclient.negotiation import BrokerState, ClusterView, ViewDiff
from kclient.net import Client

#: The function that decodes an ApiVersions answer; walk (b) starts at the task step
#: that called it.
APIVERSIONS_DECODER = "read_api_versions"
#: Functions that turn an API name into a key or back, or look a message up in the
#: registry: walk (a) should call each at most once.
#: (Matched on the function's own name: ``by_key`` counts ``Catalog.by_key``.)
LOOKUPS = ("api_key_of", "name_of", "resolve", "by_name", "by_key", "default_registry",
           "codec", "spec", "message_class", "_codec")
WALK_DEADLINE = 10.0


class Recorder:
    """The kclient functions this thread enters (calls and coroutine resumptions)."""

    def __init__(self) -> None:
        self.events: list[tuple[str, str, int]] = []  # module, qualname, id of the frame
        self.decoder_roots: list[tuple[int, int]] = []  # (event index, outermost frame)
        self.marks: dict[str, list[int]] = {}

    def _hook(self, frame: FrameType, event: str, arg: Any) -> None:
        if event != "call":
            return
        module = frame.f_globals.get("__name__", "")
        if not (module == "kclient" or module.startswith("kclient.")):
            return
        code = frame.f_code
        self.events.append((module, code.co_qualname, id(frame)))
        if code.co_name == APIVERSIONS_DECODER:
            outer, walk = frame, frame.f_back
            while walk is not None:
                name = walk.f_globals.get("__name__", "")
                if name == "kclient" or name.startswith("kclient."):
                    outer = walk
                walk = walk.f_back
            self.decoder_roots.append((len(self.events) - 1, id(outer)))

    def mark(self, name: str) -> None:
        self.marks.setdefault(name, []).append(len(self.events))

    def start(self) -> None:
        sys.setprofile(self._hook)

    def stop(self) -> None:
        sys.setprofile(None)


def summary(events: list[tuple[str, str, int]]) -> dict[str, Any]:
    """Distinct modules (in order of first entry), their count and the lookups made.

    ``entries`` counts calls and coroutine resumptions alike.
    """
    modules = list(dict.fromkeys(module for module, _, _ in events))
    entries = Counter(qualname for _, qualname, _ in events)
    lookups = {name: count for name, count in entries.items()
               if name.rpartition(".")[2] in LOOKUPS}
    return {"modules": modules, "count": len(modules),
            "functions": len({(m, q) for m, q, _ in events}),
            "entries": len(events), "lookups": lookups}


async def walk_request(bootstrap: str) -> dict[str, Any]:
    """Walk (a): one warmed-up ``Client.request("Metadata", {})``."""
    recorder = Recorder()
    async with Client(bootstrap, metadata_refresh_interval=None) as client:
        await client.request("Metadata", {})
        recorder.start()
        try:
            await client.request("Metadata", {})
        finally:
            recorder.stop()
    return summary(recorder.events)


async def walk_reconnect(emulator: ThreadedEmulator, earlier: int | None = None
                         ) -> dict[str, Any]:
    """Walks (b) and (c): broker 1 restarts on 4.1; its new ApiVersions answer
    travels to ``on_change``.  ``earlier``: a broker that restarts on 4.1 first,
    unrecorded (the rolling upgrade's previous step)."""
    recorder = Recorder()
    answered = {node: asyncio.Event() for node in (1, earlier) if node is not None}

    def on_change(diff: ViewDiff, view: ClusterView) -> None:
        recorder.mark("on_change")
        for node in diff.brokers_changed:
            if node in answered and view.broker(node).state is BrokerState.ANSWERED:
                answered[node].set()

    async with Client(emulator.bootstrap_servers, on_change=on_change,
                      reconnect_backoff=0.01, reconnect_backoff_max=0.05,
                      metadata_refresh_interval=None):
        if earlier is not None:
            await asyncio.to_thread(emulator.restart, earlier, "4.1")
            await asyncio.wait_for(answered[earlier].wait(), WALK_DEADLINE)
        recorder.start()
        try:
            await asyncio.to_thread(emulator.restart, 1, "4.1")
            await asyncio.wait_for(answered[1].wait(), WALK_DEADLINE)
        finally:
            recorder.stop()
    if not recorder.decoder_roots:
        raise SystemExit(f"no call of {APIVERSIONS_DECODER} was seen: update "
                         "APIVERSIONS_DECODER in tools/hops.py")
    decoded, root = recorder.decoder_roots[-1]
    end = next((i for i in recorder.marks.get("on_change", []) if i > decoded), None)
    if end is None:
        raise SystemExit("on_change was not called after the ApiVersions answer")
    start = max(i for i in range(decoded + 1) if recorder.events[i][2] == root)
    return summary(recorder.events[start:end])


def measure() -> dict[str, dict[str, Any]]:
    """Walks (a) and (b) against one emulated 3.9 broker (restarted on 4.1 for walk
    (b)); walk (c) against three 3.9 and two 4.1 brokers, after broker 3's upgrade."""
    assert threading.current_thread() is threading.main_thread()
    with ThreadedEmulator(EmulatedCluster(["3.9"])) as emulator:
        request = asyncio.run(walk_request(emulator.bootstrap_servers))
        reconnect = asyncio.run(walk_reconnect(emulator))
    with ThreadedEmulator(EmulatedCluster(["3.9", "3.9", "3.9", "4.1", "4.1"])) as emulator:
        rolling = asyncio.run(walk_reconnect(emulator, earlier=3))
    return {"request": request, "reconnect": reconnect, "rolling": rolling}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--json", action="store_true", help="print the figures as JSON")
    args = parser.parse_args(argv)
    walks = measure()
    if args.json:
        print(json.dumps(walks, indent=2))
        return 0
    titles = {"request": "(a) Client.request('Metadata') to the socket and back",
              "reconnect": "(b) a reconnect's ApiVersions answer to on_change",
              "rolling": "(c) the same in a rolling upgrade's middle step"}
    for name, walk in walks.items():
        print(f"{titles[name]}: {walk['count']} kclient modules, {walk['functions']} "
              f"functions, {walk['entries']} function entries")
        for module in walk["modules"]:
            print(f"  {module}")
        looked = ", ".join(f"{k} x{v}" for k, v in walk["lookups"].items()) or "none"
        print(f"  lookups: {looked}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
