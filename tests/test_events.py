"""Structured log events: names and fields a log pipeline can rely on."""

from __future__ import annotations

import logging

import pytest

from kclient.emulator import EmulatedCluster
from kclient.events import EVENTS
from kclient.net import Client
from tests.waiting import until

pytestmark = pytest.mark.timeout(60)


async def test_handshakes_outages_and_view_changes_are_events(
        caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.DEBUG, logger="kclient.events")
    async with EmulatedCluster(["2.0", "3.9"]) as cluster, \
            Client(cluster.bootstrap_servers, metadata_refresh_interval=None,
                   reconnect_backoff=0.01, reconnect_backoff_max=0.05,
                   connect_timeout=1) as client:
        await cluster.broker(1).stop()
        await until(lambda: client.view.broker(1).failed, "broker 1 marked failed")
        await cluster.broker(1).restart("3.9")
        await until(lambda: client.supports("ZSTD"), "ZSTD usable after the restart")
    records = [r for r in caplog.records if r.name == "kclient.events"]
    names = [getattr(r, "event", None) for r in records]
    assert all(n is not None and n.removeprefix("kclient.") in EVENTS for n in names)
    done = [r for r in records if r.event == "kclient.handshake.done"]
    assert done and all(r.duration_ms >= 0 and r.broker and r.source for r in done)
    stale = [r for r in records if r.event == "kclient.broker.stale"]
    assert stale and "broker 1" in stale[0].broker and stale[0].error
    assert "kclient.broker.answered" in names
    changed = [r for r in records if r.event == "kclient.view.changed"]
    assert any("features gained: ZSTD" in line for r in changed for line in r.changes)
    assert "kclient.handshake.failed" in names  # the reconnects while broker 1 was down
