"""From the client software a broker reports to a library release: the software-name table.

Since KIP-511 (Kafka 2.4) a client that sends ApiVersions v3 or later names its
software and version (``ClientSoftwareName`` / ``ClientSoftwareVersion``), and
brokers report them per connection (the ``socket-server-metrics`` connections
gauge) and with every deprecated request version they see
(``DeprecatedRequestsPerSec``).  A connection that named nothing -- ApiVersions
below v3, or none at all -- is reported as ``unknown`` / ``unknown``.

The shipped ``software.json`` (written by ``tools/gen_software.py`` from facts read
in each library's source at a release tag) says which library sends each name and
how its version string names the library's release: ``librdkafka`` and
``confluent-kafka-go`` send librdkafka's release, ``confluent-kafka-python`` sends
``2.6.1-rdkafka-2.6.1`` (the librdkafka release follows ``-rdkafka-``), the Java
client sends its release or a Confluent Platform release (``7.7.1-ccs``, Kafka
3.7.1), sarama before 1.47 sends the application's own module version (so no
release can be read), and so on.  :func:`identify` applies it; the library's
profile (:mod:`kclient.negotiation.clients`) then judges the release.
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping
from functools import cache, lru_cache
from typing import Any

import attrs

from kclient._resources import package_path
from kclient.negotiation.clients import release_key

__all__ = [
    "SOFTWARE_PATTERN",
    "UNKNOWN_SOFTWARE",
    "ClientSoftware",
    "Identification",
    "NamelessLibrary",
    "SoftwareName",
    "identify",
    "nameless_libraries",
    "software_names",
]

#: What a broker accepts as ClientSoftwareName and ClientSoftwareVersion (KIP-511,
#: ``ApiVersionsRequest.isValid``); a v3+ request with anything else is refused.
SOFTWARE_PATTERN = re.compile(r"[a-zA-Z0-9](?:[a-zA-Z0-9\-.]*[a-zA-Z0-9])?")

#: What a broker reports for a connection that named no software (Kafka's
#: ``ClientInformation.UNKNOWN_NAME_OR_VERSION``).
UNKNOWN_SOFTWARE = "unknown"


@attrs.frozen
class ClientSoftware:
    """A client's software as a broker reports it: name and version (``unknown`` when none)."""

    name: str
    version: str

    @property
    def named(self) -> bool:
        """False for connections that sent no name (ApiVersions below v3, or none)."""
        return self.name != UNKNOWN_SOFTWARE

    @property
    def label(self) -> str:
        """``confluent-kafka-python 2.6.1-rdkafka-2.6.1``, or ``unknown (no name sent)``."""
        if not self.named:
            return f"{UNKNOWN_SOFTWARE} (no name sent)"
        return f"{self.name} {self.version}"


@attrs.frozen
class SoftwareName:
    """One row of the table: a name, the library that sends it, how to read its version."""

    name: str
    library: str
    sent_by: str
    since: str
    rule: str
    version_text: str
    source: str
    marker: str | None = None
    own_from: str | None = None
    no_release: Mapping[str, str] = attrs.field(factory=dict, hash=False)


@attrs.frozen
class NamelessLibrary:
    """A library (or some of its releases) that sends no software name."""

    library: str
    releases: str
    how: str
    source: str


@attrs.frozen
class Identification:
    """What the table says about one client software.

    ``library`` is the profiled library (``None``: the name is not in the table, or
    none was sent); ``release`` the library release the version names (``None``:
    it names none); ``how`` says how it was read (or why not), ``source`` where the
    table's row was read; ``binding`` the binding that wraps the library
    (``confluent-kafka-python 2.6.1``), when the version names both.
    """

    software: ClientSoftware
    library: str | None
    release: str | None
    how: str
    source: str | None = None
    binding: str | None = None

    @property
    def spec(self) -> str | None:
        """The client spec of the release (``librdkafka==2.6.1``), or ``None``."""
        if self.library is None or self.release is None:
            return None
        return f"{self.library}=={self.release}"


@attrs.frozen
class _Table:
    names: dict[str, SoftwareName]
    nameless: tuple[NamelessLibrary, ...]
    platform_suffixes: tuple[str, ...]
    platform: tuple[tuple[tuple[int, int], tuple[int, int], tuple[int, int], str], ...]


def _cite(src: Mapping[str, Any]) -> str:
    return f"{src['repo']} {src['tag']} ({str(src['commit'])[:7]}), {src['file']}"


@cache
def _table() -> _Table:
    data: Any = json.loads(package_path("negotiation/software.json").read_text(encoding="utf-8"))
    if data.get("format") != 1:
        raise ValueError(f"software.json: unsupported format {data.get('format')!r}")
    names = {}
    for raw in data["names"]:
        rule = raw["version"]
        entry = SoftwareName(
            name=str(raw["name"]), library=str(raw["library"]), sent_by=str(raw["sent_by"]),
            since=str(raw["since"]), rule=str(rule["rule"]),
            version_text=str(raw["version_text"]), source=_cite(raw["source"]),
            marker=rule["marker"], own_from=rule["own_from"],
            no_release={str(k): str(v) for k, v in rule["no_release"].items()})
        names[entry.name.lower()] = entry
    nameless = tuple(NamelessLibrary(str(n["library"]), str(n["releases"]), str(n["how"]),
                                     _cite(n["source"])) for n in data["nameless"])
    platform = data["confluent_platform"]

    def minor(text: str) -> tuple[int, int]:
        major, minor_ = text.split(".")
        return int(major), int(minor_)

    lines = tuple((minor(ln["from"]), minor(ln["to"]), minor(ln["kafka_from"]),
                   str(ln["source"])) for ln in platform["lines"])
    return _Table(names, nameless, tuple(str(s) for s in platform["suffixes"]), lines)


def software_names() -> tuple[SoftwareName, ...]:
    """Every row of the table, in its order."""
    return tuple(_table().names.values())


def nameless_libraries() -> tuple[NamelessLibrary, ...]:
    """The libraries (or releases) that send no name: brokers report them as ``unknown``."""
    return _table().nameless


#: A release at the start of a version string: up to four numbers, ``v`` allowed before.
_RELEASE = re.compile(r"[vV]?+(\d{1,9}(?:\.\d{1,9}){1,3})(?:[-+.~_][0-9A-Za-z.\-+~_]*+)?+")


def _release(text: str) -> str | None:
    """``"v1.21.5"`` -> ``"1.21.5"``; ``"2.6.1-RC2"`` -> ``"2.6.1"``; no release -> None."""
    match = _RELEASE.fullmatch(text)
    return match.group(1) if match else None


def _confluent(version: str) -> tuple[str | None, str]:
    """The Apache Kafka release of a Confluent Platform version (``7.7.1-ccs`` -> ``3.7.1``),
    and the source of the table's line (or why none applies)."""
    release = _release(version.partition("-")[0])
    if release is None:
        return None, "not a Confluent Platform release number"
    parts = [int(p) for p in release.split(".")]
    for first, last, kafka, source in _table().platform:
        if first <= (parts[0], parts[1]) <= last:
            rest = "".join(f".{p}" for p in parts[2:])
            return f"{kafka[0]}.{kafka[1] + parts[1] - first[1]}{rest}", source
    return None, "no Confluent Platform line of the table covers it"


def _unidentified(software: ClientSoftware) -> Identification:
    if not software.named:
        return Identification(software, None, None,
                              "no software name was sent (ApiVersions below v3, or none)")
    return Identification(software, None, None,
                          f"no library in kclient's table sends the name {software.name!r}")


@lru_cache(maxsize=4096)
def identify(software: ClientSoftware) -> Identification:
    """The library and release ``software`` names, by the table (see the module text).

    A name the table lacks, or ``unknown`` (no name sent), is unidentified
    (``library`` None).  A version that names no release of the library (sarama's
    ``dev``, franz-go's ``unknown``, a Java ``-ccs`` version outside the Confluent
    Platform table) gives the library without a release.
    """
    entry = _table().names.get(software.name.lower())
    if entry is None:
        return _unidentified(software)
    version = software.version

    def found(release: str | None, how: str, binding: str | None = None,
              also: str | None = None) -> Identification:
        source = entry.source if also is None else f"{entry.source}; {also}"
        return Identification(software, entry.library, release, how, source, binding)

    why = entry.no_release.get(version)
    if why is not None:
        return found(None, why)
    if entry.rule == "after":
        assert entry.marker is not None
        head, marked, tail = version.partition(entry.marker)
        release = _release(tail) if marked else None
        if release is None:
            return found(None, f"{version!r} names no {entry.library} release after "
                         f"{entry.marker!r}")
        return found(release, f"{entry.library} {release}, after {entry.marker!r}",
                     f"{entry.name} {head}")
    if entry.rule == "java" and version.split("-")[-1].lower() in _table().platform_suffixes:
        release, source = _confluent(version)
        if release is None:
            return found(None, f"{version!r}: a Confluent Platform version kclient cannot "
                         f"read ({source})")
        return found(release, f"Confluent Platform {version} is Apache Kafka {release}",
                     also=source)
    release = _release(version)
    if release is None:
        return found(None, f"{version!r} names no {entry.library} release")
    if entry.own_from is not None and release_key(release) < release_key(entry.own_from):
        return found(None, f"{version!r} is not {entry.library}'s release: before "
                     f"{entry.own_from} it sends the application's module version")
    return found(release, f"{entry.library} {release}")
