"""The ``kclient`` console entry point.

Each sub-command lives in a module of :mod:`kclient.commands` that exposes
``register(subparsers)``; the module is imported only when the command line is
parsed, so ``import kclient`` stays light.  Every error derived from
:class:`kclient.KClientError` (and bad flags) becomes one line on stderr and exit
code 2; ``-v`` shows debug logs and tracebacks.  Exit code 1 is reserved for
``--require`` checks that fail, 3 for verdicts left unknown (a broker never
answered), 4 for ``kclient request`` answers that carry an error code
(docs/reference/cli.md has the table).
"""

from __future__ import annotations

import argparse
import difflib
import importlib
import logging
import os
import re
import sys
import traceback
from collections.abc import Sequence

from kclient._version import __version__
from kclient.commands.vocabulary import CLI_VOCABULARY
from kclient.errors import KClientError
from kclient.text import printable

# Order here is the order of ``kclient --help``.
COMMAND_MODULES: tuple[str, ...] = (
    "kclient.commands.inspect",
    "kclient.commands.probe",
    "kclient.commands.watch",
    "kclient.commands.emulate",
    "kclient.commands.demo",
    "kclient.commands.codec",
    "kclient.commands.request",
    "kclient.commands.fleet",
    "kclient.commands.compat",
)

EXIT_OK = 0
EXIT_REQUIREMENT_FAILED = 1
EXIT_ERROR = 2


_UNRECOGNIZED = "unrecognized arguments: "
#: kclient's own flag, taken before or after the command.
_VERBOSE = ("-v", "--verbose")
_INVALID_CHOICE = re.compile(r"invalid choice: '([^']*)' \(choose from (.*)\)$")


class _Parser(argparse.ArgumentParser):
    """An argument parser whose errors are one line and exit code 2.

    A mistyped option or sub-command gets a did-you-mean (``--bootstrap-servers``:
    ``--bootstrap-server``; ``api-version``: ``api-versions``), and the pointer
    names the help of the sub-command concerned (``kclient api-versions --help``).
    """

    def _subcommands(self) -> dict[str, argparse.ArgumentParser]:
        for action in self._actions:
            if isinstance(action, argparse._SubParsersAction):
                return dict(action.choices)
        return {}

    def error(self, message: str) -> None:  # type: ignore[override]
        hint, prog = "", self.prog
        if message.startswith(_UNRECOGNIZED):
            options = sorted(o for o in self._option_string_actions if o.startswith("--"))
            guesses = [match[0] for token in message[len(_UNRECOGNIZED):].split()
                       if token.startswith("--")
                       for match in [difflib.get_close_matches(token.split("=", 1)[0],
                                                               options, n=1, cutoff=0.75)]
                       if match]
            if guesses:
                hint = f"; did you mean {' or '.join(dict.fromkeys(guesses))}?"
        elif (found := _INVALID_CHOICE.search(message)) is not None:
            commands = self._subcommands()
            choices = list(commands) or re.findall(r"'([^']*)'", found.group(2))
            match = difflib.get_close_matches(found.group(1), choices, n=1, cutoff=0.6)
            if match:
                hint = f"; did you mean {match[0]}?"
                if match[0] in commands:
                    prog = commands[match[0]].prog
        self.exit(EXIT_ERROR, f"kclient: error: {printable(message)}{hint} (see '{prog} "
                  "--help')\n")


def _leaf_parser(parser: argparse.ArgumentParser,
                 args: argparse.Namespace) -> argparse.ArgumentParser:
    """The (sub-)command parser that ``args`` went through last."""
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            chosen = action.choices.get(getattr(args, action.dest or "", None) or "")
            if chosen is not None:
                return _leaf_parser(chosen, args)
    return parser


def build_parser() -> argparse.ArgumentParser:
    """Build the full argument parser with every available sub-command."""
    parser = _Parser(
        prog="kclient",
        description="Kafka protocol version negotiation: ask brokers what they speak, "
        "intersect, and tell which request versions and features are usable.",
    )
    parser.add_argument("--version", action="version", version=f"kclient {__version__}")
    parser.add_argument(
        *_VERBOSE, action="store_true",
        help="debug logs and full tracebacks (also after the command)"
    )
    subparsers = parser.add_subparsers(dest="command", metavar="COMMAND", parser_class=_Parser)
    for name in COMMAND_MODULES:
        importlib.import_module(name).register(subparsers)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    """Run the command line; returns the process exit code."""
    args_list = list(sys.argv[1:] if argv is None else argv)
    parser = build_parser()
    args, extras = parser.parse_known_args(args_list)
    # -v is kclient's, wherever it is given: before the command or after it
    # (`kclient fleet report ... -v`); a sub-command leaves it unclaimed.
    unclaimed = [token for token in extras if token not in _VERBOSE]
    verbose = args.verbose = bool(args.verbose) or len(unclaimed) < len(extras)
    extras = unclaimed
    logging.basicConfig(
        level=logging.DEBUG if verbose else logging.WARNING,
        format="%(asctime)s %(levelname)s %(name)s: %(message)s",
    )
    if extras:
        # Reported by the sub-command that was given them, with its own options and help.
        _leaf_parser(parser, args).error(_UNRECOGNIZED + " ".join(extras))
    handler = getattr(args, "handler", None)
    if handler is None:
        parser.print_help(sys.stderr)
        return EXIT_ERROR
    try:
        code = handler(args)
        sys.stdout.flush()
    except BrokenPipeError:
        # The reader went away (``kclient decode ... | head -1``): not an error of ours.
        # Point stdout at nothing so the interpreter's final flush stays quiet too.
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
        return EXIT_OK
    except KClientError as exc:
        if verbose:
            # The whole story for the curious, but the same exit code as without -v.
            traceback.print_exc(file=sys.stderr)
        # One line, whatever the message quotes (broker error text, host names), with
        # the options it names as this command line's flags.
        print(f"kclient: error: {printable(CLI_VOCABULARY.text(exc))}", file=sys.stderr)
        return EXIT_ERROR
    except KeyboardInterrupt:
        return 130
    return int(code or 0)


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
