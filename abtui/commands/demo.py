"""`abtui demo`: bring the local lab up and open the console on it; on leaving, offer to take
the lab down (`--keep-lab` / `--down` decide without asking).

The question is only asked of a person at the terminal: never when stdin is not a terminal
(or not this process's foreground), and never after a signal ended the console (SIGTERM, or
SIGHUP: the terminal went away), which must end promptly; a signal while it asks answers no.
The lab is then left up and one line says how to take it down.
"""

from __future__ import annotations

import argparse
import contextlib
import os
import signal
import sys
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from abtui.lab.netns import Lab


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--pairs", type=int, default=2, help="host pairs in the lab (default 2)")
    parser.add_argument("--no-ui", action="store_true",
                        help="only list the lab's hosts as reached over SSH, then exit")
    leave = parser.add_mutually_exclusive_group()
    leave.add_argument("--keep-lab", action="store_true",
                       help="leave the lab up after the console closes (no question)")
    leave.add_argument("--down", action="store_true",
                       help="take the lab down after the console closes (no question)")


# what ends the console with 128 + its number (abtui.ui.guard): no one is left to answer
SIGNALLED = 128
ASKED_SIGNALS = (signal.SIGTERM, signal.SIGHUP)  # answer the question with no


class _Signalled(Exception):
    """A signal arrived while the question waited for its answer."""

    def __init__(self, signum: int) -> None:
        super().__init__(signum)
        self.signum = signum


def _take_down(args: argparse.Namespace, signalled: bool = False) -> bool:
    """Whether to take the lab down: the flags, else the question when someone can answer it
    (a terminal in the foreground, and the console not ended by a signal)."""
    if args.down or args.keep_lab:
        return bool(args.down)
    if signalled or not _can_ask():
        return False
    return _ask("Take the lab down? [y/N] ").strip().lower() in ("y", "yes")


def _can_ask() -> bool:
    """stdin is a terminal and this process its foreground: input() would not block on
    nothing, nor stop the process (SIGTTIN) in the background."""
    try:
        return sys.stdin.isatty() and os.tcgetpgrp(sys.stdin.fileno()) == os.getpgrp()
    except (OSError, ValueError, AttributeError):
        return False


def _ask(question: str) -> str:
    """The answer ("" at end of input); _Signalled when SIGTERM/SIGHUP arrives meanwhile."""
    def answer_no(signum: int, _frame: object) -> None:
        raise _Signalled(signum)

    previous = {sig: signal.signal(sig, answer_no) for sig in ASKED_SIGNALS}
    try:
        return input(question)
    except EOFError:
        return ""
    finally:
        for sig, handler in previous.items():
            signal.signal(sig, handler if handler is not None else signal.SIG_DFL)


def lab_named(lab_name: str) -> str:
    """The lab as a line names it, its name said once: "lab" (not "lab lab"), "h5labu",
    "lab bench"."""
    return lab_name if "lab" in lab_name.lower() else f"lab {lab_name}"


def demo_title(lab_name: str) -> str:
    """The console's title: the lab's name, said once."""
    return f"abtui demo — {lab_named(lab_name)}"


def left_up(lab_name: str) -> str:
    """What the demo says when it leaves the lab up: `lab left up (...)`, not `lab lab`."""
    return f"{lab_named(lab_name)} left up (`abtui lab down` removes it)"


def run(args: argparse.Namespace) -> int:
    from abtui.lab import lease
    from abtui.lab import netns as lab

    state = lab.Lab.default()
    with lease.hold([state.state_dir]):  # from before it is up to the console's end
        code = _demo(args, state)
    if args.no_ui:
        return code
    try:
        down = _take_down(args, signalled=code > SIGNALLED)
    except _Signalled as sig:  # asked, and ended meanwhile: the lab stays, the code says why
        with contextlib.suppress(OSError):
            print(file=sys.stderr)  # the question's line ends before the next one
        down, code = False, SIGNALLED + sig.signum
    if down:
        try:
            state.down()
        except lease.LabInUse as exc:  # another console or run uses it: it stays up
            print(f"abtui: {exc}", file=sys.stderr)
            return code
        print("lab down", file=sys.stderr)
    else:
        print(left_up(state.name), file=sys.stderr)
    return code


def _demo(args: argparse.Namespace, state: Lab) -> int:
    """The lab brought up (kept when it is up with VM pairs), then the console on it."""
    from abtui.commands.lab import print_reached

    # a lab that is up with VM pairs (`abtui lab up --kernel ... --nic ...`) keeps them
    kernels = {k: v for k, v in state.kernel_specs().items()
               if ord(k) - ord("A") < args.pairs}
    nics = {k: v for k, v in state.nic_models().items() if k in kernels}
    state.up(pairs=args.pairs, kernels=kernels, nics=nics)
    if args.no_ui:
        return print_reached(state)
    from abtui.commands.tui import open_on_hosts
    from abtui.profile import load_profile

    return open_on_hosts(load_profile(state.profile_path), demo_title(state.name))
