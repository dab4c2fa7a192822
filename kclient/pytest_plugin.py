"""A pytest plugin for testing applications against emulated Kafka releases.

Installed with kclient and loaded by pytest through its ``pytest11`` entry
point, so a test suite needs no conftest code:

* ``kafka_cluster`` -- a factory fixture: ``kafka_cluster("2.0", "3.9")`` starts
  an emulated cluster with one broker per release (and ``behaviour=`` for odd
  brokers) on 127.0.0.1, serves it from a background thread and returns the
  :class:`~kclient.emulator.ThreadedEmulator`; every cluster the test started is
  stopped when it ends.  The brokers store what is produced, so an
  application's own producer and consumer (confluent-kafka, kafka-python,
  aiokafka, ...) run against it; ``topics={"orders": 3}`` creates topics first
  (``{"orders": {"partitions": 3, "configs": {"compression.type": "zstd"}}}`` with
  topic configs), ``auto_create_topics=False`` turns off Kafka's topic auto-creation,
  and ``finalized_features={"group.version": 0}`` makes a cluster upgraded from an
  older release (it keeps its old KIP-584 levels; a fresh cluster of the release
  has the release's own).
* ``@pytest.mark.kafka_releases("0.10.2", "2.0", "3.9")`` -- runs the test once
  per release; the test's ``kafka_release`` argument holds the release of that
  run (feed it to ``kafka_cluster``).
"""

from __future__ import annotations

import difflib
from collections.abc import Callable, Iterator, Mapping, Sequence

import attrs
import pytest

from kclient.emulator import EmulatedCluster, ThreadedEmulator
from kclient.emulator.cluster import parse_broker_spec
from kclient.emulator.configs import config_problem
from kclient.emulator.log import topic_name_problem
from kclient.errors import ConfigError

__all__ = ["ClusterFactory", "cluster_feature_levels", "cluster_specs", "cluster_topic_configs",
           "cluster_topics",
           "kafka_cluster"]

ClusterFactory = Callable[..., ThreadedEmulator]
_MARKER = "kafka_releases"


def pytest_configure(config: pytest.Config) -> None:
    """Register the marker so ``--strict-markers`` suites accept it."""
    config.addinivalue_line(
        "markers", f"{_MARKER}(*releases): run the test once per Kafka release; the "
        "'kafka_release' argument holds the release (kclient's emulator)")


def pytest_generate_tests(metafunc: pytest.Metafunc) -> None:
    """Parametrize ``kafka_release`` from the ``kafka_releases`` marker."""
    marker = metafunc.definition.get_closest_marker(_MARKER)
    if marker is None:
        return
    if "kafka_release" not in metafunc.fixturenames:
        raise pytest.UsageError(f"{metafunc.definition.nodeid}: @pytest.mark.{_MARKER} needs "
                                "a 'kafka_release' argument in the test")
    releases = [str(r) for r in marker.args]
    if not releases:
        raise pytest.UsageError(f"{metafunc.definition.nodeid}: @pytest.mark.{_MARKER} "
                                "names no release; give at least one, e.g. \"3.9\"")
    metafunc.parametrize("kafka_release", releases, ids=[f"kafka-{r}" for r in releases])


_OPTIONS = ("behaviour", "topics", "auto_create_topics", "finalized_features")


def _text_list(value: object) -> list[str] | None:
    if isinstance(value, str):
        return [value]
    if isinstance(value, (list, tuple)) and all(isinstance(v, str) for v in value):
        return list(value)
    return None


def _partition_count(value: object) -> int | None:
    if isinstance(value, Mapping) and set(value) <= {"partitions", "configs"}:
        value = value.get("partitions", 1)
    if isinstance(value, int) and not isinstance(value, bool) and 1 <= value <= 10_000:
        return value
    return None


def cluster_topics(options: Mapping[str, object]) -> dict[str, int]:
    """The topics ``kafka_cluster(..., topics=...)`` creates: name to partition count.

    ``topics`` is a mapping of names to counts (1 or more), or to
    ``{"partitions": N, "configs": {...}}`` (see :func:`cluster_topic_configs`), or a
    list of names (one partition each); anything else is a
    :class:`~kclient.errors.ConfigError`.
    """
    topics = options.get("topics")
    if topics is None:
        return {}
    names = _text_list(topics)
    if names is not None:
        chosen = dict.fromkeys(names, 1)
    elif isinstance(topics, Mapping) and all(
            isinstance(k, str) and _partition_count(v) is not None for k, v in topics.items()):
        chosen = {str(k): int(_partition_count(v) or 1) for k, v in topics.items()}
    else:
        raise ConfigError(f"kafka_cluster(): topics= is a mapping of topic names to partition "
                          f"counts (1-10000), e.g. {{\"orders\": 3}}, or to {{\"partitions\": "
                          f"3, \"configs\": {{...}}}}, or a list of names, got {_shown(topics)}")
    for name in chosen:
        problem = topic_name_problem(name)
        if problem is not None:
            raise ConfigError(f"kafka_cluster(): topic {_shown(name)} is not a name Kafka "
                              f"accepts: {problem}; use ASCII letters, digits, '.', '_' and '-'")
    return chosen


def _shown(value: object, limit: int = 60) -> str:
    """``value``'s repr, cut to ``limit`` characters (a 100,000-character name stays short)."""
    text = repr(value)
    return text if len(text) <= limit else f"{text[:limit]}... ({len(text)} characters)"


def cluster_topic_configs(options: Mapping[str, object],
                          releases: Sequence[str] = ()) -> dict[str, dict[str, str]]:
    """The topic configs of ``kafka_cluster(..., topics={name: {"configs": {...}}})``.

    Each config is checked as Kafka checks it (:func:`kclient.emulator.configs.
    config_problem`) for every release in ``releases``: a name Kafka does not know or a
    value it refuses is a :class:`~kclient.errors.ConfigError`.
    """
    cluster_topics(options)
    topics = options.get("topics")
    out: dict[str, dict[str, str]] = {}
    if not isinstance(topics, Mapping):
        return out
    for name, value in topics.items():
        configs = value.get("configs") if isinstance(value, Mapping) else None
        if configs is None:
            continue
        if not isinstance(configs, Mapping) or not all(
                isinstance(k, str) and isinstance(v, str) for k, v in configs.items()):
            raise ConfigError(f"kafka_cluster(): topic {_shown(name)}: configs= is a mapping of "
                              f"config names to text values, e.g. {{\"compression.type\": "
                              f"\"zstd\"}}, got {_shown(configs)}")
        for key, text in configs.items():
            for release in releases or ("4.0",):
                problem = config_problem(key, text, release)
                if problem is not None:
                    raise ConfigError(f"kafka_cluster(): topic {_shown(name)}: Kafka {release} "
                                      f"refuses it: {problem}")
        out[str(name)] = dict(configs)
    return out


def cluster_feature_levels(options: Mapping[str, object]) -> dict[str, tuple[int, int]]:
    """The KIP-584 levels ``kafka_cluster(..., finalized_features=...)`` sets instead of the
    release's fresh-cluster levels, as the emulator takes them (name to ``(level, level)``).

    ``finalized_features`` maps feature names to levels from 0 to 32767 (0: not
    finalized, as an upgraded cluster that kept level 0 has it); anything else is
    a :class:`~kclient.errors.ConfigError`.
    """
    levels = options.get("finalized_features")
    if levels is None:
        return {}
    if isinstance(levels, Mapping) and all(
            isinstance(k, str) and k and isinstance(v, int) and not isinstance(v, bool)
            and 0 <= v <= 32767 for k, v in levels.items()):
        return {str(k): (int(v), int(v)) for k, v in levels.items()}
    raise ConfigError(f"kafka_cluster(): finalized_features= maps feature names to levels "
                      f"(0-32767), e.g. {{\"group.version\": 0}}, got {levels!r}")


def cluster_specs(releases: Sequence[object], options: Mapping[str, object]) -> list[str]:
    """The broker specs ``kafka_cluster(*releases, **options)`` starts, checked at the front.

    Raises :class:`~kclient.errors.ConfigError` naming ``kafka_cluster`` and the
    argument for a release that is not text (``3.9`` instead of ``"3.9"``), a
    ``behaviour`` that is not a name or a list of names, an unknown keyword, and
    (through the emulator's own parser) an unknown release or behaviour.
    """
    unknown = [name for name in options if name not in _OPTIONS]
    if unknown:
        close = difflib.get_close_matches(unknown[0], _OPTIONS, n=1)
        hint = f"did you mean {close[0]!r}? " if close else ""
        raise ConfigError(f"kafka_cluster(): unknown keyword argument {unknown[0]!r}; {hint}"
                          f"it takes releases and {', '.join(o + '=' for o in _OPTIONS)}")
    if not releases:
        raise ConfigError("kafka_cluster() needs at least one release, e.g. "
                          "kafka_cluster(\"3.9\")")
    for release in releases:
        if not isinstance(release, str):
            hint = "; quote it" if isinstance(release, (int, float)) else ""
            raise ConfigError(f"kafka_cluster(): a release is text such as \"3.9\", got "
                              f"{release!r} ({type(release).__name__}){hint}")
    behaviour = options.get("behaviour")
    words = None if behaviour is None else _text_list(behaviour)
    if behaviour is not None and words is None:
        raise ConfigError(f"kafka_cluster(): behaviour= is a behaviour name such as "
                          f"\"legacy\" or a list of names, got {behaviour!r} "
                          f"({type(behaviour).__name__})")
    specs = [r if words is None or ":" in r else f"{r}:{','.join(words)}"
             for r in releases if isinstance(r, str)]
    for spec in specs:
        parse_broker_spec(spec)  # an unknown release or behaviour: ConfigError here
    cluster_topics(options)
    cluster_feature_levels(options)
    auto = options.get("auto_create_topics", True)
    if not isinstance(auto, bool):
        raise ConfigError(f"kafka_cluster(): auto_create_topics= is True or False, got {auto!r}")
    return specs


@pytest.fixture
def kafka_cluster() -> Iterator[ClusterFactory]:
    """Start emulated clusters on loopback for this test: ``kafka_cluster("2.0", "3.9")``.

    Arguments are the brokers' releases (``"3.9"``, ``"3.7-kraft"``, or
    ``"2.8:legacy"`` with a behaviour); ``behaviour=`` applies one behaviour to
    every broker; ``topics=`` (``{"orders": 3}`` or a list of names) creates topics
    (``{"orders": {"partitions": 3, "configs": {"compression.type": "zstd"}}}`` with
    topic configs, checked as Kafka checks them);
    ``auto_create_topics=False`` makes Metadata for an unknown topic say so instead
    of creating it; ``finalized_features={"group.version": 0}`` changes KIP-584
    levels from those of a freshly formatted cluster of the oldest release (an
    upgraded cluster keeps its old levels).  Returns the running
    :class:`ThreadedEmulator` (its
    ``bootstrap_servers``, ``cluster``, ``restart(node_id, release)``); the
    cluster's ``state`` holds what was produced and committed.
    """
    started: list[ThreadedEmulator] = []

    def start(*releases: str, **options: object) -> ThreadedEmulator:
        levels = cluster_feature_levels(options)
        specs = [attrs.evolve(parse_broker_spec(spec), finalized_features=levels)
                 for spec in cluster_specs(releases, options)]
        configs = cluster_topic_configs(options, [spec.release for spec in specs])
        cluster = EmulatedCluster(specs, auto_create_topics=bool(
            options.get("auto_create_topics", True)))
        for name, partitions in cluster_topics(options).items():
            cluster.state.create_topic(name, partitions, configs=configs.get(name))
        emulator = ThreadedEmulator(cluster).start()
        started.append(emulator)
        return emulator

    try:
        yield start
    finally:
        for emulator in reversed(started):
            emulator.stop()
