"""`abtui run PROFILE --lab`: a profile's pairs on the local lab's hosts, and every setting the
lab lacks translated to one it has, so a user's procedure runs unchanged on one machine.

The lab's hosts are Linux namespaces on veth: no FreeBSD sysctls, no NIC interrupt moderation
(`ethtool -C` is not supported on veth), no kernel IPsec or gre here; VM pairs whose data NIC
is e1000e have interrupt moderation, and a knob or watch for it becomes the NIC's own
(abtui.lab.moderation). Each translation is a `Translation`: printed one line each, recorded
in the session's SESSION_START data so the report shows it too. The knob a translation keeps
its name and values (the report's columns stay the community's: `enable_aim = 0, 1, 2`); what
the lab writes for each value is the stand-in's, through the knob's per-OS values.

Pure: it maps a profile given what the lab has (LabFacts); abtui.lab.prepare reads those facts
and brings the lab up.
"""

from __future__ import annotations

import dataclasses
import fnmatch
import re
from collections.abc import Collection, Sequence
from dataclasses import asdict, dataclass, field
from typing import TYPE_CHECKING, Any

from abtui.core.builds import Build, Method, derived_release
from abtui.core.errors import BadInput
from abtui.core.model import DEFAULT_IPERF3, Knob, KnobKind, Profile, Scope, Watch
from abtui.lab import moderation
from abtui.lab.profile import SWITCH_TIMEOUT_S, LabBuild
from abtui.remote.iperf_cmd import options_for

if TYPE_CHECKING:
    from abtui.lab.layout import LabHost

LAB_DEVICE = "data0"
# Tunnel types this lab has (wireguard through the userspace wireguard-go), and what stands in
# for the others.
LAB_TUNNELS = ("none", "wireguard", "vxlan")
TUNNEL_FALLBACK = {"ipsec": ("vxlan", "this kernel has no ESP/xfrm crypto"),
                   "gre": ("vxlan", "this kernel has no gre module"),
                   "wireguard": ("vxlan", "wireguard-go is not installed")}
# The stand-in for a setting the lab lacks: the receivers' TCP receive buffer, which new
# connections pick up. Measured on the lab (one pair, iperf3 -t 2): 64 KiB max ~5.4 Gbit/s,
# 1 MiB max ~6.4 Gbit/s, the kernel default (6 MiB) ~12 Gbit/s. The last level is the lab
# hosts' own value when it is known (LabFacts.rmem), so the profile's last value is the hosts'
# default and the report marks it `(default)`.
STANDIN_KEY = "net.ipv4.tcp_rmem"
STANDIN_LEVELS = ("4096 16384 65536", "4096 131072 1048576", "4096 131072 6291456")
# The stand-in for a watch the lab cannot read (a FreeBSD sysctl, another host's NIC):
# packets per second received on the lab host's data device, over a quarter second.
_RX = f"/sys/class/net/{LAB_DEVICE}/statistics/rx_packets"
STANDIN_WATCH = f"a=$(cat {_RX}); sleep 0.25; b=$(cat {_RX}); echo $(( (b - a) * 4 ))"
STANDIN_SERIES = f"{LAB_DEVICE}.rx_pps"
# --quick: runs short enough for a lab test (seconds, not minutes)
QUICK_DURATION = 2.0
QUICK_INTERVAL = 0.5
QUICK_PING_COUNT = 3
QUICK_PAUSE = 0.5
# on VM hosts (emulated, seconds late under load): two-second intervals, so the engine's
# stall watch (three intervals without one) does not take a slow guest for a dead stream
QUICK_VM_DURATION = 4.0
QUICK_VM_INTERVAL = 2.0


@dataclass(frozen=True, slots=True)
class Translation:
    """One thing the lab runs instead of what the profile names, and why."""

    subject: str
    original: str
    lab: str
    why: str

    def line(self) -> str:
        return f"lab: {self.subject}: {self.original} → {self.lab} ({self.why})"

    def to_json(self) -> dict[str, str]:
        return asdict(self)


@dataclass(frozen=True, slots=True)
class LabFacts:
    """What the lab's hosts have: sysctl names, tunnel types, the kernel they all run; for a
    lab of VM hosts, each pair's build (`SPEC (release)`), kernel WireGuard and netem."""

    sysctls: frozenset[str] = frozenset()
    tunnels: tuple[str, ...] = LAB_TUNNELS
    kernel: str = ""
    builds: tuple[str, ...] = ()
    userspace_wireguard: bool = True
    netem: bool = False
    # the receivers' own net.ipv4.tcp_rmem (the stand-in's last level), "" when unknown
    rmem: str = ""
    # each pair's data NIC (as builds: per lab pair in order): veth, virtio, e1000e
    nics: tuple[str, ...] = ()

    def nic_of(self, i: int) -> str:
        return self.nics[i] if i < len(self.nics) else "veth"


@dataclass(frozen=True, slots=True)
class LabBuilds:
    """The Debian kernels the lab's VM hosts boot for a build knob's values (the profile's
    [lab] builds), and how: kexec (each build's image and initramfs) or, with `power`, the
    lab's power-cycle command (argv, `{host}` and `{value}` in it)."""

    by_value: dict[str, LabBuild]
    power: tuple[str, ...] = ()

    def build(self, value: str) -> Build:
        """The lab's Build for one of the knob's values: its release checked after the boot."""
        lab = self.by_value[value]
        release = derived_release(lab.spec)
        if self.power:
            argv = tuple(lab.spec if a == "{value}" else a for a in self.power)
            return Build(Method.COMMAND, command=argv, release=release,
                         timeout=SWITCH_TIMEOUT_S, command_timeout=SWITCH_TIMEOUT_S)
        return Build(Method.KEXEC, image=lab.image, initrd=lab.initrd, release=release,
                     timeout=SWITCH_TIMEOUT_S)


@dataclass(frozen=True, slots=True)
class LabModule:
    """A module build the lab made for one value of a module knob (abtui.lab.modbuild): its
    file (the guests see this machine's files), srcversion, and the patches it carries."""

    file: str
    srcversion: str
    patches: tuple[str, ...] = ()


@dataclass(frozen=True, slots=True)
class LabModules:
    """The module builds the profile's [lab] modules names, made for the VM guests' kernel
    `release` from `source` (the source package as unpacked: linux-source-6.1_6.1.192-3)."""

    release: str
    source: str
    by_value: dict[str, LabModule]


@dataclass(slots=True)
class LabMapping:
    """The profile as the lab runs it, and the translations that made it."""

    profile: Profile
    translations: list[Translation] = field(default_factory=list)

    def start_data(self) -> dict[str, Any]:
        """SESSION_START data: the lab pairs' hosts, and the translations."""
        return {"pairs": [{"label": p.label, "sender": p.sender, "receiver": p.receiver,
                           "target": p.target} for p in self.profile.pairs],
                "translations": [t.to_json() for t in self.translations]}


def map_profile(profile: Profile, hosts: Sequence[LabHost], *, ssh_config: str,
                known_hosts: str, facts: LabFacts, builds: LabBuilds | None = None,
                modules: LabModules | None = None) -> LabMapping:
    """The profile on lab hosts (pair i on lab pair i), with its knobs and watches translated;
    the build knob whose values `builds` names boots the lab's Debian kernels."""
    need = len(profile.pairs)
    if len(hosts) < 2 * need:
        raise BadInput(f"profile {profile.name} has {need} pairs; the lab has "
                       f"{len(hosts) // 2}")
    out: list[Translation] = []
    pairs = []
    for i, p in enumerate(profile.pairs):
        snd, rcv = hosts[2 * i], hosts[2 * i + 1]
        pairs.append(dataclasses.replace(
            p, sender=snd.alias, receiver=rcv.alias, target=rcv.data_address,
            sender_device=LAB_DEVICE, receiver_device=LAB_DEVICE,
            overrides={k: v for k, v in p.overrides.items() if k not in ("bind", "iperf3")}))
        out.append(Translation(f"pair {p.label}", f"{p.sender} → {p.receiver} ({p.target})",
                               f"{snd.alias} → {rcv.alias} ({rcv.data_address})",
                               "a pair of lab hosts"))
    if facts.builds:
        out.append(Translation(
            "kernels", ", ".join(p.label for p in profile.pairs),
            ", ".join(f"{p.label} on VM hosts booting {b}" if b else
                      f"{p.label} on this machine's kernel {facts.kernel}"
                      for p, b in zip(profile.pairs, facts.builds, strict=False)),
            "the builds the profile's [lab] names (or the lab that is up)"))
    elif need > 1:
        out.append(Translation("kernels", ", ".join(p.label for p in profile.pairs),
                               f"all on this machine's kernel {facts.kernel}".rstrip(),
                               "the lab cannot boot other kernels or builds: the pairs "
                               "differ only in what the knobs set (give the profile a [lab] "
                               "section naming a kernel per pair for VM hosts)"))
    devices = {d for p in profile.pairs for d in (p.sender_device, p.receiver_device) if d}
    nics = {p.label: facts.nic_of(i) for i, p in enumerate(profile.pairs)}
    knobs = [_module_knob(k, modules, out) or _build_knob(k, builds, out)
             or _moderation_knob(k, nics, out)
             or _knob(k, facts, out, _of(nics, k.pairs)) for k in profile.knobs]
    watches = [_irq_watch(w, nics, out) or _watch(w, facts, devices, out, _of(nics, w.pairs))
               for w in profile.watches]
    test = profile.test
    if any(facts.builds) and 0 < test.interval < QUICK_VM_INTERVAL:
        # an emulated guest on a loaded machine reports intervals seconds late, and the
        # engine's stall watch gives a stream three intervals: at -i 1 a slow guest's stream
        # is taken for a dead one (measured: wireguard-gro at load 14)
        out.append(Translation("iperf3 -i", f"{test.interval:g}", f"{QUICK_VM_INTERVAL:g}",
                               "VM hosts under emulation report intervals late on a loaded "
                               "machine; the run's figure is the same bits over its seconds"))
        test = dataclasses.replace(test, interval=QUICK_VM_INTERVAL)
        pairs = [dataclasses.replace(p, overrides={
            k: v for k, v in p.overrides.items()
            if k != "interval" or float(v) >= QUICK_VM_INTERVAL}) for p in pairs]
    if test.bind:
        out.append(Translation("iperf3 -B", test.bind, "(any)", "not a lab address"))
        test = dataclasses.replace(test, bind=None)
    programs = sorted({options_for(test, p).iperf3 for p in profile.pairs} - {DEFAULT_IPERF3})
    if programs:
        out.append(Translation("iperf3 program", ", ".join(programs), DEFAULT_IPERF3,
                               "a build on the profile's hosts: the lab runs this machine's"))
        test = dataclasses.replace(test, iperf3=DEFAULT_IPERF3)
    tunnels = tuple(dict.fromkeys(_tunnel(t, facts)[0] for t in profile.tunnels))
    mapped = dataclasses.replace(
        profile, pairs=pairs, knobs=knobs, watches=watches, test=test, tunnels=tunnels,
        ssh_config=ssh_config, known_hosts=known_hosts, accept_new_host_keys=False, sudo=False)
    return LabMapping(mapped, out)


def _tunnel(value: str, facts: LabFacts) -> tuple[str, str]:
    if value in facts.tunnels:
        return value, ""
    lab, why = TUNNEL_FALLBACK.get(value, ("vxlan", f"the lab has no {value} tunnels"))
    return (lab, why) if lab in facts.tunnels else ("none", why)


def _of(nics: dict[str, str], pairs: Sequence[str]) -> dict[str, str]:
    """The NICs of the pairs a knob or watch names (every pair when it names none)."""
    return {p: n for p, n in nics.items() if not pairs or p in pairs}


def _nic_words(nics: dict[str, str]) -> str:
    """The lab's data NICs as a reason names them: `veth`, `virtio-net and veth`."""
    names = {"virtio": "virtio-net"}
    return " and ".join(dict.fromkeys(names.get(n, n) for n in nics.values())) or "veth"


def _no_interrupts(nics: dict[str, str]) -> str:
    words = _nic_words(nics)
    return "veth has no interrupts" if words == "veth" else \
        f"{words} {'have' if ' and ' in words else 'has'} no interrupt moderation " \
        "(`abtui lab up --nic e1000e` has)"


def _moderation_knob(k: Knob, nics: dict[str, str], out: list[Translation]) -> Knob | None:
    """An interrupt-moderation knob on the pairs whose NIC is e1000e: its ITR modes, stated
    (None: no such pair, or no analog of the knob's setting)."""
    if k.kind is KnobKind.TUNNEL or not moderation.is_moderation(k):
        return None
    wanted = list(k.pairs) or list(nics)
    on_itr = [p for p in wanted if nics.get(p) == moderation.ITR_NIC]
    itr = moderation.itr_values(k)
    if not on_itr or itr is None:
        return None
    kind, key = k.for_os("linux")
    original = k.key + (f" (Linux: {kind} {key})" if (kind, key) != (k.kind, k.key) else "")
    out.append(Translation(
        f"knob {k.name}", original,
        f"ethtool -C {LAB_DEVICE} {moderation.ITR_KEY} on {', '.join(on_itr)}: "
        f"{moderation.describe(itr)}",
        "the VM pairs' data NIC is an emulated Intel 82574L (e1000e), whose interrupt "
        "throttling modes are the analog of adaptive interrupt moderation"
        + ("" if key == moderation.ITR_KEY else f"; e1000e has no {key}")))
    others = [p for p in wanted if p not in on_itr]
    if others:
        out.append(Translation(
            f"knob {k.name} on {', '.join(others)}", original, "not set: the pairs run at "
            "their hosts' own setting",
            _no_interrupts({p: nics[p] for p in others}).replace(
                "veth has no interrupts", "veth has no interrupt moderation")))
    return moderation.itr_knob(k, itr, on_itr)


def _build_knob(k: Knob, builds: LabBuilds | None, out: list[Translation]) -> Knob | None:
    """A kernel or module knob the profile's [lab] builds maps: a Debian kernel per value,
    booted on the knob's hosts as a kernel knob (a module build is the one its kernel carries:
    a module is built for one kernel, so on the lab the kernel is the build)."""
    if builds is None or k.kind not in (KnobKind.KERNEL, KnobKind.MODULE) or \
            not set(k.values) <= set(builds.by_value):
        return None
    methods = sorted({str(b.method) for b in k.builds.values()})
    original = " ".join(w for w in (str(k.kind), k.key, "by", ", ".join(methods)) if w)
    how = "the lab's power-cycle" if builds.power else "kexec"
    shown = ", ".join(f"{v} = {builds.by_value[v].spec}" for v in k.values)
    why = "the Debian kernels the profile's [lab] builds names, booted on the VM hosts"
    if k.kind is KnobKind.MODULE:
        why += f"; each carries its own {k.key} module"
    out.append(Translation(f"knob {k.name}", original, f"{how} into {shown}", why))
    return dataclasses.replace(k, kind=KnobKind.KERNEL, key="", os_kinds={}, os_keys={},
                               os_values={}, builds={v: builds.build(v) for v in k.values})


def _module_knob(k: Knob, modules: LabModules | None, out: list[Translation]) -> Knob | None:
    """A module knob the profile's [lab] modules builds: each value's .ko loaded by insmod on
    the knob's hosts, its srcversion the proof it runs."""
    if modules is None or k.kind is not KnobKind.MODULE or \
            not set(k.values) <= set(modules.by_value):
        return None
    methods = sorted({str(b.method) for b in k.builds.values()})
    original = " ".join(w for w in (str(k.kind), k.key, "by", ", ".join(methods)) if w)
    shown = ", ".join(
        f"{v} = {k.key}.ko srcversion {m.srcversion}"
        + (f" (+ {', '.join(m.patches)})" if m.patches else " (no patch)")
        for v, m in ((v, modules.by_value[v]) for v in k.values))
    out.append(Translation(
        f"knob {k.name}", original, f"insmod of {shown}",
        f"built by the lab out of tree from {modules.source} against Debian's "
        f"linux-headers-{modules.release}, the VM guests' kernel"))
    builds = {v: Build(Method.INSMOD, file=modules.by_value[v].file,
                       srcversion=modules.by_value[v].srcversion,
                       params=k.builds[v].params if v in k.builds else (),
                       timeout=SWITCH_TIMEOUT_S)
              for v in k.values}
    return dataclasses.replace(k, builds=builds)


def _irq_watch(w: Watch, nics: dict[str, str], out: list[Translation]) -> Watch | None:
    """An interrupt watch whose pairs all have e1000e: the NIC's per-vector rates."""
    wanted = list(w.pairs) or list(nics)
    if not moderation.is_interrupt_watch(w) or not wanted or \
            any(nics.get(p) != moderation.ITR_NIC for p in wanted):
        return None
    original = f"sysctl {w.sysctl}" if w.sysctl else f"command {w.command!r}"
    out.append(Translation(
        f"watch {w.name}", original,
        f"{w.name}:<vector>: interrupts/s of each {LAB_DEVICE} vector in the guest's "
        f"/proc/interrupts ({LAB_DEVICE}-rx-0, {LAB_DEVICE}-tx-0, {LAB_DEVICE}; sampled over "
        f"{moderation.IRQ_WINDOW_S:g} s)",
        "the e1000e NIC's interrupt vectors: its per-queue interrupt rate"))
    return moderation.irq_watch(w)


def _knob(k: Knob, facts: LabFacts, out: list[Translation],
          nics: dict[str, str] | None = None) -> Knob:
    if k.kind is KnobKind.TUNNEL:
        values = []
        for v in k.values:
            lab, why = _tunnel(v, facts)
            if lab != v:
                out.append(Translation(f"knob {k.name}", v, lab, why))
            elif v == "wireguard" and facts.userspace_wireguard:
                out.append(Translation(f"knob {k.name}", v, "wireguard through wireguard-go",
                                       "this kernel has no wireguard module: userspace"))
            values.append(lab)
        initial = _tunnel(k.initial, facts)[0] if k.initial is not None else None
        return dataclasses.replace(k, values=tuple(dict.fromkeys(values)), initial=initial)
    if k.kind is KnobKind.IPERF3:
        return k
    kind, key = k.for_os("linux")
    if kind is KnobKind.NETEM and facts.netem:
        if k.device and k.device != LAB_DEVICE:
            out.append(Translation(f"knob {k.name} device", k.device, LAB_DEVICE,
                                   "the lab hosts' data device"))
            return dataclasses.replace(k, device=None)
        return k
    if kind is KnobKind.SYSCTL and key in facts.sysctls:
        return k
    if kind in (KnobKind.ETHTOOL_FEATURE, KnobKind.MTU):
        if k.device and k.device != LAB_DEVICE:
            out.append(Translation(f"knob {k.name} device", k.device, LAB_DEVICE,
                                   "the lab hosts' data device"))
            return dataclasses.replace(k, device=None)
        return k
    return _standin_knob(k, kind, key, out, facts.rmem, _nic_words(nics or {}))


def _standin_knob(k: Knob, kind: KnobKind, key: str, out: list[Translation],
                  rmem: str = "", nic: str = "veth") -> Knob:
    """A setting the lab lacks becomes the receivers' tcp_rmem: one level per value, the
    last the hosts' own (`rmem`, when known)."""
    n = len(k.values)
    own = " ".join(rmem.split())
    top = own if own and own not in STANDIN_LEVELS[:-1] else STANDIN_LEVELS[-1]
    choices = (*STANDIN_LEVELS[:-1], top)
    levels = {v: choices[round(i * (len(choices) - 1) / (n - 1)) if n > 1
                         else len(choices) - 1] for i, v in enumerate(k.values)}
    why = ("not a sysctl of the lab's Linux kernel" if kind is KnobKind.SYSCTL else
           f"{nic} {'have' if ' and ' in nic else 'has'} no interrupt coalescing" + (
               "" if nic == "veth" else " (`abtui lab up --nic e1000e` has)")
           if kind is KnobKind.ETHTOOL_COALESCE else
           "this machine's kernel has no netem (VM hosts have it: give the profile a [lab] "
           "kernel)" if kind is KnobKind.NETEM else f"the lab cannot set {kind}")
    shown = ", ".join(f"{v} = {levels[v]!r}" for v in k.values)
    original = k.key + (f" (Linux: {kind} {key})" if (kind, key) != (k.kind, k.key) else "")
    out.append(Translation(
        f"knob {k.name}", original,
        f"{STANDIN_KEY} on the receivers, {shown}",
        f"{why}; a receive-buffer cap changes lab throughput visibly for new connections"))
    return dataclasses.replace(
        k, kind=KnobKind.SYSCTL, key=STANDIN_KEY, device=None, scope=Scope.RECEIVER,
        os_kinds={}, os_keys={}, os_values={"linux": levels}, restart=True, live=None)


def _watch(w: Watch, facts: LabFacts, devices: Collection[str],
           out: list[Translation], nics: dict[str, str] | None = None) -> Watch:
    if w.sysctl is not None:
        if any(fnmatch.fnmatchcase(name, w.sysctl) for name in facts.sysctls):
            return w
        why = "no such sysctl on the lab's Linux kernel"
        original = f"sysctl {w.sysctl}"
    else:
        named = sorted(d for d in devices if d != LAB_DEVICE
                       and re.search(rf"(?<![\w.-]){re.escape(d)}(?![\w.-])", w.command or ""))
        if not named:
            return w
        why = f"the lab hosts have no {', '.join(named)}"
        original = f"command {w.command!r}"
    out.append(Translation(
        f"watch {w.name}", original,
        f"{w.name}:{STANDIN_SERIES}: packets/s received on {LAB_DEVICE} "
        f"({_RX}, sampled over 0.25 s)",
        f"{why}; {_no_interrupts(nics or {})}: the receive packet rate is the lab's "
        "nearest per-queue reading"))
    return dataclasses.replace(w, name=f"{w.name}:{STANDIN_SERIES}", sysctl=None,
                               command=STANDIN_WATCH)


def quick(profile: Profile, vm: bool = False) -> tuple[Profile, Translation | None]:
    """Short runs for the lab: iperf3 -t 2 -i 0.5, ping -c 3, one repetition, short pauses
    (`vm`: the lab's VM hosts run it, -t 4 -i 2)."""
    t, plan = profile.test, profile.plan
    duration, interval = (QUICK_VM_DURATION, QUICK_VM_INTERVAL) if vm else \
        (QUICK_DURATION, QUICK_INTERVAL)
    test = dataclasses.replace(
        t, duration=duration if not 0 < t.duration <= duration else t.duration,
        interval=interval if vm else min(t.interval, interval), omit=0,
        ping_count=min(t.ping_count, QUICK_PING_COUNT))
    short = {"duration", "interval", "omit", "ping_count"}
    pairs = [dataclasses.replace(p, overrides={k: v for k, v in p.overrides.items()
                                               if k not in short}) for p in profile.pairs]
    new_plan = dataclasses.replace(plan, repetitions=1, pause=min(plan.pause, QUICK_PAUSE))
    watches = [dataclasses.replace(w, interval=min(w.interval, interval))
               for w in profile.watches]
    before, after = _describe(t, plan), _describe(test, new_plan)
    mapped = dataclasses.replace(profile, test=test, plan=new_plan, pairs=pairs,
                                 watches=watches)
    if before == after:
        return mapped, None
    return mapped, Translation("durations", before, after, "--quick: short runs")


def _describe(t: Any, plan: Any) -> str:
    text = f"iperf3 -t {t.duration:g} -i {t.interval:g}"
    if t.omit:
        text += f" -O {t.omit}"
    if t.ping and t.ping_count:
        text += f", ping -c {t.ping_count}"
    return text + f", {plan.repetitions} repetition(s), pause {plan.pause:g} s"
