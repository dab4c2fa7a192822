"""Named features (features.yaml) and their evaluation against a cluster view.

A feature is usable when all of its requirements hold and, if it lists
alternatives (``any_of``), when at least one alternative holds entirely.  An API
requirement is KIP-35's (ApiKey, MinVersion, MaxVersion): it holds when the
requirement's range, the application's range and every broker's range share a
version (the highest such version is the one to use).  A feature-level
requirement (KIP-584) holds when every broker reports the feature finalized at a
level within the bounds.  See ``docs/reference/features-yaml.md`` for the format.
"""

from __future__ import annotations

import difflib
import re
from collections.abc import Iterable, Iterator, Mapping, Sequence
from datetime import datetime
from functools import cache
from pathlib import Path
from typing import Any

import attrs
import yaml
import yaml.constructor
import yaml.nodes

from kclient._resources import shipped_path
from kclient.errors import FeatureFileError, UnknownFeatureError
from kclient.negotiation.model import BrokerVersions, ClusterView
from kclient.negotiation.ranges import VersionRange, highest_allowed, intersect_all
from kclient.negotiation.releases import removed_in
from kclient.negotiation.verdict import (
    AT_LEVEL,
    BROKER_NAME,
    NO_ALTERNATIVE,
    NO_BROKER,
    NO_SHARED_VERSION,
    NOT_FINALIZED,
    Verdict,
    offers_text,
    outside_application,
)
from kclient.negotiation.yamlnodes import compose_document
from kclient.protocol.catalog import Catalog, default_catalog
from kclient.protocol.constants import INT16_MAX

__all__ = [
    "ApiRequirement",
    "Feature",
    "FeatureReport",
    "FeatureResult",
    "FeatureSet",
    "LevelRequirement",
    "Requirement",
    "RequirementCheck",
    "default_features",
    "evaluate_features",
    "explain_feature",
    "load_features",
    "parse_features",
    "removal_note",
    "unknown_feature",
]

FORMAT_VERSION = 1
# Kafka versions are int16; "no maximum" means up to the largest one.
_NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]*$")


def _bounds(low: int, high: int | None) -> str:
    if high is None and low == 0:
        return "any version"
    if high is None:
        return f"{low}+"
    return str(low) if low == high else f"{low}-{high}"


@attrs.frozen
class ApiRequirement:
    """The feature needs a version of API ``key`` within ``min``..``max`` (no max: open)."""

    key: int
    name: str
    min: int = 0
    max: int | None = None
    line: int | None = attrs.field(default=None, eq=False)

    @property
    def range(self) -> VersionRange:
        """The required versions as a range (an open maximum becomes INT16_MAX)."""
        return VersionRange(self.min, INT16_MAX if self.max is None else self.max)

    def describe(self) -> str:
        """``Produce needs 7+`` and the like."""
        return f"{self.name} needs {_bounds(self.min, self.max)}"


@attrs.frozen
class LevelRequirement:
    """The feature needs KIP-584 feature ``feature`` finalized at ``min``..``max``."""

    feature: str
    min: int
    max: int | None = None
    line: int | None = attrs.field(default=None, eq=False)

    def accepts(self, level: int | None) -> bool:
        """True when a finalized ``level`` satisfies the requirement."""
        if level is None:
            return False
        return self.min <= level and (self.max is None or level <= self.max)

    def describe(self) -> str:
        """``group.version needs 1+`` and the like."""
        return f"{self.feature} needs {_bounds(self.min, self.max)}"


Requirement = ApiRequirement | LevelRequirement


@attrs.frozen
class Feature:
    """A named capability and what it needs from the cluster."""

    name: str
    description: str = ""
    reference: str | None = None
    requires: tuple[Requirement, ...] = ()
    any_of: tuple[tuple[Requirement, ...], ...] = ()
    where: str | None = attrs.field(default=None, eq=False)

    def api_keys(self) -> list[int]:
        """Every API key named anywhere in the feature's requirements."""
        keys: list[int] = []
        for req in [*self.requires, *(r for alt in self.any_of for r in alt)]:
            if isinstance(req, ApiRequirement) and req.key not in keys:
                keys.append(req.key)
        return keys


def _features(value: Iterable[Feature]) -> tuple[Feature, ...]:
    return tuple(value)


def _strings(value: Iterable[str]) -> tuple[str, ...]:
    return tuple(str(v) for v in value)


@attrs.frozen
class FeatureSet:
    """An ordered collection of features, looked up by name case-insensitively."""

    features: tuple[Feature, ...] = attrs.field(converter=_features)
    sources: tuple[str, ...] = attrs.field(default=(), converter=_strings)

    def __iter__(self) -> Iterator[Feature]:
        return iter(self.features)

    def __len__(self) -> int:
        return len(self.features)

    def __contains__(self, name: object) -> bool:
        return isinstance(name, str) and self.get(name) is not None

    def get(self, name: str) -> Feature | None:
        """The feature called ``name`` (any case), or ``None``."""
        wanted = name.lower()
        for feature in self.features:
            if feature.name.lower() == wanted:
                return feature
        return None

    def __getitem__(self, name: str) -> Feature:
        feature = self.get(name)
        if feature is None:
            raise unknown_feature(name, self.names())
        return feature

    def names(self) -> list[str]:
        """Feature names in file order."""
        return [f.name for f in self.features]

    def merged(self, override: FeatureSet) -> FeatureSet:
        """This set with ``override``'s features replacing same-named ones, new ones appended."""
        replaced = {f.name.lower(): f for f in override.features}
        result = [replaced.pop(f.name.lower(), f) for f in self.features]
        result.extend(f for f in override.features if f.name.lower() in replaced)
        return FeatureSet(tuple(result), (*self.sources, *override.sources))


def unknown_feature(name: str, known: Sequence[str]) -> UnknownFeatureError:
    """The error for a feature name that is not in ``known``, suggesting the closest one."""
    lowered = {k.lower(): k for k in known}
    close = difflib.get_close_matches(name.lower(), list(lowered), n=1, cutoff=0.5)
    suggestion = lowered[close[0]] if close else None
    hint = f"; did you mean {suggestion!r}?" if suggestion else ""
    return UnknownFeatureError(
        f"unknown feature {name!r}{hint} (known: {', '.join(known)}); feature names come "
        "from the features file (features.yaml)", name, suggestion)


# ---------------------------------------------------------------------------
# Loading
# ---------------------------------------------------------------------------

_TOP_KEYS = ("version", "features")
_FEATURE_KEYS = ("name", "description", "reference", "requires", "any_of")
_API_KEYS = ("api", "min", "max")
_LEVEL_KEYS = ("feature", "min", "max")


class _Parser:
    def __init__(self, source: str, catalog: Catalog) -> None:
        self.source = source
        self.catalog = catalog
        self.constructor = yaml.constructor.SafeConstructor()

    def fail(self, node: yaml.nodes.Node | None, message: str) -> FeatureFileError:
        line = node.start_mark.line + 1 if node is not None else None
        return FeatureFileError(message, self.source, line)

    def scalar(self, node: yaml.nodes.Node) -> Any:
        if not isinstance(node, yaml.nodes.ScalarNode):
            raise self.fail(node, f"expected a single value here, found a "
                            f"{_kind(node)}; write a plain number or text")
        if node.tag == _STR_TAG:
            return node.value
        if node.tag in _NUMBER_TAGS and len(node.value) > _LONGEST_NUMBER:
            raise self.fail(node, f"a number {len(node.value)} characters long is not a "
                            "version or key; write a small whole number")
        try:
            return self.constructor.construct_object(node, deep=True)
        except yaml.YAMLError as exc:
            problem = getattr(exc, "problem", None) or str(exc)
            raise self.fail(node, f"cannot read this value: {problem}; remove the tag "
                            "(!...) or fix the value") from None
        except Exception as exc:  # PyYAML's constructors fail in many ways on odd input
            raise self.fail(node, f"cannot read {node.value!r} as {_tag_name(node.tag)}: "
                            f"{str(exc) or type(exc).__name__}; fix the value or remove the "
                            "tag") from None

    def integer(self, node: yaml.nodes.Node, what: str) -> int:
        value = self.scalar(node)
        if isinstance(value, bool) or not isinstance(value, int):
            raise self.fail(node, f"{what} must be a whole number, got {value!r}")
        if value < 0:
            raise self.fail(node, f"{what} must be 0 or more, got {value}")
        return value

    def text(self, node: yaml.nodes.Node, what: str) -> str:
        value = self.scalar(node)
        if not isinstance(value, str) or not value.strip():
            raise self.fail(node, f"{what} must be non-empty text, got {value!r}")
        return value.strip()

    def mapping(self, node: yaml.nodes.Node, what: str, allowed: Sequence[str]
                ) -> dict[str, tuple[yaml.nodes.Node, yaml.nodes.Node]]:
        if not isinstance(node, yaml.nodes.MappingNode):
            raise self.fail(node, f"{what} must be a mapping of keys ({', '.join(allowed)}), "
                            f"found a {_kind(node)}")
        result: dict[str, tuple[yaml.nodes.Node, yaml.nodes.Node]] = {}
        for key_node, value_node in node.value:
            key = self.scalar(key_node)
            if not isinstance(key, str):
                raise self.fail(key_node, f"keys of {what} are words, got {key!r}")
            if key in result:
                first = result[key][0].start_mark.line + 1
                raise self.fail(key_node, f"key {key!r} appears twice in {what} (first at line "
                                f"{first}); keep one")
            if key not in allowed:
                close = difflib.get_close_matches(key, allowed, n=1)
                hint = f"did you mean {close[0]!r}? " if close else ""
                raise self.fail(key_node, f"unknown key {key!r} in {what}; {hint}"
                                f"allowed keys: {', '.join(allowed)}")
            result[key] = (key_node, value_node)
        return result

    def sequence(self, node: yaml.nodes.Node, what: str) -> list[yaml.nodes.Node]:
        if not isinstance(node, yaml.nodes.SequenceNode):
            raise self.fail(node, f"{what} must be a list (lines starting with '- '), "
                            f"found a {_kind(node)}")
        return list(node.value)

    # -- the document ---------------------------------------------------------
    def document(self, root: yaml.nodes.Node | None) -> FeatureSet:
        if root is None:
            raise FeatureFileError("the file is empty; start it with 'version: 1' and a "
                                   "'features:' list", self.source, 1)
        top = self.mapping(root, "the top level", _TOP_KEYS)
        if "version" not in top:
            raise self.fail(root, "missing 'version'; add 'version: 1' at the top")
        version_node = top["version"][1]
        version = self.integer(version_node, "version")
        if version != FORMAT_VERSION:
            raise self.fail(version_node, f"features file format version {version} is not "
                            f"supported; this kclient reads version {FORMAT_VERSION}")
        if "features" not in top:
            raise self.fail(root, "missing 'features'; add a 'features:' list")
        features_node = top["features"][1]
        if (isinstance(features_node, yaml.nodes.ScalarNode)
                and features_node.tag == "tag:yaml.org,2002:null"):
            return FeatureSet((), (self.source,))
        features: list[Feature] = []
        seen: dict[str, int] = {}
        for item in self.sequence(features_node, "'features'"):
            feature = self.feature(item)
            lowered = feature.name.lower()
            if lowered in seen:
                raise self.fail(item, f"feature {feature.name!r} is defined twice (first at "
                                f"line {seen[lowered]}); rename or remove one")
            seen[lowered] = item.start_mark.line + 1
            features.append(feature)
        return FeatureSet(tuple(features), (self.source,))

    def feature(self, node: yaml.nodes.Node) -> Feature:
        fields = self.mapping(node, "a feature", _FEATURE_KEYS)
        if "name" not in fields:
            raise self.fail(node, "a feature needs a 'name'; add 'name: SomeFeature'")
        name_node = fields["name"][1]
        name = self.text(name_node, "name")
        if not _NAME.match(name):
            raise self.fail(name_node, f"feature name {name!r} may use letters, digits, '.', "
                            "'_' and '-' only, starting with a letter or digit")
        description = self.text(fields["description"][1], "description") if (
            "description" in fields) else ""
        reference = self.text(fields["reference"][1], "reference") if (
            "reference" in fields) else None
        requires: tuple[Requirement, ...] = ()
        if "requires" in fields:
            requires = tuple(self.requirement(n) for n in
                             self.sequence(fields["requires"][1], f"'requires' of {name}"))
        any_of: list[tuple[Requirement, ...]] = []
        if "any_of" in fields:
            alternatives = self.sequence(fields["any_of"][1], f"'any_of' of {name}")
            if len(alternatives) < 2:
                raise self.fail(fields["any_of"][1], f"'any_of' of {name} lists "
                                f"{len(alternatives)} alternative(s); give two or more, or "
                                "put a single one under 'requires'")
            for alt in alternatives:
                if isinstance(alt, yaml.nodes.SequenceNode):
                    if not alt.value:
                        raise self.fail(alt, f"an alternative of {name} is an empty list; "
                                        "give it at least one requirement")
                    any_of.append(tuple(self.requirement(n) for n in alt.value))
                else:
                    any_of.append((self.requirement(alt),))
        if not requires and not any_of:
            raise self.fail(node, f"feature {name} has no requirements; add a 'requires:' "
                            "list such as '- {api: Produce, min: 3}'")
        where = f"{self.source}:{node.start_mark.line + 1}"
        return Feature(name, description, reference, requires, tuple(any_of), where)

    def requirement(self, node: yaml.nodes.Node) -> Requirement:
        if not isinstance(node, yaml.nodes.MappingNode):
            raise self.fail(node, "a requirement is a mapping such as '{api: Produce, min: 3}' "
                            f"or '{{feature: group.version, min: 1}}', found a {_kind(node)}")
        keys = {str(k.value) for k, _ in node.value if isinstance(k, yaml.nodes.ScalarNode)}
        if "api" in keys and "feature" in keys:
            raise self.fail(node, "a requirement names either an 'api' or a 'feature', not "
                            "both; split it into two requirements")
        line = node.start_mark.line + 1
        if "feature" in keys:
            fields = self.mapping(node, "a feature-level requirement", _LEVEL_KEYS)
            feature_node = fields["feature"][1]
            feature = self.text(feature_node, "feature")
            if not _NAME.match(feature):
                raise self.fail(feature_node, f"{feature!r} is not a feature name such as "
                                "'group.version'")
            if "min" not in fields:
                raise self.fail(node, f"the requirement on {feature} needs a 'min' level, "
                                "e.g. 'min: 1'")
            low, high = self.limits(fields, feature)
            return LevelRequirement(feature, low, high, line)
        if "api" not in keys:
            raise self.fail(node, "a requirement needs 'api: <name or key>' or "
                            "'feature: <feature name>'")
        fields = self.mapping(node, "an API requirement", _API_KEYS)
        api_node = fields["api"][1]
        key, name = self.api(api_node)
        low, high = self.limits(fields, name)
        return ApiRequirement(key, name, low, high, line)

    def limits(self, fields: Mapping[str, tuple[yaml.nodes.Node, yaml.nodes.Node]],
               what: str) -> tuple[int, int | None]:
        low = self.integer(fields["min"][1], f"min of {what}") if "min" in fields else 0
        high = self.integer(fields["max"][1], f"max of {what}") if "max" in fields else None
        for bound, value in (("min", low), ("max", high)):
            if value is not None and value > INT16_MAX:
                raise self.fail(fields[bound][1], f"{bound} of {what} is {value}, above "
                                f"{INT16_MAX}, the largest version there can be (versions "
                                "are 16-bit); use a smaller number or drop 'max'")
        if high is not None and low > high:
            raise self.fail(fields["max"][1], f"{what}: min {low} is greater than max {high}; "
                            "swap them or drop 'max'")
        return low, high

    def api(self, node: yaml.nodes.Node) -> tuple[int, str]:
        value = self.scalar(node)
        if isinstance(value, bool):
            raise self.fail(node, f"api must be a name such as 'Produce' or a key, got {value!r}")
        if isinstance(value, int):
            info = self.catalog.by_key(value)
            if info is None:
                raise self.fail(node, f"API key {value} is not known to kclient (keys 0-"
                                f"{max(i.key for i in self.catalog)}); use a known key or name")
            return info.key, info.name
        if not isinstance(value, str) or not value.strip():
            raise self.fail(node, f"api must be a name such as 'Produce' or a key, got {value!r}")
        info = self.catalog.by_name(value.strip())
        if info is None:
            names = [i.name for i in self.catalog]
            close = difflib.get_close_matches(value.strip(), names, n=1)
            hint = f"did you mean {close[0]!r}? " if close else ""
            raise self.fail(node, f"unknown API {value!r}; {hint}use Kafka's name (as in the "
                            "message specs, e.g. 'InitProducerId') or the numeric key")
        return info.key, info.name


_STR_TAG = "tag:yaml.org,2002:str"
_NUMBER_TAGS = ("tag:yaml.org,2002:int", "tag:yaml.org,2002:float")
# Longer numbers are no version or key (and sexagesimal ones cost quadratic time).
_LONGEST_NUMBER = 40


def _tag_name(tag: str) -> str:
    return tag.rsplit(":", 1)[-1] if tag.startswith("tag:yaml.org,2002:") else tag


def _kind(node: yaml.nodes.Node) -> str:
    if isinstance(node, yaml.nodes.MappingNode):
        return "mapping"
    if isinstance(node, yaml.nodes.SequenceNode):
        return "list"
    return "single value"


def parse_features(text: str, source: str = "<string>", catalog: Catalog | None = None
                   ) -> FeatureSet:
    """Parse features.yaml text; errors are :class:`FeatureFileError` with ``source:line``."""
    parser = _Parser(source, catalog or default_catalog())
    root = compose_document(text, source)
    return parser.document(root)


def load_features(path: str | Path | None = None, *, merge_default: bool = False,
                  catalog: Catalog | None = None) -> FeatureSet:
    """Load a features file; the shipped default when ``path`` is None.

    With ``merge_default=True`` the file's features are laid over the default
    ones: same-named features are replaced, new ones added.
    """
    if path is None:
        return default_features() if catalog is None else _load_file(_default_path(), catalog)
    loaded = _load_file(Path(path), catalog)
    return default_features().merged(loaded) if merge_default else loaded


def _default_path() -> Path:
    return shipped_path("features.yaml")


def _load_file(path: Path, catalog: Catalog | None) -> FeatureSet:
    try:
        text = path.read_text(encoding="utf-8")
    except OSError as exc:
        raise FeatureFileError(f"cannot read the features file: {exc.strerror or exc}; check "
                               "the path", str(path)) from None
    except UnicodeDecodeError:
        raise FeatureFileError("the features file is not UTF-8 text", str(path)) from None
    return parse_features(text, str(path), catalog)


@cache
def default_features() -> FeatureSet:
    """The features.yaml shipped with kclient (parsed once)."""
    return _load_file(_default_path(), None)


# ---------------------------------------------------------------------------
# Evaluation
# ---------------------------------------------------------------------------


@attrs.frozen
class RequirementCheck:
    """Whether one requirement holds for a set of brokers, and why not."""

    requirement: Requirement
    ok: bool
    version: int | None = None
    blocking: tuple[int, ...] = ()
    reason: str | None = None


@attrs.frozen
class FeatureResult:
    """The verdict on one feature for a cluster view.

    ``state`` is available, unavailable or unknown
    (:class:`~kclient.negotiation.verdict.Verdict`).  ``brokers`` says, per
    broker id, whether the feature is usable with that broker alone (``False``
    for a broker that has never answered); ``versions`` gives, for an available
    feature, the version to use for each of its APIs (the highest in the
    overlap); ``reasons`` explains any other state, ``blocking`` names the
    brokers in the way of an unavailable one, ``unknown`` the brokers whose
    silence makes it unknown, ``stale`` the unreachable brokers counted with
    their last answer and ``ignored`` the silent brokers a lenient view left out.
    """

    name: str
    state: Verdict
    brokers: Mapping[int, bool] = attrs.field(hash=False)
    versions: Mapping[str, int] = attrs.field(hash=False)
    reasons: tuple[str, ...] = ()
    blocking: tuple[int, ...] = ()
    unknown: tuple[int, ...] = ()
    stale: tuple[int, ...] = ()
    ignored: tuple[int, ...] = ()
    notes: tuple[str, ...] = ()
    feature: Feature | None = attrs.field(default=None, eq=False, repr=False)

    @property
    def available(self) -> bool:
        """True only when the feature is usable on every broker that matters."""
        return self.state is Verdict.AVAILABLE


@attrs.frozen
class FeatureReport:
    """Every feature of a :class:`FeatureSet` evaluated against one cluster view."""

    results: tuple[FeatureResult, ...]
    cluster: str | None = None

    def __iter__(self) -> Iterator[FeatureResult]:
        return iter(self.results)

    def __len__(self) -> int:
        return len(self.results)

    def get(self, name: str) -> FeatureResult | None:
        """The result for ``name`` (any case), or ``None``."""
        wanted = name.lower()
        return next((r for r in self.results if r.name.lower() == wanted), None)

    def __getitem__(self, name: str) -> FeatureResult:
        result = self.get(name)
        if result is None:
            raise unknown_feature(name, [r.name for r in self.results])
        return result

    def is_available(self, name: str) -> bool:
        """True when the feature is usable cluster-wide (unknown counts as no)."""
        return self[name].available

    def available_names(self) -> list[str]:
        """Names of the features usable cluster-wide, in file order."""
        return [r.name for r in self.results if r.available]

    def names_in(self, state: Verdict) -> list[str]:
        """Names of the features in ``state``, in file order."""
        return [r.name for r in self.results if r.state is state]


def explain_feature(result: FeatureResult) -> str:
    """Why a feature is or is not usable, in one paragraph (the wording of ``explain``)."""
    notes = "".join(f" [{note}]" for note in result.notes)
    if result.available:
        uses = ", ".join(f"{api} v{v}" for api, v in result.versions.items())
        return f"{result.name}: available" + (f" (uses {uses})" if uses else "") + notes
    reasons = "; ".join(result.reasons) or "no reason recorded"
    if result.state is Verdict.UNKNOWN:
        return f"{result.name}: unknown: {reasons}{notes}"
    blocking = ""
    if result.blocking:
        blocking = " [blocking broker(s): " + ", ".join(map(str, result.blocking)) + "]"
    return f"{result.name}: not available: {reasons}{blocking}{notes}"


def _offer(broker: BrokerVersions, key: int) -> str:
    return offers_text(broker.node_id, broker.apis.get(key))


def _check_api(view: ClusterView, brokers: Sequence[BrokerVersions], req: ApiRequirement
               ) -> RequirementCheck:
    app = view.application.apis.get(req.key)
    wanted = req.range if app is None else req.range.intersection(app)
    if wanted is None:
        app_text = view.application.describe(req.key)
        return RequirementCheck(req, False, reason=outside_application(req.describe(),
                                                                       app_text))
    overlap = intersect_all([wanted, *(b.apis.get(req.key) for b in brokers)])
    version = highest_allowed(overlap, view.application.avoided(req.key))
    if version is not None:
        return RequirementCheck(req, True, version)
    if overlap is not None:
        return RequirementCheck(req, False, reason=f"{req.describe()}; every common version "
                                f"({overlap}) is avoided by the application")
    blocking = [b for b in brokers
                if b.apis.get(req.key) is None or not b.apis[req.key].overlaps(wanted)]
    if blocking:
        text = "; ".join(_offer(b, req.key) for b in blocking)
    else:
        blocking = list(brokers)
        text = NO_SHARED_VERSION + ", ".join(
            _offer(b, req.key) for b in brokers)
    if any((rng := b.apis.get(req.key)) is not None and rng.min > wanted.max
           for b in blocking):
        note = removal_note(req.key, req.name, wanted.max)
        if note is not None:
            text += f"; {note}"
    return RequirementCheck(req, False, blocking=tuple(b.node_id for b in blocking),
                            reason=f"{req.describe()}; {text}")


def removal_note(key: int, name: str, version: int) -> str | None:
    """``Fetch v3 removed in Kafka 4.0 (KIP-896)`` when brokers dropped ``version``.

    Used where a broker's lowest version is above what a requirement allows, so
    the reason says the version was taken out of Kafka rather than never added.
    """
    if version >= INT16_MAX:
        return None
    removed = removed_in(key, version)
    return None if removed is None else f"{name} v{version} {removed}"


def _check_level(brokers: Sequence[BrokerVersions], req: LevelRequirement) -> RequirementCheck:
    blocking = [b for b in brokers if not req.accepts(b.finalized_level(req.feature))]
    if not blocking:
        return RequirementCheck(req, True)
    parts = []
    for broker in blocking:
        level = broker.finalized_level(req.feature)
        name = BROKER_NAME % broker.node_id
        parts.append(f"{name}{NOT_FINALIZED}" if level is None else f"{name}{AT_LEVEL}{level}")
    return RequirementCheck(req, False, blocking=tuple(b.node_id for b in blocking),
                            reason=f"{req.describe()}; {'; '.join(parts)}")


def _check(view: ClusterView, brokers: Sequence[BrokerVersions], req: Requirement
           ) -> RequirementCheck:
    if isinstance(req, ApiRequirement):
        return _check_api(view, brokers, req)
    return _check_level(brokers, req)


def _evaluate_on(view: ClusterView, brokers: Sequence[BrokerVersions], feature: Feature
                 ) -> tuple[bool, dict[str, int], list[str], list[int]]:
    if not brokers:
        return False, {}, [NO_BROKER], []
    versions: dict[str, int] = {}
    reasons: list[str] = []
    blocking: list[int] = []

    def note(check: RequirementCheck) -> None:
        if check.ok:
            if check.version is not None and isinstance(check.requirement, ApiRequirement):
                versions[check.requirement.name] = check.version
        else:
            reasons.append(str(check.reason))
            blocking.extend(n for n in check.blocking if n not in blocking)

    for req in feature.requires:
        note(_check(view, brokers, req))
    if feature.any_of:
        alternatives = [[_check(view, brokers, r) for r in alt] for alt in feature.any_of]
        chosen = next((alt for alt in alternatives if all(c.ok for c in alt)), None)
        if chosen is not None:
            for check in chosen:
                note(check)
        else:
            texts = []
            for alt in alternatives:
                texts.append("(" + "; ".join(str(c.reason) for c in alt if not c.ok) + ")")
                for check in alt:
                    blocking.extend(n for n in check.blocking if n not in blocking)
            reasons.append(NO_ALTERNATIVE + " or ".join(texts))
    available = not reasons
    return available, (versions if available else {}), reasons, sorted(blocking)


def evaluate_features(view: ClusterView, features: FeatureSet | Iterable[Feature],
                      now: datetime | None = None) -> FeatureReport:
    """Evaluate every feature against ``view``, cluster-wide and per broker.

    Brokers whose answer counts (answered and stale ones) decide between
    available and unavailable; when they allow the feature but a listed broker
    has never answered (strict views), the verdict is unknown.  ``now`` lets the
    notes on stale brokers say how old their last answer is.
    """
    results: list[FeatureResult] = []
    known = view.known_brokers
    unknown_reason = view.unknown_reason()
    unknown = tuple(b.node_id for b in view.unknown_brokers) if unknown_reason else ()
    stale = tuple(b.node_id for b in view.stale_brokers)
    ignored = tuple(b.node_id for b in view.ignored_brokers)
    notes = view.stale_notes(now)
    if ignored:
        notes = (*notes, "lenient mode: ignored broker(s) that never answered: "
                 + ", ".join(b.label for b in view.ignored_brokers))
    for feature in features:
        per_broker: dict[int, bool] = {}
        for broker in view.brokers:
            per_broker[broker.node_id] = broker.known and _evaluate_on(
                view, [broker], feature)[0]
        ok, versions, reasons_list, blocking = _evaluate_on(view, known, feature)
        if ok and unknown:
            state, versions, reasons_list = Verdict.UNKNOWN, {}, [str(unknown_reason)]
        elif ok:
            state = Verdict.AVAILABLE
        elif not known:
            state = Verdict.UNKNOWN if unknown_reason or not view.brokers else (
                Verdict.UNAVAILABLE)
            reasons_list = [unknown_reason or NO_BROKER]
        else:
            state = Verdict.UNAVAILABLE
        results.append(FeatureResult(
            feature.name, state, per_broker, versions, tuple(reasons_list),
            tuple(blocking) if state is Verdict.UNAVAILABLE else (),
            unknown if state is Verdict.UNKNOWN else (), stale, ignored, notes, feature))
    return FeatureReport(tuple(results), view.name)
