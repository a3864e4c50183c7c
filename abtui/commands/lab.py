"""`abtui lab up|down|status`: the local network-namespace testbed."""

from __future__ import annotations

import argparse
import json
import sys
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from abtui.lab.netns import Lab


def add_arguments(parser: argparse.ArgumentParser) -> None:
    from abtui.commands.helptext import sub_help

    sub = parser.add_subparsers(dest="lab_command", metavar="ACTION", required=True)
    up = sub.add_parser("up", help="bring the lab up (idempotent)", **sub_help("lab up"))
    up.add_argument("--pairs", type=int, default=2, help="host pairs, 1 to 8 (default 2)")
    up.add_argument("--kernel", action="append", default=[], metavar="[PAIR=]SPEC",
                    help="VM hosts booting this kernel (every pair, or pair PAIR: --kernel "
                         "A=SPEC --kernel B=SPEC): a Debian kernel package name (fetched once "
                         "into a cache), a kernel image with its modules, or a build tree")
    up.add_argument("--nic", action="append", default=[], metavar="[PAIR=]MODEL",
                    help="the data NIC of VM pairs (every VM pair, or pair PAIR): e1000e (an "
                         "emulated Intel 82574L with interrupt throttling: the NIC for "
                         "interrupt moderation) or virtio (default)")
    up.add_argument("--arm-build", action="append", default=[], metavar="NAME=FOLDER",
                    help="pair A's sender as a 32-bit ARM guest (qemu-system-arm, an armhf "
                         "userspace with dropbear) booting built ARM kernel trees by name "
                         "(repeatable: the first booted now, the others by `lab boot HOST "
                         "NAME`); its receiver the x86 guest of --kernel A=...")
    up.add_argument("--arm-crypto-priority", action="append", default=None,
                    metavar="DRIVER=N",
                    help="set a crypto driver's priority on the ARM guest at each boot, "
                         "before any SA exists (repeatable; kept by the lab; the guest's "
                         "console says what it was): e.g. cryptd(ghash-ce-sync)=200 lets "
                         "gcm(aes) take ghash-ce itself, the NEON-in-softirq seed's path")
    up.add_argument("--user", metavar="NAME",
                    help="let NAME log in on the hosts too, with sudo rights there (the "
                         "account is made when missing, and removed by lab down), for "
                         "trying a sudo setup: ssh -F SSH_CONFIG -l NAME HOST")
    up.add_argument("--clock", default="host", metavar="host|icount[=SHIFT]",
                    help="the VM guests' clock: host (wall-clock time, default) or icount "
                         "(qemu's instruction counting, shift 6 unless given: figures count "
                         "guest instructions, steady whatever this machine's load; they "
                         "compare only with figures at the same shift)")
    boot = sub.add_parser("boot", help="switch VM hosts to another kernel build (power-cycle "
                          "or kexec), keeping their names, addresses and keys",
                          **sub_help("lab boot"))
    boot.add_argument("hosts", nargs="+", metavar="ALIAS",
                      help="VM hosts of the lab (several: switched together)")
    boot.add_argument("kernel", metavar="KERNEL",
                      help="the build, as `lab up --kernel` takes it (a Debian kernel package "
                           "name, a kernel image with its modules, or a build tree); for the "
                           "ARM host, the NAME of one of its --arm-build builds")
    boot.add_argument("--method", choices=("power", "kexec"), default="power",
                      help="power: stop the guest and boot it on KERNEL, as a lab's power "
                           "control would (default); kexec: kexec into KERNEL from inside it")
    sub.add_parser("down", help="remove everything the lab made", **sub_help("lab down"))
    status = sub.add_parser("status", help="health of every lab host; exit 1 when broken",
                            **sub_help("lab status"))
    status.add_argument("--json", action="store_true", help="machine-readable status")


def run(args: argparse.Namespace) -> int:
    from abtui.core.clock import clock_label, parse_clock
    from abtui.core.errors import BadInput
    from abtui.lab.layout import MAX_PAIRS
    from abtui.lab.netns import Lab

    lab = Lab.default()
    if args.lab_command == "up":
        if not 1 <= args.pairs <= MAX_PAIRS:
            raise BadInput(f"--pairs must be between 1 and {MAX_PAIRS}, not {args.pairs}")
        kernels = parse_kernels(args.kernel, args.pairs)
        clock = parse_clock(args.clock)
        from abtui.lab.vm.armhost import parse_arm_builds
        from abtui.lab.vm.cryptorank import parse_priorities

        arm = parse_arm_builds(args.arm_build) if args.arm_build else None
        rank = None if args.arm_crypto_priority is None \
            else parse_priorities(args.arm_crypto_priority)
        hosts = lab.up(pairs=args.pairs, kernels=kernels, nics=parse_nics(args.nic, kernels),
                       clock=clock, user=args.user, arm=arm, arm_crypto=rank)
        print(f"lab up: {len(hosts)} hosts, {args.pairs} pairs", file=sys.stderr)
        status = lab.status()
        if kernels:
            print(f"  clock:      {clock_label(clock)} (the VM guests')")
        for h in status["hosts"]:  # type: ignore[attr-defined]
            if h.get("arch") == "arm":
                print(f"  {h['alias']}: ARM VM, build {h['booted']} ({h['release']}), "
                      f"booted in {h['boot_s']} s")
            elif h["kernel"]:
                print(f"  {h['alias']}: VM, kernel {h['release']}, NIC {h['nic']} "
                      f"({status['accel']}, booted in {h['boot_s']} s)")
        print(f"  profile:    {lab.profile_path}")
        print(f"  ssh_config: {lab.ssh_config}   (try: ssh -F {lab.ssh_config} {hosts[0].alias})")
        if args.user:
            print(f"  user:       {args.user}, sudo rights on the hosts (try: ssh -F "
                  f"{lab.ssh_config} -l {args.user} {hosts[0].alias} sudo -n id -u; in a "
                  f"profile: sender = \"{args.user}@{hosts[0].alias}\")")
        return 0
    if args.lab_command == "boot":
        return _boot(lab, args)
    if args.lab_command == "down":
        lab.refuse_if_used("taking it down")  # said before root is asked for
        Lab.check_prerequisites()
        lab.down()
        print("lab down", file=sys.stderr)
        return 0
    status = lab.status(login=True)
    if args.json:
        print(json.dumps(status, indent=2))
    else:
        if not status["up"]:
            print("lab is down")
        for h in status["hosts"]:  # type: ignore[attr-defined]
            mark = "ok  " if h["ok"] else "DOWN"
            clock = f", clock {clock_label(str(status['clock']))}" if status.get("clock") else ""
            where = (f"VM {h['release']} ({h['accel']}{clock}, booted in {h['boot_s']} s), NIC "
                     f"{h['nic']}, CPU its own" if h["kernel"] else
                     f"netns {h['release']}, CPU this machine's (shared by every netns host)")
            print(f"{mark} {h['alias']:<12} pair {h['pair']} {h['role']:<8} "
                  f"ssh {h['address']:<15} data {h['data_address']:<13} {where}"
                  + (f": {h['why']}" if h.get("why") else ""))
    return 0 if status["ok"] else 1


def _boot(lab: Lab, args: argparse.Namespace) -> int:
    """`lab boot ALIAS... KERNEL`: one line per host switched (stdout); a failure is one line
    (exit 1), the hosts back on the build they ran. No lease is taken or checked: a run that
    uses the lab calls this as its power control."""
    lab.check_prerequisites()
    say = lambda text: print(f"abtui: {text}", file=sys.stderr)  # noqa: E731
    for s in lab.boots.boot(args.hosts, args.kernel, method=args.method, say=say):
        print(f"{s.alias}: {s.release} ({s.method}, {s.seconds:.1f} s)")
    return 0


def _per_pair(option: str, texts: list[str], letters: list[str]) -> dict[str, str]:
    """`--OPTION X` (every pair in `letters`) and `--OPTION A=X` (one pair) -> pair letter ->
    X; a pair's own X wins over the one for every pair."""
    from abtui.core.errors import BadInput

    every: str | None = None
    per_pair: dict[str, str] = {}
    for text in texts:
        letter, sep, rest = text.partition("=")
        if sep and len(letter) == 1 and letter.isalpha():
            if letter.upper() in per_pair:
                raise BadInput(f"--{option} {text}: pair {letter.upper()} is given twice")
            per_pair[letter.upper()] = rest
        elif every is not None:
            raise BadInput(f"--{option} {text}: one value for every pair is given twice "
                           f"(write --{option} A=... for one pair)")
        else:
            every = text
    out = dict.fromkeys(letters, every) if every is not None else {}
    return {**out, **per_pair}


def parse_kernels(specs: list[str], pairs: int) -> dict[str, str]:
    """`--kernel SPEC` (every pair) and `--kernel A=SPEC` (one pair) -> pair letter -> SPEC;
    a pair's own SPEC wins over the one for every pair."""
    from abtui.lab.layout import check_kernel_pairs

    letters = [chr(ord("A") + p) for p in range(pairs)]
    return check_kernel_pairs(_per_pair("kernel", specs, letters), pairs)


def parse_nics(models: list[str], kernels: dict[str, str]) -> dict[str, str]:
    """`--nic MODEL` (every VM pair) and `--nic A=MODEL` (one VM pair) -> pair letter ->
    model; a NIC for a pair without VM hosts is bad input."""
    from abtui.core.errors import BadInput
    from abtui.lab.layout import check_nic_pairs

    if models and not kernels:
        raise BadInput(f"--nic {models[0]}: only VM pairs have a NIC model; give the lab a "
                       "--kernel (namespace pairs are linked by veth)")
    return check_nic_pairs(_per_pair("nic", models, list(kernels)), kernels)


def print_reached(lab: Lab) -> int:
    """Reach every lab host over SSH (asyncssh, host keys verified) and print who answered,
    spelled out: `abtui demo --no-ui` prints it, outside the commands' guard (abtui.cli)."""
    import asyncio

    from abtui.core.text import visible
    from abtui.remote.probe import probe_hosts

    # the lab's record names its hosts; status() would probe every sshd once more first
    pairs = lab.pair_count()
    aliases = [h.alias for h in lab.hosts(pairs)] if pairs else []
    results = asyncio.run(probe_hosts(aliases, ssh_config=str(lab.ssh_config)))
    failed = 0
    for alias, (ok, text) in results.items():
        print(f"{'ok  ' if ok else 'FAIL'} {alias:<12} {visible(text)}")
        failed += not ok
    return 1 if failed else 0
