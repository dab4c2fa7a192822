"""Regenerate the message specs kclient ships in ``schemas/``.

Four reference corpora describe Kafka's protocol (``../shared/kafka-specs``),
oldest first: ``message/`` (Kafka's trunk in October 2024: every API and every
version shipped until then, the versions Kafka 4.0 removed included, KIP-896),
``message-4.x/`` (the client-facing specs of Kafka's trunk in 2026, as
kafka-python bundles them), and the specs exactly as released in Apache Kafka
**4.2.0** (``message-4.2.0/``) and **4.3.0** (``message-4.3.0/``).  No corpus
alone describes every version a broker from 0.8 to 4.3 speaks, so each shipped
spec is built from all of them:

- its versions are the union of the corpora's (one contiguous range);
- each version takes its layout from the newest corpus that has it (a release
  corpus before ``message-4.x``, 4.3.0 before 4.2.0), and every other corpus
  that has the version must have the same wire layout (fields in order with
  their types, nullability, tags and tagged defaults, flexible encoding): the
  tool stops, naming the message, the version and both corpora, when one does
  not (Kafka never changes a released version, so one corpus is wrong);
- each version of each field takes its shape from the corpus the version comes
  from, so fields only the removed versions had keep their old version ranges;
  field attributes without versions (defaults, ``ignorable``...) come from the
  newest corpus that has the field;
- a message Kafka renamed (key 74: ListClientMetricsResources became
  ListConfigResources) is one spec under its newest name; the versions both
  names have are compared on the wire, field names aside.

Stability.  A corpus marks its newest version of a request unstable with
``latestVersionUnstable``; the corpus a version comes from decides whether it is
stable.  A stable version is sendable; an unstable one is decoded and encoded on
request but never chosen to send (the API catalog, written by tools/gen_data.py
from these specs, leaves it out): InitProducerId 6 (unstable in 4.3.0) and the
share-group APIs' early-access v0 (2024 corpus only, unstable there).  The tool
stops when a release corpus marks a version stable that a newer corpus marks
unstable, when the stable versions of a request are not one range, and when a
stable version has no release that vouches for it.

Each shipped spec records in ``provenance``: ``layout`` (corpus -> the versions
whose layout comes from it), ``identical_in`` (corpus -> the versions it has
too, found identical on the wire), and for requests ``stable_since`` (release
-> the versions first stable in it: the earliest of the first Kafka release
whose recorded brokers advertise the version, ``../shared/kafka-releases``, and
the first release corpus whose specs mark it stable) and ``unstable`` (the
decode-only versions).

Only the structure (names, types, version ranges, tags, defaults) is taken from
the reference specs; comments and the upstream field descriptions are dropped
and replaced by our own one-line descriptions: the messages listed in
``MESSAGE_ABOUT`` have ours; every other request and response is described from
the one-line API descriptions of ``tools/gen_data.py`` (one home for them).
Fields carry no description.

Run from the repository root:  python tools/gen_schemas.py [--shared ../shared]
(``--check`` compares instead of writing and exits 1 on drift).
"""

from __future__ import annotations

import argparse
import json
import re
import sys
from collections.abc import Iterable
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(1, str(Path(__file__).resolve().parent.parent))
import gen_data  # this directory
from gen_data import ABOUT  # the one home of the API descriptions

from kclient.protocol.schema import MessageSpec, StructSpec, parse_spec

# Message kinds shipped: every request and response, and the two headers.
SHIPPED_TYPES = ("request", "response", "header")

# The reference corpora, oldest first: where several have a version, the newest one's
# attributes are kept (their wire layouts are checked to be the same).
CORPORA = ("message", "message-4.x", "message-4.2.0", "message-4.3.0")

# The corpora holding Kafka's specs exactly as released: corpus -> release name (as
# ../shared/kafka-releases names releases).
RELEASE_CORPORA = {"message-4.2.0": "4.2", "message-4.3.0": "4.3"}

# Our descriptions of the shipped messages.
MESSAGE_ABOUT = {
    "RequestHeader": "Precedes every request body: which API, which version, correlation and "
    "client id.",
    "ResponseHeader": "Precedes every response body: the correlation id of the request answered.",
    "ApiVersionsRequest": "Asks a broker for the version range of every API it serves.",
    "ApiVersionsResponse": "The broker's API ranges and, from v3, its feature levels.",
    "MetadataRequest": "Asks for brokers, topics and partition leaders.",
    "MetadataResponse": "Brokers, controller, topics and partitions as the broker sees them.",
    "DescribeClusterRequest": "Asks for the brokers and controller of the cluster.",
    "DescribeClusterResponse": "Brokers, controller and cluster id.",
    "SaslHandshakeRequest": "Names the SASL mechanism the client wants to use.",
    "SaslHandshakeResponse": "Accepts the mechanism or lists the enabled ones.",
    "SaslAuthenticateRequest": "Carries one client SASL token.",
    "SaslAuthenticateResponse": "Carries one server SASL token or the failure message.",
}

KEEP_KEYS = (
    "apiKey", "type", "listeners", "name", "validVersions", "flexibleVersions",
    "deprecatedVersions", "latestVersionUnstable", "fields", "commonStructs",
)
FIELD_KEYS = (
    "name", "type", "versions", "nullableVersions", "taggedVersions", "tag", "default",
    "ignorable", "entityType", "mapKey", "flexibleVersions", "zeroCopy", "fields",
)
# Field keys holding a version range, merged version by version.
_RANGE_KEYS = ("versions", "nullableVersions", "taggedVersions", "flexibleVersions")
_OPEN = 1 << 15  # "N+" reaches this


class MergeError(SystemExit):
    """The corpora cannot be merged (different layouts, gaps): the tool stops."""

    def __init__(self, message: str) -> None:
        super().__init__(f"gen_schemas: {message}")


def _strip(text: str) -> str:
    return re.sub(r"^\s*//.*$", "", text, flags=re.M)


def _field(raw: dict[str, Any]) -> dict[str, Any]:
    out = {k: raw[k] for k in FIELD_KEYS if k in raw and k != "fields"}
    if "versions" not in out and "taggedVersions" in out:
        out["versions"] = out["taggedVersions"]  # Kafka: a tagged-only field exists when tagged
    if "fields" in raw:
        out["fields"] = [_field(f) for f in raw["fields"]]
    return out


def _about(raw: dict[str, Any]) -> str:
    """Our one-line description of a message."""
    name = raw["name"]
    if name in MESSAGE_ABOUT:
        return MESSAGE_ABOUT[name]
    api = ABOUT[int(raw["apiKey"])]
    if raw["type"] == "request":
        return api
    return f"The answer to {name.removesuffix('Response')}Request ({api[0].lower()}{api[1:]})"


def convert(raw: dict[str, Any]) -> dict[str, Any]:
    """One corpus spec reduced to the keys kclient ships (no comments, no prose)."""
    out: dict[str, Any] = {}
    for key in KEEP_KEYS:
        if key not in raw:
            continue
        if key == "fields":
            out["fields"] = [_field(f) for f in raw["fields"]]
        elif key == "commonStructs":
            out["commonStructs"] = [
                {"name": s["name"], "versions": s.get("versions", "0+"),
                 "fields": [_field(f) for f in s["fields"]]}
                for s in raw["commonStructs"]
            ]
        else:
            out[key] = raw[key]
    return out


# -- version sets -------------------------------------------------------------------

def _range(text: str | None) -> range:
    if text is None or text == "none":
        return range(0)
    if text.endswith("+"):
        return range(int(text[:-1]), _OPEN)
    lo, _, hi = text.partition("-")
    return range(int(lo), int(hi or lo) + 1)


def _text(versions: Iterable[int], top: int, where: str, closed: bool = False) -> str | None:
    """The version string of a set of versions (``None`` when empty); ``top`` is the
    newest version of the message: a set reaching it is written ``N+`` unless
    ``closed`` (validVersions and provenance name their last version)."""
    chosen = sorted(versions)
    if not chosen:
        return None
    lo, hi = chosen[0], chosen[-1]
    if chosen != list(range(lo, hi + 1)):
        raise MergeError(f"{where}: versions {chosen} are not one range")
    if hi >= top and not closed:
        return f"{lo}+"
    return str(lo) if lo == hi else f"{lo}-{hi}"


class _Merge:
    """Merge one message's specs from the corpora (oldest first)."""

    def __init__(self, specs: list[tuple[str, dict[str, Any]]]) -> None:
        self.specs = specs
        self.valid: dict[str, range] = {c: _range(s["validVersions"]) for c, s in specs}
        every = sorted({v for r in self.valid.values() for v in r})
        self.name = specs[-1][1]["name"]
        if every != list(range(every[0], every[-1] + 1)):
            raise MergeError(f"{self.name}: the corpora's versions {every} leave a gap")
        self.versions = every
        self.top = every[-1]
        # Which corpus each version is taken from: the newest that has it.
        self.source = {v: next(c for c, _ in reversed(specs) if v in self.valid[c])
                       for v in every}

    def by_version(self, where: str, texts: dict[str, str | None]) -> str | None:
        """A version-range attribute (corpus -> its text there, missing when the corpus
        lacks the item), each version taken from the corpus it comes from."""
        return _text((v for v in self.versions if v in _range(texts.get(self.source[v]))),
                     self.top, where)

    def message(self) -> dict[str, Any]:
        newest = self.specs[-1][1]
        raws = dict(self.specs)
        keys = {(s.get("apiKey"), s["type"]) for _, s in self.specs}
        if len(keys) != 1:
            raise MergeError(f"{self.name}: the corpora disagree on its key or type {keys}")
        out: dict[str, Any] = {}
        for key in KEEP_KEYS:
            if key == "listeners":
                heard = [x for _, s in reversed(self.specs) for x in s.get("listeners", [])]
                if heard:
                    out["listeners"] = sorted(set(heard))
            elif key == "validVersions":
                out[key] = _text(self.versions, self.top, f"{self.name}.validVersions",
                                 closed=True)
            elif key in ("flexibleVersions", "deprecatedVersions"):
                text = self.by_version(f"{self.name}.{key}",
                                       {c: raw.get(key) for c, raw in raws.items()})
                if text is not None:
                    out[key] = text
                elif any(key in s for _, s in self.specs):
                    out[key] = "none"
            elif key == "latestVersionUnstable":
                if raws[self.source[self.top]].get(key):
                    out[key] = True
            elif key == "fields":
                out["fields"] = self.fields(
                    self.name, {c: s.get("fields", []) for c, s in self.specs})
            elif key == "commonStructs":
                structs = self.common_structs()
                if structs:
                    out["commonStructs"] = structs
            elif key in newest:
                out[key] = newest[key]
        return out

    def common_structs(self) -> list[dict[str, Any]]:
        per: dict[str, dict[str, dict[str, Any]]] = {}
        order: list[str] = []
        for corpus, spec in reversed(self.specs):
            for struct in spec.get("commonStructs", []):
                if struct["name"] not in per:
                    order.append(struct["name"])
                per.setdefault(struct["name"], {})[corpus] = struct
        out = []
        for name in order:
            where = f"{self.name}.commonStructs.{name}"
            versions = self.by_version(f"{where}.versions",
                                       {c: s.get("versions", "0+") for c, s in per[name].items()})
            if versions is None:
                continue  # only versions the newer corpus re-describes used it
            fields = self.fields(where, {c: s["fields"] for c, s in per[name].items()})
            out.append({"name": name, "versions": versions, "fields": fields})
        return out

    def fields(self, where: str, lists: dict[str, list[dict[str, Any]]]) -> list[dict[str, Any]]:
        """Merge one struct's field lists: the newest corpus's order, with fields only
        older corpora have placed after the field that precedes them there."""
        order: list[str] = []
        for corpus, _ in reversed(self.specs):
            names = [f["name"] for f in lists.get(corpus, [])]
            for index, name in enumerate(names):
                if name in order:
                    continue
                before = next((n for n in reversed(names[:index]) if n in order), None)
                order.insert(0 if before is None else order.index(before) + 1, name)
        by_corpus = {c: {f["name"]: f for f in fs} for c, fs in lists.items()}
        out = []
        for name in order:
            here = {c: fs[name] for c, fs in by_corpus.items() if name in fs}
            merged = self.field(f"{where}.{name}", here)
            if merged is not None:
                out.append(merged)
        return out

    def field(self, where: str, here: dict[str, dict[str, Any]]) -> dict[str, Any] | None:
        newest = next(here[c] for c, _ in reversed(self.specs) if c in here)
        types = {f["type"] for f in here.values()}
        if len(types) != 1:
            raise MergeError(f"{where}: the corpora give it different types {sorted(types)}")
        out: dict[str, Any] = {}
        for key in FIELD_KEYS:
            if key in _RANGE_KEYS:
                text = self.by_version(f"{where}.{key}",
                                       {c: f.get(key) for c, f in here.items()})
                if key == "versions" and text is None:
                    return None  # a field of versions the newer corpus re-describes only
                if text is not None:
                    out[key] = text
                elif any(key in f for f in here.values()):
                    out[key] = "none"  # e.g. a string field's flexibleVersions: none
            elif key == "fields":
                if any("fields" in f for f in here.values()):
                    out["fields"] = self.fields(
                        where, {c: f.get("fields", []) for c, f in here.items()})
            elif key == "tag":
                if out.get("taggedVersions", "none") != "none":
                    # Some corpora write the tag as a string ("0"), as Kafka accepts.
                    tags = {int(f["tag"]) for f in here.values() if "tag" in f}
                    if len(tags) != 1:
                        raise MergeError(f"{where}: the corpora give it tags {sorted(tags)}")
                    out["tag"] = newest.get("tag", tags.pop())
            elif key in newest:
                out[key] = newest[key]
        return out


# -- wire layouts --------------------------------------------------------------------

def _layout(struct: StructSpec, version: int, names: bool) -> tuple[Any, ...]:
    """What goes on the wire for ``struct`` at ``version``, field by field."""
    out = []
    for f in struct.fields_in(version):
        tagged = f.is_tagged(version)
        out.append((
            f.name if names else None, f.kind, f.element, f.is_nullable(version), tagged,
            f.tag if tagged else None,
            None if f.flexible_override is None else version in f.flexible_override,
            repr(f.default) if tagged else None,
            None if f.struct is None else _layout(f.struct, version, names),
        ))
    return tuple(out)


def wire_layout(spec: MessageSpec, version: int, names: bool = True) -> tuple[Any, ...]:
    """The wire layout of ``spec`` at ``version``; ``names=False`` leaves field names out
    (what the bytes alone say)."""
    return (spec.is_flexible(version), _layout(spec.root, version, names))


# -- the shipped set -----------------------------------------------------------------

def _corpus(shared: Path, corpus: str) -> dict[tuple[Any, ...], tuple[dict[str, Any], MessageSpec]]:
    """A corpus's requests, responses, headers and data specs, keyed by (apiKey, type)
    for requests and responses and by name for the others: each with its raw JSON
    and its parsed spec."""
    out: dict[tuple[Any, ...], tuple[dict[str, Any], MessageSpec]] = {}
    for source in sorted((shared / "kafka-specs" / corpus).glob("*.json")):
        text = source.read_text()
        raw = json.loads(_strip(text))
        if raw.get("type") in (*SHIPPED_TYPES, "data"):
            key = (raw["apiKey"], raw["type"]) if "apiKey" in raw else (raw["name"],)
            out[key] = (raw, parse_spec(text, str(source)))
    return out


def first_advertised(shared: Path) -> dict[int, dict[int, str]]:
    """API key -> version -> the first Kafka release whose brokers (either lineage)
    advertise it, from the release profiles tools/gen_data.py builds."""
    found: dict[int, dict[int, str]] = {}
    releases = gen_data.build_releases(shared)["releases"]
    for release in sorted(releases, key=lambda r: gen_data.release_key(r["release"])):
        for key_text, (lo, hi) in release["apis"].items():
            versions = found.setdefault(int(key_text), {})
            for version in range(lo, hi + 1):
                versions.setdefault(version, release["release"])
    return found


def _unstable(raw: dict[str, Any]) -> set[int]:
    """The versions a corpus's spec marks unstable: its newest, when flagged."""
    valid = _range(raw["validVersions"])
    return {valid[-1]} if raw.get("latestVersionUnstable") and valid else set()


def _stability(name: str, key: int, present: list[tuple[str, dict[str, Any]]],
               source: dict[int, str], advertised: dict[int, str]) -> dict[str, str]:
    """``stable_since`` of a request: release -> the versions first stable in it.

    A version's stability is what the corpus it comes from says; the release that
    vouches for a stable one is the earliest of the first release whose brokers
    advertise it and the first release corpus marking it stable.
    """
    raws = dict(present)
    unstable = {v for v, corpus in source.items() if v in _unstable(raws[corpus])}
    since: dict[str, list[int]] = {}
    for corpus, raw in present:
        newer = [c for c, _ in present if CORPORA.index(c) > CORPORA.index(corpus)]
        for version in set(_range(raw["validVersions"])) - _unstable(raw):
            later = [c for c in newer if version in _unstable(raws[c])]
            if corpus in RELEASE_CORPORA and later:
                raise MergeError(f"{name} v{version}: {corpus} (a release) marks it stable "
                                 f"but {later[0]} marks it unstable; check both")
    oldest_release = min(RELEASE_CORPORA.values(), key=gen_data.release_key)
    for version in sorted(set(source) - unstable):
        vouchers = [r for c, r in RELEASE_CORPORA.items()
                    if c in raws and version in set(_range(raws[c]["validVersions"]))
                    - _unstable(raws[c])]
        if version in advertised:
            vouchers.append(advertised[version])
        if not vouchers:
            raise MergeError(f"{name} (key {key}) v{version}: stable in {source[version]} "
                             "but no Kafka release vouches for it (no release corpus marks "
                             "it stable, no recorded broker advertises it)")
        first = min(vouchers, key=gen_data.release_key)
        since.setdefault(first, []).append(version)
    top = max(source)
    # Only a recorded broker dates a version before the oldest release corpus: one that
    # no broker advertises (controller-only APIs, telemetry) is stable there or earlier.
    stable_since = {
        (f"<={rel}" if rel == oldest_release and not any(v in advertised for v in vs)
         else rel): str(_text(vs, top, f"{name}.stable_since", closed=True))
        for rel, vs in sorted(since.items(), key=lambda kv: gen_data.release_key(kv[0]))}
    stable = sorted(set(source) - unstable)
    if stable and stable != list(range(stable[0], stable[-1] + 1)):
        raise MergeError(f"{name}: its stable versions {stable} are not one range")
    return stable_since


def merged_specs(shared: Path) -> tuple[dict[str, dict[str, Any]], dict[str, int]]:
    """File name -> the spec kclient ships, and counts of what was checked.

    Stops with :class:`MergeError` when a version two corpora have differs on
    the wire, when the merged spec does not read, version by version, as the
    corpus it was taken from, or when the stability of a request's versions is
    contradictory or unvouched (see the module's description).
    """
    corpora = {c: _corpus(shared, c) for c in CORPORA}
    advertised = first_advertised(shared)

    def unstable_in(corpus: str, raw: dict[str, Any]) -> set[int]:
        # A response's versions are as stable as its request's.
        request = corpora[corpus].get((raw.get("apiKey"), "request"))
        return _unstable(request[0] if request is not None else raw)

    counts = {"messages": 0, "overlapping_pairs": 0, "renamed_pairs": 0, "renamed_fields": 0,
              "unstable_replaced": 0}
    out: dict[str, dict[str, Any]] = {}
    for key in sorted({k for found in corpora.values() for k in found}, key=repr):
        present = [(c, corpora[c][key]) for c in CORPORA if key in corpora[c]]
        parsed = {c: spec for c, (_, spec) in present}
        newest = parsed[present[-1][0]]
        name = newest.name
        # Each version's layout comes from the newest corpus that has it; every other
        # corpus with the version must agree on the wire.
        source = {v: next(c for c, _ in reversed(present) if v in parsed[c].versions)
                  for c, _ in present for v in parsed[c].versions}
        identical: dict[str, list[int]] = {}
        raw_of = {c: raw for c, (raw, _) in present}
        for corpus, _ in present:
            spec = parsed[corpus]
            for version in spec.versions:
                origin = parsed[source[version]]
                if origin is spec:
                    continue
                if wire_layout(spec, version, False) != wire_layout(origin, version, False):
                    if version in unstable_in(corpus, raw_of[corpus]):
                        # Still in development in that corpus: a later one may change it.
                        counts["unstable_replaced"] += 1
                        continue
                    raise MergeError(
                        f"{name} v{version}: its wire layout in {corpus} differs from "
                        f"{source[version]}'s; Kafka never changes a released version, so "
                        "one corpus is wrong: check both before shipping")
                if origin.name != spec.name:
                    counts["renamed_pairs"] += 1
                elif wire_layout(spec, version) != wire_layout(origin, version):
                    counts["renamed_fields"] += 1  # same bytes, Kafka renamed a field
                else:
                    counts["overlapping_pairs"] += 1
                identical.setdefault(corpus, []).append(version)
        if present[-1][1][0]["type"] not in SHIPPED_TYPES:
            continue  # checked (the consumer protocol's data), not shipped
        merge = _Merge([(c, convert(raw)) for c, (raw, _) in present])
        assert merge.source == source
        spec = merge.message()
        spec["about"] = _about(spec)
        text = render(spec)
        check = parse_spec(text, f"schemas/{name}.json")
        for version in merge.versions:
            if wire_layout(check, version) != wire_layout(parsed[source[version]], version):
                raise MergeError(f"{name} v{version}: the merged spec does not read as "
                                 f"{source[version]}'s")
        layout = {c: _text((v for v in merge.versions if source[v] == c),
                           merge.top, name, closed=True) for c, _ in present}
        provenance: dict[str, Any] = {
            "layout": {c: t for c, t in layout.items() if t is not None}}
        if identical:
            provenance["identical_in"] = {
                c: _text(vs, merge.top, name, closed=True) for c, vs in identical.items()}
        if spec["type"] == "request":
            provenance["stable_since"] = _stability(
                name, int(spec["apiKey"]), [(c, raw) for c, (raw, _) in present], source,
                advertised.get(int(spec["apiKey"]), {}))
        # A response's versions are as stable as its request's.
        unstable = _text((v for v in merge.versions
                          if v in unstable_in(source[v], raw_of[source[v]])),
                         merge.top, name, closed=True)
        if unstable is not None:
            provenance["unstable"] = unstable
        spec["provenance"] = provenance
        out[f"{name}.json"] = spec
        counts["messages"] += 1
    return out, counts


def shipped_specs(shared: Path) -> dict[str, dict[str, Any]]:
    """File name -> the spec kclient ships, built from ``shared``'s spec corpora."""
    return merged_specs(shared)[0]


def render(spec: dict[str, Any]) -> str:
    """The text of one shipped spec file."""
    return json.dumps(spec, indent=2) + "\n"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    root = Path(__file__).resolve().parent.parent
    parser.add_argument("--shared", type=Path, default=root.parent / "shared")
    parser.add_argument("--check", action="store_true",
                        help="compare with schemas/ instead of writing; exit 1 on drift")
    args = parser.parse_args()
    fresh, counts = merged_specs(args.shared)
    target_dir = root / "schemas"
    shipped = {p.name for p in target_dir.glob("*.json") if p.name != "api_catalog.json"}
    if args.check:
        stale = sorted(n for n, spec in fresh.items()
                       if not (target_dir / n).is_file()
                       or (target_dir / n).read_text() != render(spec))
        extra = sorted(shipped - set(fresh))
        for name in stale + extra:
            print(f"drift: schemas/{name}")
        raise SystemExit(1 if stale or extra else 0)
    for name in sorted(shipped - set(fresh)):
        (target_dir / name).unlink()
        print(f"removed {target_dir / name}")
    for name, spec in fresh.items():
        (target_dir / name).write_text(render(spec))
    print(f"wrote {len(fresh)} specs to {target_dir}; {counts['overlapping_pairs']} "
          f"(message, version) pairs found in two corpora are identical on the wire, and "
          f"{counts['renamed_fields']} more but for a field Kafka renamed and "
          f"{counts['renamed_pairs']} of a renamed message; "
          f"{counts['unstable_replaced']} unstable version(s) changed later")


if __name__ == "__main__":
    main()
