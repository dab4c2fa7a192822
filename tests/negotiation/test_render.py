"""kclient.commands.render: Kafka's kafka-broker-api-versions layout and the JSON contracts."""

from __future__ import annotations

from kclient.commands import render
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
    assert lines[0] == "10.0.0.5:9092 (id: 1 rack: r1 isFenced: false) -> ("
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
    assert b2[0] == "10.0.0.6:9092 (id: 2 rack: null isFenced: false) -> ("


def test_table_has_cluster_section() -> None:
    text = render.api_versions_table(_view())
    assert "cluster prod: 2 broker(s)" in text
    assert "\tProduce(0): 0 to 6 [usable: 6]" in text
    assert "\tUNKNOWN(999): missing on broker(s) 2" in text


def test_api_versions_json_uses_snapshot_names() -> None:
    view = _view()
    data = render.api_versions_json(view)
    assert list(data) == ["cluster", "strict", "stale_brokers", "unknown_brokers",
                          "ignored_brokers", "brokers", "cluster_wide"]
    first = data["brokers"][0]
    assert first["broker_id"] == 1 and first["rack"] == "r1" and first["state"] == "answered"
    assert first["software"] == {"name": "apache-kafka", "version": "3.9.0"}
    apis = {a["name"]: a for a in first["api_versions"]}
    assert apis["Produce"] == {"api_key": 0, "name": "Produce", "min_version": 0,
                               "max_version": 11, "usable_version": 11}
    assert apis["Fetch"]["usable_version"] is None
    assert apis["UNKNOWN(999)"]["max_version"] == 5
    wide = {a["name"]: a for a in data["cluster_wide"]}
    assert wide["Produce"] == {"api_key": 0, "name": "Produce", "min_version": 0,
                               "max_version": 6, "usable_version": 6, "state": "available",
                               "missing_brokers": [], "blocking_brokers": [],
                               "unknown_brokers": [], "reason": None}
    # Both brokers have Metadata, but the application caps it at 3: no usable version.
    assert wide["Metadata"]["min_version"] == 5 and wide["Metadata"]["max_version"] == 9
    assert wide["Metadata"]["usable_version"] is None
    assert wide["Metadata"]["state"] == "unavailable" and wide["Metadata"]["reason"]
    # What the table lists under "not on every broker" is in the JSON too.
    assert wide["UNKNOWN(999)"]["missing_brokers"] == [2]
    assert wide["UNKNOWN(999)"]["min_version"] is None


def test_one_shape_for_one_and_many_clusters() -> None:
    one = render.api_versions_document([_view()])
    two = render.api_versions_document([_view(), ClusterView([], name="empty")])
    assert one["format"] == two["format"] == "kclient.api-versions/1"
    assert set(one) == set(two) == {"format", "all_apis", "clusters"}
    assert [c["cluster"] for c in two["clusters"]] == ["prod", "empty"]
    assert two["clusters"][1]["cluster_wide"] == []


def test_controller_only_keys_only_with_all_apis() -> None:
    broker = BrokerVersions(1, "h", 1, {0: (0, 11), 18: (0, 4), 52: (0, 1), 62: (0, 4)})
    view = ClusterView([broker], name="kraft")
    default = render.api_versions_table(view)
    everything = render.api_versions_table(view, all_apis=True)
    assert "Vote(52)" not in default and "BrokerRegistration(62)" not in default
    assert "\tVote(52): 0 to 1" in everything and "BrokerRegistration(62)" in everything
    keys = [a["api_key"] for a in render.api_versions_json(view)["brokers"][0]["api_versions"]]
    assert keys == [0, 18]
    doc = render.api_versions_document([view], all_apis=True)
    assert doc["all_apis"] is True
    assert [a["api_key"] for a in doc["clusters"][0]["cluster_wide"]] == [0, 18, 52, 62]


def test_cluster_block_cannot_be_taken_for_a_broker() -> None:
    text = render.api_versions_table(_view())
    heads = [line for line in text.splitlines() if "-> (" in line]
    assert heads == ["10.0.0.5:9092 (id: 1 rack: r1 isFenced: false) -> (",
                     "10.0.0.6:9092 (id: 2 rack: null isFenced: false) -> ("]
    assert "cluster-wide usable versions (KIP-35: on every broker):" in text


def test_failed_broker_and_fallback_guess() -> None:
    failed = BrokerVersions(3, "h", 1, error="refused", source="error")
    old = fallback_broker("0.9", 4, "h", 2)
    view = ClusterView([old, failed], name="x")
    data = render.api_versions_json(view)
    assert data["brokers"][0]["release_guess"] == "0.9.0"
    assert data["brokers"][0]["source"] == "fallback:0.9.0"
    assert data["brokers"][1]["source"] == "error" and data["brokers"][1]["error"] == "refused"
    assert data["brokers"][1]["api_versions"] == [] and data["unknown_brokers"] == [3]
    # Strict by default: the silent broker leaves every usable version unknown.
    wide = {a["name"]: a for a in data["cluster_wide"]}
    assert wide["Produce"]["usable_version"] is None and wide["Produce"]["state"] == "unknown"
    assert wide["Produce"]["unknown_brokers"] == [3]
    text = render.api_versions_table(view)
    assert "h:1 (id: 3 rack: null isFenced: false) -> ERROR: refused" in text
    # The failed broker says why, not "(negotiation failed)".
    assert "\tsource: none: never answered ApiVersions (refused)" in text
    assert "negotiation failed" not in text
    assert "\tsource: fallback:0.9.0" in text
    assert ("1 never answered, so verdicts they could change are unknown (to ignore them: "
            "strict=False): 3 (refused)") in text
    assert "[unknown: broker(s) 3 have not answered]" in text
    lenient = ClusterView([old, failed], strict=False, name="x")
    produce = render.api_versions_json(lenient)["cluster_wide"][0]
    assert produce["name"] == "Produce" and produce["usable_version"] == 1
    assert "1 never answered, ignored (lenient mode)" in render.api_versions_table(lenient)
    assert render.cluster_wide_json(ClusterView([failed])) == []


def test_stale_broker_source_names_the_error() -> None:
    from datetime import UTC, datetime

    answered = BrokerVersions(1, "h", 1, {0: (0, 9)}, answered_at=datetime.now(UTC))
    stale = answered.went_stale("connection refused")
    text = "\n".join(render.broker_block(ClusterView([stale]), stale))
    assert "\tsource: last answer (api_versions); unreachable now: connection refused" in text


def test_broker_errors_name_options_in_the_readers_words() -> None:
    """A broker's error keeps the options it names: the tables print them as the
    command line's flags when given its vocabulary, as Python names otherwise."""
    from datetime import UTC, datetime

    from kclient.commands.vocabulary import CLI_VOCABULARY
    from kclient.options import Option, Text

    why = Text("connect timed out; raise ", Option("connect_timeout"))
    answered = BrokerVersions(1, "h", 1, {0: (0, 9)}, answered_at=datetime.now(UTC))
    silent = BrokerVersions(2, "h", 2, error=why)
    view = ClusterView([answered.went_stale(why), silent])
    python = render.api_versions_table(view)
    cli = render.api_versions_table(view, vocabulary=CLI_VOCABULARY)
    assert "unreachable now: connect timed out; raise connect_timeout" in python
    assert "unreachable now: connect timed out; raise --timeout" in cli
    assert "ERROR: connect timed out; raise --timeout" in cli
    assert "2 (connect timed out; raise --timeout)" in cli and "connect_timeout" not in cli
    assert "raise --timeout" in (render.silent_brokers_text(view, CLI_VOCABULARY) or "")


def test_features_json_and_table() -> None:
    view = ClusterView([fallback_broker("2.1", 1, "h", 1), fallback_broker("2.0", 2, "h", 2)],
                       name="c")
    features = parse_features(
        "version: 1\nfeatures:\n  - name: zstd\n    requires: [{api: Produce, min: 7}]\n"
        "  - name: idem\n    requires: [{api: InitProducerId}]\n")
    report = view.evaluate(features)
    data = render.features_json(view, report)
    zstd, idem = data["features"]
    assert zstd == {
        "name": "zstd", "state": "unavailable", "available": False, "versions": [],
        "brokers": [{"broker_id": 1, "usable": True}, {"broker_id": 2, "usable": False}],
        "blocking_brokers": [2], "unknown_brokers": [], "stale_brokers": [],
        "ignored_brokers": [], "reasons": ["Produce needs 7+; broker 2 offers 0-6"],
        "notes": []}
    assert idem["available"] is True
    assert idem["versions"] == [{"api_key": 22, "name": "InitProducerId", "version": 1}]
    assert [b["broker_id"] for b in data["brokers"]] == [1, 2]
    assert data["cluster_wide"][0]["name"] == "Produce"
    doc = render.features_document([(view, report)])
    assert doc["format"] == "kclient.features/1" and len(doc["clusters"]) == 1
    table = render.features_table(view, report)
    assert "zstd     no         1 of 2; blocking: 2  Produce needs 7+; broker 2 offers 0-6" in table
    assert "idem     yes        2 of 2               InitProducerId v1" in table
    wide = render.features_table(view, report, wide=True)
    assert "zstd     no         1:yes 2:no   Produce needs 7+; broker 2 offers 0-6" in wide
    assert render.features_table(view, view.evaluate(FeatureSet(()))).count("\n") == 1


def test_identical_reasons_are_grouped() -> None:
    reason = ("Produce needs 7+; broker 1 offers 0-6; broker 2 offers 0-6; broker 3 lacks it; "
              "broker 5 offers 0-6; broker 4 lacks it; Produce v6 removed in Kafka 9.9")
    assert render.group_reason(reason) == (
        "Produce needs 7+; brokers 1-2, 5 offer 0-6; brokers 3-4 lack it; "
        "Produce v6 removed in Kafka 9.9")
    assert render.group_reason("x; broker 1 has it at level 0; broker 2 has it at level 0") == (
        "x; brokers 1-2 have it at level 0")
    assert render.group_reason("a; broker 7 has not finalized it") == (
        "a; broker 7 has not finalized it")
    assert render.id_ranges([9, 1, 2, 3, 5, 10]) == "1-3, 5, 9-10"


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
    assert "h\\x1b[2J:9092 (id: 1 rack: r\\n1 isFenced: false) -> (" in tables
    assert "ERROR: refused \\x1b[31mred\\x1b[0m\\nforged line" in tables
    assert "\tsoftware: k\\x1b]0;x\\x07 1\\x9b" in tables
    assert "m\\x1b.v=2" in tables
    assert "cluster c\\x1b[1m:" in tables
    assert not any(line.startswith("forged") for line in tables.splitlines())


def test_brokers_sharing_a_table_render_as_each_alone() -> None:
    """The table renders each distinct API table once (linear in brokers): same text."""
    tables = [{0: (0, 11), 1: (0, 3), 18: (0, 3)}, {0: (0, 9), 3: (0, 12), 18: (0, 2)}]
    brokers = [BrokerVersions(i, f"b{i}", 9092, tables[i % 2]) for i in range(1, 41)]
    brokers.append(BrokerVersions(99, "gone", 9092, {}, error="refused"))
    view = ClusterView(brokers, name="many")
    table = render.api_versions_table(view)
    alone = [line for b in view.brokers for line in render.broker_block(view, b)]
    assert table.split("\n")[:len("\n".join(alone).split("\n"))] == "\n".join(alone).split("\n")
    document = render.api_versions_json(view)
    assert [b["api_versions"] for b in document["brokers"][:2]] == [
        [{"api_key": k, "name": view.application.name_of(k), "min_version": r[0],
          "max_version": r[1], "usable_version": view.application.version_with(
              k, view.brokers[i].apis[k])} for k, r in sorted(tables[(i + 1) % 2].items())]
        for i in range(2)]
    first = document["brokers"][0]["api_versions"]
    assert first is not document["brokers"][2]["api_versions"]  # each broker its own list
    assert first[0] is not document["brokers"][2]["api_versions"][0]


def test_release_guess_is_made_once_per_table() -> None:
    from kclient.negotiation import releases

    releases._guess_text.cache_clear()
    view = ClusterView([BrokerVersions(i, f"b{i}", 9092, {0: (0, 11), 18: (0, 4)})
                        for i in range(1, 101)], name="same")
    render.api_versions_table(view)
    info = releases._guess_text.cache_info()
    assert (info.misses, info.hits) == (1, 99)
