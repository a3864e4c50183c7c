"""`abtui demo`: bring the local lab up and show it (the console replaces the listing)."""

from __future__ import annotations

import argparse


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--pairs", type=int, default=2, help="host pairs in the lab (default 2)")
    parser.add_argument("--no-ui", action="store_true",
                        help="only list the lab's hosts as reached over SSH, then exit")


def run(args: argparse.Namespace) -> int:
    from abtui import lab
    from abtui.commands.lab import print_reached

    state = lab.Lab.default()
    state.up(pairs=args.pairs)
    return print_reached(state)
