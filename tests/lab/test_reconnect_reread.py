"""A host reset under a running engine: its knob changed out of band and its SSH connection
dropped mid-run. After the reconnect the engine reads the host again, records what it found,
ends the phase, and no interval after that is labelled with a value the host does not have."""

from __future__ import annotations

import os
import signal
from pathlib import Path

import pytest

from abtui.core.events import Event, EventKind
from abtui.hosts.undo import read_journal
from abtui.lab.netns import Lab
from abtui.measure.engine.front import Engine
from tests.lab.engine_kit import (
    WMEM,
    Recorder,
    flip_while_measuring,
    lab_profile,
    make_engine,
    tunnel_profile,
    until,
)
from tests.lab.namespaces import ns_exec, sshd_sessions
from tests.reliability import Reliability

pytestmark = [pytest.mark.lab, pytest.mark.usefixtures("no_strays")]

KEY = "net.ipv4.tcp_wmem"
RESET = "4096 16384 1048576"  # what the "reset" leaves: neither the original nor the flip


def wmem(lab: Lab, alias: str) -> str:
    return " ".join(ns_exec(lab, alias, "sysctl", "-n", KEY).split())


async def reset_and_drop(lab: Lab, rec: Recorder, alias: str) -> None:
    """Change the knob on `alias` behind abtui's back, then cut its SSH session."""
    await until(lambda: len(rec.of(EventKind.INTERVAL, "A")) >= 3)
    ns_exec(lab, alias, "sysctl", "-qw", f"{KEY}={RESET}")
    for pid in sshd_sessions(lab, alias):  # the session's sshd, not the daemon
        os.kill(pid, signal.SIGKILL)


def phases_of(rec: Recorder, pair: str) -> dict[int, dict[str, str]]:
    return {e.payload.phase: e.payload.config for e in rec.of(EventKind.PHASE, pair)}


def after(rec: Recorder, kind: EventKind, pair: str, t: float) -> list[Event]:
    return [e for e in rec.of(kind, pair) if e.t > t]


async def drive(lab: Lab, rec: Recorder, engine: Engine, flip: bool) -> tuple[float, str]:
    snd_a = lab.hosts(2)[0].alias
    await engine.connect()
    await engine.start("continuous")
    if flip:
        await until(lambda: len(rec.of(EventKind.INTERVAL, "A")) >= 2)
        await engine.set_knob("tcp_wmem", WMEM[1])
    await reset_and_drop(lab, rec, snd_a)
    await until(lambda: rec.of(EventKind.DRIFT), timeout=20)
    drift_t = rec.of(EventKind.DRIFT)[0].t
    # runs go on after the reconnect: enough intervals of the new phase on A
    await until(lambda: len([e for e in after(rec, EventKind.INTERVAL, "A", drift_t)
                             if not e.payload.straddles]) >= 4, timeout=30)
    return drift_t, wmem(lab, snd_a)


@pytest.mark.reliability(
    "9", "a host reset under a running engine (a flipped knob changed out of band, its SSH "
    "session killed mid-run)",
    "after the reconnect the host is read again before its pair measures: a drift event, the "
    "phase closed at the link's loss, nothing counted until the flip is re-applied and read "
    "back, every interval after under the host's real value; the original restored on exit")
async def test_a_reset_host_is_read_again_and_the_flip_re_applied(lab: Lab,
                                                                  reliability: Reliability):
    snd_a, snd_b = lab.hosts(2)[0].alias, lab.hosts(2)[2].alias
    original = wmem(lab, snd_a)
    assert original not in (RESET, WMEM[1])
    rec = Recorder()
    engine = make_engine(lab_profile(lab), rec)
    journal = engine.hosts.journal.path  # type: ignore[union-attr]
    try:
        drift_t, during = await drive(lab, rec, engine, flip=True)
        journalled = read_journal(journal).originals
        boot = engine.hosts.links[snd_a].boot_id  # read again on the reconnect
    finally:
        await engine.shutdown()
    # recorded: what the host had, what abtui had set, what it did
    (drift,) = rec.of(EventKind.DRIFT)
    assert drift.host == snd_a
    assert drift.payload.value == RESET and drift.payload.expected == WMEM[1]
    assert drift.payload.action == "re-applied" and drift.payload.pairs == ["A"]
    assert during == WMEM[1]  # re-applied on the host, read back
    # a namespace host runs this machine's kernel: the same boot, so no "rebooted"
    assert boot == Path("/proc/sys/kernel/random/boot_id").read_text().strip()
    assert drift.payload.message == ""
    # the phase ended: A's phase in force at the drop is closed, a new one follows
    lost = next(e.t for e in rec.events if e.kind is EventKind.LINK and e.host == snd_a
                and e.payload.state == "lost")
    phases = phases_of(rec, "A")
    closed = [e.record() for e in rec.of(EventKind.PHASE, "A") if e.t >= lost]
    assert closed and closed[0]["end"] == pytest.approx(lost, abs=0.5)
    # nothing is counted between the loss and the verified re-apply; after it, the value
    # the host has again
    for e in after(rec, EventKind.INTERVAL, "A", lost):
        if e.t <= drift_t:
            assert e.payload.straddles, e
    counted = [e for e in after(rec, EventKind.INTERVAL, "A", drift_t)
               if not e.payload.straddles]
    assert counted and {phases[e.payload.phase]["tcp_wmem"] for e in counted} == {WMEM[1]}
    starts = after(rec, EventKind.RUN_START, "A", lost)
    assert starts and all(s.payload.config["tcp_wmem"] == WMEM[1] for s in starts)
    # pair B, on other hosts, went on untouched: one phase for the flip, no drift
    assert not [e for e in rec.of(EventKind.DRIFT) if "B" in e.payload.pairs]
    # the original is still the host's true original: set back on exit, not the reset value
    assert {" ".join(v.split()) for (h, *_), v in journalled.items() if h == snd_a} == \
        {original}
    assert wmem(lab, snd_a) == original and wmem(lab, snd_b) == original
    back = next(e.t for e in rec.events if e.kind is EventKind.LINK and e.host == snd_a
                and e.payload.state == "connected" and e.t > lost)
    reliability.row(drift_after_reconnect_s=drift_t - back,
                    intervals_not_counted=len([e for e in after(rec, EventKind.INTERVAL, "A",
                                                                lost) if e.payload.straddles]),
                    counted_after=len(counted))


async def test_a_knob_abtui_never_set_is_relabelled_with_the_hosts_value(lab: Lab):
    snd_a = lab.hosts(2)[0].alias
    original = wmem(lab, snd_a)
    rec = Recorder()
    engine = make_engine(lab_profile(lab), rec)
    try:
        drift_t, during = await drive(lab, rec, engine, flip=False)
    finally:
        await engine.shutdown()
        ns_exec(lab, snd_a, "sysctl", "-qw", f"{KEY}={original}")  # our own out-of-band change
    (drift,) = rec.of(EventKind.DRIFT)
    assert drift.payload.action == "relabelled" and drift.payload.value == RESET
    assert during == RESET  # abtui did not overrule the host's own value
    phases = phases_of(rec, "A")
    counted = [e for e in after(rec, EventKind.INTERVAL, "A", drift_t)
               if not e.payload.straddles]
    assert counted and {phases[e.payload.phase]["tcp_wmem"] for e in counted} == {RESET}
    assert all(s.payload.config["tcp_wmem"] == RESET
               for s in after(rec, EventKind.RUN_START, "A", drift_t))
    assert not rec.of(EventKind.RESTORE)  # nothing abtui set, nothing to set back


def vxlan_ends(lab: Lab, alias: str) -> list[str]:
    out = ns_exec(lab, alias, "ip", "-o", "-d", "link", "show", "type", "vxlan")
    return [line.split(":")[1].strip().split("@")[0] for line in out.splitlines()]


async def test_a_tunnel_end_a_reset_removed_is_made_again(lab: Lab):
    rcv_a = lab.hosts(2)[1].alias
    rec = Recorder()
    engine = make_engine(tunnel_profile(lab), rec)
    try:
        await flip_while_measuring(engine, rec, "tunnel", "vxlan", ["A"])
        first = engine.book.targets["A"]
        await until(lambda: len(rec.of(EventKind.RUN_START, "A")) >= 2)
        n = len(rec.of(EventKind.INTERVAL, "A"))
        await until(lambda: len(rec.of(EventKind.INTERVAL, "A")) >= n + 2)
        (end,) = vxlan_ends(lab, rcv_a)
        ns_exec(lab, rcv_a, "ip", "link", "del", end)  # the reset: the receiver's end is gone
        for pid in sshd_sessions(lab, rcv_a):
            os.kill(pid, signal.SIGKILL)
        await until(lambda: rec.of(EventKind.DRIFT), timeout=20)
        drift_t = rec.of(EventKind.DRIFT)[0].t
        await until(lambda: len([e for e in after(rec, EventKind.INTERVAL, "A", drift_t)
                                 if not e.payload.straddles]) >= 2, timeout=30)
        again = vxlan_ends(lab, rcv_a)
    finally:
        await engine.shutdown()
    (drift,) = rec.of(EventKind.DRIFT)
    assert (drift.host, drift.payload.knob, drift.payload.value, drift.payload.expected,
            drift.payload.action) == (rcv_a, "tunnel", "none", "vxlan", "re-applied")
    assert len(again) == 1  # made again on the host
    retarget = after(rec, EventKind.TUNNEL, "A", drift_t - 5)[-1].payload.target
    starts = after(rec, EventKind.RUN_START, "A", drift_t)
    assert starts and all(s.payload.target == retarget == engine.book.targets["A"] for s in starts)
    phases = phases_of(rec, "A")
    counted = [e for e in after(rec, EventKind.INTERVAL, "A", drift_t)
               if not e.payload.straddles]
    assert {phases[e.payload.phase]["tunnel"] for e in counted} == {"vxlan"}
    assert first != lab.hosts(2)[1].data_address
    for h in lab.hosts(1):  # and removed on exit
        assert vxlan_ends(lab, h.alias) == []
