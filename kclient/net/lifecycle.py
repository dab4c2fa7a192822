"""The life of a :class:`~kclient.net.client.Client`, as one explicit table.

A client is in exactly one :class:`State`; the public calls that change or need
its state are :class:`Event` s.  :data:`TRANSITIONS` maps every legal
``(state, event)`` pair to the state that follows; a pair it does not list
raises :class:`~kclient.errors.ClientStateError` (or its subclass
:class:`~kclient.errors.ClientClosedError` when the client is closing or
closed) naming both, so an illegal call fails at once instead of half-working.

Pairs that map a state to itself are the idempotent calls: ``start()`` while
starting (it joins the start-up in progress) or running (nothing to do),
``close()`` while closing (a second close, or start-up cleaning up after an
interrupting ``close()``), ``refresh()`` while starting or running.

Pure: no I/O, no asyncio.  The client owns one :class:`Lifecycle` and asks it
before acting.
"""

from __future__ import annotations

import enum

from kclient.errors import ClientClosedError, ClientStateError

__all__ = ["TRANSITIONS", "Event", "Lifecycle", "State", "illegal"]


class State(enum.Enum):
    """Where a client is in its life."""

    NEW = "new"                #: constructed, never started
    STARTING = "starting"      #: start() is bootstrapping and negotiating
    RUNNING = "running"        #: started: supervising brokers, notifying changes
    CLOSING = "closing"        #: close() is stopping tasks and connections
    CLOSED = "closed"          #: everything stopped; start() may begin again

    def __str__(self) -> str:
        return self.value


class Event(enum.Enum):
    """What happens to a client: a public call, or the end of one."""

    START = "start()"                 #: start() called
    STARTED = "start-up finished"     #: start() finished bootstrapping and negotiating
    CLOSE = "close()"                 #: close() called (also by a failing start())
    CLOSED = "close finished"         #: close() stopped every task and connection
    REFRESH = "refresh()"             #: refresh() called

    def __str__(self) -> str:
        return self.value


S, E = State, Event

#: Every legal ``(state, event)`` pair and the state that follows it.
TRANSITIONS: dict[tuple[State, Event], State] = {
    (S.NEW, E.START): S.STARTING,
    (S.CLOSED, E.START): S.STARTING,
    (S.STARTING, E.START): S.STARTING,   # joins the start-up in progress
    (S.RUNNING, E.START): S.RUNNING,     # already started: nothing to do
    (S.STARTING, E.STARTED): S.RUNNING,
    (S.NEW, E.CLOSE): S.CLOSING,
    (S.STARTING, E.CLOSE): S.CLOSING,    # interrupts start(), which then raises
    (S.RUNNING, E.CLOSE): S.CLOSING,
    (S.CLOSING, E.CLOSE): S.CLOSING,     # a second close(), or start() cleaning up
    (S.CLOSED, E.CLOSE): S.CLOSING,      # closing again is harmless
    (S.CLOSING, E.CLOSED): S.CLOSED,
    (S.CLOSED, E.CLOSED): S.CLOSED,      # a second close() that ran alongside ends last
    (S.STARTING, E.REFRESH): S.STARTING,
    (S.RUNNING, E.REFRESH): S.RUNNING,
}

del S, E

#: What to do instead, per state, for the message of an illegal event.
_ADVICE = {
    State.NEW: "call start() first, or use `async with Client(...)`",
    State.STARTING: "wait for start() to return",
    State.RUNNING: "this is a bug in kclient; please report it",
    State.CLOSING: "the client is shutting down; create or start a client again after "
                   "close() returns",
    State.CLOSED: "start() it again, or use `async with Client(...)`",
}


def illegal(state: State, event: Event) -> ClientStateError:
    """The typed error for ``event`` in ``state`` (which :data:`TRANSITIONS` does not list)."""
    message = (f"{event} is not possible while the client is {state}; {_ADVICE[state]}")
    if state in (State.CLOSING, State.CLOSED):
        return ClientClosedError(message, state=state.value, event=event.value)
    return ClientStateError(message, state=state.value, event=event.value)


class Lifecycle:
    """The current :class:`State` of one client, changed only through :data:`TRANSITIONS`."""

    __slots__ = ("state",)

    def __init__(self) -> None:
        self.state = State.NEW

    def __repr__(self) -> str:
        return f"Lifecycle({self.state})"

    def handle(self, event: Event) -> State:
        """Apply ``event``; returns the state it was in before.

        Raises :class:`~kclient.errors.ClientStateError` naming the state and the
        event when the pair is not in :data:`TRANSITIONS` (the state is unchanged).
        """
        before = self.state
        after = TRANSITIONS.get((before, event))
        if after is None:
            raise illegal(before, event)
        self.state = after
        return before

    @property
    def alive(self) -> bool:
        """True while starting or running: background tasks keep going."""
        return self.state in (State.STARTING, State.RUNNING)
