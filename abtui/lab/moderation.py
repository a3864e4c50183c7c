"""Interrupt moderation on the lab's VM pairs whose data NIC is an emulated Intel 82574L
(e1000e): the knob and watch a profile names for its own NIC, as the lab's NIC does them.

ix(4)'s `enable_aim` (0 off, 1 adaptive, 2 the older adaptive scheme) and Linux's
`ethtool -C DEV adaptive-rx on|off` have no counterpart on veth or virtio-net, but e1000e's
interrupt throttling (ITR) has the same three-way choice: `ethtool -C data0 rx-usecs 0` turns
it off, `1` makes it dynamic, `3` dynamic conservative (the driver's default); QEMU emulates the
ITR timers. e1000e offers no adaptive-rx, so a knob written for it there becomes rx-usecs.
The interrupt-rate watch becomes the NIC's own vectors in the guest's /proc/interrupts
(`data0-rx-0`, `data0-tx-0`, `data0`): interrupts per second per vector, one series each.

Pure, like abtui.lab.mapping, which calls it for the pairs LabFacts says have e1000e.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence

from abtui.core.model import Knob, KnobKind, Watch

ITR_NIC = "e1000e"
ITR_KEY = "rx-usecs"
# enable_aim -> e1000e's ITR mode (rx-usecs): off, dynamic, dynamic conservative
ENABLE_AIM_ITR = {"0": "0", "1": "1", "2": "3"}
ITR_MODES = {"0": "off", "1": "dynamic", "3": "dynamic conservative"}
# ethtool -C keys the e1000e driver takes as they are
NATIVE_KEYS = (ITR_KEY,)
ADAPTIVE_KEYS = ("adaptive-rx", "adaptive-tx")
IRQ_WINDOW_S = 0.5


def irq_command(before: str = "/proc/interrupts", after: str = "/proc/interrupts",
                window: float = IRQ_WINDOW_S) -> str:
    """Each data0 vector's interrupts (summed over CPUs) in two readings `window` s apart, as
    `<vector> <interrupts per second>` lines. One awk does it all: a guest under TCG and
    load spends most of a sample starting programs from its 9p root, so it starts few."""
    read = ("function r(f, a,  l, n, x, s, i) { while ((getline l < f) > 0) { "
            "n = split(l, x); if (x[n] ~ /^data0(-|$)/) { s = 0; "
            "for (i = 2; i <= n && x[i] ~ /^[0-9]+$/; i++) s += x[i]; a[x[n]] = s } } "
            "close(f) } ")
    return (f"awk '{read}BEGIN {{ r(\"{before}\", a); system(\"sleep {window:g}\"); "
            f"r(\"{after}\", b); for (v in b) printf \"%s %d\\n\", v, "
            f"(b[v] - a[v]) / {window:g} }}'")


IRQ_WATCH = irq_command()


def is_moderation(k: Knob) -> bool:
    """The knob sets interrupt moderation on Linux (ethtool -C, any key), or is ix(4)'s
    enable_aim with no Linux counterpart named (a FreeBSD-only procedure)."""
    return k.for_os("linux")[0] is KnobKind.ETHTOOL_COALESCE or _enable_aim(k)


def _enable_aim(k: Knob) -> bool:
    """ix(4)'s adaptive interrupt moderation sysctl (`dev.ix.N.enable_aim`) as the Linux key."""
    kind, key = k.for_os("linux")
    return kind is KnobKind.SYSCTL and key.rsplit(".", 1)[-1] == "enable_aim"


def itr_values(k: Knob) -> dict[str, str] | None:
    """Each of the knob's values as e1000e's rx-usecs, None when there is no analog: ix's
    enable_aim 0/1/2 as ITR off/dynamic/conservative, an adaptive on/off as dynamic/off, an
    rx-usecs as it is."""
    key = k.for_os("linux")[1]
    if _enable_aim(k):
        return {v: ENABLE_AIM_ITR[v] for v in k.values} if set(k.values) <= set(
            ENABLE_AIM_ITR) else None
    if key in NATIVE_KEYS:
        return {v: k.value_for_os("linux", v) for v in k.values}
    if key not in ADAPTIVE_KEYS:
        return None
    if set(k.values) <= set(ENABLE_AIM_ITR):
        return {v: ENABLE_AIM_ITR[v] for v in k.values}
    out = {}
    for v in k.values:
        word = k.value_for_os("linux", v).strip().lower()
        if word not in ("on", "off", "1", "0", "true", "false"):
            return None
        out[v] = "1" if word in ("on", "1", "true") else "0"
    return out


def itr_knob(k: Knob, itr: dict[str, str], pairs: Sequence[str]) -> Knob:
    """The knob on the e1000e pairs `pairs`: ethtool -C data0 rx-usecs on Linux."""
    return dataclasses.replace(
        k, device=None, pairs=tuple(pairs),
        os_kinds={**k.os_kinds, "linux": KnobKind.ETHTOOL_COALESCE},
        os_keys={**k.os_keys, "linux": ITR_KEY}, os_values={**k.os_values, "linux": itr})


def describe(itr: dict[str, str]) -> str:
    """`0 = 0 (off), 1 = 1 (dynamic), ...`: what each value sets."""
    return ", ".join(f"{v} = {u}" + (f" ({ITR_MODES[u]})" if u in ITR_MODES else " µs")
                     for v, u in itr.items())


def is_interrupt_watch(w: Watch) -> bool:
    """The watch reads interrupt counts or rates (ix's queueN.interrupt_rate, a grep of
    /proc/interrupts)."""
    text = " ".join(x for x in (w.name, w.sysctl or "", w.command or "") if x).lower()
    return "interrupt" in text


def irq_watch(w: Watch) -> Watch:
    """The watch as the e1000e NIC's per-vector interrupt rates (one series per vector)."""
    return dataclasses.replace(w, sysctl=None, command=IRQ_WATCH)
