"""The asyncio shell: broker connections, the cluster client and its sync wrapper.

Import from here (or from :mod:`kclient`).  Each name loads its module on first
use, so ``from kclient.net import SyncClient`` does not import asyncio.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from kclient._lazy import resolve

if TYPE_CHECKING:
    from kclient.net.client import ChangeCallback, Client, parse_bootstrap
    from kclient.net.connection import Connection, validate_client_software
    from kclient.net.sync import SyncClient
    from kclient.net.tls import TlsConfig, client_ssl_context

_LAZY: dict[str, str] = {
    "ChangeCallback": "kclient.net.client",
    "Client": "kclient.net.client",
    "Connection": "kclient.net.connection",
    "SyncClient": "kclient.net.sync",
    "TlsConfig": "kclient.net.tls",
    "client_ssl_context": "kclient.net.tls",
    "parse_bootstrap": "kclient.net.client",
    "validate_client_software": "kclient.net.connection",
}

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


def __getattr__(name: str) -> Any:
    return resolve(__name__, _LAZY, globals(), name)
