"""``kclient api-versions`` and ``kclient features``: what a cluster speaks, and what it allows.

Both commands work in two steps: gather each cluster's brokers as
:class:`~kclient.negotiation.BrokerVersions` (:func:`collect_brokers`), then
render (:mod:`kclient.commands.render`).  The offline source reads snapshot records
(``--snapshot FILE.jsonl``, the snapshot-record contract of
:mod:`kclient.contracts`), grouped by their ``cluster``.

The live source is :mod:`kclient.commands.live`: its ``add_arguments(parser)``
adds ``--bootstrap-server`` and its options to both commands, and its
``collect(args)`` returns ``{cluster name: [BrokerVersions, ...]}`` from live
brokers (the networking modules load only when it runs).
"""

from __future__ import annotations

import argparse
import json
import shutil
import sys
from typing import TYPE_CHECKING, Any

from kclient.commands import live
from kclient.errors import ConfigError
from kclient.text import printable

__all__ = [
    "collect_brokers",
    "register",
    "run_api_versions",
    "run_features",
]

EXIT_OK = 0
EXIT_REQUIREMENT_FAILED = 1
#: A --require whose verdict is unknown: some listed broker never answered.
EXIT_REQUIREMENT_UNKNOWN = 3

if TYPE_CHECKING:
    from kclient.negotiation import BrokerVersions


def _add_common(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--snapshot", metavar="FILE.jsonl",
        help="read recorded snapshot records (JSON Lines, as written by 'kclient probe "
        "--record') instead of asking live brokers",
    )
    parser.add_argument(
        "--cluster", metavar="NAME", action="append",
        help="only this cluster of the snapshot (repeatable); default: every cluster",
    )
    mode = parser.add_mutually_exclusive_group()
    mode.add_argument(
        "--strict", dest="lenient", action="store_false", default=False,
        help="the default: while a listed broker has never answered ApiVersions, nothing it "
        "could block is promised (verdicts are 'unknown')",
    )
    mode.add_argument(
        "--lenient", dest="lenient", action="store_true", default=False,
        help="ignore brokers that never answered (the output lists them); brokers that "
        "answered before and are unreachable now still count with their last answer",
    )
    parser.add_argument(
        "--format", choices=("table", "json"), default="table",
        help="output layout: a table for people (default) or versioned JSON for scripts "
        "(the contracts are in the documentation, Reference > Machine-readable contracts, and "
        "shipped as JSON Schema in kclient/contracts/)",
    )
    live.add_arguments(parser)


def register(subparsers: Any) -> None:
    """Add the ``api-versions`` and ``features`` sub-commands."""
    api = subparsers.add_parser(
        "api-versions",
        help="per-broker and cluster-wide API versions (kafka-broker-api-versions layout)",
        description="Show, for every broker, the API versions it advertises in the layout of "
        "Apache Kafka's kafka-broker-api-versions tool, the version kclient would use, the "
        "guessed Kafka release, and the versions usable on every broker of the cluster.",
    )
    _add_common(api)
    api.add_argument(
        "--all", dest="all_apis", action="store_true",
        help="also show the API keys only controllers serve (Vote, BrokerRegistration...), "
        "which Kafka's tool leaves out",
    )
    api.set_defaults(handler=run_api_versions)

    feat = subparsers.add_parser(
        "features",
        help="which named features (features.yaml) each cluster can use, and why not",
        description="Evaluate named features against each cluster: available cluster-wide, "
        "per broker, the versions to use, and the reasons when unavailable.",
    )
    _add_common(feat)
    feat.add_argument(
        "--features", metavar="FILE",
        help="features file to evaluate (default: kclient's shipped features.yaml)",
    )
    feat.add_argument(
        "--merge-default", action="store_true",
        help="lay the --features file over the default one instead of replacing it",
    )
    feat.add_argument(
        "--require", metavar="FEATURE", action="append", default=[],
        help="exit with code 1 when FEATURE is unavailable in a cluster shown, 3 when its "
        "verdict is unknown because a listed broker never answered (repeatable; for CI gates)",
    )
    feat.add_argument(
        "--wide", action="store_true",
        help="show every broker and every reason in full, unwrapped (default: summarise "
        "brokers, group identical reasons and wrap to the terminal width, or $COLUMNS)",
    )
    feat.set_defaults(handler=run_features)


def collect_brokers(args: argparse.Namespace) -> dict[str, list[BrokerVersions]]:
    """The brokers of every cluster the command should show, by cluster name."""
    from kclient.negotiation.snapshot import brokers_by_cluster, read_snapshots

    snapshot = getattr(args, "snapshot", None)
    from kclient.commands.common import live_requested

    # The environment's KAFKA_BOOTSTRAP_SERVERS does not compete with --snapshot.
    live_wanted = bool(getattr(args, "bootstrap_server", None)) or (
        not snapshot and live_requested(args))
    if snapshot and live_wanted:
        raise ConfigError("give either --snapshot or --bootstrap-server, not both")
    if snapshot:
        from kclient.net.defaults import DEFAULT_MAX_BROKERS

        # The live client's bound on brokers per cluster holds for snapshots too.
        max_brokers = getattr(args, "max_brokers", DEFAULT_MAX_BROKERS)
        clusters = brokers_by_cluster(read_snapshots(snapshot, max_brokers=max_brokers))
        if not clusters:
            raise ConfigError(f"--snapshot: {snapshot} holds no records")
    elif live_wanted:
        clusters = live.collect(args)
    else:
        raise ConfigError("nothing to inspect: give --snapshot FILE.jsonl or "
                          "--bootstrap-server HOST:PORT")
    wanted = getattr(args, "cluster", None)
    if wanted:
        unknown = [name for name in wanted if name not in clusters]
        if unknown:
            raise ConfigError(f"--cluster: no cluster named {', '.join(unknown)} (clusters: "
                              f"{', '.join(clusters)})")
        clusters = {name: clusters[name] for name in wanted}
    return clusters


def _views(args: argparse.Namespace) -> list[Any]:
    from kclient.negotiation import ClusterView

    strict = not bool(getattr(args, "lenient", False))
    return [ClusterView(brokers, strict=strict, name=name)
            for name, brokers in collect_brokers(args).items()]


def _emit(text: str) -> None:
    sys.stdout.write(text if text.endswith("\n") else text + "\n")


def run_api_versions(args: argparse.Namespace) -> int:
    """Handler of ``kclient api-versions``."""
    from kclient.commands import render

    views = _views(args)
    all_apis = bool(args.all_apis)
    if args.format == "json":
        _emit(json.dumps(render.api_versions_document(views, all_apis=all_apis), indent=2))
    else:
        from kclient.commands.common import CLI_VOCABULARY

        _emit("\n\n".join(render.api_versions_table(v, all_apis=all_apis,
                                                      vocabulary=CLI_VOCABULARY)
                            for v in views))
    return EXIT_OK


def run_features(args: argparse.Namespace) -> int:
    """Handler of ``kclient features``: exit 1 when a ``--require`` is unavailable, 3 unknown."""
    from kclient.commands import render
    from kclient.commands.common import CLI_VOCABULARY
    from kclient.negotiation.featurefile import load_features
    from kclient.negotiation.verdict import Verdict

    if args.merge_default and not args.features:
        raise ConfigError("--merge-default needs --features FILE")
    features = load_features(args.features, merge_default=bool(args.merge_default))
    for name in args.require:
        features[name]  # an unknown name fails here, before any broker is asked
    views = _views(args)
    reports = [(view, view.evaluate(features)) for view in views]
    if args.format == "json":
        _emit(json.dumps(render.features_document(reports), indent=2))
    else:
        width = shutil.get_terminal_size().columns
        _emit("\n\n".join(render.features_table(v, r, width=width, wide=bool(args.wide),
                                                  vocabulary=CLI_VOCABULARY)
                            for v, r in reports))
    unavailable = unknown = False
    for name in args.require:
        for view, report in reports:
            result = report[name]
            if result.available:
                continue
            # The silent brokers are said in the command line's words, not Python's.
            why = "; ".join(render.reasons_in_words(view, result, CLI_VOCABULARY)) or str(
                result.state)
            if result.state is Verdict.UNKNOWN:
                line = f"{result.name} is unknown in cluster {view.name}: {why}"
                unknown = True
            else:
                line = f"{result.name} is not available in cluster {view.name}: {why}"
                unavailable = True
            print(f"kclient: requirement failed: {printable(line)}", file=sys.stderr)
    for view, _ in reports:
        if view.ignored_brokers:
            ignored = ", ".join(b.label for b in view.ignored_brokers)
            print(f"kclient: note: --lenient ignored broker(s) that never answered in cluster "
                  f"{printable(view.name)}: {printable(ignored)}", file=sys.stderr)
    # A definite "no" outranks "cannot tell yet".
    if unavailable:
        return EXIT_REQUIREMENT_FAILED
    return EXIT_REQUIREMENT_UNKNOWN if unknown else EXIT_OK
