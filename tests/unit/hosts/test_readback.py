"""Reading back what a session set (abtui.hosts.readback), on fake hosts: a value someone else
changed is found, marked foreign in the knob layer and the undo journal, never written again
by a flip, and left as found by the exit's restore."""

from __future__ import annotations

import shlex
import subprocess

import pytest

from abtui.core.errors import KnobRefused
from abtui.core.model import Knob, KnobKind, Pair
from abtui.hosts.knobs import KnobManager, resolve_targets
from abtui.hosts.readback import READ_END, read_back, split_reads
from abtui.hosts.undo import UndoJournal, read_journal
from abtui.remote.control_shell import CommandResult
from abtui.remote.cork import release
from abtui.remote.os.dialect import Setting
from tests.unit.hosts.fake_hosts import FakeDialect, FakeLink

HOSTS = ["a-snd", "a-rcv", "b-snd", "b-rcv"]
PAIRS = [Pair("A", "a-snd", "a-rcv", "198.19.1.2", "data0", "data0"),
         Pair("B", "b-snd", "b-rcv", "198.19.2.2", "eth1", "eth2")]
KNOB = Knob("x", KnobKind.SYSCTL, ("1", "2"), key="net.x")


def _manager(tmp_path):
    log, events = [], []
    links = {h: FakeLink(h, log) for h in HOSTS}
    journal = UndoJournal(tmp_path)
    m = KnobManager(links, {h: FakeDialect() for h in HOSTS}, journal=journal,
                    emit=events.append)
    return m, links, log, events, journal


async def test_nothing_changed_reads_back_nothing_and_writes_nothing(tmp_path):
    m, _links, log, _events, _journal = _manager(tmp_path)
    await m.apply(KNOB, "2", resolve_targets(PAIRS[:2], KNOB))
    log.clear()
    assert await read_back(m, HOSTS) == []
    assert sorted(h for h, _c in log) == sorted(HOSTS)
    assert all(c.startswith("read ") for _h, c in log)  # one read a host, no write
    assert m.foreign == {}


async def test_someone_elses_value_is_found_once_and_never_overwritten(tmp_path):
    m, links, log, _events, journal = _manager(tmp_path)
    targets = resolve_targets(PAIRS[:2], KNOB)
    await m.apply(KNOB, "2", targets)
    links["a-rcv"].values["net.x"] = "7"  # a colleague's `sysctl -w`
    (changed,) = await read_back(m, HOSTS)
    assert (changed.host, changed.setting.key, changed.knob, changed.expected,
            changed.found) == ("a-rcv", "net.x", "x", "2", "7")
    assert await read_back(m, HOSTS) == []  # said once
    assert list(read_journal(journal.path).foreign.values()) == ["7"]
    log.clear()
    with pytest.raises(KnobRefused, match=r"^a-rcv: knob x='1' refused: net.x was set to '7' "
                                          r"by someone else"):
        await m.apply(KNOB, "1", targets)
    assert log == [] and links["a-rcv"].values["net.x"] == "7"  # nothing written anywhere
    restored = await m.restore_all()
    by_host = {r.host: r for r in restored}
    assert by_host["a-rcv"].left == "7" and not by_host["a-rcv"].ok
    assert all(by_host[h].ok for h in HOSTS if h != "a-rcv")
    assert {h: links[h].values["net.x"] for h in HOSTS} == {**dict.fromkeys(HOSTS, "1"),
                                                           "a-rcv": "7"}
    assert read_journal(journal.path).originals == {}  # nothing left for `abtui recover`


async def test_hosts_not_asked_for_are_not_read(tmp_path):
    """A host that reconnects (the verifier's) is left out of the read-back."""
    m, links, log, _events, _journal = _manager(tmp_path)
    await m.apply(KNOB, "2", resolve_targets(PAIRS[:2], KNOB))
    links["a-rcv"].values["net.x"] = "7"
    log.clear()
    assert await read_back(m, ["a-snd", "b-snd", "b-rcv"]) == []
    assert "a-rcv" not in {h for h, _c in log} and m.foreign == {}


async def test_a_setting_that_cannot_be_read_is_skipped_not_called_changed(tmp_path):
    m, links, _log, _events, _journal = _manager(tmp_path)
    await m.apply(KNOB, "2", resolve_targets(PAIRS[:2], KNOB))
    del links["b-snd"].values["net.x"]  # cannot be read now
    assert await read_back(m, HOSTS) == [] and m.foreign == {}


async def test_a_hosts_own_value_changed_before_any_flip_is_drift_and_never_overwritten(
        tmp_path):
    """Read at connect (the first phase is labelled with it) and never written: a colleague's
    change before abtui's first flip is found as the host's own is, with the connect-time
    value as the expected one, and the flip after it writes nothing."""
    m, links, log, _events, _journal = _manager(tmp_path)
    both = {"sender": "1", "receiver": "1"}
    assert await m.current(KNOB, PAIRS) == {"A": both, "B": both}
    assert await read_back(m, HOSTS) == []
    links["a-rcv"].values["net.x"] = "7"
    (found,) = await read_back(m, HOSTS)
    assert (found.host, found.knob, found.expected, found.found) == ("a-rcv", "x", "1", "7")
    log.clear()
    with pytest.raises(KnobRefused, match="set to '7' by someone else"):
        await m.apply(KNOB, "2", resolve_targets(PAIRS, KNOB))
    assert not [c for _h, c in log if not c.startswith("read ")]  # nothing written
    assert links["a-rcv"].values["net.x"] == "7" and links["b-rcv"].values["net.x"] == "1"


async def test_a_change_between_the_connect_read_and_the_first_flip_refuses_the_flip(tmp_path):
    """No read back in between: the flip's own read of the original finds another value
    than the one read at connect, and writes nothing on any host."""
    m, links, log, _events, _journal = _manager(tmp_path)
    await m.current(KNOB, PAIRS)
    links["b-rcv"].values["net.x"] = "7"
    log.clear()
    with pytest.raises(KnobRefused, match=r"b-rcv: knob x='2' refused: .*set to '7'"):
        await m.apply(KNOB, "2", resolve_targets(PAIRS, KNOB))
    assert all(c.startswith("read ") for _h, c in log)
    assert [(host, found) for (host, _s), found in m.foreign.items()] == [("b-rcv", "7")]


class _BashLink(FakeLink):
    """A host whose commands a real bash runs (its settings printed by the dialect's reads):
    the one round trip of a host's reads, as its control shell would run it."""

    async def run(self, command: str, timeout: float = 10.0, isolate: bool = True,
                  again: bool = False) -> CommandResult:
        self.log.append((self.alias, command))
        if not command.startswith("{"):
            return await super().run(command, timeout, isolate, again)
        done = subprocess.run(["bash", "-c", command], capture_output=True, text=True,
                              timeout=timeout, check=False)
        return CommandResult(done.returncode, done.stdout, done.stderr)


class _PrintingDialect(FakeDialect):
    """Reads that print a value from the link's dict, in two lines as `sysctl` may (the
    value last), fail with a message on stderr, or print nothing."""

    def __init__(self, link: FakeLink) -> None:
        self.link = link

    def read_command(self, s):  # type: ignore[no-untyped-def]
        value = self.link.values.get(s.key)
        if value is None:
            return f"echo {shlex.quote('no ' + s.key)} >&2; return 3"
        return f"echo header; printf '%s\\n' {shlex.quote(value)}" if value else ":"

    def parse_value(self, s, out):  # type: ignore[no-untyped-def]
        lines = out.splitlines()
        return lines[-1].strip() if lines else None


async def test_a_hosts_settings_are_read_back_in_one_round_trip(tmp_path):
    """Three settings on a host: one command for the three (not three round trips); each
    value taken from its own read, a read that fails or prints nothing skipped, the others
    still compared."""
    log: list[tuple[str, str]] = []
    link = _BashLink("h", log)
    m = KnobManager({"h": link}, {"h": _PrintingDialect(link)}, journal=UndoJournal(tmp_path))
    keys = ["net.a", "net.b", "net.c", "net.d"]
    link.values = dict.fromkeys(keys, "4096 16384 4194304")
    for key in keys:
        m.seen[("h", Setting(KnobKind.SYSCTL, key))] = ("4096 16384 4194304", key)
    log.clear()
    assert await read_back(m, ["h"]) == []
    assert len(log) == 1  # one round trip for the four
    link.values.update({"net.a": "1 2 3", "net.c": ""})  # changed; prints nothing
    del link.values["net.b"]  # cannot be read now
    (changed,) = await read_back(m, ["h"])
    assert (changed.setting.key, changed.expected, changed.found) == \
        ("net.a", "4096 16384 4194304", "1 2 3")
    assert len(log) == 2 and set(m.foreign) == {("h", Setting(KnobKind.SYSCTL, "net.a"))}


def test_a_reads_answer_cut_short_is_none_of_them():
    out = f"1\n\n{READ_END} 0\n2\n\n{READ_END} 1\n"
    assert split_reads(out, 2) == ["1\n", None]
    assert split_reads(out, 3) == [None, None, None]  # an end line missing: trust none


async def test_the_hosts_reads_are_sent_to_leave_together(tmp_path, monkeypatch):
    """A read-back (before every flip of the console's) sends each host's reads inside one
    release expecting every host's (abtui.remote.cork.together)."""
    m, _links, _log, _events, _journal = _manager(tmp_path)
    await m.apply(KNOB, "2", resolve_targets(PAIRS[:2], KNOB))
    seen = []
    run = FakeLink.run

    async def watched(self, command, *args, **kw):
        held = release()
        seen.append(None if held is None else held.expected)
        return await run(self, command, *args, **kw)

    monkeypatch.setattr(FakeLink, "run", watched)
    assert await read_back(m, HOSTS) == []
    assert seen == [4] * 4 and release() is None
