"""Command-line entry point.

Each subcommand lives in its own module under `abtui.commands` and is imported only when it
runs, so `abtui --help` and the first frame of the console stay fast.
"""

from __future__ import annotations

import argparse
import contextlib
import importlib
import importlib.util
import sys
from collections.abc import Sequence

from abtui import __version__
from abtui.commands.helptext import EPILOGS
from abtui.core.errors import EXIT_BAD_INPUT, AbtuiError
from abtui.core.text import spelled_out, visible

# subcommand -> (module under abtui.commands, one-line help)
COMMANDS: dict[str, tuple[str, str]] = {
    "tui": ("tui", "open the console (the default), optionally on PROFILE"),
    "demo": ("demo", "bring the local lab up and open the console on it"),
    "lab": ("lab", "manage the local network-namespace lab: up, down, status"),
    "check": ("check", "preflight a profile: hosts, programs, knobs, tunnels"),
    "run": ("run", "run a profile's plan headless and save the session"),
    "recover": ("recover", "restore knobs, remove tunnels, end processes after a crash"),
    "import": ("import_", "parse saved iperf3 and ping outputs"),
    "sessions": ("sessions", "list saved sessions"),
    "export": ("export", "export a session as md, text, csv, json or plots"),
    "compare": ("compare", "compare two sessions phase by phase"),
    "gate": ("gate", "the regression gate: fail when NEW lost throughput against OLD"),
    "bisect": ("bisect", "find the candidate (build, value) that made it worse"),
    "view": ("view", "watch a session read-only as it is recorded (--follow), or a saved one"),
    "serve": ("serve", "serve the read-only console on a session to web browsers"),
}
# The console's commands: Textual owns the terminal, and its widgets spell host text out; every
# other command's stdout and stderr are spelled out as they are written (abtui.core.text)
CONSOLE_COMMANDS = frozenset({"tui", "demo", "view"})


def build_parser(command: str | None = None) -> argparse.ArgumentParser:
    """The parser; with `command`, only that subcommand's (its module imported for its
    arguments), else every one's: importing every command's module pulled numpy in through
    `compare` before the console's first frame, and the other thirteen parsers (each module
    found on disk, each parser built) were 3 ms of CPU there. What it prints for that command
    (its help, an error) is the same: the top-level usage names no subcommand (COMMAND)."""
    parser = argparse.ArgumentParser(
        prog="abtui",
        description="Live, side-by-side A/B testing of kernels and network settings.",
    )
    parser.add_argument("--version", action="version", version=f"abtui {__version__}")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")
    for name, (module, help_text) in COMMANDS.items():
        if command is not None and name != command:
            continue
        if importlib.util.find_spec(f"abtui.commands.{module}") is None:
            continue  # not built yet
        sp = sub.add_parser(name, help=help_text, description=help_text,
                            epilog=EPILOGS.get(name),
                            formatter_class=argparse.RawDescriptionHelpFormatter)
        _command_module(module).add_arguments(sp)
        sp.set_defaults(_module=module)
    return parser


PROFILE_FLAG_DEFAULT = "--profile=99"  # abtui.remote.profiling.DEFAULT_HZ


def _command_module(module: str):  # type: ignore[no-untyped-def]
    return importlib.import_module(f"abtui.commands.{module}")


def main(argv: Sequence[str] | None = None) -> int:
    args_list = list(sys.argv[1:] if argv is None else argv)
    if not args_list or (args_list[0].startswith("-") and args_list[0] not in ("-h", "--help",
                                                                              "--version")):
        args_list = ["tui", *args_list]
    # `--profile` takes its rate only as `--profile=HZ` (GNU's optional argument): a bare
    # `--profile` never swallows the PROFILE after it
    args_list = [PROFILE_FLAG_DEFAULT if a == "--profile" else a for a in args_list]
    parser = build_parser(args_list[0] if args_list[0] in COMMANDS else None)
    try:
        args = parser.parse_args(args_list)
    except SystemExit as exc:  # argparse: 2 for bad arguments, 0 for --help
        return int(exc.code or 0)
    if args.command is None:
        parser.print_help()
        return EXIT_BAD_INPUT
    with contextlib.nullcontext() if args.command in CONSOLE_COMMANDS else spelled_out():
        try:
            return int(_command_module(args._module).run(args) or 0)
        except AbtuiError as exc:  # its message may quote a host: spelled out here too
            with contextlib.suppress(OSError, ValueError):  # a terminal gone (SIGHUP)
                print(f"abtui: {visible(str(exc), lines=True)}", file=sys.stderr)
            return exc.exit_code
        except KeyboardInterrupt:
            print("abtui: interrupted", file=sys.stderr)
            return 130
