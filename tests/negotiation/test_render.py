"""kclient.render: Kafka's kafka-broker-api-versions layout and DESIGN.md §5 JSON."""

from __future__ import annotations

from kclient import render
from kclient.negotiation import (
    ApplicationVersions,
    BrokerVersions,
    ClusterView,
    FeatureSet,
    fallback_broker,
    parse_features,
)


def _view() -> ClusterView:
    app = ApplicationVersions.from_catalog(min_versions={"Fetch": 4}, max_versions={"Metadata": 3})
    b1 = BrokerVersions(1, "10.0.0.5", 9092,
                        {0: (0, 11), 1: (0, 3), 3: (5, 12), 18: (3, 3), 999: (0, 5)},
                        rack="r1", software=("apache-kafka", "3.9.0"),
                        handshake=("ApiVersions v4: ok",))
    b2 = BrokerVersions(2, "10.0.0.6", 9092, {0: (0, 6), 1: (0, 12), 3: (0, 9), 18: (0, 2)})
    return ClusterView([b1, b2], app, name="prod")


def test_kafka_tool_layout() -> None:
    view = _view()
    lines = render.broker_block(view, view.brokers[0])
    assert lines[0] == "10.0.0.5:9092 (id: 1 rack: r1) -> ("
    body = lines[1].split(",\n\t")
    assert body[0] == "\tProduce(0): 0 to 11 [usable: 11]"
    assert "Fetch(1): 0 to 3 [unusable: node too old]" in body
    assert "Metadata(3): 5 to 12 [unusable: node too new]" in body
    assert "ListOffsets(2): UNSUPPORTED" in body
    assert "ApiVersions(18): 3 [usable: 3]" in body
    assert body[-1] == "UNKNOWN(999): 0 to 5"
    assert lines[2] == ")"
    assert "\trelease guess: unknown/custom" in lines
    assert "\tsource: api_versions; handshake: ApiVersions v4: ok" in lines
    assert "\tsoftware: apache-kafka 3.9.0" in lines
    b2 = render.broker_block(view, view.brokers[1])
    assert b2[0] == "10.0.0.6:9092 (id: 2 rack: null) -> ("


def test_table_has_cluster_section() -> None:
    text = render.api_versions_table(_view())
    assert "cluster prod: 2 broker(s)" in text
    assert "\tProduce(0): 0 to 6 [usable: 6]" in text
    assert "\tUNKNOWN(999): missing on broker(s) 2" in text


def test_api_versions_json_matches_design() -> None:
    view = _view()
    data = render.api_versions_json(view)
    assert set(data) == {"brokers", "cluster"}
    first = data["brokers"][0]
    assert set(first) == {"id", "host", "port", "source", "release_guess", "error", "apis"}
    assert first["apis"]["Produce"] == {"key": 0, "min": 0, "max": 11, "usable": 11}
    assert first["apis"]["Fetch"]["usable"] is None
    assert first["apis"]["UNKNOWN(999)"] == {"key": 999, "min": 0, "max": 5, "usable": None}
    assert data["cluster"]["Produce"] == {"key": 0, "min": 0, "max": 6, "usable": 6}
    # Both brokers have Metadata, but the application caps it at 3: no usable version.
    assert data["cluster"]["Metadata"] == {"key": 3, "min": 5, "max": 9, "usable": None}
    assert "UNKNOWN(999)" not in data["cluster"]


def test_failed_broker_and_fallback_guess() -> None:
    failed = BrokerVersions(3, "h", 1, error="refused", source="error")
    old = fallback_broker("0.9.0", 4, "h", 2)
    view = ClusterView([old, failed], name="x")
    data = render.api_versions_json(view)
    assert data["brokers"][0]["release_guess"] == "0.9"
    assert data["brokers"][1] == {"id": 3, "host": "h", "port": 1, "source": "error",
                                  "release_guess": None, "error": "refused", "apis": {}}
    # Strict by default: the silent broker leaves every usable version unknown.
    assert data["cluster"]["Produce"]["usable"] is None
    text = render.api_versions_table(view)
    assert "h:1 (id: 3 rack: null) -> ERROR: refused" in text
    assert "1 never answered, so verdicts they could change are unknown: 3 (refused)" in text
    assert "[unknown: broker(s) 3 have not answered]" in text
    lenient = ClusterView([old, failed], strict=False, name="x")
    assert render.api_versions_json(lenient)["cluster"]["Produce"]["usable"] == 1
    assert "1 never answered, ignored (lenient mode)" in render.api_versions_table(lenient)
    assert render.cluster_json(ClusterView([failed])) == {}


def test_features_json_and_table() -> None:
    view = ClusterView([fallback_broker("2.1", 1, "h", 1), fallback_broker("2.0", 2, "h", 2)],
                       name="c")
    features = parse_features(
        "version: 1\nfeatures:\n  - name: zstd\n    requires: [{api: Produce, min: 7}]\n"
        "  - name: idem\n    requires: [{api: InitProducerId}]\n")
    report = view.evaluate(features)
    data = render.features_json(view, report)
    assert data["features"]["zstd"] == {
        "available": False, "state": "unavailable", "brokers": {"1": True, "2": False},
        "reasons": ["Produce needs 7+; broker 2 offers 0-6"], "unknown_brokers": [],
        "stale_brokers": [], "ignored_brokers": []}
    assert data["features"]["idem"]["available"] is True
    assert data["cluster"]["Produce"] == {"key": 0, "min": 0, "max": 6, "usable": 6}
    table = render.features_table(view, report)
    assert "zstd     no         1:yes 2:no   Produce needs 7+; broker 2 offers 0-6" in table
    assert "idem     yes        1:yes 2:yes  InitProducerId v1" in table
    assert render.features_table(view, view.evaluate(FeatureSet(()))).count("\n") == 1


def test_multi_cluster_json() -> None:
    assert render.multi_cluster_json({"a": {"x": 1}}) == {"x": 1}
    assert render.multi_cluster_json({"a": {}, "b": {}}) == {"clusters": {"a": {}, "b": {}}}


def test_outside_names_are_printed_with_control_characters_escaped() -> None:
    evil = BrokerVersions(1, "h\x1b[2J", 9092, {18: (0, 3)}, rack="r\n1",
                          software=("k\x1b]0;x\x07", "1\x9b"),
                          finalized_features={"m\x1b.v": (1, 2)})
    failed = BrokerVersions(2, "h2", 9092, {}, error="refused \x1b[31mred\x1b[0m\nforged line")
    view = ClusterView([evil, failed], name="c\x1b[1m")
    features = parse_features("version: 1\nfeatures:\n  - name: A\n    requires:\n"
                              "      - {api: ApiVersions}\n")
    tables = render.api_versions_table(view) + render.features_table(view, view.evaluate(features))
    assert "\x1b" not in tables and "\x9b" not in tables and "\x07" not in tables
    assert "h\\x1b[2J:9092 (id: 1 rack: r\\n1) -> (" in tables
    assert "ERROR: refused \\x1b[31mred\\x1b[0m\\nforged line" in tables
    assert "\tsoftware: k\\x1b]0;x\\x07 1\\x9b" in tables
    assert "m\\x1b.v=2" in tables
    assert "cluster c\\x1b[1m:" in tables
    assert not any(line.startswith("forged") for line in tables.splitlines())
