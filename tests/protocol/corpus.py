"""The shared spec corpus (../shared/kafka-specs) as test parameters and a registry."""

from __future__ import annotations

from functools import cache
from pathlib import Path

import pytest

from kclient.protocol import Registry
from kclient.protocol.schema import MessageSpec
from tests.conftest import shared_absent, skip_without_shared

__all__ = ["CORPUS_DIRS", "SPECS_DIR", "corpus_cases", "corpus_registry"]

SPECS_DIR = Path(__file__).resolve().parents[2].parent / "shared" / "kafka-specs"
CORPUS_DIRS = ("message", "test-message")
_NEEDS = "the Kafka message specs these tests decode and encode"


@cache
def corpus_registry() -> Registry:
    """A registry holding every spec of the corpus (not the default registry).

    Skips the calling test, with the reason, when ../shared is absent.
    """
    skip_without_shared(SPECS_DIR, _NEEDS)
    registry = Registry()
    for name in CORPUS_DIRS:
        registry.load_directory(SPECS_DIR / name)
    return registry


def corpus_cases() -> list[object]:
    """One pytest parameter ``(spec name, version)`` per valid version of every spec.

    When ../shared is absent this is a single skipped parameter, so the test
    reports why instead of silently collecting nothing.
    """
    if not SPECS_DIR.is_dir():
        return [pytest.param("", 0, marks=pytest.mark.skip(
            reason=shared_absent(SPECS_DIR, _NEEDS)))]
    specs: list[MessageSpec] = sorted(corpus_registry(), key=lambda s: s.name)
    return [pytest.param(spec.name, version, id=f"{spec.name}-v{version}")
            for spec in specs for version in spec.versions]
