"""aiokafka keyword arguments from what the cluster negotiated.

::

    from kclient.adapters import aiokafka as aiokafka_adapter
    async with Client("broker:9092") as kc:
        advice = aiokafka_adapter.producer_kwargs(kc)
    producer = aiokafka.AIOKafkaProducer(bootstrap_servers="broker:9092", **advice.settings)

Verdicts are aiokafka's own: the installed release's profile
(:func:`kclient.installed.installed_profile`) is the application, so
``enable_idempotence`` is advised only where a broker takes the InitProducerId
v0 aiokafka sends.  Only options aiokafka still honours are emitted: ``api_version`` has been a
deprecated no-op since aiokafka 0.13 (it negotiates by itself), so it is never
set.  aiokafka is imported only to ask which codecs it can use.
"""

from __future__ import annotations

from typing import Any

from kclient.adapters._common import (
    AdviceSource,
    ConfigAdvice,
    cluster_facts,
    package_missing,
)
from kclient.errors import ConfigError
from kclient.installed import installed_profile
from kclient.negotiation.features import FeatureSet

__all__ = ["aiokafka_has", "consumer_kwargs", "producer_kwargs"]

LIBRARY = "aiokafka"
#: The package aiokafka imports for each codec (aiokafka/codec.py: cramjam for all
#: three); gzip is built in.
CODEC_PACKAGES = {"zstd": "cramjam", "lz4": "cramjam", "snappy": "cramjam"}
_API_VERSION = ("not set: a deprecated no-op since aiokafka 0.13, which asks every broker "
                "for its versions itself")


def aiokafka_has(codec: str) -> bool:
    """Whether aiokafka can use ``codec`` here (its own check of the codec packages)."""
    try:
        from aiokafka import codec as aiokafka_codec
    except ImportError:
        raise ConfigError("the aiokafka adapter needs aiokafka; pip install aiokafka") from None
    check = getattr(aiokafka_codec, f"has_{codec}", None)
    return bool(check()) if check is not None else False


def producer_kwargs(source: AdviceSource, features: FeatureSet | None = None) -> ConfigAdvice:
    """``AIOKafkaProducer`` keyword arguments: compression_type, enable_idempotence."""
    facts = cluster_facts(source, features, installed_profile("aiokafka"))
    settings: dict[str, Any] = {}
    reasons: dict[str, str] = {"api_version": _API_VERSION}
    facts.producer_gates(LIBRARY, aiokafka_has, settings, reasons,
                         missing=package_missing(LIBRARY, CODEC_PACKAGES))
    return ConfigAdvice(LIBRARY, settings, reasons, facts.notes())


def consumer_kwargs(source: AdviceSource, features: FeatureSet | None = None) -> ConfigAdvice:
    """``AIOKafkaConsumer`` keyword arguments (none needed today; the reasons say why)."""
    facts = cluster_facts(source, features, installed_profile("aiokafka"))
    return ConfigAdvice(LIBRARY, {}, {"api_version": _API_VERSION}, facts.notes())
