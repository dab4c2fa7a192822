"""A Kafka broker emulator on loopback, for tests and demos.

:class:`EmulatedBroker` is one broker of a given Kafka release (and odd
behaviours, see :class:`Behaviour`); :class:`EmulatedCluster` runs several that
list one another; :class:`ThreadedEmulator` serves a cluster from sync code and
``python -m kclient.emulator`` from a separate process.  The brokers store what
clients produce and keep consumer groups and committed offsets in a shared
:class:`ClusterState`, so real client libraries produce and consume against them.
"""

from kclient.emulator.behaviour import BEHAVIOUR_WORDS, Behaviour
from kclient.emulator.broker import BrokerInfo, EmulatedBroker
from kclient.emulator.cluster import BrokerSpec, EmulatedCluster, parse_broker_spec
from kclient.emulator.runner import ThreadedEmulator, serve
from kclient.emulator.state import ClusterState

__all__ = [
    "BEHAVIOUR_WORDS",
    "Behaviour",
    "BrokerInfo",
    "BrokerSpec",
    "ClusterState",
    "EmulatedBroker",
    "EmulatedCluster",
    "ThreadedEmulator",
    "parse_broker_spec",
    "serve",
]
