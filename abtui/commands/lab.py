"""`abtui lab up|down|status`: the local network-namespace testbed."""

from __future__ import annotations

import argparse
import json
import sys
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from abtui.lab.netns import Lab


def add_arguments(parser: argparse.ArgumentParser) -> None:
    sub = parser.add_subparsers(dest="lab_command", metavar="ACTION", required=True)
    up = sub.add_parser("up", help="bring the lab up (idempotent)")
    up.add_argument("--pairs", type=int, default=2, help="host pairs, 1 to 8 (default 2)")
    sub.add_parser("down", help="remove everything the lab made")
    status = sub.add_parser("status", help="health of every lab host; exit 1 when broken")
    status.add_argument("--json", action="store_true", help="machine-readable status")


def run(args: argparse.Namespace) -> int:
    from abtui.core.errors import BadInput
    from abtui.lab.netns import MAX_PAIRS, Lab

    lab = Lab.default()
    if args.lab_command == "up":
        if not 1 <= args.pairs <= MAX_PAIRS:
            raise BadInput(f"--pairs must be between 1 and {MAX_PAIRS}, not {args.pairs}")
        hosts = lab.up(pairs=args.pairs)
        print(f"lab up: {len(hosts)} hosts, {args.pairs} pairs", file=sys.stderr)
        print(f"  profile:    {lab.profile_path}")
        print(f"  ssh_config: {lab.ssh_config}   (try: ssh -F {lab.ssh_config} {hosts[0].alias})")
        return 0
    if args.lab_command == "down":
        Lab.check_prerequisites()
        lab.down()
        print("lab down", file=sys.stderr)
        return 0
    status = lab.status()
    if args.json:
        print(json.dumps(status, indent=2))
    else:
        if not status["up"]:
            print("lab is down")
        for h in status["hosts"]:  # type: ignore[attr-defined]
            mark = "ok  " if h["ok"] else "DOWN"
            print(f"{mark} {h['alias']:<12} pair {h['pair']} {h['role']:<8} "
                  f"ssh {h['address']:<15} data {h['data_address']}")
    return 0 if status["ok"] else 1


def print_reached(lab: Lab) -> int:
    """Reach every lab host over SSH (asyncssh, host keys verified) and print who answered."""
    import asyncio

    from abtui.remote.probe import probe_hosts

    # the lab's record names its hosts; status() would probe every sshd once more first
    pairs = lab.pair_count()
    aliases = [h.alias for h in lab.hosts(pairs)] if pairs else []
    results = asyncio.run(probe_hosts(aliases, ssh_config=str(lab.ssh_config)))
    failed = 0
    for alias, (ok, text) in results.items():
        print(f"{'ok  ' if ok else 'FAIL'} {alias:<12} {text}")
        failed += not ok
    return 1 if failed else 0
