"""The three verdict states and the sentences that explain them.

Every answer kclient gives about an API or a feature is one of three states
(see the Concepts page): *available* (every broker the cluster lists has answered and
they share a usable version), *unavailable* (brokers that answered rule it out;
they are named) or *unknown* (no broker rules it out, but some listed broker has
never answered ApiVersions on a live connection, so nothing can be promised).

A broker is in one of three states too: *answered* (its latest connection
negotiated), *stale* (unreachable now; its last answer still counts, so a
restart never widens the cluster's ranges) or *unknown* (never answered).

The wording of these explanations lives here only: the cluster view, the
feature evaluation, the CLI and the fleet pipeline all build their texts from
these functions and constants.
"""

from __future__ import annotations

import enum
from collections.abc import Iterable
from datetime import datetime

from kclient.address import format_address
from kclient.negotiation.ranges import VersionRange

__all__ = [
    "APP_LACKS",
    "APP_SPEAKS",
    "AT_LEVEL",
    "BROKER_LABEL",
    "BROKER_NAME",
    "LACKS",
    "LEVEL_FIX",
    "LEVEL_UNSUPPORTED",
    "NOT_FINALIZED",
    "NO_ALTERNATIVE",
    "NO_ATTEMPT",
    "NO_BROKER",
    "NO_SHARED_VERSION",
    "OFFERS",
    "UNKNOWN_ENTRY",
    "UNKNOWN_NOUNS",
    "UNKNOWN_SENTENCE",
    "UNKNOWN_SEPARATOR",
    "BrokerState",
    "Verdict",
    "age_text",
    "avoided_text",
    "broker_label",
    "lacks_text",
    "level_fix_text",
    "offers_text",
    "outside_application",
    "stale_text",
    "unknown_text",
]


class Verdict(enum.StrEnum):
    """Whether an API or a feature can be used on a cluster."""

    AVAILABLE = "available"
    UNAVAILABLE = "unavailable"
    UNKNOWN = "unknown"


class BrokerState(enum.StrEnum):
    """What is known about one broker's versions."""

    #: Its latest connection negotiated: the ranges are current.
    ANSWERED = "answered"
    #: It answered before and is unreachable now: its last answer still counts.
    STALE = "stale"
    #: It has never answered ApiVersions on a live connection.
    UNKNOWN = "unknown"


#: Fragments of reasons, shared with the Spark pipeline (which builds them in SQL).
APP_SPEAKS = ": application speaks "
APP_LACKS = "the application does not speak "
NOT_FINALIZED = " has not finalized it"
AT_LEVEL = " has it at level "
#: How a feature level below a requirement is raised: Kafka's tool, then the option of
#: kclient's emulator (feature name and level, twice).
LEVEL_FIX = ("to finalize it: kafka-features.sh upgrade --feature %s=%d (an emulated "
             "cluster: kclient emulate --finalized-feature %s=%d)")
NO_SHARED_VERSION = "the brokers share no version: "
NO_ALTERNATIVE = "no alternative holds: "

#: The reason when no broker of a cluster has answered ApiVersions.
NO_BROKER = "no broker answered ApiVersions"
#: How a broker without an API is described (after ``broker N``).
LACKS = " lacks it"
#: How a broker's range is introduced (after ``broker N``).
OFFERS = " offers "

# The templates below are printf style (``%d``, ``%s``) so that Python's ``%``
# and Spark SQL's ``format_string`` (the fleet pipeline) fill them alike.

#: How a broker is named in the short texts: its node id.
BROKER_NAME = "broker %d"
#: How messages name a broker: node id, address (``host:port``, an IPv6 host in brackets).
BROKER_LABEL = BROKER_NAME + " (%s)"
#: The error shown for a silent broker when no attempt to reach it has finished.
NO_ATTEMPT = "no attempt finished yet"
#: One silent broker in :func:`unknown_text`: its label, then its last error.
UNKNOWN_ENTRY = "%s (%s)"
#: Between the entries of :func:`unknown_text`.
UNKNOWN_SEPARATOR = "; "
#: The subject of :func:`unknown_text` for one silent broker, and for several.
UNKNOWN_NOUNS = ("broker has", "brokers have")
#: :func:`unknown_text`: how many brokers, the noun, the entries.
UNKNOWN_SENTENCE = (
    "%d %s not answered ApiVersions yet: %s; nothing can be promised until they answer "
    "(to ignore them, opt in to lenient mode: strict=False in Python, --lenient on the "
    "command line)"
)


def broker_label(node_id: int, host: str, port: int) -> str:
    """``broker 2 (10.0.0.5:9092)``: how messages name a broker."""
    return BROKER_LABEL % (node_id, format_address(host, port))


def offers_text(node_id: int, rng: VersionRange | None) -> str:
    """``broker 2 offers 0-6`` or ``broker 2 lacks it``."""
    if rng is None:
        return lacks_text(node_id)
    return f"{BROKER_NAME % node_id}{OFFERS}{rng}"


def outside_application(requirement: str, application: str) -> str:
    """A requirement the application itself cannot meet (``Produce needs 99+; the ...``)."""
    return f"{requirement}; the application speaks {application}"


def avoided_text(subject: str, overlap: VersionRange) -> str:
    """Versions exist in common but the application avoids each of them."""
    return f"{subject}; every common version ({overlap}) is avoided by the application"


#: When brokers report the feature supported without that level (printf style: the
#: brokers, the feature, the level).
LEVEL_UNSUPPORTED = ("%s cannot finalize %s %d (the Kafka release running there does not "
                     "support it): upgrade first")


def level_fix_text(feature: str, level: int, unsupported: Iterable[int] = ()) -> str:
    """How to finalize ``feature`` at ``level`` on a real cluster and an emulated one,
    or, when brokers ``unsupported`` report a supported range without it, that they
    need a newer release first."""
    ids = sorted(unsupported)
    if ids:
        who = ", ".join(BROKER_NAME % node for node in ids)
        return LEVEL_UNSUPPORTED % (who, feature, level)
    return LEVEL_FIX % (feature, level, feature, level)


def lacks_text(node_id: int) -> str:
    """``broker 2 lacks it``."""
    return f"{BROKER_NAME % node_id}{LACKS}"


def age_text(since: datetime, now: datetime) -> str:
    """How long ago ``since`` was, in the largest sensible unit (``42 s``, ``3 min``)."""
    seconds = max(0.0, (now - since).total_seconds())
    if seconds < 120:
        return f"{seconds:.0f} s"
    if seconds < 7200:
        return f"{seconds / 60:.0f} min"
    if seconds < 172800:
        return f"{seconds / 3600:.0f} h"
    return f"{seconds / 86400:.0f} d"


def unknown_text(labels_and_errors: Iterable[tuple[str, str | None]]) -> str:
    """The sentence naming brokers that have not answered, each with its last error."""
    parts = [UNKNOWN_ENTRY % (label, error or NO_ATTEMPT) for label, error in labels_and_errors]
    noun = UNKNOWN_NOUNS[0] if len(parts) == 1 else UNKNOWN_NOUNS[1]
    return UNKNOWN_SENTENCE % (len(parts), noun, UNKNOWN_SEPARATOR.join(parts))


def stale_text(label: str, error: str | None, answered_at: datetime | None,
               now: datetime | None) -> str:
    """The note on a broker whose last answer is used while it is unreachable."""
    when = ""
    if answered_at is not None:
        when = (f", {age_text(answered_at, now)} old" if now is not None
                else f" from {answered_at.isoformat(timespec='seconds')}")
    return f"{label} is unreachable ({error or 'closed'}); using its last answer{when}"
