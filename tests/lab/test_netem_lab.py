"""A netem knob on the namespace lab. This machine's kernel has no netem: the flip is refused
on every host with the reason, nothing is left half set, and `abtui check` says why. (Where a
kernel has netem, the same test sees it set and restored; VM hosts: tests/lab/test_vm_lab.py.)"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from abtui.core.errors import KnobRefused
from abtui.core.model import Knob, KnobKind, Scope
from abtui.hosts.connect import open_hosts
from abtui.hosts.knobs import KnobManager, resolve_targets
from abtui.lab.netns import Lab
from abtui.profile import load_profile
from abtui.remote.os.linux.knobs import NETEM_MISSING, NETEM_PRESENT
from tests.lab.namespaces import ns_exec

pytestmark = pytest.mark.lab
ROOT = Path(__file__).resolve().parents[2]


def _qdiscs(lab: Lab) -> dict[str, str]:
    return {h.alias: ns_exec(lab, h.alias, "tc", "qdisc", "show", "dev", "data0")
            for h in lab.hosts(2)}


def _has_netem(lab: Lab) -> bool:
    alias = lab.hosts(1)[0].alias
    out = subprocess.run(["ip", "netns", "exec", f"abtui-{alias}", "sh", "-c",
                          f"{NETEM_PRESENT} && echo yes"], capture_output=True, text=True)
    return out.stdout.strip() == "yes"


async def test_netem_on_namespace_hosts_is_refused_whole_or_set_and_restored(lab: Lab):
    profile = load_profile(lab.profile_path)
    hosts = await open_hosts(profile)
    before = _qdiscs(lab)
    knob = Knob("wan", KnobKind.NETEM, ("none", "delay 5ms"), scope=Scope.BOTH)
    manager = KnobManager(hosts.links, hosts.dialects)
    try:
        if not _has_netem(lab):
            with pytest.raises(KnobRefused) as exc:
                await manager.apply(knob, "delay 5ms", resolve_targets(profile.pairs, knob))
            assert f"cannot read netem on data0: unknown key: {NETEM_MISSING}" in str(exc.value)
            assert _qdiscs(lab) == before
        else:
            await manager.apply(knob, "delay 5ms", resolve_targets(profile.pairs, knob))
            assert all("netem" in q for q in _qdiscs(lab).values())
    finally:
        await manager.restore_all()
        await hosts.close()
    assert _qdiscs(lab) == before


def test_check_says_this_kernel_has_no_netem(lab: Lab, tmp_path):
    if _has_netem(lab):
        pytest.skip("this kernel has netem: nothing missing to report")
    profile = tmp_path / "p.toml"
    profile.write_text(lab.profile_path.read_text() + (
        '\n[[knobs]]\nname = "wan"\nkind = "netem"\nvalues = ["none", "delay 20ms"]\n'
        'scope = "sender"\n'))
    proc = subprocess.run([sys.executable, "-m", "abtui", "check", str(profile)], cwd=ROOT,
                          capture_output=True, text=True, timeout=120)
    assert proc.returncode == 1, proc.stdout + proc.stderr
    sender = lab.hosts(1)[0].alias
    assert f"FAIL {sender}: knob wan on data0: not readable: " in proc.stdout
    assert NETEM_MISSING in proc.stdout
