"""A pytest plugin for testing applications against emulated Kafka releases.

Installed with kclient and loaded by pytest through its ``pytest11`` entry
point, so a test suite needs no conftest code:

* ``kafka_cluster`` -- a factory fixture: ``kafka_cluster("2.0", "3.9")`` starts
  an emulated cluster with one broker per release (and ``behaviour=`` for odd
  brokers) on 127.0.0.1, serves it from a background thread and returns the
  :class:`~kclient.emulator.ThreadedEmulator`; every cluster the test started is
  stopped when it ends.
* ``@pytest.mark.kafka_releases("0.10.2", "2.0", "3.9")`` -- runs the test once
  per release; the test's ``kafka_release`` argument holds the release of that
  run (feed it to ``kafka_cluster``).
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Sequence

import pytest

from kclient.emulator import EmulatedCluster, ThreadedEmulator

__all__ = ["ClusterFactory", "kafka_cluster"]

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


@pytest.fixture
def kafka_cluster() -> Iterator[ClusterFactory]:
    """Start emulated clusters on loopback for this test: ``kafka_cluster("2.0", "3.9")``.

    Arguments are the brokers' releases (``"3.9"``, ``"3.7-kraft"``, or
    ``"2.8:legacy"`` with a behaviour); ``behaviour=`` applies one behaviour to
    every broker.  Returns the running :class:`ThreadedEmulator` (its
    ``bootstrap_servers``, ``cluster``, ``restart(node_id, release)``).
    """
    started: list[ThreadedEmulator] = []

    def start(*releases: str, behaviour: str | Sequence[str] | None = None
              ) -> ThreadedEmulator:
        if not releases:
            raise ValueError("kafka_cluster() needs at least one release, e.g. "
                             "kafka_cluster(\"3.9\")")
        specs = [r if behaviour is None or ":" in r else
                 f"{r}:{behaviour if isinstance(behaviour, str) else ','.join(behaviour)}"
                 for r in releases]
        emulator = ThreadedEmulator(EmulatedCluster(specs)).start()
        started.append(emulator)
        return emulator

    try:
        yield start
    finally:
        for emulator in reversed(started):
            emulator.stop()
