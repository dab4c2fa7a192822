"""kclient: client-side Kafka protocol version negotiation.

Import what you need from here; heavy parts (the asyncio client, the Spark
pipeline) are loaded on first use so that ``import kclient`` stays fast.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from kclient._lazy import resolve
from kclient._version import __version__
from kclient.errors import (
    AuthenticationError,
    BrokerConnectionError,
    ClientClosedError,
    ClientStateError,
    ConfigError,
    EmulatorError,
    EncodeError,
    FeatureFileError,
    FieldVersionError,
    FleetError,
    FrameTooLargeError,
    HandshakeError,
    InvalidLengthError,
    InvalidTaggedFieldsError,
    InvalidVarintError,
    InventoryError,
    KafkaResponseError,
    KClientError,
    ProtocolError,
    RequestTimeoutError,
    SchemaError,
    SnapshotError,
    TruncatedMessageError,
    UnknownFeatureError,
    UnknownMessageError,
    UnknownRequestError,
    UnsupportedRequestError,
    UnsupportedSaslMechanismError,
    UnsupportedVersionError,
    VerdictUnknownError,
)

if TYPE_CHECKING:  # what type checkers and IDEs see behind the lazy names below
    from kclient.emulator import EmulatedBroker, EmulatedCluster, ThreadedEmulator
    from kclient.negotiation import (
        ApplicationVersions,
        BrokerState,
        BrokerVersions,
        ClusterView,
        FeatureReport,
        FeatureSet,
        ReleaseGuess,
        SnapshotRecord,
        Verdict,
        VersionRange,
        ViewDiff,
        default_features,
        diff_views,
        evaluate_features,
        fallback_broker,
        guess_release,
        known_releases,
        load_features,
        read_snapshots,
        release_profile,
    )
    from kclient.net.client import Client
    from kclient.net.connection import Connection
    from kclient.net.sync import SyncClient
    from kclient.net.tls import TlsConfig
    from kclient.sasl import SaslConfig

# Public names resolved lazily: name -> module that defines it.
_LAZY: dict[str, str] = {
    "ApplicationVersions": "kclient.negotiation",
    "BrokerVersions": "kclient.negotiation",
    "ClusterView": "kclient.negotiation",
    "VersionRange": "kclient.negotiation",
    "Verdict": "kclient.negotiation",
    "BrokerState": "kclient.negotiation",
    "FeatureSet": "kclient.negotiation",
    "FeatureReport": "kclient.negotiation",
    "ViewDiff": "kclient.negotiation",
    "ReleaseGuess": "kclient.negotiation",
    "SnapshotRecord": "kclient.negotiation",
    "load_features": "kclient.negotiation",
    "default_features": "kclient.negotiation",
    "evaluate_features": "kclient.negotiation",
    "diff_views": "kclient.negotiation",
    "guess_release": "kclient.negotiation",
    "release_profile": "kclient.negotiation",
    "known_releases": "kclient.negotiation",
    "fallback_broker": "kclient.negotiation",
    "read_snapshots": "kclient.negotiation",
    "Client": "kclient.net.client",
    "SaslConfig": "kclient.sasl",
    "SyncClient": "kclient.net.sync",
    "Connection": "kclient.net.connection",
    "TlsConfig": "kclient.net.tls",
    "EmulatedCluster": "kclient.emulator",
    "EmulatedBroker": "kclient.emulator",
    "ThreadedEmulator": "kclient.emulator",
}

# Static, so that type checkers see every public name (a test keeps it equal to
# the errors above and the lazy table).
__all__ = [
    "ApplicationVersions",
    "AuthenticationError",
    "BrokerConnectionError",
    "BrokerState",
    "BrokerVersions",
    "Client",
    "ClientClosedError",
    "ClientStateError",
    "ClusterView",
    "ConfigError",
    "Connection",
    "EmulatedBroker",
    "EmulatedCluster",
    "EmulatorError",
    "EncodeError",
    "FeatureFileError",
    "FeatureReport",
    "FeatureSet",
    "FieldVersionError",
    "FleetError",
    "FrameTooLargeError",
    "HandshakeError",
    "InvalidLengthError",
    "InvalidTaggedFieldsError",
    "InvalidVarintError",
    "InventoryError",
    "KClientError",
    "KafkaResponseError",
    "ProtocolError",
    "ReleaseGuess",
    "RequestTimeoutError",
    "SaslConfig",
    "SchemaError",
    "SnapshotError",
    "SnapshotRecord",
    "SyncClient",
    "ThreadedEmulator",
    "TlsConfig",
    "TruncatedMessageError",
    "UnknownFeatureError",
    "UnknownMessageError",
    "UnknownRequestError",
    "UnsupportedRequestError",
    "UnsupportedSaslMechanismError",
    "UnsupportedVersionError",
    "Verdict",
    "VerdictUnknownError",
    "VersionRange",
    "ViewDiff",
    "__version__",
    "default_features",
    "diff_views",
    "evaluate_features",
    "fallback_broker",
    "guess_release",
    "known_releases",
    "load_features",
    "read_snapshots",
    "release_profile",
]


def __getattr__(name: str) -> Any:
    return resolve(__name__, _LAZY, globals(), name)
