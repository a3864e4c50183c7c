"""BuildSwitcher with fake hosts that act out the real commands (the VM lab test switches real
ones): a module reload verified by what the host reports, a kernel boot waited for by its new
boot id, the user's command run for real, all or nothing across a pair, the first build
journalled and gone back to."""

from __future__ import annotations

import asyncio
import re
import sys
from pathlib import Path

import pytest

from abtui.core.builds import Build, Method, Reports
from abtui.core.errors import KnobRefused
from abtui.core.events import EventKind
from abtui.core.model import Knob, KnobKind, LinkState
from abtui.hosts import builds as host_builds
from abtui.hosts.builds import BuildSwitcher, origin_of
from abtui.hosts.targets import Target
from abtui.hosts.undo import UndoJournal, read_journal
from abtui.remote.control_shell import CommandResult
from abtui.remote.os.dialect import Setting
from abtui.remote.os.linux.knobs import Linux
from tests.reliability import Reliability

ITR = Knob(name="itr", kind=KnobKind.MODULE, key="e1000e", values=("3", "10000"), builds={
    v: Build(Method.MODPROBE, params=(("InterruptThrottleRate", v),),
             reports=Reports("ethtool-coalesce", "rx-usecs", usecs), timeout=5)
    for v, usecs in (("3", "3"), ("10000", "100"))})
KERNEL = Knob(name="kernel", kind=KnobKind.KERNEL, values=("a", "b"), builds={
    "a": Build(Method.KEXEC, release="6.1.0-47-amd64", timeout=3),
    "b": Build(Method.KEXEC, release="6.1.0-57-amd64", timeout=3)})


class FakeHost:
    """A host that acts out the build commands: a reload sets the driver's ITR (shown as
    rx-usecs), a kexec reboots it into the image's release after `boot_s`."""

    def __init__(self, alias: str, release: str = "6.1.0-47-amd64") -> None:
        self.alias, self.release, self.itr, self.boot = alias, release, "3", 1
        self.state, self.reconnect, self.boot_s = LinkState.CONNECTED, True, 0.3
        self.refuse_itr: str | None = None  # a reload to this value comes back otherwise
        self.lands_on: str | None = None  # a kexec comes back on this release instead
        self.commands: list[str] = []

    @property
    def boot_id(self) -> str:
        return f"boot-{self.boot}"

    async def run(self, command: str, timeout: float = 10.0,
                  isolate: bool = True, again: bool = False) -> CommandResult:
        self.commands.append(command)
        out = []
        if "kexec -l" in command:
            image = re.search(r"kexec -l /boot/vmlinuz-(\S+)", command)[1]  # type: ignore[index]
            asyncio.get_running_loop().call_soon(self._down)
            asyncio.get_running_loop().call_later(self.boot_s, self._up, self.lands_on or image)
        if m := re.search(r"modprobe e1000e InterruptThrottleRate=(\d+)", command):
            self.itr = (self.refuse_itr and m[1] == self.refuse_itr and "1") or m[1]
        if "random/boot_id" in command:
            out += [f"boot {self.boot_id}", f"release {self.release}", "version #1 SMP"]
        if "/sys/module/e1000e" in command and "modprobe" not in command.split(";")[0]:
            out.append("loaded")
        if "/sys/class/net/data0/address" in command and "modprobe" not in command:
            out += ["mac 52:54:00:00:00:01", "mtu 1500", "flags 0x1003",
                    "3: data0    inet 198.19.1.2/24 scope global data0"]
        if "__ABTUI_REPORTS__" in command:  # a reload reads its `reports` setting after it
            out.append("__ABTUI_REPORTS__")
        if "ethtool -c" in command:
            out.append(f"rx-usecs: {'100' if self.itr == '10000' else self.itr}")
        return CommandResult(0, "\n".join(out) + "\n", "")

    def _down(self) -> None:
        self.state = LinkState.LOST

    def _up(self, release: str) -> None:
        self.release, self.boot, self.state = release, self.boot + 1, LinkState.CONNECTED


def _switcher(hosts: list[FakeHost], journal: UndoJournal | None = None,
              events: list | None = None) -> BuildSwitcher:
    links = {h.alias: h for h in hosts}
    dialects = {h.alias: Linux() for h in hosts}

    async def read(host: str, s: Setting) -> str:
        d = dialects[host]
        result = await links[host].run(d.read_command(s))
        return d.parse_value(s, result.stdout) or ""

    return BuildSwitcher(links, dialects, read, journal=journal,  # type: ignore[arg-type]
                         emit=events.append if events is not None else None)


def _where(*hosts: FakeHost) -> list[Target]:
    return [Target(h.alias, "data0", "A") for h in hosts]


async def test_a_module_switch_reloads_both_hosts_and_goes_back(tmp_path: Path) -> None:
    snd, rcv = FakeHost("snd"), FakeHost("rcv")
    journal, events = UndoJournal(tmp_path), []
    sw = _switcher([snd, rcv], journal, events)
    assert await sw.current(ITR, _where(snd)[0]) == "3"
    got = await sw.switch(ITR, "10000", _where(snd, rcv))
    assert got == {"snd": "rx-usecs 100", "rcv": "rx-usecs 100"}
    assert snd.itr == rcv.itr == "10000"
    reload = next(c for c in snd.commands if "modprobe e1000e" in c)
    assert "ip -batch -" in reload and "addr replace 198.19.1.2/24 dev data0" in reload
    stages = [(e.host, e.payload.stage) for e in events if e.kind is EventKind.SWITCH]
    assert sorted(stages) == sorted([("snd", "booting"), ("rcv", "booting"), ("snd", "up"),
                                     ("rcv", "up")])
    pending = read_journal(journal.path)
    assert set(pending.builds) == {("snd", "itr"), ("rcv", "itr")}
    origin = origin_of("itr", pending.builds[("snd", "itr")].origin())
    assert origin.value == "3" and origin.iface is not None and origin.iface.addresses == (
        "198.19.1.2/24",)
    done = await sw.restore_all()
    assert [ok for _h, _o, ok, _m in done] == [True, True] and snd.itr == rcv.itr == "3"
    assert read_journal(journal.path).empty


async def test_a_host_that_reports_another_build_fails_the_flip_and_the_other_goes_back():
    snd, rcv = FakeHost("snd"), FakeHost("rcv")
    rcv.refuse_itr = "10000"  # comes back with ITR 1: rx-usecs 1, not 100
    sw = _switcher([snd, rcv])
    with pytest.raises(KnobRefused) as info:
        await sw.switch(ITR, "10000", _where(snd, rcv))
    assert "rcv: knob itr='10000' refused: rx-usecs on data0 reads 1, expected 100" in \
        str(info.value)
    assert "switched back on 1 other host(s)" in str(info.value)
    assert snd.itr == "3"


async def test_a_kernel_switch_waits_for_the_new_boot_and_checks_the_release(monkeypatch):
    monkeypatch.setattr(host_builds, "POLL_S", 0.02)
    snd, rcv = FakeHost("snd"), FakeHost("rcv")
    sw = _switcher([snd, rcv])
    assert await sw.current(KERNEL, _where(snd)[0]) == "a"
    assert await sw.switch(KERNEL, "b", _where(snd, rcv)) == {"snd": "6.1.0-57-amd64",
                                                              "rcv": "6.1.0-57-amd64"}
    assert snd.boot == rcv.boot == 2
    assert "--initrd=/boot/initrd.img-6.1.0-57-amd64 --reuse-cmdline" in snd.commands[-2]
    rcv.lands_on = "6.1.0-40-amd64"
    with pytest.raises(KnobRefused, match=re.escape(
            "came back on 6.1.0-40-amd64, expected 6.1.0-47-amd64")):
        await sw.switch(KERNEL, "a", _where(snd, rcv))
    assert snd.release == "6.1.0-57-amd64"  # went back to what it ran


async def test_a_host_that_never_comes_back_fails_within_the_timeout(monkeypatch):
    monkeypatch.setattr(host_builds, "POLL_S", 0.02)
    snd = FakeHost("snd")
    snd.boot_s = 60.0
    sw = _switcher([snd])
    knob = Knob(name="kernel", kind=KnobKind.KERNEL, values=("a", "b"), builds={
        "a": KERNEL.builds["a"], "b": Build(Method.KEXEC, release="6.1.0-57-amd64",
                                            timeout=0.3)})
    with pytest.raises(KnobRefused, match=re.escape("did not come back within 0.3 s")):
        await sw.switch(knob, "b", _where(snd))


async def test_the_users_command_runs_as_an_argv_and_its_failure_is_one_line(tmp_path):
    snd = FakeHost("snd")
    sw = _switcher([snd])
    marker = tmp_path / "args"
    script = ("import os, sys; open(sys.argv[1], 'w').write(repr(sys.argv[2:]) + "
              "os.environ['ABTUI_VALUE']); print('power: no such outlet'); sys.exit(3)")
    knob = Knob(name="kernel", kind=KnobKind.KERNEL, values=("a", "b; reboot"), builds={
        "a": KERNEL.builds["a"],
        "b; reboot": Build(Method.COMMAND, release="6.1.0-57-amd64", timeout=5,
                           command=(sys.executable, "-c", script, str(marker), "{host}",
                                    "--image={value}"))})
    with pytest.raises(KnobRefused, match=r"exited 3: power: no such outlet"):
        await sw.switch(knob, "b; reboot", _where(snd))
    assert marker.read_text() == "['snd', '--image=b; reboot']b; reboot"


async def test_a_first_build_no_value_names_cannot_come_back_by_command():
    snd = FakeHost("snd", release="6.1.0-40-amd64")
    sw = _switcher([snd])
    knob = Knob(name="kernel", kind=KnobKind.KERNEL, values=("b",), builds={
        "b": Build(Method.COMMAND, release="6.1.0-57-amd64", command=("true",))})
    with pytest.raises(KnobRefused,
                       match=re.escape("runs 6.1.0-40-amd64, which none of its values is")):
        await sw.switch(knob, "b", _where(snd))
    assert not sw.originals


async def test_again_boots_a_host_into_the_build_it_runs(monkeypatch):
    """A build alternation's stretch is one boot: a host on the stretch's build already boots
    it again when asked (`again`), verified like any switch; without it nothing happens."""
    monkeypatch.setattr(host_builds, "POLL_S", 0.02)
    snd, rcv = FakeHost("snd"), FakeHost("rcv")
    sw = _switcher([snd, rcv])
    assert await sw.switch(KERNEL, "a", _where(snd, rcv)) == {"snd": "a", "rcv": "a"}
    assert snd.boot == rcv.boot == 1
    assert await sw.switch(KERNEL, "a", _where(snd, rcv), again=True) == {
        "snd": "6.1.0-47-amd64", "rcv": "6.1.0-47-amd64"}
    assert snd.boot == rcv.boot == 2
    assert "kexec -l /boot/vmlinuz-6.1.0-47-amd64" in snd.commands[-2]


async def test_a_command_build_whose_host_has_not_come_back_keeps_its_journal_entry(
        tmp_path: Path, monkeypatch) -> None:
    """The user's command ran (exit 0) but no new boot was seen within the timeout: the switch
    is refused saying the host may still come up on that build later, and at the end the
    host is not counted as set back (it runs its first build now, but may boot the other one
    at any time): its undo-journal entry stays for `abtui recover`, with the recover hint.
    Once it has booted again, the set-back goes on as for any host."""
    monkeypatch.setattr(host_builds, "POLL_S", 0.02)
    snd = FakeHost("snd")
    journal = UndoJournal(tmp_path)
    sw = _switcher([snd], journal)
    knob = Knob(name="kernel", kind=KnobKind.KERNEL, values=("a", "b"), builds={
        "a": KERNEL.builds["a"],
        "b": Build(Method.COMMAND, release="6.1.0-57-amd64", timeout=0.3,
                   command=(sys.executable, "-c", "pass"))})
    with pytest.raises(KnobRefused, match=re.escape("it may still come up on 'b' later")):
        await sw.switch(knob, "b", _where(snd))
    [(host, _o, ok, message)] = await sw.restore_all()
    assert (host, ok) == ("snd", False)
    assert "may come up on 'b' later" in message and "abtui recover" in message
    assert set(read_journal(journal.path).builds) == {("snd", "kernel")}
    snd.boot += 1  # it came up (on its first build, here): nothing left
    [(_h, _o, ok, _m)] = await sw.restore_all()
    assert ok and read_journal(journal.path).empty


@pytest.mark.reliability(
    "46e", "two e1000e module builds differing only in InterruptThrottleRate (the module does "
    "not show it)",
    "the host's build read as `'3' or '10000' (its builds that cannot be told apart)`, not "
    "\"none of its values\"; a switch refused before anything changes")
async def test_builds_the_host_cannot_tell_apart_are_said_so_not_none_of_its_values(
        reliability: Reliability) -> None:
    """e1000e does not show its InterruptThrottleRate: two builds that differ only there (no
    `reports`) both match what the host shows. The host runs one of them, said so, and a
    switch is refused before anything changes (abtui could not come back to the right one)."""
    snd = FakeHost("snd")
    sw = _switcher([snd])
    alike = Knob(name="itr", kind=KnobKind.MODULE, key="e1000e", values=("3", "10000"), builds={
        v: Build(Method.MODPROBE, params=(("InterruptThrottleRate", v),), timeout=5)
        for v in ("3", "10000")})
    now = await sw.current(alike, _where(snd)[0])
    assert now == "'3' or '10000' (its builds that cannot be told apart)"
    with pytest.raises(KnobRefused, match=re.escape(f"runs {now}: give each build something")):
        await sw.switch(alike, "10000", _where(snd))
    assert not sw.originals and snd.itr == "3"
    reliability.row(read=f"`{now}`", changed_on_refusal=0)
