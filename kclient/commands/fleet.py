"""``kclient fleet report|scan|synth|prepare``: the fleet pipeline from the command line.

``report`` evaluates snapshot records, ``scan`` probes the clusters of a targets
file from Spark tasks and then reports, ``synth`` writes a synthetic fleet,
``prepare`` is deprecated (it says so and does nothing).
``--engine`` chooses in-process or Spark (:mod:`kclient.fleet.engine`); Spark
runs embedded (``local[*]``) unless ``--master`` names a cluster.  The fleet
package and PySpark are imported inside the handlers only.
"""

from __future__ import annotations

import argparse
import re
import sys
from typing import Any

from kclient.commands.common import CLUSTER_LABEL_HELP
from kclient.errors import ConfigError

__all__ = ["register"]


def _say(text: str) -> None:
    print(f"kclient fleet: {text}", file=sys.stderr, flush=True)


def _positive_int(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a whole number, got {text!r}") from None
    if value < 1:
        raise argparse.ArgumentTypeError(f"must be 1 or more, got {value}")
    return value


def _positive_float(text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a number, got {text!r}") from None
    if not value > 0 or value == float("inf"):
        raise argparse.ArgumentTypeError(f"must be a positive number, got {text!r}")
    return value


def _add_spark(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--engine", choices=("auto", "local", "spark"), default="auto",
        help="where the report runs: 'local' in this process, 'spark' on Spark, 'auto' "
        "(default) in-process up to 1 GiB of input and on Spark beyond it or when --master "
        "is given; the command says which it picked")
    parser.add_argument(
        "--quiet", action="store_true",
        help="no stage progress line on stderr while Spark runs (it is shown only when "
        "stderr is a terminal anyway)")
    parser.add_argument(
        "--master", metavar="URL",
        help="Spark master (default: embedded local[*]); e.g. spark://host:7077")
    parser.add_argument(
        "--driver-memory", metavar="SIZE",
        help="heap of the Spark driver kclient starts, e.g. 4g, passed to Spark as "
        "spark.driver.memory (default: Spark's own, 1g unless spark-defaults.conf says "
        "otherwise; at least 450m)")
    parser.add_argument(
        "--features", metavar="FILE",
        help="features file to evaluate (default: kclient's shipped features.yaml)")


def register(subparsers: Any) -> None:
    """Add ``fleet`` with its ``report``, ``scan``, ``synth`` and ``prepare`` sub-commands."""
    fleet = subparsers.add_parser(
        "fleet",
        help="feature availability across many clusters, in-process or on Spark",
        description="Apply kclient's negotiation rules to a whole fleet of clusters, in this "
        "process or with Apache Spark for fleets one machine does not hold (in-process "
        "needs kclient's 'fleet' extra, Spark its 'spark' extra and Java).",
    )
    commands = fleet.add_subparsers(dest="fleet_command", metavar="COMMAND")
    fleet.set_defaults(handler=lambda _args: _missing(fleet))

    report = commands.add_parser(
        "report", help="evaluate snapshot records: Parquet tables, report.md/html, SVG charts",
        description="Read snapshot records (JSON Lines or Parquet; a file, a directory or a "
        "glob), keep the latest record of each broker, intersect API versions per cluster "
        "(KIP-35), evaluate features, guess releases, and write Parquet tables plus "
        "report.md and report.html under --out.")
    report.add_argument("--snapshots", metavar="PATH", required=True,
                        help="snapshot records: file, directory or glob")
    report.add_argument("--out", metavar="DIR", required=True, help="output directory")
    report.add_argument("--history", action="store_true",
                        help="one view per cluster and observation day (UTC) instead of the "
                        "latest record of each broker")
    report.add_argument(
        "--inventory", metavar="PATH", action="append", default=[],
        help="a client inventory (broker metrics as the JMX exporter writes them, CSV or JSON "
        "Lines; a file, a directory or a glob; repeatable): adds the upgrade readiness section "
        "and the upgrade_readiness table, for --target")
    report.add_argument(
        "--target", metavar="RELEASE",
        help="with --inventory: the Kafka release the clusters move to, e.g. 4.0")
    report.add_argument(
        "--cluster-label", metavar="LABEL",
        help=CLUSTER_LABEL_HELP)
    _add_spark(report)
    report.set_defaults(handler=run_report)

    scan = commands.add_parser(
        "scan", help="probe the clusters of a targets file, then report",
        description="Negotiate with every cluster listed in a targets file (JSON Lines: "
        "cluster, bootstrap_servers, optional tls and fallback), in this process or spread "
        "over Spark tasks, with bounded concurrency and a per-cluster timeout; unreachable "
        "clusters become error records. The records go to DIR/snapshots, then the report is built.")
    scan.add_argument("--targets", metavar="FILE", required=True,
                      help="targets file (JSON Lines)")
    scan.add_argument("--out", metavar="DIR", required=True, help="output directory")
    scan.add_argument("--timeout", type=_positive_float, default=30.0, metavar="SECONDS",
                      help="time allowed per cluster (default 30)")
    scan.add_argument("--concurrency", type=_positive_int, default=8, metavar="N",
                      help="clusters probed at once (by each Spark task with the Spark "
                      "engine; default 8)")
    _add_spark(scan)
    scan.set_defaults(handler=run_scan)

    synth = commands.add_parser(
        "synth", help="write a realistic synthetic fleet of snapshot records",
        description="Write snapshot records of N synthetic clusters built from the Kafka "
        "release profiles: mixed releases, rolling upgrades, unreachable brokers, proxies "
        "that needed the fallback ladder. JSON Lines, or Parquet when PATH ends in .parquet.")
    synth.add_argument("--clusters", type=_positive_int, required=True, metavar="N",
                       help="number of clusters")
    synth.add_argument("--out", metavar="PATH", required=True, help="file to write")
    synth.add_argument("--seed", type=int, default=0, metavar="S",
                       help="random seed (default 0); the same seed gives the same fleet")
    synth.add_argument("--brokers-per-cluster", type=_positive_int, metavar="N",
                       help="give every cluster N brokers (default: a realistic mix, ~5)")
    synth.add_argument("--inventory", metavar="FILE.prom",
                       help="also write the fleet's client inventory there: broker metrics as "
                       "the JMX exporter writes them (default naming, a kafka_cluster label), "
                       "for 'fleet report --inventory FILE --cluster-label kafka_cluster'")
    synth.add_argument("--history", type=_positive_int, metavar="DAYS",
                       help="one record per broker and UTC day for DAYS days (upgrades "
                       "part-way, brokers unreachable some days), for 'fleet report "
                       "--history'; default: the latest records only")
    synth.set_defaults(handler=run_synth)

    prepare = commands.add_parser(
        "prepare", help="deprecated: no longer needed (says so and exits 0)",
        description="Deprecated: this command used to build a class archive for the Spark "
        "driver; it is no longer needed and will be removed. It accepts its old flag and "
        "does nothing.")
    prepare.add_argument("--remove", action="store_true", help="ignored")
    prepare.set_defaults(handler=run_prepare)


def _missing(parser: argparse.ArgumentParser) -> int:
    parser.print_help(sys.stderr)
    return 2


def _features(args: argparse.Namespace) -> Any:
    from kclient.negotiation.featurefile import load_features

    return load_features(args.features) if args.features else None


# The master URL forms Spark accepts (local, standalone, YARN, Kubernetes, Mesos).
_MASTER = re.compile(r"^(local(\[(\*|\d+)(,\d+)?\])?|local-cluster\[\d+,\d+,\d+\]"
                     r"|spark://\S+|yarn|k8s://\S+|mesos://\S+)$")

def _session(args: argparse.Namespace) -> Any:
    from kclient.fleet.session import build_session, submitted

    master = args.master or None
    if master is None and submitted():
        import kclient

        # Which kclient the driver got matters when it was shipped with --py-files.
        _say(f"running in a spark-submit driver (kclient {kclient.__version__} from "
             f"{kclient.__file__.rsplit('/', 2)[0]})")
    else:
        _say(f"starting Spark ({master or 'local[*]'})")
    # Spark's failures come back as one kclient error line; its log (errors
    # with Java stack traces) only with -v.
    return build_session(master, progress=sys.stderr.isatty() and not args.quiet,
                         spark_log="error" if getattr(args, "verbose", False) else "off",
                         driver_memory=args.driver_memory)


def _summary(data: Any, out: str) -> None:
    everywhere = sum(1 for f in data.features if f.clusters and f.available == f.clusters)
    from kclient.negotiation.verdict import Verdict

    counts = [sum(getattr(f, state.value) for f in data.features) for state in Verdict]
    _say(f"{data.clusters} cluster(s), {data.brokers} broker(s) "
         f"({data.stale_brokers} stale, {data.unknown_brokers} unknown, "
         f"{data.fallback_brokers} fallback); "
         f"{everywhere}/{len(data.features)} feature(s) available everywhere; "
         f"cluster verdicts: {counts[0]} available, {counts[1]} unavailable, "
         f"{counts[2]} unknown")
    if data.readiness is not None:
        _say(f"upgrade readiness: {data.readiness.summary()}")
    if data.bad_records:
        _say(f"skipped {data.bad_records} bad record(s); first: "
             + "; ".join(f"{b.file}:{b.line}: {b.reason}" for b in data.bad_lines[:3]))
    print(f"{out}/report.md")


def _engine(args: argparse.Namespace, input_bytes: int | None) -> str:
    """The engine that runs (``--engine``), said on stderr with the reason."""
    from kclient.fleet.engine import choose_engine, require_engine
    from kclient.fleet.local import LOCAL_LIMIT_BYTES
    from kclient.fleet.session import check_driver_memory, submitted

    master = args.master or None
    # Flags are checked before anything runs, whichever engine runs.
    if args.driver_memory is not None:
        check_driver_memory(args.driver_memory)
    if master is not None and not _MASTER.match(master.strip()):
        raise ConfigError(f"--master: {master!r} is not a Spark master URL; give local[*], "
                          "local[N], spark://host:7077, yarn or k8s://https://host:port")
    choice = choose_engine(args.engine, master=master, submitted=master is None and submitted(),
                           input_bytes=input_bytes, limit=LOCAL_LIMIT_BYTES)
    if choice.engine == "local" and args.driver_memory is not None and args.engine == "local":
        raise ConfigError("--driver-memory sizes Spark's driver; drop it or use --engine spark")
    _say(f"engine: {choice.engine} ({choice.why})")
    require_engine(choice.engine, f"kclient fleet's {choice.engine} engine")
    return choice.engine


def _readiness(args: argparse.Namespace) -> Any:
    """The judged client inventory of ``--inventory``/``--target``, or None (before Spark)."""
    inventory = list(getattr(args, "inventory", None) or [])
    target = getattr(args, "target", None)
    label = getattr(args, "cluster_label", None)
    if not inventory:
        if target or label:
            raise ConfigError("--target and --cluster-label go with --inventory")
        return None
    if not target:
        raise ConfigError("--inventory needs --target, the release the clusters move to, e.g. "
                          "--target 4.0")
    from kclient.fleet.readiness import ReadinessInput, judge_input

    judged = judge_input(ReadinessInput(tuple(inventory), target, label))
    for note in judged.inventory.notes():
        _say(note)
    return judged


def run_report(args: argparse.Namespace) -> int:
    """Handler of ``kclient fleet report``."""
    from kclient.fleet.reader import find_inputs

    features = _features(args)
    inputs = find_inputs(args.snapshots)  # a bad path fails here, before Spark starts
    readiness = _readiness(args)  # so does a bad inventory
    if _engine(args, inputs.work_bytes()) == "local":
        from kclient.fleet.local import run_local_report

        data = run_local_report(args.snapshots, args.out, features=features,
                                history=args.history, log=_say, readiness=readiness)
        _summary(data, args.out)
        return 0
    from kclient.fleet.pipeline import run_report as pipeline
    from kclient.fleet.session import stop_session

    spark = _session(args)
    try:
        data = pipeline(spark, args.snapshots, args.out, features=features,
                        history=args.history, log=_say, readiness=readiness)
    finally:
        stop_session(spark)
    _summary(data, args.out)
    return 0


def run_scan(args: argparse.Namespace) -> int:
    """Handler of ``kclient fleet scan``."""
    from kclient.fleet.scan import read_targets
    from kclient.fleet.scan import run_scan as scan
    from kclient.fleet.session import stop_session

    features = _features(args)
    read_targets(args.targets)  # a bad targets file fails here, before Spark starts
    if _engine(args, 0) == "local":
        from kclient.fleet.scan import run_local_scan

        data = run_local_scan(args.targets, args.out, features=features,
                              timeout=args.timeout, concurrency=args.concurrency, log=_say)
        _summary(data, args.out)
        return 0
    spark = _session(args)
    try:
        data = scan(spark, args.targets, args.out, features=features, timeout=args.timeout,
                    concurrency=args.concurrency, log=_say)
    finally:
        stop_session(spark)
    _summary(data, args.out)
    return 0


def run_synth(args: argparse.Namespace) -> int:
    """Handler of ``kclient fleet synth``."""
    from kclient.fleet.synth import write_fleet

    summary = write_fleet(args.out, args.clusters, args.seed,
                          brokers_per_cluster=args.brokers_per_cluster,
                          history=args.history)
    _say(f"{summary.clusters} cluster(s), {summary.brokers} broker(s), {summary.records} "
         f"record(s), {summary.api_rows} API row(s) written to {summary.path}")
    if getattr(args, "inventory", None):
        from kclient.fleet.synth_inventory import write_inventory

        series = write_inventory(args.inventory, args.clusters, args.seed)
        _say(f"the client inventory of {args.clusters} cluster(s), {series} series, written to "
             f"{args.inventory}")
    return 0


#: What ``kclient fleet prepare`` says now that it does nothing (kept for one release).
PREPARE_RETIRED = ("'kclient fleet prepare' is no longer needed and does nothing: Spark starts "
                   "as configured by spark-defaults.conf / spark-submit, and 'fleet report' "
                   "runs in-process by default; this command will be removed")


def run_prepare(args: argparse.Namespace) -> int:
    """Handler of ``kclient fleet prepare``: deprecated, says so and exits 0."""
    _say(PREPARE_RETIRED)
    return 0
