"""kclient.spelling: the one did-you-mean rule of API and feature names."""

from __future__ import annotations

from kclient.spelling import closest_name


def test_the_closest_name_is_suggested_as_known_spells_it() -> None:
    known = ["Metadata", "MsgVer1", "ApiVersions", "ZSTD"]
    assert closest_name("Metdata", known) == "Metadata"
    assert closest_name("  apiversion ", known) == "ApiVersions"  # case and spaces ignored
    assert closest_name("zstdd", known) == "ZSTD"
    assert closest_name("Xyzzy", known) is None
    assert closest_name("Metadata", []) is None
