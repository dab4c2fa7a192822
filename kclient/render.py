"""Turn cluster views and feature reports into text tables and JSON (DESIGN.md §5).

Pure functions, shared by the offline commands (snapshots) and the live ones
(``--bootstrap-server``).  The api-versions table keeps the layout of Apache
Kafka's ``kafka-broker-api-versions`` tool, then adds kclient's own lines.

JSON conventions (DESIGN.md §5):

* per broker, ``apis`` lists what the broker advertises: ``min``/``max`` are the
  broker's range and ``usable`` the version kclient would send to that broker
  (``null`` when none);
* ``cluster`` lists the APIs every broker whose answer counts advertises
  (answered brokers and unreachable ones with their last answer): ``min`` is the
  highest minimum and ``max`` the lowest maximum (KIP-35; ``min`` may exceed
  ``max`` when the brokers share no version) and ``usable`` the version to send
  cluster-wide, ``null`` where no version can be promised (no common version, or
  in strict mode a listed broker has never answered);
* a feature's ``state`` is ``available``, ``unavailable`` or ``unknown``;
  ``available`` is true only for the first; ``brokers`` says whether it is
  usable with each broker alone (``false`` for brokers that never answered) and
  ``unknown_brokers`` / ``stale_brokers`` / ``ignored_brokers`` list the brokers
  that made it unknown, that count with their last answer, and that a lenient
  run left out.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from kclient.errors import ConfigError
from kclient.negotiation.evaluation import FeatureReport
from kclient.negotiation.model import ApiSupport, BrokerVersions, ClusterView
from kclient.negotiation.ranges import VersionRange
from kclient.negotiation.releases import guess_release, resolve_release
from kclient.negotiation.verdict import NO_BROKER, BrokerState, Verdict
from kclient.text import printable

__all__ = [
    "api_line",
    "api_versions_json",
    "api_versions_table",
    "broker_block",
    "cluster_json",
    "features_json",
    "features_table",
    "multi_cluster_json",
    "release_guess_text",
]


def _range_text(rng: VersionRange) -> str:
    return str(rng.min) if rng.min == rng.max else f"{rng.min} to {rng.max}"


def _label(view: ClusterView, key: int) -> str:
    name = view.application.name_of(key)
    return name if name.startswith("UNKNOWN(") else f"{name}({key})"


def _broker_usable(view: ClusterView, broker: BrokerVersions, key: int) -> int | None:
    return view.application.version_with(key, broker.apis.get(key))


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
    """The broker's guessed release, or ``None`` when it advertised nothing."""
    if broker.error is not None or not broker.apis:
        return None
    if broker.source.startswith("fallback:"):
        release = broker.source.removeprefix("fallback:")
        try:
            return resolve_release(release)
        except ConfigError:
            return release
    return guess_release(broker.apis).text


def broker_block(view: ClusterView, broker: BrokerVersions) -> list[str]:
    """Kafka's block for one broker, then kclient's additions (tab-indented)."""
    rack = printable(broker.rack) if broker.rack is not None else "null"
    head = f"{printable(broker.address)} (id: {broker.node_id} rack: {rack}) -> "
    lines: list[str] = []
    if broker.error is not None:
        lines.append(f"{head}ERROR: {printable(broker.error)}")
    else:
        keys = sorted(set(view.application.apis) | set(broker.apis))
        entries = [api_line(view, broker, key) for key in keys]
        lines.append(head + "(")
        lines.append("\t" + ",\n\t".join(entries))
        lines.append(")")
    guess = release_guess_text(broker)
    lines.append(f"\trelease guess: {guess or 'unknown'}")
    source = broker.source if broker.error is None else f"{broker.source} (negotiation failed)"
    if broker.handshake:
        source += "; handshake: " + " -> ".join(broker.handshake)
    lines.append(f"\tsource: {printable(source)}")
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


def _cluster_title(view: ClusterView) -> str:
    name = printable(view.name) if view.name else "(unnamed)"
    text = f"cluster {name}: {len(view.brokers)} broker(s)"
    stale = view.stale_brokers
    if stale:
        text += f", {len(stale)} unreachable and counted with their last answer: " + ", ".join(
            f"{b.node_id} ({printable(b.error)})" for b in stale)
    unknown = view.unknown_brokers
    if unknown:
        mode = ("so verdicts they could change are unknown" if view.strict
                else "ignored (lenient mode)")
        text += f", {len(unknown)} never answered, {mode}: " + ", ".join(
            f"{b.node_id} ({printable(b.error)})" for b in unknown)
    return text


def api_versions_table(view: ClusterView) -> str:
    """Every broker in Kafka's layout, then the cluster-wide usable versions."""
    lines: list[str] = []
    for broker in view.brokers:
        lines.extend(broker_block(view, broker))
    lines.append(_cluster_title(view))
    if not view.known_brokers:
        lines.append(f"\t{NO_BROKER}")
        return "\n".join(lines)
    supports = view.api_ranges()
    common = [s for s in supports.values() if s.on_every_broker]
    lines.append("cluster-wide usable versions (KIP-35: on every broker) -> (")
    lines.append("\t" + ",\n\t".join(_cluster_line(view, s) for s in common))
    lines.append(")")
    partial = [s for s in supports.values()
               if not s.on_every_broker and any(r is not None for r in s.brokers.values())]
    if partial:
        lines.append("not on every broker:")
        for support in partial:
            missing = ", ".join(str(n) for n, r in support.brokers.items() if r is None)
            lines.append(f"\t{_label(view, support.key)}: missing on broker(s) {missing}")
    return "\n".join(lines)


def _api_json(key: int, low: int, high: int, usable: int | None) -> dict[str, Any]:
    return {"key": key, "min": low, "max": high, "usable": usable}


def cluster_json(view: ClusterView) -> dict[str, Any]:
    """The ``cluster`` object of DESIGN.md §5: name -> key, min, max, usable."""
    result: dict[str, Any] = {}
    if not view.known_brokers:
        return result
    for support in view.api_ranges().values():
        bounds = support.bounds
        if bounds is None:
            continue
        result[support.name] = _api_json(support.key, bounds[0], bounds[1], support.version)
    return result


def _broker_json(view: ClusterView, broker: BrokerVersions) -> dict[str, Any]:
    apis = {
        view.application.name_of(key): _api_json(key, rng.min, rng.max,
                                                  _broker_usable(view, broker, key))
        for key, rng in broker.apis.items()
    }
    return {
        "id": broker.node_id,
        "host": broker.host,
        "port": broker.port,
        "source": broker.source,
        "release_guess": release_guess_text(broker),
        "error": broker.error,
        "apis": apis,
    }


def api_versions_json(view: ClusterView) -> dict[str, Any]:
    """``kclient api-versions --format json`` for one cluster (DESIGN.md §5)."""
    return {
        "brokers": [_broker_json(view, b) for b in view.brokers],
        "cluster": cluster_json(view),
    }


def features_json(view: ClusterView, report: FeatureReport) -> dict[str, Any]:
    """``kclient features --format json`` for one cluster (DESIGN.md §5)."""
    return {
        "features": {
            result.name: {
                "available": result.available,
                "state": str(result.state),
                "brokers": {str(k): v for k, v in result.brokers.items()},
                "reasons": list(result.reasons),
                "unknown_brokers": list(result.unknown),
                "stale_brokers": list(result.stale),
                "ignored_brokers": list(result.ignored),
            }
            for result in report
        },
        "cluster": cluster_json(view),
    }


def multi_cluster_json(per_cluster: Mapping[str, dict[str, Any]]) -> dict[str, Any]:
    """One cluster: its object as is; several: ``{"clusters": {name: object}}``."""
    if len(per_cluster) == 1:
        return next(iter(per_cluster.values()))
    return {"clusters": dict(per_cluster)}


def features_table(view: ClusterView, report: FeatureReport) -> str:
    """A table: feature, available cluster-wide, per broker, versions or reasons."""
    rows: list[tuple[str, str, str, list[str]]] = []
    states = {b.node_id: b.state for b in view.brokers}
    for result in report:
        brokers = " ".join(
            f"{k}:{'?' if states.get(k) is BrokerState.UNKNOWN else 'yes' if v else 'no'}"
            for k, v in result.brokers.items())
        if result.available:
            detail = [", ".join(f"{api} v{ver}" for api, ver in result.versions.items())]
        else:
            detail = [printable(r) for r in result.reasons] or [str(result.state)]
        verdict = {Verdict.AVAILABLE: "yes", Verdict.UNAVAILABLE: "no",
                   Verdict.UNKNOWN: "unknown"}[result.state]
        rows.append((printable(result.name), verdict, brokers or "-", detail))
    header = ("FEATURE", "AVAILABLE", "BROKERS", "VERSIONS / REASONS")
    w0 = max([len(header[0]), *(len(r[0]) for r in rows)])
    w1 = max([len(header[1]), *(len(r[1]) for r in rows)])
    w2 = max([len(header[2]), *(len(r[2]) for r in rows)])
    lines = [_cluster_title(view)]
    lines.append(f"{header[0]:<{w0}}  {header[1]:<{w1}}  {header[2]:<{w2}}  {header[3]}")
    for name, available, brokers, detail in rows:
        lines.append(f"{name:<{w0}}  {available:<{w1}}  {brokers:<{w2}}  {detail[0]}".rstrip())
        pad = " " * (w0 + w1 + w2 + 6)
        lines.extend(f"{pad}{more}" for more in detail[1:])
    return "\n".join(lines)
