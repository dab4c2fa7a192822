"""kafka-python 3.x keyword arguments from what the cluster negotiated.

::

    from kclient.adapters import kafka_python
    with SyncClient("broker:9092") as kc:
        advice = kafka_python.producer_kwargs(kc)
    producer = kafka.KafkaProducer(bootstrap_servers="broker:9092", **advice.settings)

``api_version`` policy (the release of the cluster's *oldest* broker, so no
request is too new for any broker):

- an exact release guess: that release;
- ``between A and B`` (a build between releases): ``A``, the newest release it
  is certainly at least;
- ``at least A`` (newer than any release kclient knows): ``A``;
- unknown (a custom build, another implementation, or a broker that has not
  answered): ``api_version`` is left out and kafka-python probes the broker
  itself.

kafka-python is imported only to ask which codecs it can use.
"""

from __future__ import annotations

from typing import Any

from kclient.adapters._common import (
    AdviceSource,
    ClusterFacts,
    ConfigAdvice,
    cluster_facts,
    package_missing,
)
from kclient.errors import ConfigError
from kclient.installed import installed_profile
from kclient.negotiation.features import FeatureSet

__all__ = ["consumer_kwargs", "kafka_python_has", "producer_kwargs"]

LIBRARY = "kafka-python"
#: The package kafka-python imports for each codec (kafka/codec.py); gzip is built in.
CODEC_PACKAGES = {"zstd": "zstandard", "lz4": "lz4", "snappy": "python-snappy"}


def kafka_python_has(codec: str) -> bool:
    """Whether kafka-python can use ``codec`` here (its own check of the codec packages)."""
    try:
        from kafka import codec as kafka_codec
    except ImportError:
        raise ConfigError("the kafka_python adapter needs kafka-python; pip install "
                          "kafka-python") from None
    check = getattr(kafka_codec, f"has_{codec}", None)
    return bool(check()) if check is not None else False


def _api_version(facts: ClusterFacts, settings: dict[str, Any], reasons: dict[str, str]
                 ) -> None:
    oldest = facts.oldest_release()
    version = oldest.version_tuple
    if version is None:
        reasons["api_version"] = f"left out, kafka-python probes the brokers: {oldest.reason}"
        return
    settings["api_version"] = version
    reasons["api_version"] = oldest.reason


def producer_kwargs(source: AdviceSource, features: FeatureSet | None = None) -> ConfigAdvice:
    """``KafkaProducer`` keyword arguments: api_version, compression_type, enable_idempotence."""
    facts = cluster_facts(source, features, installed_profile("kafka-python"))
    settings: dict[str, Any] = {}
    reasons: dict[str, str] = {}
    _api_version(facts, settings, reasons)
    facts.producer_gates(LIBRARY, kafka_python_has, settings, reasons,
                         missing=package_missing(LIBRARY, CODEC_PACKAGES))
    return ConfigAdvice(LIBRARY, settings, reasons, facts.notes())


def consumer_kwargs(source: AdviceSource, features: FeatureSet | None = None) -> ConfigAdvice:
    """``KafkaConsumer`` keyword arguments: api_version."""
    facts = cluster_facts(source, features, installed_profile("kafka-python"))
    settings: dict[str, Any] = {}
    reasons: dict[str, str] = {}
    _api_version(facts, settings, reasons)
    return ConfigAdvice(LIBRARY, settings, reasons, facts.notes())
