"""The asyncio shell: broker connections, the cluster client and its sync wrapper.

Import from here (or from :mod:`kclient`, which loads these lazily).
"""

from kclient.net.client import ChangeCallback, Client, parse_bootstrap
from kclient.net.connection import Connection, validate_client_software
from kclient.net.sync import SyncClient
from kclient.net.tls import TlsConfig, client_ssl_context

__all__ = [
    "ChangeCallback",
    "Client",
    "Connection",
    "SyncClient",
    "TlsConfig",
    "client_ssl_context",
    "parse_bootstrap",
    "validate_client_software",
]
