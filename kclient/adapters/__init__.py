"""Configuration for the Kafka libraries people already run, from kclient's verdicts.

One module per library, each imported on demand (``import kclient`` and
``import kclient.adapters`` import no Kafka library):

- :mod:`kclient.adapters.confluent`: librdkafka via confluent-kafka
  (``producer_config``, ``consumer_config``);
- :mod:`kclient.adapters.kafka_python`: kafka-python 3.x (``producer_kwargs``,
  ``consumer_kwargs``);
- :mod:`kclient.adapters.aiokafka`: aiokafka (``producer_kwargs``,
  ``consumer_kwargs``).

Each takes a live :class:`~kclient.Client` / :class:`~kclient.SyncClient` or a
:class:`~kclient.ClusterView` and returns a :class:`ConfigAdvice`: the settings
to merge, the reason for every key and warnings.  Every verdict is judged
for the installed release of the library (its client profile, see
:mod:`kclient.negotiation.clients`), never with kclient's own ranges: an
adapter does not advise what the library cannot do.  A feature is enabled only
when its verdict is *available*; an *unknown* verdict (a silent broker) never
enables anything.
"""

from kclient.adapters._common import (
    CODEC_PREFERENCE,
    AdviceSource,
    ClusterFacts,
    ConfigAdvice,
    OldestRelease,
    cluster_facts,
)

__all__ = [
    "CODEC_PREFERENCE",
    "AdviceSource",
    "ClusterFacts",
    "ConfigAdvice",
    "OldestRelease",
    "cluster_facts",
]
