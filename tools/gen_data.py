"""Regenerate kclient's shipped data from the reference material in ../shared.

Writes ``schemas/api_catalog.json`` (every API key a broker can advertise, with
the version range kclient applications may use by default) and
``kclient/negotiation/releases.json`` (what brokers of each Apache Kafka release
advertise).  Only facts are carried over: keys, names and version numbers.  The
descriptions are our own and live in this file.

Run from the repository root:  python tools/gen_data.py [--shared ../shared]
"""

from __future__ import annotations

import argparse
import itertools
import json
import re
from pathlib import Path
from typing import Any

# Our one-line descriptions of each API, keyed by API key.
ABOUT: dict[int, str] = {
    0: "Append record batches to partitions.",
    1: "Read record batches from partitions (consumers and followers).",
    2: "Look up offsets by timestamp, earliest or latest.",
    3: "Learn the brokers, topics, partitions and leaders of the cluster.",
    4: "Controller tells a broker which replicas it leads or follows (ZooKeeper mode).",
    5: "Controller tells a broker to stop replicas (ZooKeeper mode).",
    6: "Controller pushes cluster metadata to brokers (ZooKeeper mode).",
    7: "A broker asks the controller for a clean shutdown.",
    8: "Store committed offsets for a consumer group.",
    9: "Read committed offsets of a consumer group.",
    10: "Find the broker that coordinates a group or transaction.",
    11: "Join a consumer group (classic protocol).",
    12: "Keep a classic group membership alive.",
    13: "Leave a classic consumer group.",
    14: "Distribute partition assignments in a classic group.",
    15: "Describe consumer groups and their members.",
    16: "List the groups a broker coordinates.",
    17: "Pick a SASL mechanism before authenticating.",
    18: "Ask a broker which API versions it supports.",
    19: "Create topics.",
    20: "Delete topics.",
    21: "Delete records below an offset.",
    22: "Obtain a producer id and epoch (idempotence, transactions).",
    23: "Find the end offset of a leader epoch (log truncation).",
    24: "Add partitions to an ongoing transaction.",
    25: "Add a group's offsets to an ongoing transaction.",
    26: "Commit or abort a transaction.",
    27: "Coordinator writes transaction markers to partition leaders.",
    28: "Commit offsets inside a transaction.",
    29: "Describe access control entries.",
    30: "Create access control entries.",
    31: "Delete access control entries.",
    32: "Read broker, topic and other resource configurations.",
    33: "Replace resource configurations (superseded by incremental alter).",
    34: "Move replicas between log directories.",
    35: "Describe log directories and their replicas.",
    36: "Carry SASL authentication tokens inside Kafka requests.",
    37: "Add partitions to existing topics.",
    38: "Create a delegation token.",
    39: "Extend a delegation token's lifetime.",
    40: "Expire a delegation token.",
    41: "Describe delegation tokens.",
    42: "Delete consumer groups.",
    43: "Trigger preferred or unclean leader election.",
    44: "Change resource configurations key by key.",
    45: "Start or cancel partition reassignments.",
    46: "List ongoing partition reassignments.",
    47: "Delete committed offsets of a group.",
    48: "Describe client quotas.",
    49: "Change client quotas.",
    50: "Describe SCRAM credentials of users.",
    51: "Create or delete SCRAM credentials.",
    52: "KRaft: ask for a vote in a leader election.",
    53: "KRaft: a new leader announces its epoch.",
    54: "KRaft: a leader gives up its epoch.",
    55: "Describe the KRaft controller quorum.",
    56: "Leader asks the controller to change a partition's ISR.",
    57: "Change finalized feature levels of the cluster.",
    58: "Forward a request to the controller inside an envelope.",
    59: "KRaft: fetch a metadata snapshot.",
    60: "Describe the cluster: brokers, controller, cluster id.",
    61: "Describe active producers of partitions.",
    62: "A KRaft broker registers with the controller.",
    63: "A KRaft broker heartbeats to the controller.",
    64: "Remove a broker registration.",
    65: "Describe transactions.",
    66: "List transactions.",
    67: "Allocate a block of producer ids.",
    68: "Heartbeat of the consumer group protocol of KIP-848.",
    69: "Describe groups of the KIP-848 consumer protocol.",
    70: "A KRaft controller registers with the quorum.",
    71: "Ask which client metrics to push (KIP-714).",
    72: "Push client metrics to the broker (KIP-714).",
    73: "Assign replicas to log directories (JBOD in KRaft).",
    74: "List client configuration resources (formerly client metrics resources).",
    75: "Describe topic partitions with pagination.",
    76: "Heartbeat of a share group member (KIP-932).",
    77: "Describe share groups (KIP-932).",
    78: "Fetch records for a share group (KIP-932).",
    79: "Acknowledge records delivered to a share group (KIP-932).",
    80: "Add a voter to the KRaft quorum.",
    81: "Remove a voter from the KRaft quorum.",
    82: "Update a voter's endpoints in the KRaft quorum.",
    83: "Initialize persisted share-group state.",
    84: "Read persisted share-group state.",
    85: "Write persisted share-group state.",
    86: "Delete persisted share-group state.",
    87: "Read a summary of persisted share-group state.",
    88: "Heartbeat of a Kafka Streams group member (KIP-1071).",
    89: "Describe Kafka Streams groups (KIP-1071).",
    90: "Describe offsets of share groups.",
    91: "Alter offsets of share groups.",
    92: "Delete offsets of share groups.",
}

LATEST_RELEASE = "4.3"


def _strip_comments(text: str) -> str:
    return re.sub(r"^\s*//.*$", "", text, flags=re.M)


def _parse_versions(text: str | None) -> tuple[int, int] | None:
    if text is None or text == "none":
        return None
    if text.endswith("+"):
        return int(text[:-1]), 1 << 15
    lo, _, hi = text.partition("-")
    return int(lo), int(hi or lo)


def build_catalog(shared: Path, schemas: Path | None = None) -> dict[str, Any]:
    """The API catalog: each key's default application range is what kclient's codec
    sends, read from the shipped specs (``schemas/``, written by tools/gen_schemas.py
    from the spec corpora): the spec's stable versions (an unstable one, which the
    spec's provenance lists, is decoded, never chosen).  Keys without a
    stable spec version keep the newest release's advertised range and say so
    (``sendable`` null): negotiable for other clients, not encodable by kclient."""
    raw = json.loads((shared / "kafka-releases" / "broker-api-versions.json").read_text())
    latest = raw["releases"][LATEST_RELEASE]
    ordered = sorted(raw["releases"].items(), key=lambda kv: release_key(kv[0]))
    schemas = schemas or Path(__file__).resolve().parent.parent / "schemas"
    specs: dict[int, dict[str, Any]] = {}
    for path in sorted(schemas.glob("*Request.json")):
        spec = json.loads(path.read_text())
        if spec.get("type") == "request":
            specs[int(spec["apiKey"])] = spec
    apis = []
    for key_text, name in sorted(raw["api_names"].items(), key=lambda kv: int(kv[0])):
        key = int(key_text)
        spec = specs.get(key)
        broker = latest.get(key_text)
        codec = sendable = None
        if spec is not None:
            codec = _parse_versions(spec["validVersions"])
            if codec is None:
                raise SystemExit(f"schemas/{spec['name']}.json has no versions")
            # tools/gen_schemas.py records the decode-only versions (the unstable newest
            # one, or an early-access first one) and checks the others are one range.
            unstable = _parse_versions(spec.get("provenance", {}).get("unstable"))
            stable = [v for v in range(codec[0], codec[1] + 1)
                      if unstable is None or not unstable[0] <= v <= unstable[1]]
            sendable = (stable[0], stable[-1]) if stable else None
            flexible = _parse_versions(spec.get("flexibleVersions"))
            deprecated = _parse_versions(spec.get("deprecatedVersions"))
        else:
            flexible, deprecated = (0, 1 << 15), None
        if sendable is None and broker is None:
            raise SystemExit(f"no facts for api key {key}")
        lo, hi = sendable or broker
        apis.append(
            {
                "key": key,
                "name": name,
                "min_version": lo,
                "max_version": hi,
                # The versions the shipped spec describes (encoded and decoded), and
                # those kclient chooses to send (without an unstable newest version).
                "codec_versions": list(codec) if codec else None,
                "sendable": list(sendable) if sendable else None,
                "flexible_from": flexible[0] if flexible else None,
                "deprecated": list(deprecated) if deprecated else None,
                "about": ABOUT[key],
                # The first Apache Kafka release whose brokers advertise the key.
                "since": next((rel for rel, apis in ordered if key_text in apis), None),
                # Which listeners serve the key (the spec's "listeners"); None without a spec.
                "listeners": sorted(spec.get("listeners", ())) if spec is not None else None,
                # Names Kafka used for the key before (ListClientMetricsResources for 74).
                "former_names": raw.get("api_name_aliases", {}).get(key_text, []),
            }
        )
    return {
        "format": 1,
        "about": "Kafka API keys with the version range kclient applications use by default: "
        "the versions kclient's codec sends (its shipped specs, unstable versions left out); "
        "for a key without a stable spec version (sendable null), the Apache Kafka "
        f"{LATEST_RELEASE} broker's range, negotiable but not encodable by kclient.",
        "apis": apis,
    }


# -- release profiles ---------------------------------------------------------------
#
# broker-api-versions.json records ZooKeeper-mode brokers up to 3.9 and KRaft brokers
# from 4.0 (Kafka 4.0 removed ZooKeeper mode).  KRaft brokers of 2.8-3.9 are derived
# here: the ZooKeeper broker's ranges of the same release (both modes run the same
# request handlers, so a key both advertise has the same range), kept only for keys
# whose spec lists the "broker" listener, then corrected by the facts below.

KRAFT_FIRST = "2.8"  # KIP-500 early access
ZOOKEEPER_LAST = "3.9"  # 4.0 removed ZooKeeper mode

# Keys a ZooKeeper broker advertises whose spec lists the "broker" listener, but
# which KRaft brokers gained only in a later release: key -> (release, why).
_PREVIEW = ("the 2.8 KRaft early-access broker lacks it (Kafka 2.8's KRaft README lists "
            "{what} among the missing features); KRaft brokers serve it from 3.0")
KRAFT_SINCE: dict[int, tuple[str, str]] = {
    **{k: ("3.0", "KIP-730: producer ids in KRaft come from the controller "
           "(AllocateProducerIds, 3.0); before that the 2.8 early-access broker has no "
           "idempotent or transactional producer support")
       for k in (22, 24, 25, 26, 28)},
    **{k: ("3.0", _PREVIEW.format(what="the authorizer")) for k in (29, 30, 31)},
    37: ("3.0", _PREVIEW.format(what="adding partitions to existing topics")),
    43: ("3.0", _PREVIEW.format(what="unclean leader election")),
    45: ("3.0", _PREVIEW.format(what="partition reassignment")),
    46: ("3.0", _PREVIEW.format(what="partition reassignment")),
    33: ("3.0", "the 2.8 early-access broker forwards only IncrementalAlterConfigs; "
         "the legacy AlterConfigs reached KRaft brokers in 3.0 (franz-go records the same)"),
    48: ("3.0", "not served by the 2.8 early-access broker, which has AlterClientQuotas only "
         "(from franz-go's recorded 2.8 KRaft broker; no other source)"),
    57: ("3.0", "Kafka's source: the 2.8.0 spec lists the zkBroker listener only; from 3.0.0 "
         "it lists broker too. At 3.0.0 and 3.1.0 UpdateFeatures is forwardable and the "
         "controller does not serve it, so a broker drops it from its answer once its "
         "forwarding channel has connected to the active controller, but advertises v0 "
         "until then, as every broker does after a start (KRAFT_EVIDENCE; franz-go lists "
         "it from 3.0 too); 3.2.0 made it non-forwardable, advertised for good"),
    50: ("3.5", "KIP-900: SCRAM credentials in KRaft arrived in 3.5"),
    51: ("3.5", "KIP-900: SCRAM credentials in KRaft arrived in 3.5"),
    **{k: ("3.6", "delegation tokens in KRaft arrived in 3.6 (KAFKA-15219, on top of "
           "KIP-900's SCRAM support)") for k in (38, 39, 40, 41)},
}

# Keys ZooKeeper brokers never advertise that KRaft brokers do: key -> list of
# (release, max version or None for "no longer advertised", why), each step holding
# from its release on.  The steps for 55, 58 and 64 before 3.3 are read from Kafka's
# source at the release tags (KRAFT_EVIDENCE below).
KRAFT_ONLY: dict[int, list[tuple[str, int | None, str]]] = {
    55: [("2.8", 0, "KIP-595: the spec lists the broker listener from 2.8.0 and KRaft "
          "brokers advertise it (not forwardable in 2.8, forwarded to a controller that "
          "advertises it in 3.0-3.2)"),
         ("3.3", 1, "KIP-836: v1 adds voter lag"),
         ("3.9", 2, "KIP-853: dynamic KRaft quorums (v2)")],
    58: [("2.8", 0, "KRaft brokers of 2.8.0-3.1.x add Envelope to their ApiVersions answer "
          "whenever they forward to the controller (ApiVersionManager, a stop-gap for "
          "testing forwarding)"),
         ("3.2", None, "3.2.0's ApiVersionManager no longer adds Envelope; its spec lists "
          "the controller listener only")],
    64: [("2.8", 0, "the 2.8.0 spec lists the broker and controller listeners and the "
          "2.8 controller advertises it, so the forwarding broker does too"),
         ("3.0", None, "the 3.0.0-3.2.x specs list the controller listener only"),
         ("3.3", 0, "the 3.3.0 spec lists the broker listener again: brokers forward "
          "UnregisterBroker to the controller")],
    74: [("3.7", 0, "KIP-714: ListClientMetricsResources")],
    75: [("3.8", 0, "KIP-966: DescribeTopicPartitions")],
    80: [("3.9", 0, "KIP-853: AddRaftVoter")],
    81: [("3.9", 0, "KIP-853: RemoveRaftVoter")],
}

# What Apache Kafka's own source at the release tags says about the KRaft profiles
# where they differ from the rule above (the ZooKeeper broker's ranges for
# broker-listener keys) or from franz-go.  Our own words; tools/crosscheck_kafka_source.py
# recomputes every KRaft profile 2.8-3.9 from a Kafka git checkout and prints where
# it differs from releases.json (with these facts: nowhere).
KRAFT_EVIDENCE: list[dict[str, str]] = [
    {"keys": "58 Envelope", "releases": "2.8-kraft, 3.0-kraft, 3.1-kraft",
     "tags": "2.8.0, 3.0.0, 3.1.0 (and 2.8.2, 3.0.2, 3.1.2)",
     "file": "core/src/main/scala/kafka/server/ApiVersionManager.scala",
     "says": "DefaultApiVersionManager.apiVersionResponse appends Envelope (v0 to its "
             "latest, 0) to the answer whenever a forwarding manager exists, which "
             "BrokerServer always passes (Some(forwardingManager)); a comment calls it a "
             "temporary workaround for testing forwarding"},
    {"keys": "58 Envelope", "releases": "3.2-kraft and later",
     "tags": "3.2.0", "file": "core/src/main/scala/kafka/server/ApiVersionManager.scala",
     "says": "the workaround is gone: the answer holds only the broker listener's APIs; "
             "EnvelopeRequest.json lists the controller listener only"},
    {"keys": "55 DescribeQuorum", "releases": "2.8-kraft",
     "tags": "2.8.0",
     "file": "clients/src/main/resources/common/message/DescribeQuorumRequest.json, "
             "clients/src/main/java/org/apache/kafka/common/protocol/ApiKeys.java",
     "says": "listeners broker and controller, version 0; DESCRIBE_QUORUM is not "
             "forwardable, so the broker advertises it unconditionally"},
    {"keys": "55 DescribeQuorum", "releases": "3.0-kraft, 3.1-kraft, 3.2-kraft",
     "tags": "3.0.0, 3.1.0, 3.2.0",
     "file": "ApiKeys.java, DescribeQuorumRequest.json, "
             "clients/src/main/java/org/apache/kafka/common/requests/ApiVersionsResponse.java",
     "says": "DESCRIBE_QUORUM became forwardable; intersectForwardableApis keeps a "
             "forwardable API when the active controller advertises it, and the controller "
             "(SimpleApiVersionManager for the controller listener, ControllerServer.scala) "
             "does since the spec lists the controller listener: v0 stays advertised"},
    {"keys": "64 UnregisterBroker", "releases": "2.8-kraft",
     "tags": "2.8.0", "file": "UnregisterBrokerRequest.json, ApiKeys.java",
     "says": "listeners broker and controller, version 0, forwardable; the 2.8 controller "
             "advertises it, so the broker does"},
    {"keys": "64 UnregisterBroker", "releases": "3.0-kraft, 3.1-kraft, 3.2-kraft",
     "tags": "3.0.0, 3.1.0, 3.2.0", "file": "UnregisterBrokerRequest.json",
     "says": "listeners controller only: brokers do not advertise it; 3.3.0 lists the "
             "broker listener again"},
    {"keys": "57 UpdateFeatures", "releases": "3.0-kraft, 3.1-kraft",
     "tags": "3.0.0, 3.1.0, 3.2.0",
     "file": "UpdateFeaturesRequest.json, ApiKeys.java, "
             "core/src/main/scala/kafka/server/ApiVersionManager.scala, "
             "core/src/main/scala/kafka/api/ApiVersion.scala, "
             "core/src/main/scala/kafka/server/BrokerToControllerChannelManager.scala, "
             "core/src/main/scala/kafka/server/ControllerApis.scala",
     "says": "3.0.0 and 3.1.0: listeners zkBroker and broker, forwardable, and ControllerApis "
             "has no UPDATE_FEATURES case, so the controller never advertises it. "
             "DefaultApiVersionManager passes forwardingManager.controllerApiVersions to "
             "ApiVersion.apiVersionsResponse, which answers with ApiVersionsResponse.filterApis "
             "(every broker-listener API, UpdateFeatures v0 included) while that is None and "
             "intersects the forwardable APIs with the controller's only once it is known. It "
             "is known once the broker's forwarding channel (BrokerToControllerChannelManager, "
             "a NetworkClient that connects on its first request and has no idle timeout) has "
             "sent a request: a forwarded admin request, an auto-created topic (FindCoordinator "
             "creating __consumer_offsets included) or a producer-id block for InitProducerId. "
             "So a broker advertises UpdateFeatures v0 from its start until its first forwarded "
             "request, and not after (until that connection drops); a request sent meanwhile "
             "is forwarded to a controller that does not serve it. The profile describes the "
             "broker as it starts, the state every broker is in after a restart (the answer "
             "an outside check of ApiVersionManager finds); 3.2.0 declares UPDATE_FEATURES "
             "non-forwardable, so from 3.2 it stays advertised"},
    {"keys": "71 GetTelemetrySubscriptions, 72 PushTelemetry",
     "releases": "3.7-kraft and later", "tags": "3.7.0",
     "file": "ApiVersionsResponse.java (filterApis, intersectForwardableApis)",
     "says": "both are skipped unless client telemetry is enabled (a metrics reporter "
             "that receives client telemetry is configured)"},
]

# Broker-listener keys no default KRaft profile advertises, and why.
KRAFT_NOT_DEFAULT: dict[int, str] = {
    71: "advertised only when a client telemetry plugin is configured (KIP-714)",
    72: "advertised only when a client telemetry plugin is configured (KIP-714)",
    **{k: "KIP-932 share groups: unstable (not advertised) before 4.1"
       for k in (76, 77, 78, 79, 83, 84, 85, 86, 87)},
}

# Keys left out of release guessing, and why.  Each says little about the release
# a client talks to: brokers and controllers send them among themselves, or
# brokers advertise them only when configured to.
GUESS_IGNORED: dict[int, str] = {
    **{k: "ZooKeeper-mode controller to broker request" for k in (4, 5, 6)},
    7: "broker to controller request (clean shutdown)",
    27: "transaction coordinator to partition leader request",
    **{k: "KRaft quorum request between controllers" for k in (52, 53, 54, 59)},
    55: "KRaft quorum description, advertised by KRaft brokers only",
    56: "partition leader to controller request",
    57: "cluster feature administration, advertised differently by mode and release",
    58: "request envelope between brokers and controllers",
    **{k: "KRaft broker registration and liveness" for k in (62, 63, 64)},
    67: "broker to controller request (producer id blocks)",
    70: "KRaft controller registration",
    71: "advertised only when a client telemetry plugin is configured",
    72: "advertised only when a client telemetry plugin is configured",
    73: "broker to controller request (JBOD in KRaft)",
    **{k: "KRaft quorum membership change" for k in (80, 81, 82)},
}

# Kafka 4.0 raised advertised minimums (KIP-896); where brokers advertise a
# version they nevertheless reject: key -> (release, lowest accepted version, why,
# source).  build_releases checks each against the lowest version of the key's spec
# in kafka-specs/message-4.x (Kafka's trunk): a recorded 4.x profile that advertises
# a version below it must be listed here, with that version as the lowest accepted.
REMOVAL_KIPS: dict[str, str] = {"4.0": "KIP-896"}
ACCEPTED_MIN: dict[int, tuple[str, int, str, str]] = {
    0: ("4.0", 3, "KIP-896 removed Produce v0-v2, but 4.0+ brokers keep advertising v0 so "
        "that old librdkafka clients still compress (KAFKA-18659) and answer "
        "UNSUPPORTED_VERSION to v0-v2",
        "kafka-specs/message-4.x/ProduceRequest.json: validVersions 3-13, and its comment "
        "says versions 0-2 went in 4.0 yet stay in the ApiVersions answer because of a "
        "librdkafka bug (KAFKA-18659), being rejected otherwise; the recorded 4.0-4.3 "
        "brokers advertise Produce from v0"),
}


def _spec_minimums(folder: Path) -> dict[int, int]:
    """Lowest valid version of each request spec in ``folder``."""
    found: dict[int, int] = {}
    for path in sorted(folder.glob("*Request.json")):
        spec = json.loads(_strip_comments(path.read_text()))
        versions = _parse_versions(spec.get("validVersions"))
        if spec.get("type") == "request" and versions is not None:
            found[int(spec["apiKey"])] = versions[0]
    return found


def _check_accepted_min(releases: dict[str, dict[str, list[int]]], shared: Path) -> None:
    """Every advertised-but-rejected version of the 4.x profiles is in ACCEPTED_MIN."""
    minimums = _spec_minimums(shared / "kafka-specs" / "message-4.x")
    for name, apis in releases.items():
        if release_key(name) < release_key("4.0"):
            continue
        for key_text, (lo, _hi) in apis.items():
            key = int(key_text)
            floor = minimums.get(key)
            fact = ACCEPTED_MIN.get(key)
            if floor is None or lo >= floor:
                continue
            if fact is None or fact[1] != floor or release_key(fact[0]) > release_key(name):
                raise SystemExit(f"Kafka {name} advertises api key {key} from v{lo} but the "
                                 f"message-4.x spec starts at v{floor}: record it in "
                                 "ACCEPTED_MIN in tools/gen_data.py")


# Where franz-go's pkg/kversion (github.com/twmb/franz-go, commit adb3a18abe14)
# disagrees with the profiles written here, who we think is right, and why.
# tools/crosscheck_kversion.py recomputes the list from a franz-go checkout.
CROSS_CHECK: list[dict[str, str]] = [
    {"profiles": "3.0-kraft, 3.1-kraft, 3.2-kraft", "keys": "55 DescribeQuorum",
     "franz_go": "v0 on the 2.8 KRaft broker, gone in 3.0-3.2, v1 from 3.3",
     "ours": "v0 from 2.8, v1 from 3.3",
     "verdict": "ours, from Kafka's source at 3.0.0-3.2.0 (KRAFT_EVIDENCE): the key became "
                "forwardable and the controller advertises it, so brokers keep advertising "
                "v0. Ignored when guessing"},
    {"profiles": "2.8-kraft", "keys": "64 UnregisterBroker",
     "franz_go": "absent before 3.3", "ours": "v0 in 2.8, absent in 3.0-3.2, v0 from 3.3",
     "verdict": "ours, from Kafka's source at 2.8.0: the spec lists the broker listener and "
                "the controller advertises it. Ignored when guessing"},
    {"profiles": "3.7-kraft .. 4.3", "keys": "71 GetTelemetrySubscriptions, 72 PushTelemetry",
     "franz_go": "advertised", "ours": "absent",
     "verdict": "both right: brokers advertise them only with a telemetry plugin configured; "
                "our profiles describe a default broker, as the recorded 4.x profiles do. "
                "Ignored when guessing"},
    {"profiles": "0.8.0 .. 0.9", "keys": "4-7 (controller requests), 11-12 in 0.8.2",
     "franz_go": "listed", "ours": "absent",
     "verdict": "ours: these brokers predate ApiVersions, the profiles are the client-facing "
                "APIs a client could use; 0.8.2 brokers did not serve the group APIs (the "
                "group coordinator shipped in 0.9)"},
    {"profiles": "0.10.2", "keys": "9 OffsetFetch",
     "franz_go": "max 1", "ours": "max 2",
     "verdict": "ours: OffsetFetch v2 (KIP-88, all offsets of a group) shipped in 0.10.2 and "
                "was recorded from a real 0.10.2 broker"},
    {"profiles": "4.3", "keys": "all", "franz_go": "no table (newest is 4.2)",
     "ours": "recorded", "verdict": "nothing to compare"},
]


def _spec_listeners(shared: Path) -> dict[int, set[str]]:
    listeners: dict[int, set[str]] = {}
    for path in sorted((shared / "kafka-specs" / "message").glob("*Request.json")):
        spec = json.loads(_strip_comments(path.read_text()))
        if spec.get("type") == "request":
            listeners[int(spec["apiKey"])] = set(spec.get("listeners", ()))
    return listeners


def release_key(name: str) -> tuple[int, ...]:
    return tuple(int(p) for p in name.split("."))


def _kraft_profile(release: str, zk: dict[str, list[int]], listeners: dict[int, set[str]],
                   zk_latest: dict[str, list[int]]) -> dict[str, list[int]]:
    at = release_key(release)
    apis: dict[str, list[int]] = {}
    for key_text, rng in zk.items():
        key = int(key_text)
        if "broker" not in listeners.get(key, set()):
            continue
        since = KRAFT_SINCE.get(key)
        if since is not None and at < release_key(since[0]):
            continue
        apis[key_text] = list(rng)
    for key, steps in KRAFT_ONLY.items():
        reached = [vmax for start, vmax, _ in steps if release_key(start) <= at]
        if reached and reached[-1] is not None:
            apis[str(key)] = [0, reached[-1]]
    for key, where in sorted(listeners.items()):
        if ("broker" in where and str(key) not in zk_latest and key not in KRAFT_ONLY
                and key not in KRAFT_NOT_DEFAULT):
            raise SystemExit(f"no KRaft fact for api key {key}: add it to KRAFT_ONLY or "
                             "KRAFT_NOT_DEFAULT in tools/gen_data.py")
    return dict(sorted(apis.items(), key=lambda kv: int(kv[0])))


def _lineage_exceptions(releases: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Max-version decreases and vanished keys between consecutive releases of a lineage."""
    found: list[dict[str, Any]] = []
    for mode in ("zookeeper", "kraft"):
        lineage = [r for r in releases if r["mode"] == mode]
        for older, newer in itertools.pairwise(lineage):
            for key, rng in older["apis"].items():
                now = newer["apis"].get(key)
                if now is None or now[1] < rng[1]:
                    found.append({"mode": mode, "from": older["name"], "to": newer["name"],
                                  "key": int(key), "max_before": rng[1],
                                  "max_after": None if now is None else now[1]})
    return found


# Every max-version decrease or vanished key within a lineage, and why:
# (mode, from, to, key) -> reason.  The tool stops when one is missing.
LINEAGE_EXCEPTIONS: dict[tuple[str, str, str, int], str] = {
    ("kraft", "2.8-kraft", "3.0-kraft", 64):
        "UnregisterBroker: the 3.0.0 spec moved it to the controller listener only "
        "(back on brokers from 3.3)",
    ("kraft", "3.1-kraft", "3.2-kraft", 58):
        "Envelope: 3.2.0 dropped the forwarding workaround that added it to KRaft "
        "brokers' answers",
}


# -- feature levels (KIP-584) of a freshly formatted cluster -------------------------
#
# What a Kafka 4.x cluster formatted with the release's defaults (kafka-storage.sh
# format --standalone, as Kafka's quickstart does) finalizes, and the ranges its
# brokers report as supported (BrokerFeatures.defaultSupportedFeatures: every
# production feature whose latest production level is above 0, from level 0, and
# metadata.version from MetadataVersion.MINIMUM_VERSION).  The storage tool sets each
# feature to Feature.defaultLevel(MetadataVersion.LATEST_PRODUCTION): the highest
# level whose bootstrapMetadataVersion is at or below the release's latest
# production metadata version.  Brokers leave a level-0 feature out of the
# FinalizedFeatures of ApiVersions (ApiVersionsResponse.createFinalizedFeatureKeys
# skips level 0).  An upgraded cluster keeps the levels it had: the release's
# defaults are what a new cluster starts with, never what an upgraded one has.
#
# release -> feature -> (finalized level, supported (min, max) or None when the
# release's brokers do not report the feature).
FEATURE_LEVELS: dict[str, dict[str, tuple[int, tuple[int, int] | None]]] = {
    "4.0": {"metadata.version": (25, (7, 25)), "kraft.version": (1, (0, 1)),
            "transaction.version": (2, (0, 2)), "group.version": (1, (0, 1)),
            "eligible.leader.replicas.version": (0, (0, 1))},
    "4.1": {"metadata.version": (27, (7, 27)), "kraft.version": (1, (0, 1)),
            "transaction.version": (2, (0, 2)), "group.version": (1, (0, 1)),
            "eligible.leader.replicas.version": (1, (0, 1)),
            "share.version": (0, (0, 1)), "streams.version": (0, None)},
    "4.2": {"metadata.version": (29, (7, 29)), "kraft.version": (1, (0, 1)),
            "transaction.version": (2, (0, 2)), "group.version": (1, (0, 1)),
            "eligible.leader.replicas.version": (1, (0, 1)),
            "share.version": (1, (0, 1)), "streams.version": (1, (0, 1))},
    "4.3": {"metadata.version": (30, (7, 30)), "kraft.version": (1, (0, 1)),
            "transaction.version": (2, (0, 2)), "group.version": (1, (0, 1)),
            "eligible.leader.replicas.version": (1, (0, 1)),
            "share.version": (1, (0, 1)), "streams.version": (1, (0, 1))},
}

# Where each fact comes from, and how firmly: "source" = Kafka's own source read
# (the apache/kafka snapshot reaches October 2024, the 4.0 development; later
# versions of the server-common classes through the code search, each at a trunk
# commit that is not a release tag), "docs" = Kafka's documentation of that release
# (kafka.apache.org/NN/...), "inferred" = follows from the facts above but was not
# read at the release tag.  None of the 4.x facts was read at a 4.x release tag.
# Our own words.
FEATURE_SOURCES: list[dict[str, str]] = [
    {"features": "metadata.version", "releases": "4.0-4.3", "how": "docs, inferred",
     "says": "levels 4.0-IV0..IV3 = 22-25, 4.1-IV0/IV1 = 26/27, 4.2-IV0/IV1 = 28/29, "
             "4.3-IV0 = 30 (MetadataVersion.java: IBP_4_3_IV0(30, ...) is quoted by Kafka "
             "4.3's upgrade notes, IBP_4_2_IV1(29, ..., false) by 4.2's); the latest "
             "production level of a release is its newest IV: a 4.1.0 controller refuses "
             "level 30 saying it supports 7-27 (KAFKA-20295); supported from 7 "
             "(MINIMUM_VERSION = IBP_3_3_IV3, 4.x upgrades need metadata 3.3 or later). The "
             "4.0 and 4.2 latest production levels were not read at the release tags"},
    {"features": "group.version", "releases": "4.0-4.3", "how": "source, docs",
     "says": "GroupVersion: GV_1 (KIP-848 consumer protocol) bootstraps from IBP_4_0_IV0 "
             "(the apache/kafka snapshot of October 2024 and a later trunk version, where "
             "GV_1 is LATEST_PRODUCTION), so a new 4.0+ cluster finalizes group.version=1; "
             "Kafka 4.0's Consumer Rebalance Protocol page: the protocol is enabled "
             "automatically on the server since 4.0, switched by group.version"},
    {"features": "transaction.version", "releases": "4.0-4.3", "how": "source, docs",
     "says": "TransactionVersion: TV_1 and TV_2 both bootstrap from IBP_4_0_IV2 (the "
             "apache/kafka snapshot of October 2024), so a new 4.0+ cluster finalizes "
             "transaction.version=2; Kafka 4.0's Transaction Protocol page: KIP-890 is "
             "enabled automatically on the server since 4.0"},
    {"features": "eligible.leader.replicas.version", "releases": "4.0-4.3",
     "how": "docs",
     "says": "Kafka's Eligible Leader Replicas page: not enabled by default in 4.0 "
             "(level 0, not listed among finalized features), enabled by default on new "
             "clusters from 4.1 (EligibleLeaderReplicasVersion ELRV_1); 4.0+ brokers report "
             "it supported 0-1 (apache/kafka#24005 review: in supportedFeatures from 4.0 on "
             "even with ELR off)"},
    {"features": "share.version", "releases": "4.1-4.3", "how": "source, docs",
     "says": "ShareVersion (added in 4.1, KAFKA-16894; read at a trunk commit of the 4.2 "
             "development): SV_1 bootstraps from IBP_4_2_IV0, "
             "so 4.1 (latest production 4.1-IV1) defaults to 0 and 4.2+ to 1; Kafka 4.1's "
             "upgrade notes: a preview, enabled with kafka-features.sh upgrade to "
             "share.version=1, so 4.1 brokers are taken to report 0-1 supported (not confirmed "
             "from source: the class at the 4.1.0 tag was not read, and the 4.2-development "
             "version read has LATEST_PRODUCTION = SV_0, which would leave share.version out "
             "of the supported features unless unstable feature versions are enabled); "
             "4.2's: production-ready. 4.0 has no "
             "share.version (its share groups were early access behind unstable APIs)"},
    {"features": "streams.version", "releases": "4.1-4.3", "how": "source, docs",
     "says": "StreamsVersion (added in 4.1, KAFKA-19173; read at a trunk commit of the 4.2 "
             "development, whose comments say what 4.1 and 4.2 do): SV_1 bootstraps from "
             "IBP_4_2_IV1; in 4.1 LATEST_PRODUCTION is SV_0 (early access, unstable: not "
             "reported as supported, not settable without unstable feature versions), in "
             "4.2 SV_1 (the class's comments say so), so 4.2+ default to 1; Kafka 4.2's "
             "upgrade notes: the Streams Rebalance Protocol is production-ready"},
    {"features": "kraft.version", "releases": "4.0-4.3", "how": "source, inferred",
     "says": "KRaftVersion: KRAFT_VERSION_1 (KIP-853 dynamic quorum) bootstraps from "
             "IBP_3_9_IV0; the storage tool sets it to 1 when formatting with --standalone "
             "or --initial-controllers (Kafka's quickstart) and to 0 with a static "
             "controller.quorum.voters; brokers report it among finalized features "
             "(KRaftMetadataCache.features, October 2024) when above 0"},
]

# Feature names as Kafka spells them, for the features the release data covers.
FEATURE_NAMES = ("metadata.version", "kraft.version", "transaction.version", "group.version",
                 "eligible.leader.replicas.version", "share.version", "streams.version")


def _feature_levels(release: str) -> dict[str, Any] | None:
    """The ``feature_levels`` entry of a release profile (None: not modelled)."""
    levels = FEATURE_LEVELS.get(release)
    if levels is None:
        return None
    unknown = set(levels) - set(FEATURE_NAMES)
    if unknown:
        raise SystemExit(f"FEATURE_LEVELS[{release!r}] names unknown features {unknown}")
    for name, (level, supported) in levels.items():
        known = supported is not None and supported[0] <= level <= supported[1]
        if not known and (supported is not None or level > 0):
            raise SystemExit(f"FEATURE_LEVELS[{release!r}][{name!r}]: level {level} is "
                             f"outside the supported range {supported}")
    return {"finalized": {n: lv for n, (lv, _) in levels.items() if lv > 0},
            "supported": {n: list(rng) for n, (_, rng) in levels.items() if rng is not None}}


def build_releases(shared: Path) -> dict[str, Any]:
    raw = json.loads((shared / "kafka-releases" / "broker-api-versions.json").read_text())
    listeners = _spec_listeners(shared)
    zk_latest = raw["releases"][ZOOKEEPER_LAST]
    releases: list[dict[str, Any]] = []
    for name, apis in raw["releases"].items():
        ordered = {k: list(v) for k, v in sorted(apis.items(), key=lambda kv: int(kv[0]))}
        at = release_key(name)
        if at <= release_key(ZOOKEEPER_LAST):
            releases.append({"name": name, "release": name, "mode": "zookeeper",
                             "apis": ordered})
            if at >= release_key(KRAFT_FIRST):
                releases.append({"name": f"{name}-kraft", "release": name, "mode": "kraft",
                                 "apis": _kraft_profile(name, ordered, listeners, zk_latest)})
        else:
            entry = {"name": name, "release": name, "mode": "kraft", "apis": ordered}
            levels = _feature_levels(name)
            if levels is None:
                raise SystemExit(f"no feature levels for Kafka {name}: add them to "
                                 "FEATURE_LEVELS in tools/gen_data.py")
            entry["feature_levels"] = levels
            releases.append(entry)
    exceptions = _lineage_exceptions(releases)
    for item in exceptions:
        why = LINEAGE_EXCEPTIONS.get((item["mode"], item["from"], item["to"], item["key"]))
        if why is None:
            raise SystemExit(f"unexplained lineage exception {item}: add it to "
                             "LINEAGE_EXCEPTIONS in tools/gen_data.py")
        item["why"] = why
    _check_accepted_min(raw["releases"], shared)
    accepted = {str(k): {"from": rel, "min": vmin, "why": why, "source": source}
                for k, (rel, vmin, why, source) in sorted(ACCEPTED_MIN.items())}
    return {
        "format": 2,
        "about": "Version ranges advertised by Apache Kafka brokers, oldest release first; "
                 "ZooKeeper-mode and KRaft-mode brokers of 2.8-3.9 each have a profile.",
        "api_names": dict(sorted(raw["api_names"].items(), key=lambda kv: int(kv[0]))),
        "api_name_aliases": raw.get("api_name_aliases", {}),
        "guess_ignored_keys": {str(k): why for k, why in sorted(GUESS_IGNORED.items())},
        "removal_kips": REMOVAL_KIPS,
        "accepted_min": accepted,
        "releases": releases,
        "provenance": {
            "tool": "tools/gen_data.py",
            "inputs": ["kafka-releases/broker-api-versions.json",
                       "kafka-specs/message/*Request.json (apiKey, listeners)",
                       "kafka-specs/message-4.x/*Request.json (apiKey, lowest valid "
                       "version: checks accepted_min)"],
            "zookeeper_profiles": f"0.8.0-{ZOOKEEPER_LAST}: as recorded in "
                                  "broker-api-versions.json",
            "kraft_profiles": f"{KRAFT_FIRST}-{ZOOKEEPER_LAST} (named RELEASE-kraft): the "
                              "ZooKeeper broker's ranges of the same release for keys whose "
                              "spec lists the 'broker' listener, without the keys KRaft "
                              "brokers gained later, plus the KRaft-only keys; 4.0 and later: "
                              "as recorded (Kafka 4.0 removed ZooKeeper mode)",
            "controller_profiles": "none: clients reach KRaft controllers only through "
                                   "bootstrap.controllers admin connections (KIP-919)",
            "kraft_since": [{"key": k, "from": rel, "why": why}
                            for k, (rel, why) in sorted(KRAFT_SINCE.items())],
            "kraft_only": [{"key": k, "from": rel, "max": vmax, "why": why}
                           for k, steps in sorted(KRAFT_ONLY.items())
                           for rel, vmax, why in steps],
            "kafka_source": {
                "repository": "github.com/apache/kafka, read at the release tags 2.8.0-"
                              "3.8.0 and the 3.9 branch (3.9.0-rc3)",
                "check": "tools/crosscheck_kafka_source.py derives each KRaft broker's "
                         "answer as the broker starts (before its first request forwarded "
                         "to the controller) from the specs' listeners and versions, "
                         "ApiKeys' forwardable flags and ApiVersionManager at each tag; the "
                         "2.8-3.9 KRaft profiles here equal it on every key, and it names "
                         "the keys a broker drops after its first forwarded request (57 "
                         "UpdateFeatures at 3.0 and 3.1)",
                "evidence": KRAFT_EVIDENCE},
            "kraft_not_default": {str(k): why for k, why in sorted(KRAFT_NOT_DEFAULT.items())},
            "cross_check": {"source": "franz-go pkg/kversion (commit adb3a18abe14); sarama "
                                      "has release constants only, no per-mode API tables",
                            "disagreements": CROSS_CHECK},
            "lineage_exceptions": exceptions,
            "feature_levels": {
                "about": "feature_levels of a 4.x profile: the KIP-584 levels a cluster "
                         "freshly formatted with that release's defaults finalizes (level 0 "
                         "left out, as brokers leave it out of ApiVersions) and the ranges "
                         "its brokers report as supported. An upgraded cluster keeps its "
                         "old levels. Earlier releases: not modelled",
                "sources": FEATURE_SOURCES},
        },
    }


def _dump(path: Path, data: dict[str, Any]) -> None:
    path.write_text(json.dumps(data, indent=1) + "\n")
    print(f"wrote {path}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    root = Path(__file__).resolve().parent.parent
    parser.add_argument("--shared", type=Path, default=root.parent / "shared")
    args = parser.parse_args()
    _dump(root / "schemas" / "api_catalog.json", build_catalog(args.shared))
    _dump(root / "kclient" / "negotiation" / "releases.json", build_releases(args.shared))
    # ApiKey in kclient/protocol/constants.py follows the catalog.
    import gen_constants  # this directory, which is sys.path[0] when run as a script

    gen_constants.OUTPUT.write_text(gen_constants.render(), encoding="utf-8")
    print(f"wrote {gen_constants.OUTPUT}")


if __name__ == "__main__":
    main()
