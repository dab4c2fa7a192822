"""Pure negotiation logic: version ranges, broker and cluster views, features, releases.

Nothing here touches a socket: the connection layer feeds in what brokers
advertised and asks which version to send and which features are usable.
"""

from __future__ import annotations

from kclient.negotiation.diff import ApiChange, ViewDiff, diff_views
from kclient.negotiation.evaluation import (
    FeatureReport,
    FeatureResult,
    RequirementCheck,
    evaluate_features,
    explain_feature,
)
from kclient.negotiation.featurefile import default_features, load_features, parse_features
from kclient.negotiation.features import (
    ApiRequirement,
    Feature,
    FeatureSet,
    LevelRequirement,
    Requirement,
    unknown_feature,
)
from kclient.negotiation.model import (
    ApiSupport,
    ApplicationVersions,
    BrokerVersions,
    ClusterView,
    api_key_of,
    fallback_broker,
)
from kclient.negotiation.ranges import VersionRange, highest_allowed, intersect_all, parse_range
from kclient.negotiation.releases import (
    FeatureLevels,
    Mode,
    ReleaseGuess,
    guess_ignored_keys,
    guess_release,
    known_releases,
    release_feature_levels,
    release_label,
    release_mode,
    release_number,
    release_profile,
    removed_in,
    resolve_release,
)
from kclient.negotiation.snapshot import (
    SnapshotRecord,
    append_snapshots,
    brokers_by_cluster,
    iter_snapshots,
    read_snapshots,
    record_from_json,
    record_to_json,
    utc_now,
    write_snapshots,
)
from kclient.negotiation.verdict import BrokerState, Verdict


def __getattr__(name: str) -> frozenset[int]:
    # GUESS_IGNORED_KEYS is release data (releases.json), read on first use.
    if name == "GUESS_IGNORED_KEYS":
        return guess_ignored_keys()
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


__all__ = [
    "GUESS_IGNORED_KEYS",
    "ApiChange",
    "ApiRequirement",
    "ApiSupport",
    "ApplicationVersions",
    "BrokerState",
    "BrokerVersions",
    "ClusterView",
    "Feature",
    "FeatureLevels",
    "FeatureReport",
    "FeatureResult",
    "FeatureSet",
    "LevelRequirement",
    "Mode",
    "ReleaseGuess",
    "Requirement",
    "RequirementCheck",
    "SnapshotRecord",
    "Verdict",
    "VersionRange",
    "ViewDiff",
    "api_key_of",
    "append_snapshots",
    "brokers_by_cluster",
    "default_features",
    "diff_views",
    "evaluate_features",
    "explain_feature",
    "fallback_broker",
    "guess_ignored_keys",
    "guess_release",
    "highest_allowed",
    "intersect_all",
    "iter_snapshots",
    "known_releases",
    "load_features",
    "parse_features",
    "parse_range",
    "read_snapshots",
    "record_from_json",
    "record_to_json",
    "release_feature_levels",
    "release_label",
    "release_mode",
    "release_number",
    "release_profile",
    "removed_in",
    "resolve_release",
    "unknown_feature",
    "utc_now",
    "write_snapshots",
]
