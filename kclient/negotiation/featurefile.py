"""Reading features.yaml into a :class:`~kclient.negotiation.features.FeatureSet`.

Every problem is a :class:`~kclient.errors.FeatureFileError` naming the file and
line.  The YAML is composed by the bounded, non-recursive reader of
:mod:`kclient.negotiation.yamlnodes`; PyYAML is only imported when a file is
actually parsed.  The shipped default file is read once, on first use, and only
when a caller asks for it: nothing here runs at import time.
"""

from __future__ import annotations

import difflib
import re
from collections.abc import Mapping, Sequence
from functools import cache
from pathlib import Path
from typing import Any

import yaml
import yaml.constructor
import yaml.nodes

from kclient._inputfile import MAX_SETTINGS_INPUT, read_input_text
from kclient._resources import shipped_path
from kclient.errors import FeatureFileError
from kclient.negotiation.features import (
    ApiRequirement,
    Feature,
    FeatureSet,
    LevelRequirement,
    Requirement,
)
from kclient.negotiation.yamlnodes import compose_document
from kclient.protocol.catalog import Catalog, default_catalog
from kclient.protocol.constants import INT16_MAX

__all__ = ["FORMAT_VERSION", "default_features", "load_features", "parse_features"]

# The only format version of features.yaml there is so far.
FORMAT_VERSION = 1
_NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]*$")

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

    def plain(self, node: yaml.nodes.Node, what: str) -> None:
        """Refuse an integer not written in plain decimal digits.

        YAML 1.1 also reads 0x10, 0o17, 0b11, 1_000 and sexagesimal 1:30 (= 90) as
        integers: in a version or key such a spelling is a slip, never an intent.
        """
        if (isinstance(node, yaml.nodes.ScalarNode) and node.tag == _INT_TAG
                and _DECIMAL.fullmatch(node.value) is None):
            raise self.fail(node, f"{what} must be a plain whole number (decimal digits), got "
                            f"{node.value!r}, which YAML 1.1 reads as "
                            f"{_yaml11_reading(self.scalar(node))}; write the number itself")

    def integer(self, node: yaml.nodes.Node, what: str) -> int:
        self.plain(node, what)
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
        self.plain(node, "an API key")
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
            close = self.catalog.suggest(value)
            hint = f"did you mean {close!r}? " if close else ""
            raise self.fail(node, f"unknown API {value!r}; {hint}use Kafka's name (as in the "
                            "message specs, e.g. 'InitProducerId') or the numeric key")
        return info.key, info.name


_STR_TAG = "tag:yaml.org,2002:str"
_INT_TAG = "tag:yaml.org,2002:int"
_DECIMAL = re.compile(r"-?(?:0|[1-9][0-9]*)")


def _yaml11_reading(value: Any) -> str:
    return str(value) if isinstance(value, int) and abs(value) < 10**12 else "another number"
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
    # A regular file of settings size (kclient._inputfile), else FeatureFileError.
    text = read_input_text(path, "the features file", limit=MAX_SETTINGS_INPUT,
                           error=FeatureFileError)
    return parse_features(text, str(path), catalog)


@cache
def default_features() -> FeatureSet:
    """The features.yaml shipped with kclient (parsed once)."""
    return _load_file(_default_path(), None)
