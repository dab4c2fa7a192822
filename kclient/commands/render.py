"""Turn cluster views and feature reports into text tables and JSON.

Pure functions, shared by the offline commands (snapshots) and the live ones
(``--bootstrap-server``).  The api-versions table keeps the layout of Apache
Kafka 4.x's ``kafka-broker-api-versions`` tool (broker APIs only unless
``all_apis``), then adds kclient's own lines.

The JSON documents are versioned contracts (:mod:`kclient.contracts`, the
*Machine-readable contracts* page): one shape for any number of clusters
(``{"format": ..., "clusters": [...]}``) and the field names of snapshot
records (``broker_id``, ``api_key``, ``min_version``, ``max_version``).
"""

from __future__ import annotations

import re
import textwrap
from collections.abc import Iterable, Sequence
from typing import Any

from kclient.commands.vocabulary import PYTHON, Vocabulary
from kclient.contracts import FORMATS
from kclient.negotiation.evaluation import FeatureReport, FeatureResult
from kclient.negotiation.model import ApiSupport, BrokerVersions, ClusterView
from kclient.negotiation.ranges import VersionRange
from kclient.negotiation.releases import last_release_guess
from kclient.negotiation.verdict import (
    AT_LEVEL,
    BROKER_NAME,
    LACKS,
    NO_ATTEMPT,
    NO_BROKER,
    NOT_FINALIZED,
    OFFERS,
    UNKNOWN_ENTRY,
    UNKNOWN_NOUNS,
    UNKNOWN_SEPARATOR,
    BrokerState,
    Verdict,
)
from kclient.text import printable

#: The option that ignores brokers that never answered, by its Python name; a
#: :class:`~kclient.commands.vocabulary.Vocabulary` maps it to the command line's flag.
LENIENT_OPTION = "strict=False"

__all__ = [
    "LENIENT_OPTION",
    "api_line",
    "api_versions_document",
    "api_versions_json",
    "api_versions_table",
    "broker_block",
    "broker_summary_json",
    "cluster_wide_json",
    "features_document",
    "features_json",
    "features_table",
    "group_reason",
    "id_ranges",
    "reasons_in_words",
    "release_guess_text",
    "shown_keys",
    "silent_brokers_text",
]


def _range_text(rng: VersionRange) -> str:
    return str(rng.min) if rng.min == rng.max else f"{rng.min} to {rng.max}"


def _label(view: ClusterView, key: int) -> str:
    name = view.application.name_of(key)
    return name if name.startswith("UNKNOWN(") else f"{name}({key})"


def _broker_usable(view: ClusterView, broker: BrokerVersions, key: int) -> int | None:
    return view.application.version_with(key, broker.takes(key))


def shown_keys(view: ClusterView, keys: Iterable[int], all_apis: bool) -> list[int]:
    """``keys`` in order, without the controller-only ones unless ``all_apis``.

    Which keys only controllers serve is data: the ``listeners`` of each key in
    the API catalog (:attr:`kclient.protocol.catalog.ApiInfo.controller_only`).
    Keys the catalog does not know are always shown.
    """
    catalog = view.application.catalog
    result = []
    for key in sorted(set(keys)):
        info = catalog.by_key(key)
        if all_apis or info is None or not info.controller_only:
            result.append(key)
    return result


def api_line(view: ClusterView, broker: BrokerVersions, key: int) -> str:
    """One API as Kafka's tool prints it, e.g. ``Produce(0): 0 to 11 [usable: 11]``."""
    label = _label(view, key)
    rng = broker.apis.get(key)
    app = view.application.apis.get(key)
    if rng is None:
        return f"{label}: UNSUPPORTED"
    text = f"{label}: {_range_text(rng)}"
    if app is None:
        return text
    usable = _broker_usable(view, broker, key)
    if usable is not None:
        return f"{text} [usable: {usable}]"
    if rng.max < app.min:
        return f"{text} [unusable: node too old]"
    if rng.min > app.max:
        return f"{text} [unusable: node too new]"
    return f"{text} [unusable: every common version is avoided]"


def release_guess_text(broker: BrokerVersions) -> str | None:
    """The broker's guessed release, or ``None`` when it advertised nothing.

    A broker assumed from a release profile (``fallback:0.9.0``) is that release,
    named as Kafka names it.
    """
    if broker.error is not None:
        return None
    return last_release_guess(broker)


_Table = tuple[tuple[int, VersionRange], ...]


def _table(broker: BrokerVersions) -> _Table:
    """The broker's API table as a hashable value: the key of the renderers' memos."""
    return tuple(broker.apis.items())


def _source_text(broker: BrokerVersions, vocabulary: Vocabulary) -> str:
    """Where the versions shown came from; for a failed broker, why it failed."""
    if broker.state is BrokerState.UNKNOWN:
        why = vocabulary.text(broker.error or "no attempt finished")
        return f"none: never answered ApiVersions ({why})"
    text = broker.source
    if broker.handshake:
        text += "; handshake: " + " -> ".join(broker.handshake)
    if broker.error is not None:
        text = f"last answer ({text}); unreachable now: {vocabulary.text(broker.error)}"
    return text


def broker_block(view: ClusterView, broker: BrokerVersions, *, all_apis: bool = False,
                 vocabulary: Vocabulary = PYTHON) -> list[str]:
    """Kafka 4.x's block for one broker, then kclient's additions (tab-indented).

    ``isFenced`` is always false: brokers come from Metadata answers, which list
    only unfenced brokers (as for Kafka's own tool).  The broker's error names
    options in ``vocabulary``.
    """
    return _broker_block(view, broker, all_apis, {}, vocabulary)


def _api_lines(view: ClusterView, broker: BrokerVersions, all_apis: bool,
               memo: dict[_Table, str]) -> str:
    """The broker's API lines, made once per distinct API table of the view (``memo``)."""
    table = _table(broker)
    text = memo.get(table)
    if text is None:
        keys = shown_keys(view, set(view.application.apis) | set(broker.apis), all_apis)
        text = "\t" + ",\n\t".join(api_line(view, broker, key) for key in keys)
        memo[table] = text
    return text


def _broker_block(view: ClusterView, broker: BrokerVersions, all_apis: bool,
                  memo: dict[_Table, str], vocabulary: Vocabulary) -> list[str]:
    rack = printable(broker.rack) if broker.rack is not None else "null"
    head = (f"{printable(broker.address)} (id: {broker.node_id} rack: {rack} "
            "isFenced: false) -> ")
    lines: list[str] = []
    if broker.error is not None:
        lines.append(f"{head}ERROR: {printable(vocabulary.text(broker.error))}")
    else:
        lines.append(head + "(")
        lines.append(_api_lines(view, broker, all_apis, memo))
        lines.append(")")
    guess = release_guess_text(broker)
    lines.append(f"\trelease guess: {guess or 'unknown'}")
    lines.append(f"\tsource: {printable(_source_text(broker, vocabulary))}")
    if broker.software is not None:
        lines.append(f"\tsoftware: {printable(broker.software[0])} "
                     f"{printable(broker.software[1])}")
    if broker.finalized_features:
        levels = ", ".join(f"{printable(k)}={v.max}"
                           for k, v in broker.finalized_features.items())
        lines.append(f"\tfinalized features: {levels} (epoch {broker.finalized_features_epoch})")
    return lines


def _cluster_line(view: ClusterView, support: ApiSupport) -> str:
    bounds = support.bounds
    assert bounds is not None
    low, high = bounds
    text = f"{_label(view, support.key)}: "
    text += str(low) if low == high else f"{low} to {high}"
    if support.version is not None:
        return f"{text} [usable: {support.version}]"
    if support.application is None:
        return text
    if support.state is Verdict.UNKNOWN:
        waiting = ", ".join(map(str, support.unknown))
        return f"{text} [unknown: broker(s) {waiting} have not answered]"
    return f"{text} [unusable: {printable(support.reason)}]"


def silent_brokers_text(view: ClusterView, vocabulary: Vocabulary = PYTHON) -> str | None:
    """The brokers that never answered, said once, with the caller's way to ignore
    them (``strict=False`` in Python, ``--lenient`` on the command line); ``None``
    when every listed broker answered or the view is lenient."""
    unknown = view.unknown_brokers
    if not view.strict or not unknown:
        return None
    entries = UNKNOWN_SEPARATOR.join(
        UNKNOWN_ENTRY % (b.label, printable(vocabulary.text(b.error or NO_ATTEMPT)))
        for b in unknown)
    noun = UNKNOWN_NOUNS[0] if len(unknown) == 1 else UNKNOWN_NOUNS[1]
    return (f"{len(unknown)} {noun} not answered ApiVersions yet: {entries}; the verdicts "
            f"they could change are unknown (to ignore them: "
            f"{vocabulary.name(LENIENT_OPTION)})")


def reasons_in_words(view: ClusterView, result: FeatureResult,
                     vocabulary: Vocabulary = PYTHON) -> list[str]:
    """A feature's reasons, the silent brokers said with :func:`silent_brokers_text`
    (so the way to ignore them is named as the caller knows it)."""
    silent = view.unknown_reason()
    return [silent_brokers_text(view, vocabulary) or reason if reason == silent else reason
            for reason in result.reasons]


def _silent_pointer(view: ClusterView) -> str:
    """``waiting for broker 2``: a row's reason when the title said why."""
    ids = [b.node_id for b in view.unknown_brokers]
    subject = (UNKNOWN_NOUNS[0] if len(ids) == 1 else UNKNOWN_NOUNS[1]).split(" ", 1)[0]
    return f"waiting for {subject} {', '.join(map(str, ids))}"


def _cluster_title(view: ClusterView, vocabulary: Vocabulary = PYTHON) -> str:
    name = printable(view.name) if view.name else "(unnamed)"
    text = f"cluster {name}: {len(view.brokers)} broker(s)"
    stale = view.stale_brokers
    if stale:
        text += f", {len(stale)} unreachable and counted with their last answer: " + ", ".join(
            f"{b.node_id} ({printable(vocabulary.text(b.error))})" for b in stale)
    unknown = view.unknown_brokers
    if unknown:
        mode = (f"so verdicts they could change are unknown (to ignore them: "
                f"{vocabulary.name(LENIENT_OPTION)})" if view.strict
                else "ignored (lenient mode)")
        text += f", {len(unknown)} never answered, {mode}: " + ", ".join(
            f"{b.node_id} ({printable(vocabulary.text(b.error))})" for b in unknown)
    return text


def _supports(view: ClusterView, all_apis: bool) -> list[ApiSupport]:
    """Cluster-wide support of every shown key that some broker whose answer counts has."""
    supports = view.api_ranges()
    return [supports[key] for key in shown_keys(view, supports, all_apis)
            if any(r is not None for r in supports[key].brokers.values())]


def api_versions_table(view: ClusterView, *, all_apis: bool = False,
                       vocabulary: Vocabulary = PYTHON) -> str:
    """Every broker in Kafka's layout, then the cluster-wide usable versions.

    The cluster-wide block has no ``-> (`` line, so scripts that split Kafka's
    output on ``-> (`` see brokers only.
    """
    lines: list[str] = []
    memo: dict[_Table, str] = {}  # linear in brokers: each distinct table rendered once
    for broker in view.brokers:
        lines.extend(_broker_block(view, broker, all_apis, memo, vocabulary))
    lines.append(_cluster_title(view, vocabulary))
    if not view.known_brokers:
        lines.append(f"\t{NO_BROKER}")
        return "\n".join(lines)
    supports = _supports(view, all_apis)
    lines.append("cluster-wide usable versions (KIP-35: on every broker):")
    lines.extend(f"\t{_cluster_line(view, s)}" for s in supports if s.on_every_broker)
    partial = [s for s in supports if not s.on_every_broker]
    if partial:
        lines.append("not on every broker:")
        for support in partial:
            missing = ", ".join(str(n) for n, r in support.brokers.items() if r is None)
            lines.append(f"\t{_label(view, support.key)}: missing on broker(s) {missing}")
    return "\n".join(lines)


# -- JSON ---------------------------------------------------------------------------


def _software_json(broker: BrokerVersions) -> dict[str, str] | None:
    if broker.software is None:
        return None
    return {"name": broker.software[0], "version": broker.software[1]}


def broker_summary_json(broker: BrokerVersions) -> dict[str, Any]:
    """Who a broker is and how it answered: the fields every command's JSON shares."""
    return {
        "broker_id": broker.node_id,
        "host": broker.host,
        "port": broker.port,
        "rack": broker.rack,
        "state": str(broker.state),
        "source": broker.source if broker.state is not BrokerState.UNKNOWN else "error",
        "release_guess": release_guess_text(broker),
        "error": broker.error,
    }


def _broker_json(view: ClusterView, broker: BrokerVersions, all_apis: bool,
                 memo: dict[_Table, list[dict[str, Any]]]) -> dict[str, Any]:
    table = _table(broker)
    shared = memo.get(table)
    if shared is None:
        shared = [
            {"api_key": key, "name": view.application.name_of(key),
             "min_version": broker.apis[key].min, "max_version": broker.apis[key].max,
             "usable_version": _broker_usable(view, broker, key)}
            for key in shown_keys(view, broker.apis, all_apis)
        ]
        memo[table] = shared
    apis = [dict(entry) for entry in shared]  # each broker its own objects
    return {
        **broker_summary_json(broker),
        "handshake": list(broker.handshake),
        "software": _software_json(broker),
        "supported_features": {k: v.to_list() for k, v in broker.supported_features.items()},
        "finalized_features": {k: v.to_list() for k, v in broker.finalized_features.items()},
        "finalized_features_epoch": broker.finalized_features_epoch,
        "api_versions": apis,
    }


def cluster_wide_json(view: ClusterView, *, all_apis: bool = False) -> list[dict[str, Any]]:
    """Every shown API that some broker whose answer counts advertises, cluster-wide.

    ``min_version``/``max_version`` are KIP-35's bounds (highest minimum, lowest
    maximum; ``min_version`` may exceed ``max_version`` when the brokers share no
    version), ``null`` when some broker lacks the API (``missing_brokers``).
    """
    if not view.known_brokers:
        return []
    result = []
    for support in _supports(view, all_apis):
        bounds = support.bounds
        result.append({
            "api_key": support.key,
            "name": support.name,
            "min_version": None if bounds is None else bounds[0],
            "max_version": None if bounds is None else bounds[1],
            "usable_version": support.version,
            "state": str(support.state),
            "missing_brokers": [n for n, r in support.brokers.items() if r is None],
            "blocking_brokers": list(support.blocking),
            "unknown_brokers": list(support.unknown),
            "reason": support.reason,
        })
    return result


def _cluster_head(view: ClusterView) -> dict[str, Any]:
    return {
        "cluster": view.name,
        "strict": view.strict,
        "stale_brokers": [b.node_id for b in view.stale_brokers],
        "unknown_brokers": [b.node_id for b in view.unknown_brokers],
        "ignored_brokers": [b.node_id for b in view.ignored_brokers],
    }


def api_versions_json(view: ClusterView, *, all_apis: bool = False) -> dict[str, Any]:
    """One cluster's object in ``kclient api-versions --format json``."""
    memo: dict[_Table, list[dict[str, Any]]] = {}
    return {
        **_cluster_head(view),
        "brokers": [_broker_json(view, b, all_apis, memo) for b in view.brokers],
        "cluster_wide": cluster_wide_json(view, all_apis=all_apis),
    }


def api_versions_document(views: Sequence[ClusterView], *, all_apis: bool = False
                          ) -> dict[str, Any]:
    """``kclient api-versions --format json``: the same shape for one cluster or many."""
    return {
        "format": FORMATS["api-versions"],
        "all_apis": all_apis,
        "clusters": [api_versions_json(v, all_apis=all_apis) for v in views],
    }


def _feature_json(view: ClusterView, result: FeatureResult) -> dict[str, Any]:
    catalog = view.application.catalog
    versions = []
    for name, version in result.versions.items():
        info = catalog.by_name(name)
        versions.append({"api_key": None if info is None else info.key, "name": name,
                         "version": version})
    return {
        "name": result.name,
        "state": str(result.state),
        "available": result.available,
        "versions": versions,
        "brokers": [{"broker_id": k, "usable": v} for k, v in result.brokers.items()],
        "blocking_brokers": list(result.blocking),
        "unknown_brokers": list(result.unknown),
        "stale_brokers": list(result.stale),
        "ignored_brokers": list(result.ignored),
        "reasons": list(result.reasons),
        "notes": list(result.notes),
    }


def features_json(view: ClusterView, report: FeatureReport) -> dict[str, Any]:
    """One cluster's object in ``kclient features --format json``."""
    return {
        **_cluster_head(view),
        "brokers": [broker_summary_json(b) for b in view.brokers],
        "features": [_feature_json(view, result) for result in report],
        "cluster_wide": cluster_wide_json(view),
    }


def features_document(reports: Sequence[tuple[ClusterView, FeatureReport]]) -> dict[str, Any]:
    """``kclient features --format json``: the same shape for one cluster or many."""
    return {
        "format": FORMATS["features"],
        "clusters": [features_json(view, report) for view, report in reports],
    }


# -- the features table -------------------------------------------------------------

_PLURAL = {OFFERS: " offer ", LACKS: " lack it", NOT_FINALIZED: " have not finalized it",
           AT_LEVEL: " have it at level "}
_BROKER_PART = re.compile(
    "^" + re.escape(BROKER_NAME.split("%d")[0]) + r"(-?\d+)("
    + "|".join(re.escape(tail.rstrip()) + (r" .*" if tail.endswith(" ") else "")
               for tail in _PLURAL) + ")$")


def id_ranges(ids: Iterable[int]) -> str:
    """``1-5, 7, 9-10``: node ids with runs of consecutive ids shortened."""
    ordered = sorted(set(ids))
    parts: list[str] = []
    i = 0
    while i < len(ordered):
        j = i
        while j + 1 < len(ordered) and ordered[j + 1] == ordered[j] + 1:
            j += 1
        parts.append(str(ordered[i]) if i == j else f"{ordered[i]}-{ordered[j]}")
        i = j + 1
    return ", ".join(parts)


def group_reason(reason: str) -> str:
    """One reason with identical per-broker parts merged.

    ``Produce needs 7+; broker 1 offers 0-6; broker 2 offers 0-6`` becomes
    ``Produce needs 7+; brokers 1-2 offer 0-6``.
    """
    parts = reason.split("; ")
    groups: dict[str, list[int]] = {}
    order: list[str] = []  # other parts as they are, groups at their first place
    for part in parts:
        match = _BROKER_PART.match(part)
        if match is None:
            order.append(part)
            continue
        tail = match.group(2)
        key = "\0" + tail
        if key not in groups:
            groups[key] = []
            order.append(key)
        groups[key].append(int(match.group(1)))
    out = []
    for item in order:
        if not item.startswith("\0"):
            out.append(item)
            continue
        tail, ids = item[1:], groups[item]
        if len(ids) == 1:
            out.append(BROKER_NAME % ids[0] + tail)
            continue
        for singular, plural in _PLURAL.items():
            if tail.startswith(singular.rstrip()):
                tail = plural.rstrip() + tail[len(singular.rstrip()):]
                break
        out.append(f"brokers {id_ranges(ids)}{tail}")
    return "; ".join(out)


def _brokers_summary(result: FeatureResult) -> str:
    total = len(result.brokers)
    if not total:
        return "-"
    usable = sum(1 for v in result.brokers.values() if v)
    text = f"{usable} of {total}"
    for word, ids in (("blocking", result.blocking), ("unknown", result.unknown)):
        if ids:
            listed = id_ranges(ids)
            text += f"; {word}: {listed if len(listed) <= 12 else str(len(ids))}"
    return text


def _brokers_wide(view: ClusterView, result: FeatureResult) -> str:
    states = {b.node_id: b.state for b in view.brokers}
    return " ".join(
        f"{k}:{'?' if states.get(k) is BrokerState.UNKNOWN else 'yes' if v else 'no'}"
        for k, v in result.brokers.items()) or "-"


#: ``Produce v7``: an API and its version, kept on one line when wrapping.
_API_VERSION = re.compile(r"(?<=\w) (?=v\d)")
#: Stands for the space of ``API vN`` while wrapping (a private-use character).
_KEEP = "\ue000"


def _wrap(text: str, width: int | None, first: str = "", rest: str = "") -> list[str]:
    if width is None:
        return [first + text]
    lines = textwrap.wrap(_API_VERSION.sub(_KEEP, text), width=width, initial_indent=first,
                          subsequent_indent=rest, break_on_hyphens=False) or [first.rstrip()]
    return [line.replace(_KEEP, " ") for line in lines]


def features_table(view: ClusterView, report: FeatureReport, *, width: int | None = None,
                   wide: bool = False, vocabulary: Vocabulary = PYTHON) -> str:
    """A table: feature, available cluster-wide, brokers, versions or reasons.

    By default the brokers column summarises (``29 of 30; blocking: 7``), identical
    per-broker reasons are grouped, brokers that never answered are named once in
    the title (each row says ``waiting for broker 2``) and, given
    ``width``, every line is wrapped to it without splitting ``API vN``.  ``wide``
    shows each broker and every reason as evaluated, unwrapped.  ``vocabulary``
    names options as the caller knows them.
    """
    silent = view.unknown_reason()
    if wide:
        width = None
    rows: list[tuple[str, str, str, list[str]]] = []
    for result in report:
        brokers = _brokers_wide(view, result) if wide else _brokers_summary(result)
        if result.available:
            detail = [", ".join(f"{api} v{ver}" for api, ver in result.versions.items())]
        else:
            reasons = result.reasons if wide else [
                _silent_pointer(view) if r == silent else group_reason(r)
                for r in result.reasons]
            detail = [printable(r) for r in reasons] or [str(result.state)]
        verdict = {Verdict.AVAILABLE: "yes", Verdict.UNAVAILABLE: "no",
                   Verdict.UNKNOWN: "unknown"}[result.state]
        rows.append((printable(result.name), verdict, brokers, detail))
    header = ("FEATURE", "AVAILABLE", "BROKERS", "VERSIONS / REASONS")
    w0 = max([len(header[0]), *(len(r[0]) for r in rows)])
    w1 = max([len(header[1]), *(len(r[1]) for r in rows)])
    w2 = max([len(header[2]), *(len(r[2]) for r in rows)])
    pad = w0 + w1 + w2 + 6
    # On a terminal too narrow for the columns, the reasons go under them.
    if width is not None and width - pad < 32:
        pad = 4
    lines = _wrap(_cluster_title(view, vocabulary), width, rest="  ")
    lines.append(f"{header[0]:<{w0}}  {header[1]:<{w1}}  {header[2]:<{w2}}  {header[3]}"[
        :width])
    for name, available, brokers, detail in rows:
        head = f"{name:<{w0}}  {available:<{w1}}  {brokers:<{w2}}  "
        indent = " " * pad
        first = head
        if len(head) != pad:  # narrow: the columns on their own line(s), reasons below
            if (width is not None and len(detail) == 1
                    and len(head) + len(detail[0]) <= width):
                lines.append(head + detail[0])  # a short reason still fits on the row
                continue
            lines.extend(_wrap(head.rstrip(), width, rest=indent))
            first = indent
        for index, text in enumerate(detail):
            wrapped = _wrap(text, width, first if index == 0 else indent, indent)
            lines.extend(line.rstrip() for line in wrapped)
    return "\n".join(lines)
