"""The client's lifecycle: the transition table, pair by pair, and a real client walking it."""

from __future__ import annotations

import itertools

import pytest

from kclient.emulator import EmulatedCluster
from kclient.errors import BrokerConnectionError, ClientClosedError, ClientStateError
from kclient.negotiation import BrokerState
from kclient.net import Client
from kclient.net.lifecycle import TRANSITIONS, Event, Lifecycle, State

pytestmark = pytest.mark.timeout(60)

ALL_PAIRS = list(itertools.product(State, Event))


def _in(state: State) -> Lifecycle:
    life = Lifecycle()
    life.state = state
    return life


@pytest.mark.parametrize(("state", "event"), ALL_PAIRS, ids=lambda v: v.name)
def test_every_pair_is_listed_or_raises_a_typed_error_naming_both(state: State,
                                                                  event: Event) -> None:
    life = _in(state)
    if (state, event) in TRANSITIONS:
        assert life.handle(event) is state  # handle() returns the state it left
        assert life.state is TRANSITIONS[state, event]
        return
    expected = ClientClosedError if state in (State.CLOSING, State.CLOSED) else ClientStateError
    with pytest.raises(expected) as info:
        life.handle(event)
    assert type(info.value) is expected
    # A programming error, outside the transport branch a retry loop catches.
    assert not isinstance(info.value, BrokerConnectionError)
    assert (info.value.state, info.value.event) == (state.value, event.value)
    message = str(info.value)
    assert message.startswith(f"{event.value} is not possible while the client is "
                              f"{state.value}; ")
    assert life.state is state  # an illegal event changes nothing


def test_the_table_only_names_real_states_and_events() -> None:
    for (state, event), after in TRANSITIONS.items():
        assert isinstance(state, State) and isinstance(event, Event)
        assert isinstance(after, State)
    # Some pairs are illegal, or the table would check nothing.
    assert len(TRANSITIONS) < len(ALL_PAIRS)


def test_the_table_keeps_the_documented_rules() -> None:
    # Only a finished start-up makes a client RUNNING, and only from STARTING.
    assert [k for k, v in TRANSITIONS.items() if v is State.RUNNING and k[0] is not v] == [
        (State.STARTING, Event.STARTED)]
    # close() is accepted in every state, and every close ends CLOSED.
    for state in State:
        closing = TRANSITIONS[state, Event.CLOSE]
        assert TRANSITIONS[closing, Event.CLOSED] is State.CLOSED
    # refresh() never changes the state, and needs a started (or starting) client.
    refreshable = {s for (s, e), after in TRANSITIONS.items() if e is Event.REFRESH}
    assert refreshable == {State.STARTING, State.RUNNING}
    assert all(TRANSITIONS[s, Event.REFRESH] is s for s in refreshable)
    # A closed client can start again; a closing one cannot (it is tearing down).
    assert TRANSITIONS[State.CLOSED, Event.START] is State.STARTING
    assert (State.CLOSING, Event.START) not in TRANSITIONS
    # Background tasks run exactly while starting or running.
    assert [s for s in State if _in(s).alive] == [State.STARTING, State.RUNNING]


async def test_a_client_walks_the_table() -> None:
    async with EmulatedCluster(["3.9", "2.8"]) as cluster:
        client = Client(cluster.bootstrap_servers, metadata_refresh_interval=None)
        assert client.state is State.NEW
        with pytest.raises(ClientStateError) as info:
            await client.refresh()
        assert type(info.value) is ClientStateError
        assert (info.value.state, info.value.event) == ("new", "refresh()")
        await client.start()
        assert client.state is State.RUNNING
        await client.start()  # already running: nothing to do
        assert not await client.refresh()
        await client.close()
        assert client.state is State.CLOSED
        with pytest.raises(ClientClosedError) as closed:
            await client.refresh()
        assert (closed.value.state, closed.value.event) == ("closed", "refresh()")
        await client.close()  # closing again is harmless
        # A closed client starts again and negotiates afresh.
        await client.start()
        try:
            assert client.state is State.RUNNING
            assert {b.state for b in client.view.brokers} == {BrokerState.ANSWERED}
            # ...on live connections (a restart used to leave every broker unsupervised).
            for node_id in (1, 2):
                answer = await client.request("Metadata", {"topics": []}, broker=node_id)
                assert len(answer.brokers) == 2
        finally:
            await client.close()
        assert client.state is State.CLOSED
