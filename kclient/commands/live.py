"""The live source of ``kclient api-versions`` and ``kclient features``.

:mod:`kclient.commands.inspect` looks this module up by name: ``add_arguments``
adds ``--bootstrap-server`` and the shared connection options (optional there,
since ``--snapshot`` is the other source) and ``collect`` negotiates with every
broker of the cluster and returns ``{cluster name: [BrokerVersions, ...]}``.
"""

from __future__ import annotations

import argparse
from typing import TYPE_CHECKING

from kclient.commands.common import (
    add_connection_arguments,
    bootstrap_from_args,
    negotiate_brokers,
)

if TYPE_CHECKING:
    from kclient.negotiation import BrokerVersions

__all__ = ["add_arguments", "collect"]


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """Add ``--bootstrap-server`` and the connection options (not required here)."""
    add_connection_arguments(parser)


def collect(args: argparse.Namespace) -> dict[str, list[BrokerVersions]]:
    """Negotiate with the cluster; it is named by the first ``--cluster`` or its bootstrap."""
    names: list[str] | None = getattr(args, "cluster", None)
    bootstrap = ",".join(bootstrap_from_args(args))
    name = names[0] if names else bootstrap
    return {name: negotiate_brokers(args)}
