"""Knobs on real lab hosts: a flip on 4 hosts, a refusal that leaves all 4 as they were,
originals restored on exit, on Ctrl-C and by `abtui recover` after SIGKILL."""

from __future__ import annotations

import os
import re
import signal
import subprocess
import sys
from pathlib import Path

import pytest

from abtui.controller import KnobRefused
from abtui.knobs import KnobManager, resolve_targets
from abtui.lab import Lab
from abtui.model import EventKind, Knob, KnobKind, Pair, Scope
from abtui.profile import load_profile
from abtui.remote.hosts import open_hosts
from abtui.undo import UndoJournal, read_journal
from tests.conftest import ns_exec
from tests.reliability import Reliability

pytestmark = pytest.mark.lab
ROOT = Path(__file__).resolve().parents[2]
SYN = "net.ipv4.tcp_syn_retries"


def _sysctl(lab: Lab, alias: str, key: str = SYN) -> str:
    return ns_exec(lab, alias, "sysctl", "-n", key).strip()


def _aliases(lab: Lab) -> list[str]:
    return [h.alias for h in lab.hosts(2)]


async def test_flip_on_four_hosts_is_read_back_and_restored(lab: Lab, tmp_path):
    profile = load_profile(lab.profile_path)
    hosts = await open_hosts(profile)
    assert hosts.errors == {}
    before = {a: _sysctl(lab, a) for a in _aliases(lab)}
    new = "3" if before[_aliases(lab)[0]] != "3" else "4"
    events = []
    journal = UndoJournal(tmp_path)
    manager = KnobManager(hosts.links, hosts.dialects, journal=journal, emit=events.append)
    knob = Knob("syn", KnobKind.SYSCTL, (new,), key=SYN, scope=Scope.BOTH)
    try:
        result = await manager.apply(knob, new, resolve_targets(profile.pairs, knob))
        assert result.values == dict.fromkeys(_aliases(lab), new)
        assert {a: _sysctl(lab, a) for a in _aliases(lab)} == dict.fromkeys(_aliases(lab), new)
        originals = {e.host: e.data["value"] for e in events if e.kind is EventKind.ORIGINAL}
        assert originals == before
        assert len(read_journal(journal.path).originals) == 4
    finally:
        restored = await manager.restore_all()
        await hosts.close()
    assert all(r.ok for r in restored)
    assert {a: _sysctl(lab, a) for a in _aliases(lab)} == before
    assert read_journal(journal.path).empty
    assert [e.data["ok"] for e in events if e.kind is EventKind.RESTORE] == [True] * 4


@pytest.mark.reliability(
    "5", "a host refuses a knob (read-only feature)",
    "all or nothing: the 3 hosts that took it are set back; one line naming the host, knob, "
    "value and reason")
async def test_a_host_that_refuses_leaves_all_four_as_they_were(lab: Lab,
                                                                reliability: Reliability):
    """rx-checksumming is fixed on `lo` (b-rcv's device here) but not on the veths."""
    profile = load_profile(lab.profile_path)
    a, b = profile.pairs[:2]
    pairs = [a, Pair(b.label, b.sender, b.receiver, b.target, "data0", "lo")]
    hosts = await open_hosts(profile)
    knob = Knob("rxcsum", KnobKind.ETHTOOL_FEATURE, ("on", "off"), key="rx")

    def states() -> list[str]:
        return [next(ln.split()[1] for ln in ns_exec(lab, t.host, "ethtool", "-k", t.device)
                     .splitlines() if ln.startswith("rx-checksumming:"))
                for t in resolve_targets(pairs, knob)]

    assert states() == ["on"] * 4
    manager = KnobManager(hosts.links, hosts.dialects)
    try:
        with pytest.raises(KnobRefused) as refused:
            await manager.apply(knob, "off", resolve_targets(pairs, knob))
        message = str(refused.value)
        assert message.startswith(f"{b.receiver}: knob rxcsum='off' refused: rx on lo: read-only")
        assert "set back on 3 other host(s)" in message
        assert "\n" not in message and "Traceback" not in message
        assert states() == ["on"] * 4
        reliability.row(message=f"`{message}`")
    finally:
        await manager.restore_all()
        await hosts.close()


def _env(tmp_path: Path) -> dict[str, str]:
    return {**os.environ, "XDG_STATE_HOME": str(tmp_path / "state"), "PYTHONPATH": str(ROOT)}


def _start_holder(lab: Lab, tmp_path: Path, value: str) -> tuple[subprocess.Popen[str], int]:
    proc = subprocess.Popen([sys.executable, "-m", "tests.lab.holder", str(lab.profile_path),
                             SYN, value], cwd=ROOT, env=_env(tmp_path), text=True,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    line = proc.stdout.readline() if proc.stdout else ""
    if not line.startswith("READY"):
        proc.kill()
        err = proc.stderr.read() if proc.stderr else ""
        raise AssertionError(f"holder did not start: {line} {err}")
    return proc, int(line.split()[1])


def _leftovers(lab: Lab, pgid: int) -> tuple[str, str]:
    snd = _aliases(lab)[0]
    links = ns_exec(lab, snd, "ip", "-br", "link")
    group = ns_exec(lab, snd, "sh", "-c", f"ps -eo pgid=,stat= | awk '$1=={pgid} && $2 !~ /Z/'")
    return ("abv1s" in links and "tunnel") or "", group.strip()


@pytest.mark.parametrize("how", ["sigint", "sigkill"])
def test_originals_come_back_after_ctrl_c_and_after_sigkill_with_recover(lab: Lab, tmp_path,
                                                                        how):
    before = {a: _sysctl(lab, a) for a in _aliases(lab)}
    value = "2" if before[_aliases(lab)[0]] != "2" else "5"
    proc, pgid = _start_holder(lab, tmp_path, value)
    try:
        assert {a: _sysctl(lab, a) for a in _aliases(lab)} == dict.fromkeys(_aliases(lab), value)
        assert _leftovers(lab, pgid) != ("", "")
        if how == "sigint":
            proc.send_signal(signal.SIGINT)
            out, err = proc.communicate(timeout=30)
            assert "RESTORED" in out, err
        else:
            proc.kill()
            proc.wait(timeout=10)
            rec = subprocess.run([sys.executable, "-m", "abtui", "recover"], cwd=ROOT,
                                 env=_env(tmp_path), capture_output=True, text=True, timeout=60)
            assert rec.returncode == 0, rec.stdout + rec.stderr
            lines = rec.stdout.splitlines()
            assert sum(f"restored {SYN} = " in ln for ln in lines) == 4
            assert sum("removed tunnel abv1s" in ln or "removed tunnel abv1r" in ln
                       for ln in lines) == 2
            assert any(f"ended process group {pgid} (sleep)" in ln for ln in lines)
            again = subprocess.run([sys.executable, "-m", "abtui", "recover"], cwd=ROOT,
                                   env=_env(tmp_path), capture_output=True, text=True)
            assert (again.returncode, again.stdout.strip()) == (0, "nothing to recover")
    finally:
        if proc.poll() is None:
            proc.kill()
    assert {a: _sysctl(lab, a) for a in _aliases(lab)} == before
    assert _leftovers(lab, pgid) == ("", "")
    assert not list((tmp_path / "state" / "abtui" / "undo").glob("*.jsonl"))


@pytest.mark.parametrize(("key", "value", "why"), [
    (SYN, "300", "Invalid argument"),  # outside the kernel's 1..127
    ("net.ipv4.tcp_congestion_control", "cubic", "not permitted"),  # not allowed in a netns
])
async def test_a_value_the_kernel_refuses_changes_no_host(lab: Lab, key: str, value: str,
                                                          why: str):
    """An invalid value, and one the host does not permit: refused with one line naming the
    host, the knob and the kernel's reason; no host is left changed."""
    profile = load_profile(lab.profile_path)
    hosts = await open_hosts(profile)
    before = {a: _sysctl(lab, a, key) for a in _aliases(lab)}
    manager = KnobManager(hosts.links, hosts.dialects)
    knob = Knob("k", KnobKind.SYSCTL, (value,), key=key, scope=Scope.BOTH)
    try:
        with pytest.raises(KnobRefused) as refused:
            await manager.apply(knob, value, resolve_targets(profile.pairs, knob))
    finally:
        await manager.restore_all()
        await hosts.close()
    message = str(refused.value)
    assert re.match(rf"^{lab.name}-\w-\w{{3}}: knob k='{value}' refused: {key}", message), message
    assert why.lower() in message.lower() and "\n" not in message
    assert {a: _sysctl(lab, a, key) for a in _aliases(lab)} == before
