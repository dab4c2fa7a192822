"""``kclient probe``: record what every broker of a cluster speaks, as snapshot records.

One record per broker (the snapshot-record contract, :mod:`kclient.contracts`),
appended to a JSON Lines file (or printed on stdout): the input of
``kclient features --snapshot`` and of the fleet
pipeline.  A broker that fails is recorded as an error record; when no bootstrap
server answers at all, one error record per bootstrap server (broker id -1) is
written and the command exits 2.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import Any

from kclient.commands.common import add_connection_arguments
from kclient.errors import AuthenticationError, BrokerConnectionError, ConfigError

__all__ = ["register", "run_probe"]


def register(subparsers: Any) -> None:
    """Add the ``probe`` sub-command."""
    parser = subparsers.add_parser(
        "probe",
        help="negotiate with every broker and append snapshot records (JSON Lines)",
        description="Negotiate with every broker of a cluster and append one snapshot "
        "record per broker (the snapshot-record format of the documentation's Machine-readable "
        "contracts page, read by 'kclient features --snapshot' "
        "and 'kclient fleet report'). Brokers that fail become error records.",
    )
    parser.add_argument("--cluster", required=True, metavar="NAME",
                        help="cluster name written in every record")
    parser.add_argument("--record", metavar="FILE.jsonl",
                        help="append the records to this file (created when missing); "
                        "Parquet when it ends in .parquet (needs pyarrow); "
                        "default: print them on stdout")
    add_connection_arguments(parser)
    parser.set_defaults(handler=run_probe)


def _write(args: argparse.Namespace, records: list[Any]) -> None:
    from kclient.negotiation.snapshot import append_snapshots, dumps_snapshots, record_to_json

    if args.record and str(args.record).endswith(".parquet"):
        # Parquet: the fleet pipeline's fast path (needs pyarrow, imported on demand).
        from kclient.fleet.synth import write_parquet_records

        write_parquet_records(Path(args.record), (record_to_json(r) for r in records),
                              append=True)
    elif args.record:
        append_snapshots(args.record, records)
    else:
        sys.stdout.write(dumps_snapshots(records))
        sys.stdout.flush()


def run_probe(args: argparse.Namespace) -> int:
    """Handler of ``kclient probe``."""
    from kclient.commands.common import CLI_VOCABULARY, bootstrap_from_args, negotiate_brokers
    from kclient.negotiation.snapshot import SnapshotRecord, unreachable_records, utc_now

    cluster = str(args.cluster).strip()
    if not cluster:
        raise ConfigError("--cluster: give the cluster a non-empty name")
    observed = utc_now()
    try:
        brokers = negotiate_brokers(args)
    except BrokerConnectionError as exc:
        why = CLI_VOCABULARY.text(exc)  # the error in this command line's words
        records = unreachable_records(cluster, bootstrap_from_args(args), why, observed)
        _write(args, records)
        where = f" to {args.record}" if args.record else ""
        # Keep the kind of failure: a refused password is not an unreachable cluster.
        kind = AuthenticationError if isinstance(exc, AuthenticationError) else (
            BrokerConnectionError)
        raise kind(f"{why} (no broker of cluster {cluster} reachable; "
                   f"{len(records)} error record(s) written{where})") from None
    records = [SnapshotRecord.from_broker(cluster, b, observed) for b in brokers]
    _write(args, records)
    failed = sum(1 for r in records if r.source == "error")
    where = args.record if args.record else "stdout"
    note = f", {failed} of them error record(s)" if failed else ""
    print(f"kclient probe: {len(records)} record(s) for cluster {cluster} written to "
          f"{where}{note}", file=sys.stderr)
    return 0
