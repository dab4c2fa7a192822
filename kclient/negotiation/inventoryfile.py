"""Reading client inventories from files: broker metrics, CSV, JSON Lines.

:func:`read_inventory` reads files (:func:`inventory_files` expands a directory or
a glob) by their name:

* ``.csv``: a header row, then one row per cluster and client software, or per
  request version of it: ``cluster`` (optional: else the file's name),
  ``software_name``, ``software_version``, and optionally ``connections``,
  ``api`` (a name such as ``Produce``, or a key), ``api_version`` and ``count``
  (empty: at least once).  Rows of the same cluster and software add up;
* ``.jsonl``, ``.json``, ``.ndjson``: inventory records, one JSON object per line
  (contract ``kclient.inventory-record/1``: ``cluster``, ``software_name``,
  ``software_version``, ``connections``, ``requests`` [``{api_key | api, version,
  count}``], ``complete``), as kclient's emulator writes them;
* anything else: broker metrics in the Prometheus text format
  (:mod:`kclient.negotiation.exposition`), one cluster per file unless
  ``cluster_label`` names the label that says which.

Every file must be a regular file (:mod:`kclient._inputfile`) and is read line by
line (:func:`~kclient.negotiation.snapshot.bounded_lines`); bad lines are counted
and named (``file:line``), never fatal.  An input that holds no client software at
all is an :class:`~kclient.errors.InventoryError`.
"""

from __future__ import annotations

import csv
import glob
import os
from collections.abc import Iterator, Mapping, Sequence
from pathlib import Path
from typing import Any

from kclient._inputfile import check_input_file, open_input
from kclient._json import loads as json_loads
from kclient.errors import InventoryError
from kclient.negotiation.exposition import MAX_CLUSTER_NAME, read_exposition
from kclient.negotiation.inventory import (
    Inventory,
    InventoryBuilder,
    api_key_named,
    count_value,
    software_problem,
    version_value,
)
from kclient.negotiation.snapshot import MAX_RECORD_LINE, bounded_lines
from kclient.negotiation.software import ClientSoftware

__all__ = [
    "CSV_SUFFIXES",
    "JSON_SUFFIXES",
    "MAX_INVENTORY_FILES",
    "MAX_REQUESTS_PER_RECORD",
    "MAX_SOURCE_TEXT",
    "inventory_files",
    "read_inventory",
]

CSV_SUFFIXES = (".csv",)
JSON_SUFFIXES = (".jsonl", ".json", ".ndjson")
#: The most files one inventory reads (a directory of one file per broker of a large fleet).
MAX_INVENTORY_FILES = 100_000
#: The most request entries one inventory record lists (an API and version each).
MAX_REQUESTS_PER_RECORD = 10_000
#: The longest ``source`` text a record may carry.
MAX_SOURCE_TEXT = 200
_WHAT = "the inventory file"
_IN_FILE = "the inventory file"

#: CSV header names (lower case, without ``_``, ``-`` or spaces) and the column each is.
_COLUMNS = {
    "cluster": "cluster",
    "softwarename": "name", "clientsoftwarename": "name", "software": "name",
    "softwareversion": "version", "clientsoftwareversion": "version",
    "connections": "connections",
    "api": "api", "apiname": "api", "apikey": "api", "request": "api",
    "apiversion": "api_version", "requestversion": "api_version",
    "count": "count", "requests": "count",
}


def _error(message: str, path: str) -> InventoryError:
    return InventoryError(message, path)


def inventory_files(path: str) -> list[str]:
    """The files of ``path``: itself, the files of a directory (hidden ones left out), or
    the files a glob matches; an :class:`~kclient.errors.InventoryError` when there are none
    or one is not a regular file."""
    if not path:
        raise InventoryError("give an inventory file, a directory or a glob")
    matches = sorted(glob.glob(path, recursive=True)) if glob.has_magic(path) else [path]
    files: list[str] = []
    for match in matches:
        item = Path(match)
        if item.is_dir():
            for root, dirs, names in os.walk(item):
                dirs[:] = sorted(d for d in dirs if not d.startswith("."))
                files.extend(os.path.join(root, n) for n in sorted(names)
                             if not n.startswith("."))
                if len(files) > MAX_INVENTORY_FILES:
                    break
        else:
            files.append(match)
        if len(files) > MAX_INVENTORY_FILES:
            raise InventoryError(f"more than {MAX_INVENTORY_FILES:,} files: give fewer, or "
                                 "larger ones (one per cluster, or a federation dump)", path)
    if not files:
        raise InventoryError("no file matches; check the path", path)
    for name in files:
        check_input_file(name, _WHAT, limit=None, error=_error)
    return files


def _lines(handle: Any, file: str, builder: InventoryBuilder) -> Iterator[tuple[int, str]]:
    """The numbered text lines of ``handle``; a line too long or not UTF-8 is a bad line."""
    for number, raw in bounded_lines(handle):
        if raw is None:
            builder.bad(file, number, f"a line longer than kclient reads "
                        f"({MAX_RECORD_LINE // 2**20} MiB)")
            continue
        try:
            yield number, raw.decode("utf-8")
        except UnicodeDecodeError as exc:
            builder.bad(file, number, f"not UTF-8 text (byte {exc.start})")


def _request(builder: InventoryBuilder, file: str, number: int, cluster: str,
             software: ClientSoftware, api: Any, version: Any, count: Any, *,
             complete: bool, seen_in: str = "the inventory file") -> str | None:
    key = api if isinstance(api, int) and not isinstance(api, bool) else (
        int(api) if isinstance(api, str) and api.isdigit() and len(api) <= 5 else
        api_key_named(api) if isinstance(api, str) else None)
    if key is None or not 0 <= key <= 32767:
        return f"api {str(api)[:60]!r} is no Kafka API (a name such as Produce, or a key)"
    number_ = version_value(version)
    if number_ is None:
        return f"the API version {str(version)[:20]!r} is not one (0-32767)"
    counted = count_value(count)
    if counted is None:
        return f"count {str(count)[:40]!r} is not a whole number from 0 to 2**53"
    builder.requests(cluster, software, key, number_, counted, seen_in=seen_in,
                     complete=complete)
    return None


def _csv_count(text: str) -> Any:
    text = text.strip()
    return 1 if not text else (int(text) if text.isdigit() and len(text) <= 16 else text)


def _read_csv(lines: Iterator[tuple[int, str]], file: str, builder: InventoryBuilder,
              cluster: str) -> None:
    header: list[str | None] | None = None
    for number, text in lines:
        if not text.strip():
            continue
        try:
            cells = next(csv.reader([text]))
        except csv.Error as exc:
            builder.bad(file, number, f"not a CSV row ({exc})")
            continue
        if header is None:
            header = [_COLUMNS.get(c.strip().lower().replace("_", "").replace("-", "")
                                   .replace(" ", "")) for c in cells]
            if "name" not in header or "version" not in header:
                raise InventoryError("a CSV inventory starts with a header naming at least "
                                     "software_name and software_version (and cluster, "
                                     "connections, api, api_version, count)", file, number)
            continue
        if len(cells) != len(header):
            builder.bad(file, number, f"{len(cells)} cells, the header has {len(header)}")
            continue
        row: Mapping[str | None, str] = dict(zip(header, cells, strict=True))
        problem = _csv_row(builder, file, number, row, cluster)
        if problem is not None:
            builder.bad(file, number, problem)


def _csv_row(builder: InventoryBuilder, file: str, number: int,
             row: Mapping[str | None, str], default: str) -> str | None:
    cluster = row.get("cluster", "").strip() or default
    if len(cluster) > MAX_CLUSTER_NAME:
        return f"a cluster name of {len(cluster):,} characters (at most {MAX_CLUSTER_NAME})"
    name, version = row["name"].strip(), row["version"].strip()
    problem = software_problem(name, version)
    if problem is not None:
        return problem
    software = ClientSoftware(name, version)
    connections = row.get("connections", "").strip()
    api = row.get("api", "").strip()
    if api:
        problem = _request(builder, file, number, cluster, software, api,
                           row.get("api_version", "").strip(), _csv_count(row.get("count", "")),
                           complete=False)
        if problem is not None:
            return problem
    if connections:
        count = count_value(int(connections)) if connections.isdigit() and len(
            connections) <= 16 else None
        if count is None:
            return f"connections {connections[:40]!r} is not a whole number from 0 to 2**53"
        builder.connections(cluster, software, count)
    elif not api:
        builder.listed(cluster, software, seen_in=_IN_FILE, complete=False)
    builder.recognised["rows (CSV inventory)"] += 1
    return None


def _read_jsonl(lines: Iterator[tuple[int, str]], file: str,
                builder: InventoryBuilder, cluster: str) -> None:
    for number, text in lines:
        if not text.strip():
            continue
        try:
            obj = json_loads(text)
        except ValueError as exc:
            builder.bad(file, number, f"not JSON ({str(exc)[:120]}); each line is one record")
            continue
        problem = _record(builder, file, number, obj, cluster)
        if problem is not None:
            builder.bad(file, number, problem)


def _record(builder: InventoryBuilder, file: str, number: int, obj: Any,
            default: str) -> str | None:
    if not isinstance(obj, dict):
        return "a record is a JSON object"
    cluster = obj.get("cluster", default)
    name, version = obj.get("software_name"), obj.get("software_version")
    if not isinstance(cluster, str) or not cluster or len(cluster) > MAX_CLUSTER_NAME:
        return f"'cluster' must be a name of 1 to {MAX_CLUSTER_NAME} characters"
    if not isinstance(name, str) or not isinstance(version, str):
        return "'software_name' and 'software_version' must be strings (unknown: none sent)"
    problem = software_problem(name, version)
    if problem is not None:
        return problem
    software = ClientSoftware(name, version)
    complete = obj.get("complete", False)
    source = obj.get("source") or _IN_FILE
    connections = obj.get("connections")
    requests = obj.get("requests") or []
    if not isinstance(complete, bool):
        return "'complete' must be true or false"
    if not isinstance(source, str) or len(source) > MAX_SOURCE_TEXT:
        return f"'source' must be a text of at most {MAX_SOURCE_TEXT} characters"
    if connections is not None and count_value(connections) is None:
        return "'connections' must be a whole number from 0 to 2**53, or null"
    if not isinstance(requests, list) or len(requests) > MAX_REQUESTS_PER_RECORD:
        return f"'requests' must be a list of at most {MAX_REQUESTS_PER_RECORD:,} entries"
    for index, item in enumerate(requests):
        if not isinstance(item, dict):
            return f"requests[{index}] must be an object with api_key (or api), version, count"
        api = item.get("api_key", item.get("api"))
        problem = _request(builder, file, number, cluster, software, api,
                           item.get("version"), item.get("count"), complete=complete,
                           seen_in=source)
        if problem is not None:
            return f"requests[{index}]: {problem}"
    if connections is not None:
        builder.connections(cluster, software, int(connections))
    if not requests:
        builder.listed(cluster, software, seen_in=source, complete=complete)
    builder.recognised["records (JSON Lines inventory)"] += 1
    return None


def _kind(path: str) -> str:
    lowered = path.lower()
    if lowered.endswith(CSV_SUFFIXES):
        return "csv"
    if lowered.endswith(JSON_SUFFIXES):
        return "jsonl"
    return "metrics"


def read_inventory(paths: Sequence[str], *, cluster_label: str | None = None,
                   builder: InventoryBuilder | None = None) -> Inventory:
    """Read the inventory files ``paths`` (each a file, a directory or a glob).

    Each file's records belong to the cluster they name, else to the file's name
    without its suffix (``prod-eu.prom`` -> ``prod-eu``); broker metrics name their
    cluster with ``cluster_label`` when given.  A file given twice is read once.
    """
    found = builder or InventoryBuilder()
    seen: set[str] = set()
    for path in paths:
        for file in inventory_files(path):
            real = os.path.realpath(file)
            if real in seen:
                continue
            seen.add(real)
            found.files.append(file)
            cluster = Path(file).name.split(".")[0] or Path(file).name
            kind = _kind(file)
            try:
                with open_input(file, _WHAT, limit=None, error=_error) as handle:
                    lines = _lines(handle, file, found)
                    if kind == "csv":
                        _read_csv(lines, file, found, cluster)
                    elif kind == "jsonl":
                        _read_jsonl(lines, file, found, cluster)
                    else:
                        read_exposition(lines, file, found, cluster=cluster,
                                        cluster_label=cluster_label)
            except OSError as exc:
                raise InventoryError(f"cannot read the inventory file: {exc.strerror or exc}",
                                     file) from None
    inventory = found.build()
    if not inventory.clusters:
        notes = "; ".join(inventory.notes()[1:]) or "the files hold no series kclient reads"
        raise InventoryError(f"no client software found ({notes}); give broker metrics with "
                             "socket-server-metrics connections or RequestMetrics series, or "
                             "a CSV or JSON Lines inventory",
                             ", ".join(inventory.files[:3]))
    return inventory
