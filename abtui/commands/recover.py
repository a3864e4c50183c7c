"""`abtui recover`: after a crash, set back what abtui changed on hosts.

Reads the undo journals left by abtui processes that are gone, reconnects to their hosts (each
once), restores every original setting, removes every tunnel and ends every process group
started, printing one line per action done and one line per host for what could not be done.
The work is abtui.hosts.restore's (the one restorer); this module parses the arguments and
prints. `--forget HOST` drops a host's entries without touching it (a host that is gone for good),
`--forget-unreachable` does so for every host that cannot be reached. A journal left with
nothing to do is deleted. An entry recover cannot use (a kind it does not know, as a newer
abtui writes; a wrong type; a process group of 1 or below) is one FAIL line, skipped, and
the rest is still set back; a journal with a kind it does not know is kept until `--forget`
its host. Like every command that changes hosts, recover takes each host's lease
(abtui.remote.lease): a host another abtui drives is left alone. Exit 0 when everything was
set back or forgotten (or nothing was pending), 1 when something is left or skipped, 2 for a
bad argument.
"""

from __future__ import annotations

import argparse

from abtui.core import signals
from abtui.core.errors import EXIT_FAILED, EXIT_OK, BadInput


def add_arguments(parser: argparse.ArgumentParser) -> None:
    import textwrap

    parser.description = textwrap.fill(
        "After a crash (or a run whose hosts could not be set back), restore the knobs, remove "
        "the tunnels and end the processes an earlier abtui left on hosts, from its undo "
        "journal. One line per action; one line per host for what could not be done.",
        width=78)  # (the epilog, an example and the exit codes: abtui.commands.helptext)
    parser.add_argument("--dry-run", action="store_true",
                        help="only list what would be set back (and forgotten)")
    parser.add_argument("--forget", action="append", default=[], metavar="HOST",
                        help="drop HOST's entries without contacting it, for a host that is "
                             "gone for good (a lab taken down); repeatable")
    parser.add_argument("--forget-unreachable", action="store_true",
                        help="drop the entries of every host that cannot be reached, after "
                             "trying it")


def run(args: argparse.Namespace) -> int:
    from abtui.hosts.restore import describe, recover_all
    from abtui.hosts.undo import pending_recovery

    pending = pending_recovery()
    if not pending:
        print("nothing to recover")
        return EXIT_OK
    known = sorted({h for p in pending for h in p.involved})
    for host in args.forget:
        if host not in known:
            raise BadInput(f"--forget {host}: no pending change names host {host!r} "
                           f"(pending: {', '.join(known)})")
    if args.dry_run:
        for p in pending:
            for line in describe(p, args.forget):
                print(line)
        return EXIT_OK
    try:
        ok = signals.run(recover_all(pending, _print, forget=args.forget,
                                     forget_unreachable=args.forget_unreachable))
    except signals.Signalled as exc:  # what is not done stays in the undo journals
        raise signals.Signalled(exc.signum, "what was not set back stays in the undo journal: "
                                            "run `abtui recover` again") from None
    return EXIT_OK if ok else EXIT_FAILED


def _print(ok: bool, line: str) -> None:
    print(f"{'ok  ' if ok else 'FAIL'} {line}", flush=True)
