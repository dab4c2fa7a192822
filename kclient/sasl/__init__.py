"""SASL authentication, sans-I/O: mechanisms as state machines, configuration, server checks.

Clients: :class:`SaslConfig` says which mechanism and credentials to use and
:meth:`SaslConfig.create_client` gives a fresh state machine
(:class:`PlainClient`, :class:`ScramClient`, :class:`OAuthBearerClient`) for one
exchange.  :mod:`kclient.net.sasl` carries the bytes over a connection.

Servers (the emulated broker): :class:`CredentialStore` and the ``*Server``
mechanisms.

Nothing in this package opens sockets or starts tasks.
"""

from __future__ import annotations

from kclient.sasl.config import SaslConfig, TokenProvider
from kclient.sasl.mechanism import (
    MECHANISMS,
    OAUTHBEARER,
    PLAIN,
    SCRAM_MECHANISMS,
    SCRAM_SHA_256,
    SCRAM_SHA_512,
    SaslClientMechanism,
    SaslServerMechanism,
)
from kclient.sasl.oauthbearer import OAuthBearerClient, OAuthBearerServer
from kclient.sasl.plain import PlainClient, PlainServer
from kclient.sasl.scram import (
    ScramClient,
    ScramCredential,
    ScramServer,
    escape_saslname,
    unescape_saslname,
)
from kclient.sasl.server import CredentialStore, TokenValidator

__all__ = [
    "MECHANISMS",
    "OAUTHBEARER",
    "PLAIN",
    "SCRAM_MECHANISMS",
    "SCRAM_SHA_256",
    "SCRAM_SHA_512",
    "CredentialStore",
    "OAuthBearerClient",
    "OAuthBearerServer",
    "PlainClient",
    "PlainServer",
    "SaslClientMechanism",
    "SaslConfig",
    "SaslServerMechanism",
    "ScramClient",
    "ScramCredential",
    "ScramServer",
    "TokenProvider",
    "TokenValidator",
    "escape_saslname",
    "unescape_saslname",
]
