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

from abtui.core.errors import KnobRefused
from abtui.core.events import EventKind
from abtui.core.model import Knob, KnobKind, Pair, Scope
from abtui.hosts.connect import open_hosts
from abtui.hosts.knobs import KnobManager, resolve_targets
from abtui.hosts.undo import UndoJournal, read_journal
from abtui.lab.netns import Lab
from abtui.profile import load_profile
from tests.lab.engine_kit import until
from tests.lab.namespaces import ns_exec
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
        originals = {e.host: e.payload.value for e in events if e.kind is EventKind.ORIGINAL}
        assert originals == before
        assert len(read_journal(journal.path).originals) == 4
    finally:
        restored = await manager.restore_all()
        await hosts.close()
    assert all(r.ok for r in restored)
    assert {a: _sysctl(lab, a) for a in _aliases(lab)} == before
    assert read_journal(journal.path).empty
    assert [e.payload.ok for e in events if e.kind is EventKind.RESTORE] == [True] * 4


async def test_each_hosts_part_of_a_flip_comes_back_in_one_ssh_packet(lab: Lab):
    """Through real sshd and bash: a flip is one command per host, and each host's reply
    (old value, value read back, status, stderr) arrives as one SSH data packet, none on
    stderr (before: about 3 packets a host, the end marks in packets of their own). The
    control shell's folder on the host is gone while its link is still open (its files
    opened, then removed), and stays gone once the link is closed."""
    profile = load_profile(lab.profile_path)
    hosts = await open_hosts(profile)
    assert hosts.errors == {}
    packets: dict[str, list[int]] = {}
    for alias, link in hosts.links.items():
        process = link._shell.process  # type: ignore[union-attr]
        seen = packets.setdefault(alias, [])

        def counted(data, datatype, seen=seen, real=process.data_received):  # type: ignore[no-untyped-def]
            seen.append(datatype or 0)
            real(data, datatype)

        process.data_received = counted
    before = {a: _sysctl(lab, a) for a in _aliases(lab)}
    commands: list[str] = []
    manager = KnobManager(hosts.links, hosts.dialects)
    knob = Knob("syn", KnobKind.SYSCTL, ("3", "4"), key=SYN, scope=Scope.BOTH)
    targets = resolve_targets(profile.pairs, knob)
    try:
        await manager.apply(knob, "3", targets)  # the first: read, then swap
        for link in hosts.links.values():
            run = link.run

            async def logged(command, timeout=10.0, isolate=True, again=False,  # type: ignore[no-untyped-def]
                             run=run):
                commands.append(command)
                return await run(command, timeout, isolate, again=again)

            link.run = logged  # type: ignore[method-assign]
        for seen in packets.values():
            seen.clear()
        for n in range(6):
            value = ("4", "3")[n % 2]
            result = await manager.apply(knob, value, targets)
            assert result.values == dict.fromkeys(_aliases(lab), value)
        assert len(commands) == 6 * 4
        assert {a: len(seen) for a, seen in packets.items()} == dict.fromkeys(_aliases(lab), 6)
        assert {d for seen in packets.values() for d in seen} == {0}  # stdout only
        folders = [(await link.run('echo "$__abtui_t"', isolate=False)).stdout
                   for link in hosts.links.values()]
        # the shells' folders are removed as soon as their files are open: a host whose
        # shell is killed outright keeps nothing of abtui's
        assert all(f.startswith(("/dev/shm/abtui.", "/tmp/abtui.")) and not os.path.exists(f)
                   for f in folders), folders
    finally:
        await manager.restore_all()
        await hosts.close()
    assert {a: _sysctl(lab, a) for a in _aliases(lab)} == before
    await until(lambda: not any(os.path.exists(f) for f in folders), timeout=5)


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


def _abtui_run(tmp_path: Path, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "abtui", *args], cwd=ROOT, env=_env(tmp_path),
                          capture_output=True, text=True, timeout=120)


@pytest.mark.parametrize(("setting", "why"), [
    # read-only inside a namespace: [ -w ] says no before anything is written (the value is
    # made other than the host's below: a flip to the value a host has is no flip)
    (("rmemmax", "net.core.rmem_max", "4194304"), "read-only"),
    # a congestion control the kernel does not have: ENOENT from the write, said as such
    (("rcv_cc", "net.ipv4.tcp_congestion_control", "nosuchcc"),
     "invalid value: the kernel refused it (No such file or directory); "
     "net.ipv4.tcp_allowed_congestion_control: "),
])
def test_a_refused_set_says_so_once_and_leaves_nothing_to_recover(
        lab: Lab, tmp_path: Path, setting: tuple[str, str, str], why: str):
    """`abtui run --set` with a value the hosts refuse: one line naming the knob, the value,
    the host and the kernel's reason; no "could not restore"; no undo journal left, so
    `abtui recover` has nothing to do and the next run does not warn about earlier changes."""
    knob, key, value = setting
    before = {a: _sysctl(lab, a, key) for a in _aliases(lab)}
    if value in before.values():
        value = str(int(value) // 2)
    profile = tmp_path / "p.toml"
    profile.write_text(lab.profile_path.read_text().replace("duration = 0 ", "duration = 1 ")
                       + f'\n[[knobs]]\nname = "{knob}"\nkind = "sysctl"\nkey = "{key}"\n'
                       f'values = ["{value}"]\nscope = "receiver"\n')
    run = _abtui_run(tmp_path, "run", str(profile), "--headless", "--set", f"{knob}={value}",
                     "--out", str(tmp_path / "s.jsonl"))
    assert run.returncode == 1, run.stderr
    said = [ln for ln in run.stderr.splitlines() if value in ln]
    assert len(said) == 1, run.stderr
    assert re.search(rf"--set {knob}={value} refused, not started: {lab.name}-\w-\w{{3}}: "
                     rf"knob {knob}='{value}' refused: {key}: ", said[0]), said[0]
    assert why in said[0] and "(nothing was changed)" in said[0], said[0]
    assert "printf" not in run.stderr and "unknown key" not in run.stderr
    assert "could not restore" not in run.stderr and "NOT restored" not in run.stderr
    assert not list((tmp_path / "state" / "abtui" / "undo").glob("*.jsonl"))
    recover = _abtui_run(tmp_path, "recover")
    assert (recover.returncode, recover.stdout.strip()) == (0, "nothing to recover")
    again = _abtui_run(tmp_path, "run", str(profile), "--headless", "--duration", "1",
                       "--out", str(tmp_path / "s2.jsonl"))
    assert again.returncode == 0, again.stderr
    assert "left changes" not in again.stderr and "abtui recover" not in again.stderr
    assert {a: _sysctl(lab, a, key) for a in _aliases(lab)} == before


def test_recover_finishes_when_the_hosts_of_a_journal_are_gone(lab: Lab, tmp_path: Path):
    """Two controllers SIGKILLed: one on the test lab, one on a lab that is then taken down.
    `abtui recover` sets back all it can (the live lab: sysctls, tunnels, the process), says
    in one line per gone host what it could not and how to forget it (exit 1), keeps only
    that; --forget-unreachable then finishes (exit 0) and nothing is left to recover."""
    from tests.lab.namespaces import make_test_lab

    gone_lab = make_test_lab(tmp_path / "labs", "g")
    gone_lab.down()
    gone_lab.up(pairs=1)
    gone = [h.alias for h in gone_lab.hosts(1)]
    before = {a: _sysctl(lab, a) for a in _aliases(lab)}
    value = "2" if before[_aliases(lab)[0]] != "2" else "5"
    holders = []
    try:
        holders.append(_start_holder(gone_lab, tmp_path, value))
        holders.append(_start_holder(lab, tmp_path, value))
        assert {a: _sysctl(lab, a) for a in _aliases(lab)} == dict.fromkeys(_aliases(lab), value)
    finally:
        for proc, _pgid in holders:
            proc.kill()
            proc.wait(timeout=10)
        gone_lab.down()
    pgid = holders[1][1]
    first = _abtui_run(tmp_path, "recover")
    assert first.returncode == 1, first.stdout + first.stderr
    lines = first.stdout.splitlines()
    assert sum(f"restored {SYN} = " in ln for ln in lines) == 4, lines
    assert sum("removed tunnel" in ln for ln in lines) == 2, lines
    assert any(f"ended process group {pgid} (sleep)" in ln for ln in lines), lines
    failed = [ln for ln in lines if ln.startswith("FAIL")]
    assert [ln.split(":")[0] for ln in failed] == [f"FAIL {a}" for a in sorted(gone)], lines
    for line in failed:
        host = line.split()[1].rstrip(":")
        assert line.startswith(f"FAIL {host}: cannot reconnect (") and " left" in line
        assert line.endswith(f"`abtui recover --forget {host}`)")
    assert "Traceback" not in first.stderr
    assert {a: _sysctl(lab, a) for a in _aliases(lab)} == before
    assert _leftovers(lab, pgid) == ("", "")
    assert len(list((tmp_path / "state" / "abtui" / "undo").glob("*.jsonl"))) == 1
    rest = _abtui_run(tmp_path, "recover", "--forget-unreachable")
    assert rest.returncode == 0, rest.stdout + rest.stderr
    assert [ln.split(":")[0] for ln in rest.stdout.splitlines()] == \
        [f"ok   {a}" for a in sorted(gone)]
    assert not list((tmp_path / "state" / "abtui" / "undo").glob("*.jsonl"))
    assert _abtui_run(tmp_path, "recover").stdout.strip() == "nothing to recover"
