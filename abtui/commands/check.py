"""`abtui check PROFILE`: preflight every host of a profile, one line per finding.

Reachable (OS, kernel), iperf3 and ping present (sockperf too where the profile asks for
it), every knob readable and writable (the current value is written back unchanged, which
proves writability without changing anything), what a change of each knob does to the runs
going on (restarts them, or acts live: `runs_line`), tunnel types available on both hosts of
each pair. Writing a value back and making a scratch tunnel
are changes, however brief: check takes each host's lease as a run does
(abtui.remote.lease), and a host another abtui drives is one FAIL line naming it, not
checked. Exit 0 when all is well, 1 otherwise, 2 for a bad
profile.

`--lab`: the same checks on what `abtui run PROFILE --lab` would run (abtui.lab.prepare): the
pairs on the lab's hosts, each translation listed first (a `lab` line).
"""

from __future__ import annotations

import argparse
import asyncio
from collections.abc import Callable
from typing import TYPE_CHECKING

from abtui.core import signals

if TYPE_CHECKING:
    from abtui.core.model import Knob, Profile
    from abtui.hosts.connect import Hosts
    from abtui.hosts.knobs import KnobManager, Target

Report = Callable[[bool, str], None]


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("profile", help="the profile (TOML) to check")
    parser.add_argument("--lab", action="store_true",
                        help="check what `abtui run PROFILE --lab` would run: the profile on "
                             "the local lab's hosts (brought up when it is not), each "
                             "translation listed, then the lab's hosts checked")


def run(args: argparse.Namespace) -> int:
    from abtui.lab import lease
    from abtui.lab.layout import LabLayout
    from abtui.profile import load_profile

    profile = load_profile(args.profile)
    # a lab being checked is leased: no other command takes it down meanwhile; a lab
    # another process uses is never rebuilt for the check (abtui.lab.lease)
    with lease.hold([LabLayout.default().state_dir] if args.lab else []):
        if args.lab:
            profile = _on_lab(profile)
        with lease.hold(lease.labs_of(profile)):
            ok = signals.run(preflight(profile, _print))
    return 0 if ok else 1


def _on_lab(profile: Profile) -> Profile:
    """The profile as `run --lab` maps it; a `lab` line per translation (what the lab runs
    instead of what the profile names)."""
    from abtui.lab.prepare import for_lab

    mapping, _data = for_lab(profile, lab=True, short=False,
                             say=lambda line: print(f"     {line}", flush=True))
    for t in mapping.translations:
        print(f"lab  {t.subject}: {t.original} → {t.lab} ({t.why})", flush=True)
    return mapping.profile


def _print(ok: bool, line: str) -> None:
    print(f"{'ok  ' if ok else 'FAIL'} {line}", flush=True)


async def preflight(profile: Profile, report: Report) -> bool:
    """Run every check, calling report(ok, line) per finding; True when all passed."""
    from abtui.hosts.connect import host_iperf3, open_hosts, probe_tunnels

    results: list[bool] = []

    def say(ok: bool, line: str) -> None:
        results.append(ok)
        report(ok, line)

    hosts = await open_hosts(profile, reconnect=False)
    try:
        for alias in hosts.links:
            if alias in hosts.held:
                say(False, f"{alias}: not checked: driven by {hosts.held[alias]} (one abtui "
                    "drives a host at a time)")
                continue
            if alias in hosts.unleased:
                say(False, f"{alias}: not checked: {hosts.unleased[alias]}")
                continue
            if alias in hosts.errors:
                say(False, f"{alias}: unreachable: {hosts.errors[alias]}")
                continue
            _report_host(say, alias, hosts, host_iperf3(profile, alias))
        await _check_sockperf(say, profile, hosts)
        await _check_knobs(say, profile, hosts)
        await probe_tunnels(profile, hosts)
        _check_tunnels(say, profile, hosts)
    finally:
        await hosts.close()
    return all(results)


def _report_host(say: Report, alias: str, hosts: Hosts, iperf3: str) -> None:
    from abtui.core.model import DEFAULT_IPERF3

    f = hosts.facts[alias]
    link = hosts.links[alias]
    who = "root" if link.uid == 0 else f"uid {link.uid}"
    new_key = ", host key was new and is now recorded" if link.accepted_new_key else ""
    say(True, f"{alias}: reachable, {f.os} {f.kernel_release} ({f.hostname}), as {who}"
        f"{' via sudo' if link.sudo else ''}{new_key}")
    own = iperf3 != DEFAULT_IPERF3
    if f.iperf3_version:
        say(True, f"{alias}: {f.iperf3_version}" + (f" ({iperf3})" if own else ""))
    elif own:
        say(False, f"{alias}: iperf3 `{iperf3}` is missing: install it there, or correct the "
                   "profile's [test] iperf3")
    else:
        say(False, f"{alias}: iperf3 is missing: install it (e.g. the iperf3 package)")
    say(bool(f.ping_version), f"{alias}: "
        + (f"ping present ({f.ping_version})" if f.ping_version else
           "ping is missing: install it (iputils-ping on Debian)"))


async def _check_sockperf(say: Report, profile: Profile, hosts: Hosts) -> None:
    """sockperf on both hosts of every pair whose options ask for a request/response load."""
    from abtui.core.errors import AbtuiError
    from abtui.remote.iperf_cmd import options_for, sockperf_finding, sockperf_version_command

    wanted = sorted({alias for pair in profile.pairs
                     if options_for(profile.test, pair).sockperf
                     for alias in (pair.sender, pair.receiver)})
    for alias in wanted:
        link = hosts.links.get(alias)
        if link is None or alias in hosts.errors or alias in hosts.held or \
                alias in hosts.unleased:
            continue
        try:
            out = (await link.run(sockperf_version_command())).stdout
        except AbtuiError as exc:
            say(False, f"{alias}: sockperf not checked: {exc}")
            continue
        say(*sockperf_finding(alias, out))


async def _check_knobs(say: Report, profile: Profile, hosts: Hosts) -> None:
    from abtui.core.errors import AbtuiError
    from abtui.core.model import BUILD_KINDS
    from abtui.hosts.knobs import HOST_KINDS, KnobManager, resolve_targets
    from abtui.profile.knobs import iperf3_setting

    manager = KnobManager(hosts.links, hosts.dialects)
    for knob in profile.knobs:
        say(True, runs_line(knob))
        if knob.kind.value == "iperf3":
            try:
                for value in knob.values:
                    key, _ = iperf3_setting(knob, value)
                say(True, f"knob {knob.name}: iperf3 option {key}, no host change")
            except AbtuiError as exc:
                say(False, f"knob {knob.name}: {exc}")
            continue
        if knob.kind in BUILD_KINDS:  # read, never switched: a switch is a boot
            await _check_build(say, manager, profile, knob)
            continue
        if knob.kind not in HOST_KINDS:
            continue  # tunnels: see _check_tunnels
        targets = [t for t in resolve_targets(profile.pairs, knob) if t.host in hosts.dialects]
        found = await asyncio.gather(*(_check_setting(manager, knob, t) for t in targets))
        for t, (ok, line) in zip(targets, found, strict=True):
            say(ok, f"{t.host}: knob {knob.name}{f' on {t.device}' if t.device else ''}: "
                + line)


def runs_line(knob: Knob) -> str:
    """What a change of `knob` does to the runs going on, and why (docs/profiles.md, "A label
    means the traffic ran under it"): restarts them (the safe default: only connections
    opened after a change see it) or acts live (said in the profile, or the kind's)."""
    from abtui.core.model import ALWAYS_RESTART_KINDS

    kinds = " and ".join(dict.fromkeys(str(k) for k in (knob.kind, *knob.os_kinds.values())))
    if knob.kind in ALWAYS_RESTART_KINDS:
        why = f"{'an' if str(knob.kind)[0] in 'aeiou' else 'a'} {knob.kind} knob always does"
    elif knob.live is not None:
        why = f"the profile says live = {str(knob.live).lower()}"
    elif knob.restart is not None:
        why = f"the profile says restart = {str(knob.restart).lower()}"
    elif knob.restarts:
        why = f"the default for {kinds}: say live = true if it acts on open connections"
    else:
        why = f"the default for {kinds}"
    what = "a change restarts the runs" if knob.restarts else \
        "acts live: a change is measured on the runs going on"
    return f"knob {knob.name}: {what} ({why})"


async def _check_build(say: Report, manager: KnobManager, profile: Profile, knob: Knob) -> None:
    """Which of a kernel or module knob's builds each host runs now."""
    from abtui.core.model import Role
    from abtui.hosts.builds import INDISTINCT, TELL_APART

    found = await manager.current(knob, [p for p in profile.pairs
                                         if not knob.pairs or p.label in knob.pairs])
    for label, roles in found.items():
        for role, value in roles.items():
            host = profile.pair(label).host(Role(role))
            if value.endswith(INDISTINCT):  # a switch between them could not be verified
                say(False, f"{host}: knob {knob.name}: runs {value}: {TELL_APART}")
                continue
            listed = value in knob.values
            say(True, f"{host}: knob {knob.name}: runs {value}"
                + ("" if listed else " (none of its values)"))


async def _check_setting(manager: KnobManager, knob: Knob,
                         target: Target) -> tuple[bool, str]:
    from abtui.core.errors import AbtuiError

    try:
        setting = manager.setting(knob, target)
        current = await manager.read(target.host, setting)
    except AbtuiError as exc:
        return False, f"not readable: {getattr(exc, 'reason', exc)}"
    dialect = manager.dialects[target.host]
    bad = []
    for value in knob.values:
        try:
            dialect.normalize(setting, value)
        except AbtuiError as exc:
            bad.append(str(exc))
    # the key, and the value as sysctl prints it (its tabs as spaces, not `\t`)
    now = f"{setting.key or setting.kind} = {' '.join(current.split())!r}"  # mtu: by kind
    try:
        await manager.write(target.host, setting, current)
    except AbtuiError as exc:
        return False, f"{now}, not writable: {getattr(exc, 'reason', exc)}"
    if bad:
        return False, f"{now}, writable, but {'; '.join(bad)}"
    return True, f"{now}, readable and writable"


def _check_tunnels(say: Report, profile: Profile, hosts: Hosts) -> None:
    """What each pair's hosts said they can make (asked on connect when the profile switches
    tunnels, in their facts)."""
    from abtui.hosts.tunnels import uses_tunnels

    if not uses_tunnels(profile.knobs, profile.tunnels):
        return
    from abtui.core.model import KnobKind, tunnel_refusal

    wanted = {v for k in profile.knobs if k.kind is KnobKind.TUNNEL for v in k.values}
    wanted.update(t for t in profile.tunnels if t != "none")

    probes = {a: f.tunnels for a, f in hosts.facts.items() if f.tunnels}
    for p in profile.pairs:
        answers = [probes[h] for h in (p.sender, p.receiver) if h in probes]
        if len(answers) != 2:
            say(False, f"pair {p.label}: tunnel types unknown (a host did not answer)")
            continue
        usable, missing = [], []
        for t in answers[0]:
            states = [e.get(t, "no: not reported") for e in answers]
            why = next((r for r in map(tunnel_refusal, states) if r is not None), None)
            if why is None:
                kinds = sorted({s for s in states if s != "yes"})
                usable.append(f"{t} ({'/'.join(kinds)})" if kinds else t)
            else:
                missing.append(f"{t} ({why})")
        not_ok = [m for m in missing if m.split()[0] in wanted]
        say(not not_ok, f"pair {p.label}: tunnels available: {', '.join(usable)}"
            + (f"; not available: {'; '.join(missing)}" if missing else ""))
    if not profile.pairs:
        say(False, "no pairs in the profile")
