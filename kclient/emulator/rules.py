"""What an emulated broker refuses, as data: one row per rule, each with Kafka's source.

A broker of release R must refuse what a Kafka R broker refuses, with the same error
or the same closed connection (``../DESIGN.md`` §8 in the project's notes; the
user-facing list is the API reference).  :data:`RULES` holds every such rule: what
is refused, how each era of Kafka answers it (:class:`Answer`: an error code, or
``None`` for a closed connection, from a release on), the Kafka source that says so
(file and function at a release tag) and the test that proves the emulator does it.
The handlers (:mod:`kclient.emulator.apis`) apply the rules through the functions
below, which raise :class:`Refusal` carrying the rule and its answer for the
broker's release; the coordinators and the partition logs keep their own checks and
take their era-dependent choices from here (:func:`producer_policy`,
:func:`coordinator_error`).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

import attrs

from kclient.emulator.producers import ProducerPolicy
from kclient.emulator.records import Batch
from kclient.errors import KClientError
from kclient.negotiation.releases import release_number
from kclient.protocol.constants import ErrorCode

__all__ = [
    "RULES",
    "Answer",
    "Refusal",
    "Rule",
    "check_fetch",
    "check_produce_records",
    "check_transactional_id",
    "coordinator_error",
    "producer_policy",
    "release_at_least",
    "rule",
    "verification_error",
]

_KAFKA = "apache/kafka"


@attrs.frozen
class Answer:
    """How brokers answer a refused request from release ``since`` on: ``code``, or a closed
    connection when ``code`` is None."""

    since: str
    code: int | None


def _tests(value: str | tuple[str, ...]) -> tuple[str, ...]:
    return (value,) if isinstance(value, str) else tuple(value)


@attrs.frozen
class Rule:
    """One refusal: its name, API, what is refused, the answers by era, source and tests
    (``path::function``, a real client's where one shows the rule)."""

    name: str
    api: str
    refuses: str
    answers: tuple[Answer, ...]
    source: str
    tests: tuple[str, ...] = attrs.field(converter=_tests)

    def answer(self, release: str) -> Answer | None:
        """The answer of a broker of ``release`` (None: the rule is newer than the release)."""
        found = None
        for answer in self.answers:
            if release_at_least(release, answer.since):
                found = answer
        return found


class Refusal(KClientError):
    """A request (or one partition of it) an emulated broker refuses under ``rule``.

    ``code`` is the error the broker answers with; None means the broker closes the
    connection (the broker logs one warning naming the rule).
    """

    def __init__(self, rule: Rule, code: int | None, detail: str) -> None:
        super().__init__(f"{rule.name}: {detail} ({rule.source})")
        self.rule = rule
        self.code = code
        self.detail = detail


def _number(release: str) -> tuple[int, ...]:
    try:
        text = release_number(release)
    except KClientError:
        text = release.split("-")[0]
    return tuple(int(part) for part in text.split(".") if part.isdigit())


def release_at_least(release: str, since: str) -> bool:
    """True when Kafka ``release`` is ``since`` or newer (``"3.7-kraft"`` counts as 3.7)."""
    return _number(release) >= _number(since)


_CLOSE = None
_CORRUPT, _INVALID_RECORD = ErrorCode.CORRUPT_MESSAGE, ErrorCode.INVALID_RECORD
_APIS = "core/src/main/scala/kafka/server/KafkaApis.scala"
_PRODUCE_REQUEST = "clients/src/main/java/org/apache/kafka/common/requests/ProduceRequest.java"
_COORDINATOR = "core/src/main/scala/kafka/coordinator/transaction/TransactionCoordinator.scala"
_APPEND_INFO = ("storage/src/main/java/org/apache/kafka/storage/internals/log/"
                "ProducerAppendInfo.java")
_STATE_MANAGER = "core/src/main/scala/kafka/log/ProducerStateManager.scala"

#: Every refusal the emulator applies, with its Kafka source and its test.
RULES: tuple[Rule, ...] = (
    Rule("produce-magic", "Produce",
         "a Produce v3+ partition whose records are not record batches of magic 2",
         (Answer("0.11", _CLOSE), Answer("2.2", _CORRUPT), Answer("2.4", _INVALID_RECORD)),
         f"{_PRODUCE_REQUEST} validateRecords (0.11.0.0: in the request's parsing, so the "
         f"connection closes; 2.2.0+: {_APIS} handleProduceRequest answers the partition)",
         "tests/emulator/test_rules.py::test_produce_magic_1_in_v3"),
    Rule("produce-magic-unknown", "Produce",
         "a record batch (magic 2) sent to a release before 0.11, which reads it as a "
         "magic 0/1 message whose CRC does not match",
         (Answer("0.8", _CORRUPT),),
         "core/src/main/scala/kafka/log/Log.scala analyzeAndValidateRecords and clients/.../"
         "record/Record.java ensureValid (0.10.2.0: InvalidRecordException, a "
         "CorruptRecordException)",
         ("tests/emulator/test_rules.py::test_record_batches_before_0_11",
          "tests/emulator/test_real_clients.py::test_aiokafka_cannot_produce_to_0_10_2")),
    Rule("produce-one-batch", "Produce",
         "a Produce v3+ partition with no record batch or more than one",
         (Answer("0.11", _CLOSE), Answer("2.2", _CORRUPT), Answer("2.4", _INVALID_RECORD)),
         f"{_PRODUCE_REQUEST} validateRecords (as produce-magic)",
         "tests/emulator/test_rules.py::test_produce_two_batches_in_v3"),
    Rule("produce-zstd-version", "Produce",
         "a zstd batch in Produce < v7 (KIP-110)",
         (Answer("2.1", _CLOSE), Answer("2.2", ErrorCode.UNSUPPORTED_COMPRESSION_TYPE)),
         f"{_PRODUCE_REQUEST} validateRecords at 2.1.0 and 3.8.0",
         "tests/emulator/test_rules.py::test_zstd_needs_produce_v7"),
    Rule("produce-unknown-codec", "Produce",
         "a batch compressed with a codec the release does not know (zstd before 2.1, "
         "codecs 5-7)",
         (Answer("0.11", ErrorCode.UNKNOWN_SERVER_ERROR),),
         "clients/.../record/CompressionType.java forId throws IllegalArgumentException, "
         "which core/.../server/ReplicaManager.scala appendToLocalLog answers as "
         "UNKNOWN_SERVER_ERROR (2.0.0)",
         "tests/emulator/test_rules.py::test_zstd_before_2_1_is_unknown"),
    Rule("produce-transactional-id", "Produce",
         "transactional batches in a Produce without a transactional id",
         (Answer("0.11", ErrorCode.TRANSACTIONAL_ID_AUTHORIZATION_FAILED),),
         f"{_APIS} handleProduceRequest (3.8.0: hasTransactionalRecords and a null "
         "transactionalId)",
         "tests/emulator/test_rules.py::test_transactional_batch_without_transactional_id"),
    Rule("produce-epoch", "Produce",
         "a batch whose producer epoch is older than the partition last saw",
         (Answer("0.11", ErrorCode.INVALID_PRODUCER_EPOCH),),
         f"{_APPEND_INFO} checkProducerEpoch (3.8.0; {_STATE_MANAGER} at 0.11.0.0-2.8: "
         "ProducerFencedException, code 47 then)",
         "tests/emulator/test_producers.py::test_an_older_epoch_is_fenced"),
    Rule("produce-sequence", "Produce",
         "a batch whose sequence does not follow the producer's last one, or a new epoch "
         "not starting at 0",
         (Answer("0.11", ErrorCode.OUT_OF_ORDER_SEQUENCE_NUMBER),),
         f"{_APPEND_INFO} checkSequence (3.8.0)",
         "tests/emulator/test_producers.py::test_a_gap_in_sequences_is_out_of_order"),
    Rule("produce-unknown-producer", "Produce",
         "the first batch of a producer the partition does not know, not at sequence 0",
         (Answer("1.0", ErrorCode.UNKNOWN_PRODUCER_ID), Answer("2.5", ErrorCode.NONE)),
         f"{_STATE_MANAGER} checkSequence (1.0.0-2.4.0; 2.5.0 accepts it, KIP-360)",
         "tests/emulator/test_producers.py::test_unknown_producer_by_release"),
    Rule("produce-duplicate", "Produce",
         "a batch equal to one of the producer's last five",
         (Answer("0.11", ErrorCode.DUPLICATE_SEQUENCE_NUMBER), Answer("1.0", ErrorCode.NONE)),
         f"{_STATE_MANAGER} ProducerIdEntry.isDuplicate (0.11.0.0: "
         "DuplicateSequenceNumberException); core/.../log/Log.scala analyzeAndValidate"
         "ProducerState (1.0.0+: the first batch's offset, no error)",
         "tests/emulator/test_producers.py::test_a_duplicate_gets_the_first_offset"),
    Rule("produce-open-transaction", "Produce",
         "a non-transactional batch from a producer with an open transaction",
         (Answer("0.11", ErrorCode.INVALID_TXN_STATE),),
         f"{_APPEND_INFO} append (3.8.0: 'Expected transactional write')",
         "tests/emulator/test_producers.py::test_plain_batch_inside_a_transaction"),
    Rule("produce-verification", "Produce",
         "a transactional batch for a partition not added to the producer's transaction "
         "(KIP-890 part 1, transaction.partition.verification.enable on by default)",
         (Answer("3.6", ErrorCode.INVALID_TXN_STATE),
          Answer("3.8", ErrorCode.TRANSACTION_ABORTABLE)),
         f"{_COORDINATOR} handleVerifyPartitionsInTransaction and core/.../server/"
         "AddPartitionsToTxnManager.scala (3.8.0: TRANSACTION_ABORTABLE to Produce v11+, "
         "INVALID_TXN_STATE to older versions; CONCURRENT_TRANSACTIONS becomes "
         "NOT_ENOUGH_REPLICAS before transaction version 2); Produce v12+ adds the "
         "partition instead (4.0, AddPartitionsToTxnManager."
         "produceRequestVersionToTransactionSupportedOperation)",
         "tests/emulator/test_transactions_api.py::test_produce_to_a_partition_not_added"),
    Rule("txn-fenced", "InitProducerId, AddPartitionsToTxn, AddOffsetsToTxn, EndTxn",
         "a transactional request with a producer epoch other than the coordinator's "
         "(another producer took the transactional id, or the transaction timed out)",
         (Answer("0.11", ErrorCode.INVALID_PRODUCER_EPOCH),
          Answer("2.7", ErrorCode.PRODUCER_FENCED)),
         f"{_COORDINATOR} handleAddPartitionsToTransaction / endTransaction; {_APIS} "
         "(2.7.0+, KIP-588: PRODUCER_FENCED, but INVALID_PRODUCER_EPOCH to InitProducerId "
         "< v4, AddPartitionsToTxn, AddOffsetsToTxn and EndTxn < v2)",
         ("tests/emulator/test_transactions.py::test_a_second_producer_fences_the_first",
          "tests/emulator/test_transactions_api.py::test_fenced_error_by_release_and_version",
          "tests/emulator/test_real_transactions.py::test_librdkafka_zombie_producer_is_"
          "fenced")),
    Rule("txn-timeout", "InitProducerId",
         "a transaction timeout above transaction.max.timeout.ms (15 min) or not positive",
         (Answer("0.11", ErrorCode.INVALID_TRANSACTION_TIMEOUT),),
         f"{_COORDINATOR} handleInitProducerId",
         "tests/emulator/test_transactions.py::test_timeout_above_the_maximum"),
    Rule("txn-state", "EndTxn",
         "ending a transaction that is not open (commit after abort, commit with nothing "
         "added)",
         (Answer("0.11", ErrorCode.INVALID_TXN_STATE),),
         f"{_COORDINATOR} endTransactionWithTV1 / endTransaction (transaction version 2 "
         "table)",
         "tests/emulator/test_transactions.py::test_commit_of_an_empty_transaction"),
    Rule("txn-not-coordinator", "InitProducerId, AddPartitionsToTxn, AddOffsetsToTxn, EndTxn",
         "a transactional request sent to a broker that does not coordinate the "
         "transactional id",
         (Answer("0.11", ErrorCode.NOT_COORDINATOR),),
         "core/.../coordinator/transaction/TransactionStateManager.scala "
         "getTransactionState",
         "tests/emulator/test_transactions_api.py::test_not_the_coordinator"),
    Rule("txn-offset-commit-unadded", "TxnOffsetCommit",
         "a transactional offset commit for a group not added with AddOffsetsToTxn "
         "(TxnOffsetCommit v5+ adds it instead, KIP-890 part 2)",
         (Answer("3.6", ErrorCode.INVALID_TXN_STATE),
          Answer("3.8", ErrorCode.TRANSACTION_ABORTABLE)),
         f"{_APIS} handleTxnOffsetCommitRequest (3.8.0: txnOffsetCommitRequestVersionTo"
         "TransactionSupportedOperation: TRANSACTION_ABORTABLE to v4+, INVALID_TXN_STATE "
         "below)",
         "tests/emulator/test_transactions_api.py::test_txn_offset_commit_without_add_offsets"),
    Rule("fetch-zstd-topic", "Fetch",
         "Fetch < v10 of a partition whose topic is configured compression.type=zstd "
         "(KIP-110; with the default compression.type=producer zstd batches go to any "
         "Fetch v4+)",
         (Answer("2.1", ErrorCode.UNSUPPORTED_COMPRESSION_TYPE),),
         f"{_APIS} handleFetchRequest maybeConvertFetchedData (2.1.0, 3.8.0)",
         ("tests/emulator/test_rules.py::test_fetch_of_a_zstd_topic",
          "tests/emulator/test_rules.py::test_kafka_python_fetch_v8_reads_a_default_topic_but_"
          "not_a_zstd_one")),
    Rule("fetch-down-conversion", "Fetch",
         "Fetch v0-v3 of batches of a newer magic (v0-1 read magic 0, v2-3 magic 1): Kafka "
         "down-converts them, the emulator does not and answers as Kafka does with "
         "message.downconversion.enable=false (zstd batches: as Kafka, which cannot "
         "down-convert them)",
         (Answer("0.11", ErrorCode.UNSUPPORTED_VERSION),),
         f"{_APIS} maybeConvertFetchedData (2.0.0+: UNSUPPORTED_VERSION when down-"
         "conversion is disabled; clients/.../record/RecordsUtil.java downConvert refuses "
         "zstd)",
         "tests/emulator/test_rules.py::test_fetch_v3_of_magic_2_batches"),
    Rule("fetch-isolation", "Fetch, ListOffsets",
         "nothing: a Fetch < v4 or ListOffsets < v2 carries no isolation_level, so it "
         "reads uncommitted (up to the high watermark)",
         (Answer("0.11", ErrorCode.NONE),),
         "clients/src/main/resources/common/message/FetchRequest.json (IsolationLevel "
         "4+), ListOffsetsRequest.json (2+)",
         "tests/emulator/test_transactions_api.py::test_reads_without_isolation_level_are_"
         "uncommitted"),
    Rule("offset-fetch-unstable", "OffsetFetch",
         "OffsetFetch v7+ with require_stable of a partition an open transaction holds "
         "an offset for (KIP-447)",
         (Answer("2.5", ErrorCode.UNSTABLE_OFFSET_COMMIT),),
         "core/.../coordinator/group/GroupMetadataManager.scala getOffsets (2.5.0+)",
         "tests/emulator/test_transactions_api.py::test_offset_fetch_require_stable"),
    Rule("topic-config", "CreateTopics, AlterConfigs, IncrementalAlterConfigs",
         "a topic config name Kafka does not know, or a value its definition refuses "
         "(zstd for compression.type before 2.1)",
         (Answer("0.11", ErrorCode.INVALID_CONFIG),),
         "storage/.../log/LogConfig.java validateNames / validateValues (3.8.0), "
         "core/.../log/LogConfig.scala (older)",
         "tests/emulator/test_configs.py::test_unknown_and_bad_topic_configs"),
    Rule("kip896-versions", "Produce",
         "Produce v0-v2, which Kafka 4.x still advertises but removed (KIP-896)",
         (Answer("4.0", ErrorCode.UNSUPPORTED_VERSION),),
         "clients/src/main/resources/common/message/ProduceRequest.json (4.0.0: "
         "validVersions 3-12) and ApiVersionsResponse (KAFKA-18659: advertised from v0)",
         "tests/emulator/test_real_clients.py::test_an_old_produce_version_fails_on_4_0_as_"
         "kafka_says"),
)

_BY_NAME: Mapping[str, Rule] = {r.name: r for r in RULES}


def rule(name: str) -> Rule:
    """The rule called ``name``."""
    return _BY_NAME[name]


def _refuse(name: str, release: str, detail: str) -> Refusal | None:
    found = rule(name)
    answer = found.answer(release)
    if answer is None or answer.code == ErrorCode.NONE:
        return None
    return Refusal(found, answer.code, detail)


def check_produce_records(version: int, batches: Sequence[Batch], release: str) -> None:
    """Raise :class:`Refusal` when a broker of ``release`` refuses a partition's records at
    Produce ``version`` (magic, batch count, codecs), the request's checks first."""
    refusal = None
    if version >= 3:
        if len(batches) != 1:
            refusal = _refuse("produce-one-batch", release,
                              f"Produce v{version} with {len(batches)} record batches")
        elif batches[0].magic != 2:
            refusal = _refuse("produce-magic", release,
                              f"Produce v{version} with a magic {batches[0].magic} "
                              "message set")
        elif version < 7 and batches[0].codec == 4:
            refusal = _refuse("produce-zstd-version", release,
                              f"Produce v{version} with a zstd batch")
    if refusal is None and not release_at_least(release, "0.11") and any(
            b.magic == 2 for b in batches):
        refusal = _refuse("produce-magic-unknown", release,
                          f"a record batch (magic 2) sent to Kafka {release}")
    for batch in batches:
        if refusal is None and (batch.codec > 4 or (
                batch.codec == 4 and not release_at_least(release, "2.1"))):
            refusal = _refuse("produce-unknown-codec", release,
                              f"a batch compressed with {batch.codec_name}")
    if refusal is not None:
        raise refusal


def check_transactional_id(batches: Sequence[Batch], transactional_id: str | None,
                           release: str) -> None:
    """Raise :class:`Refusal` for transactional batches without a transactional id."""
    if transactional_id is None and any(b.transactional for b in batches):
        refusal = _refuse("produce-transactional-id", release,
                          "transactional batches without a transactional id")
        if refusal is not None:
            raise refusal


def check_fetch(version: int, compression_type: str, magics: Sequence[int],
                codecs: Sequence[int], release: str) -> int:
    """The error a broker of ``release`` gives one partition of a Fetch ``version`` whose
    topic has ``compression_type`` and whose batches to return have ``magics`` and
    ``codecs`` (NONE: serve it)."""
    if version < 10 and compression_type == "zstd":
        refusal = _refuse("fetch-zstd-topic", release, "Fetch < v10 of a zstd topic")
        if refusal is not None and refusal.code is not None:
            return refusal.code
    readable = 0 if version <= 1 else 1 if version <= 3 else 2
    if any(m > readable for m in magics):
        if any(c == 4 for c in codecs):
            return ErrorCode.UNSUPPORTED_COMPRESSION_TYPE
        return ErrorCode.UNSUPPORTED_VERSION
    return ErrorCode.NONE


def producer_policy(release: str) -> ProducerPolicy:
    """How brokers of ``release`` check producer state (duplicates, unknown producers)."""
    duplicate = rule("produce-duplicate").answer(release)
    unknown = rule("produce-unknown-producer").answer(release)
    return ProducerPolicy(
        duplicate_is_error=duplicate is not None and duplicate.code != ErrorCode.NONE,
        unknown_producer_is_error=unknown is not None and unknown.code != ErrorCode.NONE)


#: The first request version that understands PRODUCER_FENCED, per API name.
_FENCED_SINCE = {"InitProducerId": 4, "AddPartitionsToTxn": 2, "AddOffsetsToTxn": 2,
                 "EndTxn": 2}


def coordinator_error(code: int, api: str, version: int, release: str) -> int:
    """The error a coordinator of ``release`` answers to ``api`` v``version`` for the
    coordinator's own ``code`` (its current names: PRODUCER_FENCED)."""
    if code == ErrorCode.PRODUCER_FENCED:
        answer = rule("txn-fenced").answer(release)
        if (answer is None or answer.code != ErrorCode.PRODUCER_FENCED
                or version < _FENCED_SINCE.get(api, 0)):
            return ErrorCode.INVALID_PRODUCER_EPOCH
    return code


def verification_error(code: int, release: str, abortable_understood: bool,
                       version_2: bool, name: str = "produce-verification") -> int:
    """The error a leader of ``release`` answers when the coordinator's check of a
    transactional write says ``code`` (:meth:`~kclient.emulator.transactions.
    TransactionCoordinator.verify`); ``abortable_understood`` when the request version
    knows TRANSACTION_ABORTABLE, ``version_2`` for a transaction version 2 request."""
    if code == ErrorCode.TRANSACTION_ABORTABLE:
        answer = rule(name).answer(release)
        if answer is None:
            return ErrorCode.NONE
        if answer.code == ErrorCode.TRANSACTION_ABORTABLE and abortable_understood:
            return ErrorCode.TRANSACTION_ABORTABLE
        return ErrorCode.INVALID_TXN_STATE
    if code == ErrorCode.PRODUCER_FENCED:
        return ErrorCode.INVALID_PRODUCER_EPOCH
    if code == ErrorCode.CONCURRENT_TRANSACTIONS and not version_2:
        return ErrorCode.NOT_ENOUGH_REPLICAS
    return code
