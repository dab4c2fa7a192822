"""Which broker to send a request to: the controller, any broker, the least loaded one.

Each helper returns a node id for ``client.request(api, body, broker=...)``; the
Client exposes them as :meth:`Client.controller`, :meth:`Client.any_broker` and
:meth:`Client.least_loaded`.  They read the client's current view only (no I/O).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from kclient.errors import BrokerConnectionError

if TYPE_CHECKING:
    from kclient.net.client import Client
    from kclient.net.connection import Connection

__all__ = ["any_broker", "controller", "least_loaded"]


def _live(client: Client) -> list[tuple[int, Connection]]:
    """Live connections by node id, in node id order."""
    out: list[tuple[int, Connection]] = []
    for broker in sorted(client.brokers, key=lambda b: b.node_id):
        try:
            out.append((broker.node_id, client.connection(broker.node_id)))
        except BrokerConnectionError:
            continue
    return out


def _none_live() -> BrokerConnectionError:
    return BrokerConnectionError("no broker is connected; start the client (await "
                                 "client.start()) and check client.brokers for errors")


def controller(client: Client) -> int:
    """The node id the cluster names as controller (Metadata's ``controller_id``).

    KRaft clusters name one of their brokers there (their controllers are not
    reachable by clients), which forwards controller requests itself.  Raises
    :class:`~kclient.errors.BrokerConnectionError` when no controller is known.
    """
    node = client.controller_id
    if node is None or node < 0:
        raise BrokerConnectionError(
            "the cluster named no controller in its Metadata answer (a v0 answer has none, "
            "or the cluster is electing one); refresh metadata and retry, or use "
            "client.any_broker()")
    return node


def any_broker(client: Client) -> int:
    """The node id of a connected broker (the lowest id, so repeated calls agree)."""
    live = _live(client)
    if not live:
        raise _none_live()
    return live[0][0]


def least_loaded(client: Client) -> int:
    """The connected broker with the fewest requests awaiting an answer (lowest id on
    a tie)."""
    live = _live(client)
    if not live:
        raise _none_live()
    return min(live, key=lambda item: (item[1].in_flight, item[0]))[0]
