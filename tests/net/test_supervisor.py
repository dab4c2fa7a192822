"""The Supervisor on its own: events, backoff with jitter, renegotiation, bounded stop."""

from __future__ import annotations

import asyncio

import pytest

from kclient.emulator import EmulatedBroker
from kclient.net import Connection
from kclient.net.settings import Backoff
from kclient.net.supervisor import Answered, BrokerEvent, BrokerSlot, Failed, Supervisor
from tests.waiting import until

pytestmark = pytest.mark.timeout(60)


def _supervisor(events: list[BrokerEvent], backoff: Backoff | None = None) -> Supervisor:
    return Supervisor(
        connect=lambda slot: Connection(slot.host, slot.port, node_id=slot.node_id),
        report=events.append, alive=lambda: True, max_concurrency=4, request_timeout=5.0,
        backoff=backoff or Backoff(0.01, 0.05, 1.0))


async def test_events_follow_the_brokers_life() -> None:
    events: list[BrokerEvent] = []
    supervisor = _supervisor(events)
    supervisor.begin()
    async with EmulatedBroker(1, "3.9") as broker:
        slot = BrokerSlot(1, "127.0.0.1", broker.port, None)
        supervisor.supervise(slot, None)
        await supervisor.wait_first(5)
        assert isinstance(events[0], Answered) and events[0].versions.answered_at is not None
        await broker.stop()
        await until(lambda: any(isinstance(e, Failed) for e in events), "a failure reported")
        failure = next(e for e in events if isinstance(e, Failed))
        assert failure.slot is slot and failure.answer is None and failure.reason
        await broker.start()  # same port: the supervisor reconnects by itself
        await until(lambda: isinstance(events[-1], Answered), "answered again")
        before = sum(isinstance(e, Answered) for e in events)
        await supervisor.renegotiate_all(5)  # a forced refresh asks again
        assert sum(isinstance(e, Answered) for e in events) == before + 1
        await supervisor.stop()
    assert supervisor.slots == {}


async def test_stop_is_bounded_even_while_negotiating() -> None:
    events: list[BrokerEvent] = []
    supervisor = _supervisor(events)
    supervisor.begin()
    async with EmulatedBroker(1, "3.9", behaviour="hang") as silent:
        supervisor.supervise(BrokerSlot(1, "127.0.0.1", silent.port, None), None)
        await until(lambda: any(silent.received_by_connection), "negotiation under way")
        async with asyncio.timeout(5):
            await supervisor.stop()
    assert events == []


async def test_stop_closes_a_connection_whose_retirement_had_not_begun() -> None:
    # A forced refresh retires the old connection in a task of its own; stopping
    # before that task first runs cancels it before it can close anything (the
    # socket stayed open in about one close-racing-refresh round in seven on a
    # loaded machine).  stop() closes retiring connections itself.
    events: list[BrokerEvent] = []
    supervisor = _supervisor(events)
    supervisor.begin()
    async with EmulatedBroker(1, "3.9") as broker:
        old = Connection("127.0.0.1", broker.port, node_id=1)
        await old.connect()
        supervisor._retire(old)  # its task is created, not yet run
        await supervisor.stop()
        assert old.closed
        assert supervisor._retiring == {}
