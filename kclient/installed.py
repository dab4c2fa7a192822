"""The Kafka client library installed here, and the ``application=`` option of the clients.

``Client(..., application=...)`` / ``SyncClient`` take what the application
speaks as:

* ``None`` (the default): kclient's own ranges;
* an :class:`~kclient.negotiation.model.ApplicationVersions`, used as given;
* a :class:`~kclient.negotiation.clients.ClientProfile`;
* a client spec (``"aiokafka==0.14.0"``, ``"java 3.9"``), see
  :func:`~kclient.negotiation.clients.client_profile`;
* ``"installed:<library>"``: the release of that library installed in this
  Python environment (``installed:aiokafka``, ``installed:kafka-python``,
  ``installed:confluent-kafka`` for the librdkafka it bundles).

This module reads the environment (package metadata, ``confluent_kafka``), so
it lives outside the pure core.
"""

from __future__ import annotations

import importlib.metadata

from kclient.errors import ConfigError
from kclient.negotiation.clients import (
    ClientProfile,
    client_profile,
    parse_client_spec,
)
from kclient.negotiation.model import ApplicationVersions

__all__ = [
    "INSTALLED_PREFIX",
    "ApplicationOption",
    "installed_profile",
    "installed_version",
    "resolve_application",
]

#: The prefix of ``application="installed:aiokafka"``.
INSTALLED_PREFIX = "installed:"

#: What ``application=`` accepts (see the module documentation).
ApplicationOption = ApplicationVersions | ClientProfile | str | None

#: The Python distribution that brings each profiled library (librdkafka comes
#: inside confluent-kafka and is asked for its own version).
_DISTRIBUTIONS = {"aiokafka": "aiokafka", "kafka-python": "kafka-python",
                  "librdkafka": "confluent-kafka"}


def installed_version(library: str) -> str:
    """The installed release of ``library`` (``"aiokafka"``, ``"confluent-kafka"``...).

    For librdkafka, the version of the librdkafka confluent-kafka loaded
    (``confluent_kafka.libversion()``), which is what speaks to brokers.  A
    library that is not installed, or that kclient cannot find installed from
    Python, is a :class:`~kclient.errors.ConfigError`.
    """
    name, _ = parse_client_spec(library)
    distribution = _DISTRIBUTIONS.get(name)
    if distribution is None:
        raise ConfigError(f"{name} is not a Python library, so it cannot be detected here; "
                          f"name its release instead, e.g. '{name}=={_example(name)}'")
    try:
        if name == "librdkafka":
            import confluent_kafka

            return str(confluent_kafka.libversion()[0])
        return importlib.metadata.version(distribution)
    except (ImportError, importlib.metadata.PackageNotFoundError):
        raise ConfigError(f"{distribution} is not installed here; install it or name a "
                          f"release instead, e.g. '{name}=={_example(name)}'") from None


def _example(name: str) -> str:
    profile = client_profile(name)
    return profile.source.get("tag", profile.first).lstrip("v")


def installed_profile(library: str) -> ClientProfile:
    """The profile of the installed release of ``library``.

    A release no profiled line covers is an
    :class:`~kclient.negotiation.clients.UnprofiledRelease` naming the nearest line:
    kclient never judges (or configures) a library with a neighbour's profile.
    """
    name, _ = parse_client_spec(library)
    return client_profile(f"{name}=={installed_version(name)}")


def resolve_application(value: ApplicationOption) -> ApplicationVersions | None:
    """What ``application=`` means: ``None`` for kclient's own ranges, else the ranges."""
    if value is None or isinstance(value, ApplicationVersions):
        return value
    if isinstance(value, ClientProfile):
        return value.application()
    if not isinstance(value, str):
        raise ConfigError(f"application must be a client such as 'aiokafka==0.14.0', "
                          f"'installed:aiokafka' or an ApplicationVersions, not "
                          f"{type(value).__name__}")
    if value.startswith(INSTALLED_PREFIX):
        return installed_profile(value[len(INSTALLED_PREFIX):]).application()
    return client_profile(value).application()
