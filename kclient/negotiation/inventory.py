"""A client inventory: which client software connects to each cluster, and what it sends.

Brokers know their clients: since KIP-511 each connection that sends ApiVersions
v3+ names its software and version, and brokers count, per client software, the
connections (``socket-server-metrics`` ``connections``) and the requests of
deprecated versions (``DeprecatedRequestsPerSec``), and, for every client, the
requests per API and version (``RequestsPerSec``).  An :class:`Inventory` holds
that, per cluster: one :class:`SoftwareUse` per client software (``unknown`` for
connections that named none) with its connections and the request versions seen
from it, and the cluster's requests per version from every client.

The readers (:mod:`kclient.negotiation.inventoryfile`: broker metrics in the
Prometheus text format, CSV, JSON Lines) fill an :class:`InventoryBuilder`, which
adds up what several brokers and files report, keeps at most
:data:`MAX_INVENTORY_ENTRIES` distinct entries (a hostile or runaway input is
counted past that, never held), and counts and names the lines it skipped.
"""

from __future__ import annotations

import math
from collections import Counter
from collections.abc import Mapping
from functools import cache
from typing import Any

import attrs

from kclient.negotiation.software import SOFTWARE_PATTERN, ClientSoftware
from kclient.protocol.catalog import default_catalog
from kclient.protocol.constants import INT16_MAX

__all__ = [
    "MAX_COUNT",
    "MAX_FAMILIES_COUNTED",
    "MAX_INVENTORY_ENTRIES",
    "MAX_NAME_LENGTH",
    "NAMED_PROBLEMS",
    "ClusterInventory",
    "Inventory",
    "InventoryBuilder",
    "SkippedLine",
    "SoftwareUse",
    "api_key_named",
    "count_value",
    "inventory_record",
    "software_problem",
    "version_value",
]

#: The most distinct entries an inventory holds (a client software of a cluster, one of
#: its request versions, one of a cluster's request versions): what is read past it is
#: counted (:attr:`Inventory.over_limit`), never held.  About 500 bytes each, read and
#: built: some 100 MB at the bound.  A fleet of 1,000 clusters with 50 client software
#: each, a deprecated version or two each and 80 request versions per cluster, is about
#: 180,000.
MAX_INVENTORY_ENTRIES = 200_000
#: The longest client software name or version read (franz-go allows 256; Kafka no more
#: in practice): longer text is a bad line, never a name.
MAX_NAME_LENGTH = 256
#: The largest count read (a connection or request count above 2**53 is no count).
MAX_COUNT = 2**53
#: How many bad lines (and unread metric families) an inventory names; all are counted.
NAMED_PROBLEMS = 25
#: The most distinct metric families not read that are counted (past it: "at least").
MAX_FAMILIES_COUNTED = 10_000


@attrs.frozen
class SkippedLine:
    """An input line that was not read, and why."""

    file: str
    line: int
    reason: str

    @property
    def text(self) -> str:
        """``file:line: reason``."""
        return f"{self.file}:{self.line}: {self.reason}"


@attrs.frozen
class SoftwareUse:
    """One client software on one cluster, as its brokers saw it.

    ``connections`` counts the connections that named it (``None``: the input
    gives none); ``requests`` the requests seen from it per ``(api_key, version)``:
    every version it sent when ``complete`` (a recording: kclient's emulator, an
    inventory file that says so), else only those the input lists (a broker's
    ``DeprecatedRequestsPerSec`` counts only deprecated versions).  ``seen_in``
    names where the request counts come from.
    """

    cluster: str
    software: ClientSoftware
    connections: int | None
    requests: Mapping[tuple[int, int], int] = attrs.field(factory=dict, hash=False)
    complete: bool = False
    seen_in: str = ""


@attrs.frozen
class ClusterInventory:
    """One cluster: its client software (largest first) and its requests per version.

    ``requests`` are the brokers' ``RequestsPerSec`` counts per ``(api_key,
    version)``, from every client (named or not), when the input has them.
    """

    name: str
    software: tuple[SoftwareUse, ...]
    requests: Mapping[tuple[int, int], int] = attrs.field(factory=dict, hash=False)


@attrs.frozen
class Inventory:
    """Every cluster's client software, and what the readers made of the input.

    ``recognised`` counts the series (or rows) read, per kind and naming
    (``"connections (JMX exporter default naming)"``); ``unrecognised`` the first
    :data:`NAMED_PROBLEMS` metric families not read, with their series, and
    ``unrecognised_series`` all of them; ``bad_count`` the lines skipped (the first
    :data:`NAMED_PROBLEMS` in ``bad_lines``); ``over_limit`` what was read past
    :data:`MAX_INVENTORY_ENTRIES`.
    """

    clusters: tuple[ClusterInventory, ...]
    files: tuple[str, ...] = ()
    recognised: tuple[tuple[str, int], ...] = ()
    unrecognised: tuple[tuple[str, int], ...] = ()
    unrecognised_series: int = 0
    unrecognised_families: int = 0
    bad_count: int = 0
    bad_lines: tuple[SkippedLine, ...] = ()
    over_limit: int = 0

    def cluster(self, name: str) -> ClusterInventory | None:
        """The cluster named ``name``, or ``None``."""
        return next((c for c in self.clusters if c.name == name), None)

    @property
    def software_count(self) -> int:
        """Client software entries over every cluster."""
        return sum(len(c.software) for c in self.clusters)

    def notes(self) -> list[str]:
        """What was read and what was not, one sentence each (for people)."""
        read = ", ".join(f"{count} {what}" for what, count in self.recognised) or "nothing"
        notes = [f"read {self.software_count} client software entr"
                 f"{'y' if self.software_count == 1 else 'ies'} on {len(self.clusters)} "
                 f"cluster(s) from {len(self.files)} file(s): {read}"]
        if self.unrecognised_series:
            shown = ", ".join(f"{name} ({count})" for name, count in self.unrecognised)
            more = self.unrecognised_families - len(self.unrecognised)
            least = "at least " if self.unrecognised_families >= MAX_FAMILIES_COUNTED else ""
            notes.append(f"not read: {self.unrecognised_series} series of {least}"
                          f"{self.unrecognised_families} other metric famil"
                          f"{'y' if self.unrecognised_families == 1 else 'ies'}"
                          + (f": {shown}" if shown else "")
                          + (f" and {more} more" if more > 0 else ""))
        if self.bad_count:
            first = "; ".join(b.text for b in self.bad_lines[:3])
            notes.append(f"skipped {self.bad_count} bad line(s); first: {first}")
        if self.over_limit:
            notes.append(f"{self.over_limit} entr{'y' if self.over_limit == 1 else 'ies'} past "
                         f"kclient's limit of {MAX_INVENTORY_ENTRIES:,} were counted, not read")
        return notes


def software_problem(name: str, version: str) -> str | None:
    """Why ``name``/``version`` cannot be a client software a broker reports, or ``None``.

    Brokers report a name Kafka accepts (KIP-511's pattern) or ``unknown``; text
    longer than :data:`MAX_NAME_LENGTH` is refused before the pattern runs.
    """
    for what, text in (("name", name), ("version", version)):
        if len(text) > MAX_NAME_LENGTH:
            return (f"a client software {what} of {len(text):,} characters (at most "
                    f"{MAX_NAME_LENGTH} are read)")
        if SOFTWARE_PATTERN.fullmatch(text) is None:
            return (f"client software {what} {_shown(text)} is not one a broker reports "
                    "(letters, digits, '-' and '.', as KIP-511 has them)")
    return None


def _shown(text: str) -> str:
    shown = repr(text)
    return shown if len(shown) <= 60 else shown[:57] + "..."


@cache
def _api_names() -> dict[str, int]:
    return {info.name.lower(): info.key for info in default_catalog()}


def api_key_named(name: str) -> int | None:
    """The API key of a request name as brokers' metrics write it (``Produce``, any case)."""
    return _api_names().get(name.lower())


class _Use:
    """What the builder keeps of one client software of one cluster (a few hundred bytes)."""

    __slots__ = ("complete", "connections", "requests", "seen_in")

    def __init__(self) -> None:
        self.connections: int | None = None
        self.complete = True
        self.seen_in: tuple[str, ...] = ()
        self.requests: dict[tuple[int, int], int] = {}

    def source(self, seen_in: str, complete: bool) -> None:
        self.complete = self.complete and complete
        if seen_in not in self.seen_in:
            self.seen_in = (*self.seen_in, seen_in)


class InventoryBuilder:
    """Adds up what the readers find (see the module text); :meth:`build` gives the value."""

    def __init__(self, max_entries: int = MAX_INVENTORY_ENTRIES) -> None:
        self.max_entries = max_entries
        self._uses: dict[tuple[str, ClientSoftware], _Use] = {}
        self._cluster_requests: dict[str, dict[tuple[int, int], int]] = {}
        self._entries = 0
        self.over_limit = 0
        self.files: list[str] = []
        self.recognised: Counter[str] = Counter()
        self.unrecognised: Counter[str] = Counter()
        self.unrecognised_series = 0
        self._families: set[str] = set()
        self.bad_count = 0
        self.bad_lines: list[SkippedLine] = []

    def _room(self) -> bool:
        if self._entries >= self.max_entries:
            self.over_limit += 1
            return False
        self._entries += 1
        return True

    def bad(self, file: str, line: int, reason: str) -> None:
        """Count a skipped line (the first :data:`NAMED_PROBLEMS` are named)."""
        self.bad_count += 1
        if len(self.bad_lines) < NAMED_PROBLEMS:
            self.bad_lines.append(SkippedLine(file, line, reason))

    def not_read(self, family: str) -> None:
        """Count a series of a metric family the readers do not read."""
        self.unrecognised_series += 1
        if family in self.unrecognised or len(self.unrecognised) < NAMED_PROBLEMS:
            self.unrecognised[family] += 1
        if len(self._families) < MAX_FAMILIES_COUNTED:
            self._families.add(family)

    def _use(self, cluster: str, software: ClientSoftware) -> _Use | None:
        key = (cluster, software)
        use = self._uses.get(key)
        if use is None and self._room():
            use = self._uses[key] = _Use()
        return use

    def connections(self, cluster: str, software: ClientSoftware, count: int) -> None:
        """Add ``count`` connections of ``software`` on ``cluster``."""
        use = self._use(cluster, software)
        if use is not None:
            use.connections = (use.connections or 0) + count

    def requests(self, cluster: str, software: ClientSoftware, key: int, version: int,
                 count: int, *, seen_in: str, complete: bool) -> None:
        """Add ``count`` requests of ``(key, version)`` from ``software`` on ``cluster``.

        ``complete`` says whether the source lists every version the software sent.
        """
        use = self._use(cluster, software)
        if use is None:
            return
        known = use.requests.get((key, version))
        if known is None and not self._room():
            return
        use.requests[key, version] = (known or 0) + count
        use.source(seen_in, complete)

    def listed(self, cluster: str, software: ClientSoftware, *, seen_in: str,
               complete: bool) -> None:
        """Note ``software`` on ``cluster`` without counts (a record with no requests)."""
        use = self._use(cluster, software)
        if use is not None:
            use.source(seen_in, complete)

    def cluster_requests(self, cluster: str, key: int, version: int, count: int) -> None:
        """Add ``count`` requests of ``(key, version)`` from any client on ``cluster``."""
        counts = self._cluster_requests.get(cluster)
        if counts is None:
            if not self._room():
                return
            counts = self._cluster_requests[cluster] = {}
        known = counts.get((key, version))
        if known is None and not self._room():
            return
        counts[key, version] = (known or 0) + count

    def build(self) -> Inventory:
        """The inventory read so far: clusters by name, software by connections, then name."""
        names = sorted({c for c, _ in self._uses} | set(self._cluster_requests))
        per_cluster: dict[str, list[SoftwareUse]] = {name: [] for name in names}
        for (cluster, software), use in self._uses.items():
            per_cluster[cluster].append(SoftwareUse(
                cluster, software, use.connections, dict(sorted(use.requests.items())),
                use.complete and bool(use.seen_in), ", ".join(sorted(use.seen_in))))
        clusters = tuple(ClusterInventory(
            name, tuple(sorted(per_cluster[name], key=lambda u: (
                -(u.connections or 0), u.software.name, u.software.version))),
            dict(sorted(self._cluster_requests.get(name, {}).items())))
            for name in names)
        return Inventory(
            clusters, tuple(self.files), tuple(sorted(self.recognised.items())),
            tuple(self.unrecognised.most_common()), self.unrecognised_series,
            len(self._families), self.bad_count,
            tuple(self.bad_lines), self.over_limit)


def inventory_record(use: SoftwareUse) -> dict[str, Any]:
    """``use`` as an inventory record (JSON Lines, contract ``kclient.inventory-record/1``)."""
    catalog = default_catalog()
    return {
        "cluster": use.cluster, "software_name": use.software.name,
        "software_version": use.software.version, "connections": use.connections,
        "requests": [{"api_key": key, "api": catalog.name_of(key), "version": version,
                      "count": count} for (key, version), count in use.requests.items()],
        "complete": use.complete, "source": use.seen_in or None,
    }


def count_value(value: Any) -> int | None:
    """A count from the input (a whole number of at most :data:`MAX_COUNT`), else ``None``."""
    if isinstance(value, bool):
        return None
    if isinstance(value, int):
        return value if 0 <= value <= MAX_COUNT else None
    if isinstance(value, float):
        if not math.isfinite(value) or value < 0 or value > MAX_COUNT:
            return None
        return round(value)
    return None


def version_value(value: Any) -> int | None:
    """An API version from the input (0-32767), else ``None``."""
    if isinstance(value, str) and value.isdigit() and len(value) <= 5:
        value = int(value)
    if isinstance(value, int) and not isinstance(value, bool) and 0 <= value <= INT16_MAX:
        return value
    return None
