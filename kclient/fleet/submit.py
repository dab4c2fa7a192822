"""Run ``kclient fleet report`` or ``fleet scan`` as a ``spark-submit`` application.

spark-submit runs a Python file, not a module, so the job is a two-line
script that calls :func:`main` with its arguments (see the fleet guide,
"spark-submit on YARN or Kubernetes")::

    from kclient.fleet.submit import main
    raise SystemExit(main())

``spark-submit [OPTIONS] fleet_job.py report --snapshots PATH --out DIR`` then
behaves like ``kclient fleet report``, with the master and settings that
spark-submit was given (see :func:`kclient.fleet.session.build_session`).
"""

from __future__ import annotations

import sys
from collections.abc import Sequence

from kclient.cli import main as cli_main

__all__ = ["main"]


def main(argv: Sequence[str] | None = None) -> int:
    """``kclient fleet ARGV...`` (``report`` or ``scan`` and their options); the exit code."""
    return cli_main(["fleet", *(sys.argv[1:] if argv is None else argv)])


if __name__ == "__main__":
    sys.exit(main())
