"""The exception hierarchy of kclient.

Every error raised on purpose by kclient derives from :class:`KClientError`, so an
application can catch one class.  Each message says what went wrong, where (a
file and line, a byte offset, a broker) and, where there is one, what to do next;
attributes carry the same facts for code.  The tree::

    KClientError
    ├── ConfigError (also ValueError)        an option or argument is invalid
    ├── ClientStateError                     a call the client's state does not allow
    │   └── ClientClosedError                close() ended or interrupted the call
    ├── BrokerConnectionError                the transport: retry may help
    │   ├── HandshakeError                   every step of the ApiVersions ladder failed
    │   ├── RequestTimeoutError              no answer in time
    │   ├── UnsupportedRequestError          a zero-length answer: request unknown
    │   └── AuthenticationError              SASL refused
    │       └── UnsupportedSaslMechanismError
    ├── UnsupportedVersionError              no version of an API is usable
    │   └── VerdictUnknownError              some broker has not answered yet
    ├── ProtocolError                        bytes that are not a valid Kafka message
    │   ├── TruncatedMessageError, InvalidVarintError, InvalidLengthError,
    │   ├── InvalidTaggedFieldsError
    │   └── FrameTooLargeError
    ├── EncodeError (also ValueError)        a value the schema cannot encode
    │   └── FieldVersionError                a field the version lacks
    ├── KafkaResponseError                   the broker answered with error codes
    ├── SchemaError                          a message spec file is invalid
    ├── UnknownMessageError (also KeyError)  no schema for a name or key
    │   └── UnknownRequestError
    ├── UnknownFeatureError (also KeyError)  a feature name the set lacks
    ├── FeatureFileError, SnapshotError      a file:line is invalid
    ├── InventoryError                       a client inventory cannot be read
    ├── FleetError                           the fleet pipeline cannot run
    └── EmulatorError                        the broker emulator cannot start or stop

A retry loop catches :class:`BrokerConnectionError`: programming errors
(:class:`ConfigError`, :class:`ClientStateError`) stand outside it, so
"refresh() before start()" is never retried as if the network had failed.
"""

from __future__ import annotations

from kclient.options import Part, Text, option_names, parts_of

__all__ = [
    "AuthenticationError",
    "BrokerConnectionError",
    "ClientClosedError",
    "ClientStateError",
    "ConfigError",
    "EmulatorError",
    "EncodeError",
    "FeatureFileError",
    "FieldVersionError",
    "FleetError",
    "FrameTooLargeError",
    "HandshakeError",
    "InvalidLengthError",
    "InvalidTaggedFieldsError",
    "InvalidVarintError",
    "InventoryError",
    "KClientError",
    "KafkaResponseError",
    "ProtocolError",
    "RequestTimeoutError",
    "SchemaError",
    "SnapshotError",
    "TruncatedMessageError",
    "UnknownFeatureError",
    "UnknownMessageError",
    "UnknownRequestError",
    "UnsupportedRequestError",
    "UnsupportedSaslMechanismError",
    "UnsupportedVersionError",
    "VerdictUnknownError",
]


class KClientError(Exception):
    """Root of every error kclient raises deliberately.

    A message that names an option keeps it as a fact: :attr:`parts` is the
    message as text and option markers (:mod:`kclient.options`), :attr:`options`
    the options it names.  ``str(error)`` reads in Python parameter names; the
    command line prints the same parts with its flags.
    """

    @property
    def parts(self) -> tuple[Part, ...]:
        """The message as plain text and :mod:`kclient.options` markers."""
        return parts_of(self.args[0]) if self.args else ()

    @property
    def options(self) -> tuple[str, ...]:
        """The options the message names (parameter names, e.g. ``request_timeout``)."""
        return option_names(self.parts)


class ConfigError(KClientError, ValueError):
    """An option passed by the application or on the command line is invalid."""


class SchemaError(KClientError):
    """A message spec file is invalid.

    ``path`` is the file, ``json_path`` the location inside it (for example
    ``fields[2].versions``) and ``reason`` what is wrong there.
    """

    def __init__(self, path: str, json_path: str, reason: str) -> None:
        self.path = path
        self.json_path = json_path
        self.reason = reason
        super().__init__(f"{path}: at {json_path or '<top>'}: {reason}")


class UnknownMessageError(KClientError, KeyError):
    """No schema is registered under the requested message name or API key.

    ``name`` is the API asked for and ``suggestion`` the closest known API name, when
    the error is about an API name (else ``None``).
    """

    def __init__(self, message: object, name: str | int | None = None,
                 suggestion: str | None = None) -> None:
        self.name = name
        self.suggestion = suggestion
        super().__init__(message)

    def __str__(self) -> str:  # KeyError would quote the message
        return str(self.args[0]) if self.args else ""


class EncodeError(KClientError, ValueError):
    """A value cannot be encoded with the schema it was given to."""


class FieldVersionError(EncodeError):
    """A request sets a field that the version being sent does not have.

    Kafka's own clients refuse the same ("Attempted to write a non-default X
    at version Y").  ``field`` is the path of the first such field
    (``topics[0].assignments``), ``message`` and ``version`` what was being
    encoded, ``first_version`` the oldest version that has the field (``None``
    when only older versions have it), ``broker`` the broker the request was
    for (when known) and ``fields`` every offending path.
    """

    def __init__(self, text: str, *, message: str, version: int, field: str,
                 first_version: int | None, broker: str | None = None,
                 fields: tuple[str, ...] = ()) -> None:
        self.message = message
        self.version = version
        self.field = field
        self.first_version = first_version
        self.broker = broker
        self.fields = fields or (field,)
        super().__init__(text)


class KafkaResponseError(KClientError):
    """A broker answered with a non-zero error code (``response.raise_for_error()``).

    ``error`` is the top-level :class:`~kclient.protocol.ErrorCode` (or the
    first per-item one when the top level is fine), ``errors`` every non-zero
    code found as ``(path, code)`` pairs (``"topics[0]"``, or
    ``"topics[name=t].partitions[partition_index=0]"``), ``retriable`` whether
    every one of them is retriable, ``response`` the decoded answer.
    """

    def __init__(self, text: str, *, error: object, errors: tuple[tuple[str, object], ...],
                 retriable: bool, response: object) -> None:
        self.error = error
        self.errors = errors
        self.retriable = retriable
        self.response = response
        super().__init__(text)


class ProtocolError(KClientError):
    """Bytes on the wire do not form a valid Kafka message.

    ``offset`` is the byte offset (from the start of the buffer being decoded)
    where the problem was found, or ``None`` when it is not about one place.
    """

    def __init__(self, message: str, offset: int | None = None) -> None:
        self.offset = offset
        self.detail = message
        where = f" at offset {offset}" if offset is not None else ""
        super().__init__(Text(message, where))


class TruncatedMessageError(ProtocolError):
    """The data ended before the message did."""


class InvalidVarintError(ProtocolError):
    """A variable-length integer is longer than its type allows."""


class InvalidLengthError(ProtocolError):
    """A length prefix is negative (where null is not allowed) or larger than the data."""


class InvalidTaggedFieldsError(ProtocolError):
    """A tagged-field section repeats a tag or lists tags out of ascending order."""


class FrameTooLargeError(ProtocolError):
    """A frame's size prefix exceeds the configured maximum frame size."""


class UnsupportedVersionError(KClientError):
    """No version of an API is usable with the broker(s) in question.

    ``api_key`` and ``api`` name the API, ``application`` is the application's
    range in words (``"3-13 (avoiding 9)"``), ``offers`` maps each broker
    considered (node id) to its ``(min, max)`` or ``None`` when it lacks the API,
    and ``blocking`` names the brokers in the way (empty when the application
    itself is, or when the verdict is unknown).  ``None`` / empty when unknown.
    """

    def __init__(self, message: str, *, api_key: int | None = None, api: str | None = None,
                 application: str | None = None,
                 offers: dict[int, tuple[int, int] | None] | None = None,
                 blocking: tuple[int, ...] = ()) -> None:
        self.api_key = api_key
        self.api = api
        self.application = application
        self.offers = dict(offers or {})
        self.blocking = blocking
        super().__init__(message)


class VerdictUnknownError(UnsupportedVersionError):
    """No version can be promised yet: some listed broker has not answered ApiVersions.

    ``brokers`` holds the node ids of those brokers.  It is an
    :class:`UnsupportedVersionError`, so code that only asks "can I send this?"
    treats unknown as "no" (fail closed).
    """

    def __init__(self, message: str, brokers: tuple[int, ...] = (), *,
                 api_key: int | None = None, api: str | None = None,
                 application: str | None = None,
                 offers: dict[int, tuple[int, int] | None] | None = None) -> None:
        self.brokers = brokers
        super().__init__(message, api_key=api_key, api=api, application=application,
                         offers=offers)


class UnknownFeatureError(KClientError, KeyError):
    """A feature name that the feature set does not define (the message suggests names).

    It is also a :class:`KeyError`, as a failed lookup by name should be.
    ``name`` is the name asked for, ``suggestion`` the closest known name or ``None``.
    """

    def __init__(self, message: str, name: str, suggestion: str | None = None) -> None:
        self.name = name
        self.suggestion = suggestion
        super().__init__(message)

    def __str__(self) -> str:
        # KeyError would quote the message; print it as written.
        return str(self.args[0])


class _FileLocatedError(KClientError):
    """An error about a place in a file: the message starts with ``file:line:``."""

    def __init__(self, message: str, path: str | None = None, line: int | None = None) -> None:
        self.path = path
        self.line = line
        where = ""
        if path is not None:
            where = f"{path}:{line}: " if line is not None else f"{path}: "
        super().__init__(Text(where, message))


class FeatureFileError(_FileLocatedError):
    """A features file is invalid; the message names ``file:line`` and a fix."""


class SnapshotError(_FileLocatedError):
    """A snapshot record (JSON Lines) is unreadable or misses a required key."""


class InventoryError(_FileLocatedError):
    """A client inventory (broker metrics, CSV, JSON Lines) cannot be read at all.

    Single bad lines are counted and named, never raised: this is for a file
    that is missing, not a regular file, or holds no client software at all.
    """


class BrokerConnectionError(KClientError):
    """A broker could not be reached, or the connection to it failed."""

    def __init__(self, message: str, broker: str | None = None) -> None:
        self.broker = broker
        #: The message without the broker prefix (for texts that name the broker already).
        self.reason = message
        prefix = f"broker {broker}: " if broker else ""
        super().__init__(Text(prefix, message))


class ClientStateError(KClientError):
    """A client call that its current state does not allow (``refresh()`` before ``start()``).

    A programming error, not a transport one: it is not a
    :class:`BrokerConnectionError`, so retry loops do not swallow it.
    ``state`` and ``event`` name the client's state and the call (as in
    :mod:`kclient.net.lifecycle`); ``None`` when the error did not come from the
    transition table.
    """

    def __init__(self, message: str, *, state: str | None = None,
                 event: str | None = None) -> None:
        self.state = state
        self.event = event
        super().__init__(message)


class ClientClosedError(ClientStateError):
    """The client is closing or closed: ``close()`` ended (or interrupted) the call."""


class HandshakeError(BrokerConnectionError):
    """The ApiVersions handshake failed on every step of the fallback ladder."""


class UnsupportedRequestError(BrokerConnectionError):
    """The broker answered a request with a zero-length frame: request not supported by server."""


class RequestTimeoutError(BrokerConnectionError):
    """A broker did not answer within the configured timeout."""


class AuthenticationError(BrokerConnectionError):
    """SASL authentication with a broker failed (the broker's message is included)."""


class UnsupportedSaslMechanismError(AuthenticationError):
    """The broker does not enable the SASL mechanism asked for.

    ``enabled_mechanisms`` lists what the broker said it enables (from its
    SaslHandshake response), so the message can say what to pick instead.
    """

    def __init__(
        self,
        message: str,
        broker: str | None = None,
        enabled_mechanisms: tuple[str, ...] = (),
    ) -> None:
        self.enabled_mechanisms = enabled_mechanisms
        super().__init__(message, broker)


class FleetError(KClientError):
    """The fleet pipeline cannot run: Spark is missing or failed, or its input is unusable."""


class EmulatorError(KClientError):
    """The broker emulator did not start, answer a call or stop within its time limit."""


class UnknownRequestError(UnknownMessageError):
    """A request's API key or version has no schema here (raised by ``decode_request``).

    ``header`` is the decoded request header (``request_api_key``,
    ``request_api_version``, ``correlation_id``, ``client_id``), so a server can
    still answer, e.g. with UNSUPPORTED_VERSION, under the right correlation id.
    """

    def __init__(self, message: str, header: object) -> None:
        self.header = header
        super().__init__(message)
