"""Per-broker release guesses: the core's :func:`~kclient.negotiation.guess_release` per signature.

A guess depends only on what a broker advertises, its signature
(:mod:`kclient.fleet.signatures`), so each signature is guessed once on the
driver by the core itself and the guesses reach the brokers through a small
broadcast join: the rule keeps one home.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

from kclient.fleet.negotiate import fallback_release
from kclient.fleet.signatures import Signatures
from kclient.fleet.tables import local_table
from kclient.negotiation.releases import ReleaseGuess, guess_release

if TYPE_CHECKING:
    from pyspark.sql import DataFrame

__all__ = ["broker_releases", "guess_table", "guesses"]

_GUESS_SCHEMA = ("sig_id int, api_count int, guess_kind string, guess_low string, "
                 "guess_high string, guess_mode string, release_guess string")


def guesses(signatures: Signatures) -> list[ReleaseGuess]:
    """The core's release guess for every signature, by id."""
    return [guess_release(signatures.apis(index)) for index in range(len(signatures.ranges))]


def guess_table(brokers: DataFrame, signatures: Signatures,
                guessed: Sequence[ReleaseGuess]) -> DataFrame:
    """``sig_id`` and the release guess (``guessed``, from :func:`guesses`) of every signature."""
    rows = [(index, len(signatures.ranges[index]), guess.kind, guess.low, guess.high,
             guess.mode, guess.text) for index, guess in enumerate(guessed)]
    return local_table(brokers.sparkSession, rows, _GUESS_SCHEMA)


def broker_releases(brokers: DataFrame, signatures: Signatures,
                    guessed: Sequence[ReleaseGuess]) -> DataFrame:
    """One row per broker of each view with its release guess (``guessed``: :func:`guesses`).

    Every broker has a signature (an error record's is the empty list, which
    the core guesses as unknown), so the join keeps every broker.
    """
    from pyspark.sql import functions as F

    joined = brokers.join(F.broadcast(guess_table(brokers, signatures, guessed)), "sig_id",
                          "left")
    return joined.select(
        "cluster", "day", "broker_id", "host", "port", "observed_at", "state", "answered_at",
        "source", fallback_release().alias("fallback_release"), "error",
        "api_count",
        F.col("software.name").alias("software_name"),
        F.col("software.version").alias("software_version"),
        "release_guess", "guess_kind", "guess_low", "guess_high", "guess_mode")
