"""librdkafka settings (confluent-kafka) from what the cluster negotiated.

::

    from kclient.adapters import confluent
    with SyncClient("broker:9092") as kc:
        advice = confluent.producer_config(kc)
    producer = confluent_kafka.Producer({"bootstrap.servers": "broker:9092",
                                         **advice.settings})

confluent-kafka is imported only when a function here needs to know what the
installed librdkafka was built with; ``import kclient`` never imports it.
"""

from __future__ import annotations

import functools
import logging
from typing import Any

from kclient.adapters._common import AdviceSource, ClusterFacts, ConfigAdvice, cluster_facts
from kclient.errors import ConfigError
from kclient.installed import installed_profile
from kclient.negotiation.features import FeatureSet

__all__ = ["consumer_config", "librdkafka_has", "librdkafka_version", "producer_config"]

LIBRARY = "librdkafka"
#: librdkafka's CONFIGURATION.md lists these as the only broker.version.fallback
#: values that turn ApiVersions off; anything from 0.10 on asks the broker.
_LEGACY_FALLBACKS = ("0.9.0", "0.8.2", "0.8.1", "0.8.0")
_DEPRECATED = ("librdkafka marks api.version.request and broker.version.fallback deprecated "
               "and will drop them (and brokers older than 0.10) in librdkafka 3.x; upgrade "
               "the brokers before upgrading the library")


def _confluent() -> Any:
    try:
        import confluent_kafka
    except ImportError:
        raise ConfigError("the confluent adapter needs confluent-kafka; pip install "
                          "confluent-kafka") from None
    return confluent_kafka


def librdkafka_version() -> str:
    """The installed librdkafka's version (``confluent_kafka.libversion()``)."""
    return str(_confluent().libversion()[0])


@functools.cache
def librdkafka_has(feature: str) -> bool:
    """Whether the installed librdkafka was built with ``feature`` (``zstd``, ``lz4``...).

    librdkafka's ``builtin.features`` property refuses a value naming a feature
    the build lacks, so a throwaway producer with no bootstrap servers (it never
    opens a connection) answers the question.
    """
    ck = _confluent()
    quiet = logging.getLogger("kclient.adapters.confluent.probe")
    quiet.addHandler(logging.NullHandler())
    quiet.propagate = False
    try:
        probe = ck.Producer({"builtin.features": feature, "log_level": 0, "logger": quiet})
    except ck.KafkaException:
        return False
    del probe
    return True


def _common(facts: ClusterFacts, settings: dict[str, Any], reasons: dict[str, str],
            warnings: list[str]) -> None:
    oldest = facts.oldest_release()
    if oldest.fallback and oldest.number is not None:
        fallback = oldest.number if oldest.number in _LEGACY_FALLBACKS else (
            oldest.number + ".0" if oldest.number + ".0" in _LEGACY_FALLBACKS else None)
        if fallback is None:
            raise ConfigError(f"{oldest.reason}, which librdkafka cannot be told about; its "
                              f"broker.version.fallback takes only {', '.join(_LEGACY_FALLBACKS)}")
        settings["api.version.request"] = False
        reasons["api.version.request"] = (f"{oldest.reason}: such a broker closes the connection "
                                          "on ApiVersions")
        settings["broker.version.fallback"] = fallback
        reasons["broker.version.fallback"] = f"{oldest.reason}; librdkafka assumes {fallback}"
        warnings.append(_DEPRECATED)
    else:
        reasons["api.version.request"] = ("left at librdkafka's default (true); "
                                          + oldest.reason)
    warnings.extend(facts.notes())


def producer_config(source: AdviceSource, features: FeatureSet | None = None) -> ConfigAdvice:
    """Producer settings: compression.type, enable.idempotence, legacy-broker fallback.

    ``transactional.id`` is never set (it names your application's producer);
    ``reasons["transactional.id"]`` says whether the cluster allows it.
    Features whose verdict is unknown (a broker has not answered) are not
    enabled; the reason says so.
    """
    facts = cluster_facts(source, features, installed_profile("librdkafka"))
    settings: dict[str, Any] = {}
    reasons: dict[str, str] = {}
    warnings: list[str] = []
    _common(facts, settings, reasons, warnings)
    label = f"{LIBRARY} {librdkafka_version()}"
    facts.producer_gates(label, librdkafka_has, settings, reasons,
                         ("compression.type", "enable.idempotence", "transactional.id"))
    return ConfigAdvice(LIBRARY, settings, reasons, warnings)


def consumer_config(source: AdviceSource, features: FeatureSet | None = None) -> ConfigAdvice:
    """Consumer settings: group.protocol (KIP-848 when available), legacy-broker fallback."""
    facts = cluster_facts(source, features, installed_profile("librdkafka"))
    settings: dict[str, Any] = {}
    reasons: dict[str, str] = {}
    warnings: list[str] = []
    _common(facts, settings, reasons, warnings)
    modern, why = facts.gate("ConsumerGroupProtocol")
    if modern:
        settings["group.protocol"] = "consumer"
        reasons["group.protocol"] = why + " (KIP-848 consumer protocol)"
    else:
        reasons["group.protocol"] = "left at classic: " + why
    return ConfigAdvice(LIBRARY, settings, reasons, warnings)
