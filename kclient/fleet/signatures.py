"""A fleet's distinct API sets (*signatures*).

What a broker advertises (its API ranges) is all that KIP-35 arithmetic and a
release guess look at, and a fleet has few distinct sets of ranges: a few
dozen in the synthetic fleets, one per release, mode and custom build in real
ones.  So the Spark reader (:mod:`kclient.fleet.reader`) brings the distinct
``api_versions`` lists to the driver once and numbers them (``sig_id``);
brokers carry that number, and the core judges each signature's ranges where
they matter (:mod:`kclient.fleet.judge`, :mod:`kclient.fleet.releases`).
"""

from __future__ import annotations

import attrs

from kclient.errors import FleetError
from kclient.negotiation.ranges import VersionRange

__all__ = [
    "MAX_SIGNATURES",
    "Signatures",
    "too_many",
]

#: Distinct API sets (and distinct sets of them) a fleet may hold before the
#: work per set would crowd the driver.
MAX_SIGNATURES = 100_000


@attrs.frozen
class Signatures:
    """The distinct ``api_versions`` arrays of a fleet; a signature's id is its index."""

    ranges: tuple[tuple[tuple[int, int, int], ...], ...]

    def apis(self, sig_id: int) -> dict[int, VersionRange]:
        """The API ranges of one signature, as the core holds them."""
        return {key: VersionRange(low, high) for key, low, high in self.ranges[sig_id]}


def too_many(what: str, limit: int = MAX_SIGNATURES) -> FleetError:
    """The error for more than ``limit`` distinct ``what`` in one fleet."""
    return FleetError(f"the snapshots hold more than {limit:,} distinct {what}; "
                      "the per-set work would not fit the driver: split the fleet into "
                      "several reports")
