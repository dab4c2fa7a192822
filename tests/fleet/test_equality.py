"""Both engines' tables equal the pure-Python negotiation core, and each other, row for row.

Edge cases are written by hand (one-broker clusters, unknown API keys, error and
fallback records, clusters mid-upgrade, the KIP-35 worked example, disjoint
ranges, feature levels, ties in time); hypothesis-generated fleets add random
mixtures, and a synthetic history fleet the views per day.  The in-process
engine is compared with the core on every case; the Spark engine (the shared
local session, marked ``spark``) with the in-process one, every column of every
table.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import attrs
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from kclient.fleet.local import compute_local
from kclient.fleet.readiness import READINESS_TABLE, JudgedInventory, ReadinessInput, judge_input
from kclient.fleet.report import ReportData
from kclient.fleet.summary import REPORT_LIMIT
from kclient.fleet.synth import write_fleet
from kclient.negotiation import (
    FeatureSet,
    SnapshotRecord,
    VersionRange,
    known_releases,
    parse_features,
    read_snapshots,
    release_profile,
    write_snapshots,
)
from tests.fleet.expected import core_tables, spark_tables, whole_rows

TABLES = ("cluster_api_versions", "feature_availability", "broker_releases")

T0 = "2026-11-22T10:00:00Z"
T1 = "2026-11-22T11:00:00Z"

EXTRA_FEATURES = parse_features("""
version: 1
features:
  - name: TwoProduces
    requires:
      - {api: Produce, min: 3}
      - {api: Produce, min: 5, max: 8}
  - name: BeyondTheApplication
    requires:
      - {api: Produce, min: 200}
  - name: EitherWay
    requires:
      - {feature: metadata.version, min: 7, max: 21}
    any_of:
      - [{api: ConsumerGroupHeartbeat, min: 0}, {feature: group.version, min: 1}]
      - {api: JoinGroup, min: 9}
      - [{api: ApiVersions, min: 0}, {api: Metadata, min: 1, max: 3}]
""", "extra.yaml")


def _rec(cluster: str, broker: int, apis: dict[int, tuple[int, int]] | None,
         when: str = T0, *, source: str = "api_versions", error: str | None = None,
         finalized: dict[str, tuple[int, int]] | None = None) -> SnapshotRecord:
    return SnapshotRecord(
        cluster=cluster, broker_id=broker, host=f"h{broker}.{cluster}", port=9092,
        observed_at=when, source="error" if error and source == "api_versions" and not apis
        else source,
        api_versions={k: VersionRange(*r) for k, r in (apis or {}).items()},
        finalized_features={k: VersionRange(*r) for k, r in (finalized or {}).items()},
        error=error)


def _profile(release: str, **changes: Any) -> dict[int, tuple[int, int]]:
    apis = {k: (r.min, r.max) for k, r in release_profile(release).items()}
    for key, value in changes.get("set", {}).items():
        if value is None:
            apis.pop(key, None)
        else:
            apis[key] = value
    return apis


def edge_records() -> list[SnapshotRecord]:
    v39 = {"metadata.version": (21, 21)}
    v41 = {"metadata.version": (27, 27), "group.version": (1, 1),
           "transaction.version": (2, 2)}
    return [
        # One broker.
        _rec("single", 1, _profile("3.9"), finalized=v39),
        # KIP-35 worked example.
        _rec("kip35", 1, {0: (0, 3), 1: (2, 3)}),
        _rec("kip35", 2, {0: (1, 2), 1: (0, 3), 2: (0, 0)}),
        # Unknown API key on one broker, and on every broker.
        _rec("unknown-some", 1, _profile("3.7", set={1000: (0, 2)})),
        _rec("unknown-some", 2, _profile("3.7")),
        _rec("unknown-all", 1, _profile("3.7", set={1000: (0, 2)})),
        _rec("unknown-all", 2, _profile("3.7", set={1000: (1, 3)})),
        # A failed broker among live ones, and a cluster where every broker failed.
        _rec("one-down", 1, _profile("4.1"), finalized=v41),
        _rec("one-down", 2, None, source="error", error="connection refused"),
        _rec("one-down", 3, _profile("4.1"), finalized=v41),
        _rec("all-down", 1, None, source="error", error="timed out"),
        _rec("all-down", 2, None, source="error", error="connection reset"),
        # Stale brokers: unreachable now, their last answer of the view still counts.
        # The old broker of "restart" keeps ZSTD unavailable; broker 3 came back.
        _rec("restart", 1, _profile("2.0"), T0),
        _rec("restart", 1, None, T1, source="error", error="connection refused"),
        _rec("restart", 2, _profile("4.1"), T1, finalized=v41),
        _rec("restart", 3, None, T0, source="error", error="timed out"),
        _rec("restart", 3, _profile("4.1"), T1, finalized=v41),
        # Every broker stale: verdicts from the last answers; one moved to a new
        # address (the answer's host is kept) and one failed with an odd record.
        _rec("all-stale", 1, _profile("3.9"), T0, finalized=v39),
        _rec("all-stale", 1, None, T1, source="error", error="connection reset"),
        _rec("all-stale", 2, _profile("3.9"), T0, finalized=v39),
        SnapshotRecord(cluster="all-stale", broker_id=2, host="moved.all-stale", port=9093,
                       observed_at=T1, source="error", error="no route to host"),
        _rec("all-stale", 3, _profile("3.9"), T0, finalized=v39),
        _rec("all-stale", 3, _profile("4.0"), T1, error="negotiation aborted"),
        # Stale and unknown together: what the stale broker blocks is unavailable,
        # what the known brokers allow is unknown.
        _rec("mixed", 1, _profile("2.0"), T0),
        _rec("mixed", 1, None, T1, source="error", error="connection refused"),
        _rec("mixed", 2, None, T1, source="error", error="timed out"),
        _rec("mixed", 5, None, T0, source="error", error="connection refused"),
        _rec("mixed", 3, _profile("3.9"), T1, finalized=v39),
        # An answer later than the error: answered, the error is history.
        _rec("recovered", 1, None, T0, source="error", error="timed out"),
        _rec("recovered", 1, _profile("3.5"), T1),
        # A record that answered but also carries an error counts as failed.
        _rec("odd-error", 1, _profile("2.8"), error="negotiation aborted"),
        _rec("odd-error", 2, _profile("2.8")),
        # Fallback records behind a proxy, mixed with a real answer.
        _rec("proxied", 1, _profile("0.9"), source="fallback:0.9"),
        _rec("proxied", 2, _profile("2.0"), source="fallback:2.0.1"),
        _rec("proxied", 3, _profile("2.0")),
        # Mid-upgrade: 2.8 -> 3.0, and 4.0 -> 4.1 with new levels not finalized everywhere.
        _rec("upgrade-a", 1, _profile("2.8")),
        _rec("upgrade-a", 2, _profile("3.0")),
        _rec("upgrade-a", 3, _profile("3.0")),
        _rec("upgrade-b", 1, _profile("4.0"), finalized={"group.version": (0, 0)}),
        _rec("upgrade-b", 2, _profile("4.1"), finalized=v41),
        # Disjoint ranges that each overlap the application (the extremes block).
        _rec("disjoint", 1, {0: (0, 3), 18: (0, 3), 3: (0, 12)}),
        _rec("disjoint", 2, {0: (5, 9), 18: (0, 3), 3: (0, 12)}),
        _rec("disjoint", 3, {0: (2, 6), 18: (0, 3), 3: (0, 12)}),
        # A range above everything the application speaks.
        _rec("future", 1, {0: (90, 95), 18: (0, 9)}),
        # Latest record wins; on equal times the later line wins.
        _rec("timeline", 1, _profile("2.4"), "2026-11-20T10:00:00Z"),
        _rec("timeline", 1, _profile("3.3"), T1),
        _rec("timeline", 1, _profile("3.2"), "2026-11-21T10:00:00+00:00"),
        _rec("timeline", 2, _profile("3.3"), T0),
        _rec("timeline", 2, _profile("3.4"), T0),
        # Release guesses: only ignored keys, newer than known, between releases, custom.
        _rec("guesses", 1, {4: (0, 7)}),
        _rec("guesses", 2, _profile("4.3", set={0: (0, 40)})),
        _rec("guesses", 3, _profile("2.7", set={0: (0, release_profile("2.8")[0].max)})),
        _rec("guesses", 4, _profile("2.7", set={1: (0, 2), 0: (0, 40)})),
        _rec("guesses", 5, {}),
    ]


def alike_records() -> list[SnapshotRecord]:
    """More clusters alike (upgrading, one silent broker each) than the report names.

    Written in reverse order of their names, which sort before every edge case's.
    """
    return [record for n in reversed(range(REPORT_LIMIT + 5)) for record in (
        _rec(f"alike-{n:02}", 1, _profile("3.6")),
        _rec(f"alike-{n:02}", 2, _profile("3.7")),
        _rec(f"alike-{n:02}", 3, None, source="error", error=f"refused {n}"))]


def _compare(path: Path, features: FeatureSet | None = None) -> None:
    """The in-process engine's tables against the core's, row for row."""
    tables, data = compute_local(str(path), features=features)
    got = spark_tables(tables)
    want = core_tables(read_snapshots(path), features)
    for name, mine, theirs in zip(TABLES, got, want, strict=True):
        assert mine == theirs, (
            f"{name}: only in the engine {sorted(mine - theirs, key=str)[:3]}; "
            f"only in the core {sorted(theirs - mine, key=str)[:3]}")
    assert data.bad_records == 0


def _engines_agree(spark: Any, path: Path, features: FeatureSet | None = None,
                   history: bool = False, out: Path | None = None,
                   readiness: JudgedInventory | None = None) -> ReportData:
    """The Spark engine's tables equal the in-process engine's, every column of every row.

    With ``out``, the Spark engine runs the whole report there: the tables
    are read back from its files, and the report's data must be the
    in-process engine's too (but for the time taken).  Returns the latter.
    ``readiness`` (a judged client inventory, with ``out``) adds the
    upgrade_readiness table and section to both.
    """
    from kclient.fleet.pipeline import compute_tables, run_report

    local, data = compute_local(str(path), features=features, history=history,
                                readiness=readiness)
    if out is not None:
        theirs = run_report(spark, str(path), str(out), features=features, history=history,
                            readiness=readiness)
        assert attrs.evolve(theirs, elapsed=0.0) == attrs.evolve(data, elapsed=0.0)
        names = (*TABLES, READINESS_TABLE) if readiness is not None else TABLES
        for name in names:
            _same(name, whole_rows(spark.read.parquet(str(out / name))),
                  whole_rows(local.table(name)))
        return data
    tables = compute_tables(spark, str(path), features=features, history=history)
    try:
        for name in TABLES:
            _same(name, whole_rows(tables.table(name)), whole_rows(local.table(name)))
    finally:
        tables.release()
    return data


def _same(name: str, mine: set[tuple[Any, ...]], theirs: set[tuple[Any, ...]]) -> None:
    assert mine == theirs, (
        f"{name}: only on Spark {sorted(mine - theirs, key=str)[:2]}; "
        f"only in-process {sorted(theirs - mine, key=str)[:2]}")


def test_edge_cases_equal_the_core(tmp_path: Path) -> None:
    path = tmp_path / "edges.jsonl"
    write_snapshots(path, edge_records())
    _compare(path)


def test_custom_features_with_alternatives_equal_the_core(tmp_path: Path) -> None:
    path = tmp_path / "edges.jsonl"
    write_snapshots(path, edge_records())
    _compare(path, EXTRA_FEATURES)


def edge_inventory(tmp_path: Path) -> JudgedInventory:
    """A client inventory of some of the edge clusters (and one the snapshots lack), for 4.0.

    Broker metrics (a blocking nameless client observed sending Produce v2, requests no
    software accounts for) and a CSV inventory (named clients, one unprofiled).
    """
    metrics = tmp_path / "kip35.prom"
    metrics.write_text(
        'kafka_server_socket_server_metrics_connections{clientSoftwareName="unknown",'
        'clientSoftwareVersion="unknown",listener="PLAINTEXT",networkProcessor="0"} 4\n'
        'kafka_network_RequestMetrics_Count{name="DeprecatedRequestsPerSec",request="Produce",'
        'version="2",clientSoftwareName="unknown",clientSoftwareVersion="unknown"} 40\n'
        'kafka_network_RequestMetrics_Count{name="RequestsPerSec",request="Produce",'
        'version="2"} 55\n', encoding="utf-8")
    csv = tmp_path / "named.csv"
    csv.write_text("cluster,software_name,software_version,connections\n"
                   "single,apache-kafka-java,3.9.0,3\n"
                   "single,confluent-kafka-python,2.6.1-rdkafka-2.6.1,7\n"
                   "upgrade-a,librdkafka,99.0.0,2\n"
                   "elsewhere,kgo,v1.21.5,1\n", encoding="utf-8")
    return judge_input(ReadinessInput((str(metrics), str(csv)), "4.0"))


@pytest.mark.spark
@pytest.mark.integration
def test_the_engines_agree_on_the_edge_cases(spark: Any, tmp_path: Path) -> None:
    path = tmp_path / "edges.jsonl"
    write_snapshots(path, edge_records() + alike_records())
    data = _engines_agree(spark, path, EXTRA_FEATURES, out=tmp_path / "out",
                          readiness=edge_inventory(tmp_path))
    # The upgrade readiness section has something in every list.
    section = data.readiness
    assert section is not None and section.blocked and section.unknown and section.ready
    assert section.no_inventory and section.outside_names == ("elsewhere",)
    # Every figure of the report has something to count here.
    assert data.stale_brokers and data.unknown_brokers and data.fallback_brokers
    assert data.upgrading and data.silent_clusters and data.blocked
    # Of more clusters alike than the report names, the first by name are named.
    alike = tuple(f"alike-{n:02}" for n in range(REPORT_LIMIT))
    assert data.upgrading_names == alike and data.silent_names == alike
    assert tuple(b.cluster for b in data.blocked if b.feature == "BeyondTheApplication") == alike


@pytest.mark.spark
@pytest.mark.integration
def test_the_engines_agree_on_a_synthetic_fleet_and_its_history(spark: Any,
                                                                  tmp_path: Path) -> None:
    fleet = write_fleet(tmp_path / "fleet.jsonl", 40, seed=11)
    _engines_agree(spark, Path(fleet.path))
    history = write_fleet(tmp_path / "history.jsonl", 25, seed=5, history=4)
    data = _engines_agree(spark, Path(history.path), history=True, out=tmp_path / "out")
    assert len({day for day, *_counts in data.history_rows}) == 4


def test_known_truths_hold(tmp_path: Path) -> None:
    """Independent of the core: the KIP-35 example and a blocking broker by name."""
    path = tmp_path / "edges.jsonl"
    write_snapshots(path, edge_records())
    tables, _data = compute_local(str(path))
    apis = tables.cluster_api_versions.to_pylist()
    rows = {(r["cluster"], r["api_key"]): r for r in apis
            if r["cluster"] in ("kip35", "one-down")}
    assert (rows["kip35", 0]["cluster_min"], rows["kip35", 0]["cluster_max"]) == (1, 2)
    assert (rows["kip35", 1]["cluster_min"], rows["kip35", 1]["cluster_max"]) == (2, 3)
    assert rows["kip35", 2]["cluster_min"] is None
    assert list(rows["kip35", 2]["blocking"]) == [1]
    features = tables.feature_availability.to_pylist()

    def of(cluster: str) -> dict[str, Any]:
        return {r["feature"]: r for r in features if r["cluster"] == cluster}

    feats = of("upgrade-b")
    assert not feats["ConsumerGroupProtocol"]["available"]
    assert list(feats["ConsumerGroupProtocol"]["blocking"]) == [1]
    assert "group.version needs 1+; broker 1 has it at level 0" in (
        feats["ConsumerGroupProtocol"]["reason"])
    assert list(feats["ConsumerGroupProtocol"]["usable_on"]) == [2]
    one_down = of("one-down")
    assert one_down["ZSTD"]["state"] == "unknown" and not one_down["ZSTD"]["available"]
    assert list(one_down["ZSTD"]["unknown_brokers"]) == [2]
    assert "broker 2 (h2.one-down:9092) (connection refused)" in one_down["ZSTD"]["reason"]
    restart = of("restart")
    assert restart["ZSTD"]["state"] == "unavailable"
    assert list(restart["ZSTD"]["blocking"]) == [1]
    assert list(restart["ZSTD"]["stale_brokers"]) == [1]
    brokers = tables.broker_releases.to_pylist()
    states = {(r["cluster"], r["broker_id"]): r["state"] for r in brokers
              if r["cluster"] in ("restart", "all-stale", "mixed", "recovered")}
    assert states == {
        ("restart", 1): "stale", ("restart", 2): "answered", ("restart", 3): "answered",
        ("all-stale", 1): "stale", ("all-stale", 2): "stale", ("all-stale", 3): "stale",
        ("mixed", 1): "stale", ("mixed", 2): "unknown", ("mixed", 3): "answered",
        ("mixed", 5): "unknown", ("recovered", 1): "answered"}
    api_states = {r["cluster"]: r["state"] for r in apis if r["api_key"] == 0}
    assert api_states["all-stale"] == "available" and api_states["all-down"] == "unknown"
    releases = {r["broker_id"]: r["release_guess"] for r in brokers if r["cluster"] == "guesses"}
    assert releases[2] == "at least 4.3"
    assert releases[3] == "between 2.7 and 2.8 (ZooKeeper)"
    assert releases[1] == releases[5] == "unknown/custom"


RELEASES = known_releases()


@st.composite
def brokers(draw: st.DrawFn, cluster: str, node: int) -> SnapshotRecord:
    if draw(st.integers(0, 9)) == 0:
        return _rec(cluster, node, None, source="error", error="unreachable")
    release = draw(st.sampled_from(RELEASES))
    apis = _profile(release)
    keys = sorted(apis)
    for key in draw(st.lists(st.sampled_from(keys), max_size=3)):
        apis.pop(key, None)
    for key in draw(st.lists(st.sampled_from(keys), max_size=3)):
        if key in apis:
            low, high = apis[key]
            apis[key] = (low, max(low, high + draw(st.integers(-2, 2))))
    if draw(st.booleans()) and draw(st.booleans()):
        apis[draw(st.integers(93, 1100))] = (0, draw(st.integers(0, 3)))
    finalized = {name: (level, level) for name, level in draw(st.dictionaries(
        st.sampled_from(["group.version", "transaction.version", "metadata.version"]),
        st.integers(0, 3), max_size=2)).items()}
    source = f"fallback:{release}" if draw(st.integers(0, 7)) == 0 else "api_versions"
    when = draw(st.sampled_from([T0, T1]))
    return _rec(cluster, node, apis, when, source=source, finalized=finalized)


@st.composite
def fleets(draw: st.DrawFn) -> list[SnapshotRecord]:
    records: list[SnapshotRecord] = []
    for index in range(draw(st.integers(1, 12))):
        cluster = f"c{index}"
        for node in range(draw(st.integers(1, 4))):
            records.extend(draw(brokers(cluster, node)) for _ in range(draw(st.integers(1, 2))))
    return records


@settings(max_examples=25, deadline=None, derandomize=True,
          suppress_health_check=[HealthCheck.function_scoped_fixture,
                                 HealthCheck.too_slow, HealthCheck.data_too_large])
@given(fleet=fleets())
def test_generated_fleets_equal_the_core(tmp_path_factory: Any,
                                         fleet: list[SnapshotRecord]) -> None:
    path = tmp_path_factory.mktemp("fleet") / "fleet.jsonl"
    write_snapshots(path, fleet)
    _compare(path, EXTRA_FEATURES)


@pytest.mark.spark
@pytest.mark.integration
@settings(max_examples=2, deadline=None, derandomize=True,
          suppress_health_check=[HealthCheck.function_scoped_fixture,
                                 HealthCheck.too_slow, HealthCheck.data_too_large])
@given(fleet=fleets())
def test_the_engines_agree_on_generated_fleets(spark: Any, tmp_path_factory: Any,
                                               fleet: list[SnapshotRecord]) -> None:
    path = tmp_path_factory.mktemp("fleet") / "fleet.jsonl"
    write_snapshots(path, fleet)
    _engines_agree(spark, path, EXTRA_FEATURES)


def test_history_days_are_utc_days(tmp_path: Path) -> None:
    # 23:30 at UTC-5 is the next day in UTC; 00:30 at UTC+2 the day before.
    records = [_rec("east", 1, _profile("3.9"), "2026-11-22T23:30:00-05:00"),
               _rec("east", 1, _profile("3.9"), "2026-11-23T00:30:00+02:00")]
    path = tmp_path / "zones.jsonl"
    write_snapshots(path, records)
    tables, _data = compute_local(str(path), history=True)
    days = {str(r["day"]): r["observed_at"] for r in tables.broker_releases.to_pylist()}
    assert days == {"2026-11-23": "2026-11-22T23:30:00-05:00",
                    "2026-11-22": "2026-11-23T00:30:00+02:00"}


def test_views_alike_but_for_their_ids_each_name_their_own_brokers(tmp_path: Path) -> None:
    # One canonical shape, judged once: each view gets its own ids back, in the
    # lists and in the texts (also ids near the stand-ins' range).
    records = []
    for cluster, (old, new, silent) in {"low": (0, 1, 2), "high": (100, 2_000_000_001, 7),
                                        "top": (5, 2_147_483_647, 6)}.items():
        records += [_rec(cluster, old, _profile("2.0")), _rec(cluster, new, _profile("4.1")),
                    _rec(cluster, silent, None, error="refused")]
    path = tmp_path / "ids.jsonl"
    write_snapshots(path, records)
    _compare(path, EXTRA_FEATURES)
    tables, _data = compute_local(str(path), features=EXTRA_FEATURES)
    texts = " ".join(str(r["reason"]) for r in tables.cluster_api_versions.to_pylist())
    assert "broker 2000000001 offers" in texts and "broker 2147483647 offers" in texts
