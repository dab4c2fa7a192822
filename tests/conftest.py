"""Fixtures shared by every test package."""

from __future__ import annotations

from pathlib import Path

import pytest

REPO_ROOT = Path(__file__).resolve().parent.parent
SHARED_DIR = REPO_ROOT.parent / "shared"


@pytest.fixture(scope="session")
def shared_dir() -> Path:
    """The team's shared reference folder (../shared); tests skip when it is absent."""
    if not (SHARED_DIR / "kafka-specs").is_dir():
        pytest.skip(f"reference folder {SHARED_DIR} is absent; these tests need ../shared")
    return SHARED_DIR
