"""Tunnels on real lab hosts: wireguard (wireguard-go here) and vxlan come up, carry a real
iperf3 test, switch live, and leave nothing behind; gre and ipsec report their absence."""

from __future__ import annotations

import re

import pytest

from abtui.core.errors import AbtuiError
from abtui.core.model import Knob, KnobKind
from abtui.hosts.connect import open_hosts
from abtui.hosts.knobs import KnobManager, resolve_targets
from abtui.hosts.tunnels import TunnelManager, probe_host
from abtui.lab.netns import Lab
from abtui.profile import load_profile
from tests.lab.namespaces import ns_exec
from tests.lab.through import iperf3_mbits

pytestmark = pytest.mark.lab


def _traces(lab: Lab, tag: str) -> list[str]:
    """Links, tunnel addresses and (live) wireguard-go processes this session's tag made."""
    found = []
    for h in lab.hosts(2):
        links = ns_exec(lab, h.alias, "ip", "-br", "link")
        found += [f"{h.alias}: link {ln.split()[0]}" for ln in links.splitlines() if tag in ln]
        addrs = ns_exec(lab, h.alias, "ip", "-br", "addr")
        found += [f"{h.alias}: {a}" for a in re.findall(r"198\.18\.1\d\d\.\d+/24", addrs)]
    procs = ns_exec(lab, lab.hosts(1)[0].alias, "ps", "-eo", "stat=,args=")
    found += [f"process {ln}" for ln in procs.splitlines()
              if "wireguard-go" in ln and tag in ln and not ln.lstrip().startswith("Z")]
    return found


async def _iperf3_through(hosts, pair, target: str) -> float:
    return await iperf3_mbits(hosts, pair, target, port=5299, seconds=1, timeout=20)


async def test_wireguard_and_vxlan_carry_iperf3_and_leave_nothing(lab: Lab):
    profile = load_profile(lab.profile_path)
    hosts = await open_hosts(profile)
    events = []
    manager = TunnelManager(hosts.links, hosts.dialects, profile.pairs, emit=events.append)
    a = profile.pairs[0]
    try:
        knobs = KnobManager(hosts.links, hosts.dialects, tunnels=manager)
        knob = Knob("tunnel", KnobKind.TUNNEL, ("none", "wireguard", "vxlan"))
        for kind, letter in (("wireguard", "w"), ("vxlan", "v")):
            if kind == "vxlan":  # a tunnel knob, as the console flips it
                targets = (await knobs.apply(knob, kind, resolve_targets(profile.pairs, knob))
                           ).targets
            else:
                targets = await manager.switch_pairs(["A", "B"], kind)
            assert targets == {"A": "198.18.101.2", "B": "198.18.102.2"}
            traces = _traces(lab, manager.tag)
            # the old tunnel is gone before the new one is up: only this type's links remain
            assert sorted(t.split()[-1] for t in traces if ": link " in t) == sorted(
                f"ab{letter}{p}{r}{manager.tag}" for p in (1, 2) for r in "sr")
            assert await _iperf3_through(hosts, a, targets["A"]) > 1.0
        assert await manager.switch("A", "none") == a.target
        await manager.down_all()
        assert _traces(lab, manager.tag) == []
        assert [(e.pair, e.payload.type) for e in events][-2:] in (
            [("A", "none"), ("B", "none")], [("B", "none"), ("A", "none")])
    finally:
        await manager.down_all()
        await hosts.close()
    assert _traces(lab, manager.tag) == []


async def test_types_this_kernel_lacks_are_reported_not_offered(lab: Lab):
    profile = load_profile(lab.profile_path)
    hosts = await open_hosts(profile)
    manager = TunnelManager(hosts.links, hosts.dialects, profile.pairs)
    try:
        sender = profile.pairs[0].sender
        probe = await probe_host(hosts.links[sender], hosts.dialects[sender])
        assert probe["none"] == "yes" and probe["vxlan"] == "yes"
        assert probe["wireguard"] in ("kernel", "userspace")
        missing = {t: v for t, v in probe.items() if v.startswith("no")}
        if not missing:
            pytest.skip("this kernel has gre and ipsec: nothing missing to report")
        for kind, why in missing.items():
            assert kind in ("gre", "ipsec")
            assert re.match(r"no: the kernel has no (gre support|ESP with AES-GCM)", why)
            with pytest.raises(AbtuiError):
                await manager.switch("A", kind)
            assert _traces(lab, manager.tag) == []
    finally:
        await manager.down_all()
        await hosts.close()


async def test_engine_facts_say_which_tunnels_each_host_can_make(lab: Lab, tmp_path):
    """With a tunnel knob in the profile, connect asks every host (once its key is trusted)
    which types it can make; the FACTS events carry it for the console's switcher."""
    from abtui.core.events import EventKind
    from abtui.hosts.undo import UndoJournal
    from abtui.measure.engine.front import Engine

    facts = {}
    engine = Engine(load_profile(lab.profile_path), journal=UndoJournal(tmp_path))
    engine.subscribe(lambda e: facts.update({e.host: e.payload.facts})
                     if e.kind is EventKind.FACTS else None)
    try:
        await engine.connect()
    finally:
        await engine.shutdown()
    assert set(facts) == {h.alias for h in lab.hosts(2)}
    for alias, f in facts.items():
        t = f["tunnels"]
        assert t["none"] == "yes" and t["vxlan"] == "yes", (alias, t)
        assert t["wireguard"] in ("kernel", "userspace"), (alias, t)
        assert all(t[k] == "yes" or t[k].startswith("no: ") for k in ("gre", "ipsec")), t
    assert _traces(lab, "abprb") == []  # the probe's scratch links are gone
