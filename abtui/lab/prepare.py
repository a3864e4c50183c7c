"""What `abtui run PROFILE --lab` and `abtui check --lab` do around the mapping: read the
profile's [lab] kernels, bring the local lab up when it is not (or rebuild it for other
kernels), read what its hosts have (LabFacts), and map the profile onto them
(abtui.lab.mapping). Apart from the mapping because this side touches the machine (namespaces,
SSH to VM guests) while the mapping is pure.
"""

from __future__ import annotations

import os
import shutil
import subprocess
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from abtui.core.errors import BadInput
from abtui.core.model import KnobKind, Profile
from abtui.lab.mapping import (
    LAB_TUNNELS,
    LabBuilds,
    LabFacts,
    LabMapping,
    LabModule,
    LabModules,
    Translation,
    map_profile,
    quick,
)

if TYPE_CHECKING:
    from abtui.lab.layout import LabHost
    from abtui.lab.netns import Lab


def for_lab(profile: Profile, *, lab: bool, short: bool, say: Any
            ) -> tuple[LabMapping, dict[str, Any]]:
    """What `abtui run --lab [--quick]` runs (and `abtui check --lab` checks): the profile on
    the local lab's hosts (brought up when it is not, `say` told so), its translations, and the
    session's SESSION_START data. `short`: --quick's short runs (alone without `lab`)."""
    from abtui.lab.netns import Lab

    translations: list[Translation] = []
    the_lab = Lab.default() if lab else None
    kernels = lab_kernels_for(profile) if lab else {}
    nics = lab_nics_for(profile, {**the_lab.kernel_specs(), **kernels}) if the_lab else {}
    clock = lab_clock_for(profile) if the_lab else ""
    if short:
        vm = the_lab is not None and bool(kernels or the_lab.kernel_specs())
        profile, shortened = quick(profile, vm=vm)
        translations += [shortened] if shortened else []
    if the_lab is not None:
        hosts = ensure_lab(the_lab, len(profile.pairs), say, kernels=kernels, nics=nics,
                           clock=clock)
        facts = lab_facts(hosts[1], hosts[:2 * len(profile.pairs)],
                          ssh_config=str(the_lab.ssh_config))
        mapped = map_profile(profile, hosts, ssh_config=str(the_lab.ssh_config),
                             known_hosts=str(the_lab.known_hosts), facts=facts,
                             builds=lab_switch_builds(profile),
                             modules=lab_module_builds(profile, say))
        profile = mapped.profile
        translations = mapped.translations + translations
    mapping = LabMapping(profile, translations)
    data = mapping.start_data()
    return mapping, data if lab else {"translations": data["translations"]}


def profile_builds(profile: Profile) -> dict[str, str]:
    """The profile's [lab] builds: a build knob's value -> the Debian kernel standing for it."""
    from abtui.profile.load import lab_builds

    raw = lab_document(profile)
    return lab_builds(raw, list(profile.knobs)) if raw else {}


def lab_document(profile: Profile) -> dict[str, Any] | None:
    """The profile's copy as TOML when it has a [lab] table (None when not): what every
    [lab] reader here reads (its builds, modules, kernels, NICs and clock)."""
    import tomllib

    if not profile.source_text:
        return None
    raw = tomllib.loads(profile.source_text)
    return raw if "lab" in raw else None


def lab_switch_builds(profile: Profile) -> LabBuilds | None:
    """How the lab's VM hosts reach each build the profile's [lab] builds names (each
    Debian package fetched into the kernel cache when it is not there yet)."""
    from abtui.lab import kernels
    from abtui.lab.vm.boot import switch_builds

    by_value = profile_builds(profile)
    if not by_value:
        return None
    specs = list(dict.fromkeys(by_value.values()))
    for spec in specs:
        kernels.resolve(spec)
    made, power = switch_builds(specs)
    of_spec = {b.spec: b for b in made}
    return LabBuilds({v: of_spec[s] for v, s in by_value.items()}, tuple(power))


def lab_module_builds(profile: Profile, say: Any) -> LabModules | None:
    """The module builds the profile's [lab] modules names, made (or found in the kernel
    cache) for the [lab] kernel's release: `say` tells of each build it makes."""
    from pathlib import Path

    from abtui.core.builds import derived_release
    from abtui.lab import modbuild
    from abtui.profile.load import lab_modules

    raw = lab_document(profile)
    base = Path(profile.source_path).parent if profile.source_path else None
    table = lab_modules(raw, list(profile.knobs), base) if raw else {}
    if not table:
        return None
    knob = next(k for k in profile.knobs if k.kind is KnobKind.MODULE
                and set(table) <= set(k.values))
    releases = {derived_release(spec) for spec in profile_kernels(profile).values()}
    if len(releases) != 1:
        raise BadInput("[lab] modules: the pairs boot different kernels; the modules are "
                       "built for one ([lab] kernel)")
    release = releases.pop()
    by_value = {}
    for value, patches in table.items():  # every patch there before anything is built
        missing = [str(p) for p in patches if not p.is_file()]
        if missing:
            raise BadInput(f"[lab] modules {value}: no such patch file {', '.join(missing)} "
                           "(paths are relative to the profile's folder)")
    for value, patches in table.items():
        spec = modbuild.ModuleSpec(knob.key, release, patches)
        built = modbuild.cached_module(spec)
        if built is None:
            say(f"lab: building {knob.key}.ko {value} for {release} (out of tree, about a "
                "minute; cached after)")
            built = modbuild.build(spec)
        by_value[value] = LabModule(str(built.file), built.srcversion,
                                    tuple(p.name for p in patches))
    tree = kbuild_source_name(knob.key, release)
    return LabModules(release, tree, by_value)


def kbuild_source_name(module: str, release: str) -> str:
    """The unpacked source package a module build of `release` came from (its folder's name:
    linux-source-6.1_6.1.192-3)."""
    from abtui.lab import kbuild, modbuild

    name = modbuild.ModuleSpec(module, release).source_package()
    tree = kbuild.cached_source(name)
    return tree.name if tree is not None else name


def profile_kernels(profile: Profile) -> dict[str, str]:
    """The profile's [lab] kernels: pair label -> SPEC (read from the profile's copy)."""
    from abtui.profile.load import lab_kernels

    raw = lab_document(profile)
    return lab_kernels(raw, [p.label for p in profile.pairs]) if raw else {}


def lab_kernels_for(profile: Profile) -> dict[str, str]:
    """The profile's [lab] kernels by lab pair letter (profile pair i runs on lab pair i); a
    pair its [lab] builds' knob switches and no kernel names boots the knob's first build."""
    from abtui.profile.load import build_knob_naming

    builds = profile_builds(profile)
    knob = build_knob_naming(profile.knobs, builds) if builds else None
    first = {p.label: builds[knob.values[0]] for p in profile.pairs
             if knob is not None and (not knob.pairs or p.label in knob.pairs)}
    named = first | profile_kernels(profile)
    return {chr(ord("A") + i): named[p.label] for i, p in enumerate(profile.pairs)
            if p.label in named}


def moderates_interrupts(profile: Profile) -> bool:
    """The profile asks for interrupt moderation: a knob of kind ethtool coalesce (on some
    OS), or ix(4)'s enable_aim."""
    return any(KnobKind.ETHTOOL_COALESCE in (k.kind, *k.os_kinds.values())
               or "enable_aim" in " ".join((k.key, *k.os_keys.values()))
               for k in profile.knobs)


def lab_nics_for(profile: Profile, kernels: dict[str, str]) -> dict[str, str]:
    """The data NIC of each of the profile's VM pairs, by lab pair letter: the profile's
    [lab] nic(s); else e1000e where it asks for interrupt moderation (the lab's NIC with
    interrupt throttling); else none named (the lab's default, or what is up)."""
    from abtui.profile.load import lab_nics

    raw = lab_document(profile)
    named = lab_nics(raw, [p.label for p in profile.pairs]) if raw else {}
    auto = "e1000e" if moderates_interrupts(profile) else None
    out = {}
    for i, p in enumerate(profile.pairs):
        letter = chr(ord("A") + i)
        model = named.get(p.label, auto)
        if letter in kernels and model:
            out[letter] = model
    return out


def lab_clock_for(profile: Profile) -> str:
    """The VM guests' clock the profile's [lab] clock asks for ("" the host's: the default)."""
    from abtui.profile.load import lab_clock

    raw = lab_document(profile)
    return lab_clock(raw) if raw else ""


def ensure_lab(lab: Lab, pairs: int, say: Any, kernels: dict[str, str] | None = None,
               nics: dict[str, str] | None = None, clock: str = "") -> list[LabHost]:
    """The lab's hosts, bringing it up (with at least `pairs` pairs) when it is not. With
    `kernels` (lab pair letter -> SPEC), a lab whose VM pairs boot other kernels is rebuilt;
    with `nics` (lab pair letter -> NIC model), one whose VM pairs have other NICs."""
    from abtui.lab.layout import MAX_PAIRS

    if pairs > MAX_PAIRS:
        raise BadInput(f"the profile has {pairs} pairs; the lab has at most {MAX_PAIRS}")
    have = lab.pair_count()
    up, up_nics = lab.kernel_specs(), lab.nic_models()
    mismatch = bool(kernels) and any(up.get(k) != v for k, v in (kernels or {}).items())
    mismatch |= any(k in up and up_nics.get(k) != v for k, v in (nics or {}).items())
    vm_lab = bool(kernels or up)
    mismatch |= vm_lab and lab.clock() != clock
    if have < pairs or mismatch or not lab.status()["ok"]:
        n = max(pairs, have)
        wanted = kernels if kernels else {k: v for k, v in up.items() if ord(k) - 64 <= n}
        models = {k: v for k, v in up_nics.items() if k in wanted} | \
            {k: v for k, v in (nics or {}).items() if k in wanted}
        again = f" (it had {have}: rebuilt)" if have and have != n else ""
        vms = "".join(f", pair {k} on VM hosts booting {v}"
                      + (f" with NIC {models[k]}" if k in (nics or {}) else "")
                      for k, v in sorted(wanted.items()))
        say(f"lab: bringing up lab {lab.name!r} with {n} pairs{again}{vms} (take it down with "
            "`abtui lab down`)")
        if clock:
            from abtui.core.clock import clock_label

            say(f"lab: the VM guests on {clock_label(clock)} ([lab] clock)")
        return lab.up(n, kernels=wanted, nics=models, clock=clock if wanted else "")
    return lab.hosts(have)


def lab_facts(host: LabHost, hosts: Sequence[LabHost] = (), *,
              ssh_config: str = "") -> LabFacts:
    """Read from the lab's hosts: a namespace host's sysctls and tunnels (all namespace hosts
    run this machine's kernel); with VM pairs, each pair's build and what its guests have."""
    def ns(*cmd: str) -> str:
        proc = subprocess.run(["ip", "netns", "exec", host.netns, *cmd], capture_output=True,
                              text=True, check=False)
        return proc.stdout

    vms = [h for h in hosts if h.vm and h.role == "receiver"]
    if not vms:
        names = frozenset(ns("sysctl", "-aN").split())
        tunnels = tuple(t for t in LAB_TUNNELS
                        if t != "wireguard" or shutil.which("wireguard-go") is not None)
        return LabFacts(names, tunnels, ns("uname", "-r").strip(),
                        rmem=" ".join(ns("sysctl", "-n", "net.ipv4.tcp_rmem").split()))
    return _vm_facts(host, hosts, ssh_config)


def _vm_facts(host: LabHost, hosts: Sequence[LabHost], ssh_config: str) -> LabFacts:
    """Ask each VM pair's receiver over SSH (the lab's ssh_config): its sysctls, the tunnel
    types it can make, netem; a type or netem counts when every pair has it."""
    from abtui.remote.os.linux.knobs import NETEM_PRESENT
    from abtui.remote.os.linux.tunnels import PROBE_LINUX
    from abtui.remote.os.tunnels import available, parse_probe

    def ssh(h: LabHost, command: str) -> str:
        proc = subprocess.run(["ssh", "-F", ssh_config, "-o", "BatchMode=yes", h.alias,
                               command], capture_output=True, text=True, check=False,
                              timeout=120)
        return proc.stdout

    receivers = [h for h in hosts if h.role == "receiver"]
    sysctls: frozenset[str] | None = None
    tunnels: list[str] | None = None
    netem, userspace = True, False
    builds, kernel, nics = [], "", []
    for h in receivers:
        nics.append(h.nic_name)
        if not h.vm:
            kernel = os.uname().release
            facts = lab_facts(h)
            names, types = facts.sysctls, list(facts.tunnels)
            netem, userspace = False, True
            builds.append("")
        else:
            release = ssh(h, "uname -r").strip()
            names = frozenset(ssh(h, "sysctl -aN 2>/dev/null").split())
            types = available(parse_probe(ssh(h, PROBE_LINUX)))
            netem = netem and "yes" in ssh(h, f"{NETEM_PRESENT} && echo yes")
            builds.append(f"{h.kernel} ({release})")
        sysctls = names if sysctls is None else sysctls & names
        tunnels = types if tunnels is None else [t for t in tunnels if t in types]
    return LabFacts(sysctls or frozenset(), tuple(tunnels or ("none",)), kernel,
                    tuple(builds), userspace, netem, nics=tuple(nics))
