"""Reading back what a session set (abtui.hosts.readback), on fake hosts: a value someone else
changed is found, marked foreign in the knob layer and the undo journal, never written again
by a flip, and left as found by the exit's restore."""

from __future__ import annotations

import pytest

from abtui.core.errors import KnobRefused
from abtui.core.model import Knob, KnobKind, Pair
from abtui.hosts.knobs import KnobManager, resolve_targets
from abtui.hosts.readback import read_back
from abtui.hosts.undo import UndoJournal, read_journal
from abtui.remote.dialect import SWAP_MARK, Dialect
from abtui.remote.link import CommandResult

HOSTS = ["a-snd", "a-rcv", "b-snd", "b-rcv"]
PAIRS = [Pair("A", "a-snd", "a-rcv", "198.19.1.2", "data0", "data0"),
         Pair("B", "b-snd", "b-rcv", "198.19.2.2", "eth1", "eth2")]
KNOB = Knob("x", KnobKind.SYSCTL, ("1", "2"), key="net.x")


class FakeDialect(Dialect):
    name = "linux"

    def read_command(self, s):
        return f"read {s.key}"

    def write_command(self, s, value):
        return f"write {s.key} {value}"

    def swap_command(self, s, value):
        return f"swap {s.key} {value}"

    def parse_value(self, s, out):
        return out.strip() or None


class FakeLink:
    """A host's settings in a dict; a setting not there cannot be read (exit 1)."""

    def __init__(self, alias, log):
        self.alias, self.log = alias, log
        self.values = {"net.x": "1"}
        self.uid, self.ssh_config, self.known_hosts, self.sudo = 0, None, None, False

    async def run(self, command, timeout=10.0, isolate=True, **_kw):
        self.log.append((self.alias, command))
        verb, key, *rest = command.split()
        if key not in self.values:
            return CommandResult(1, "", f"sysctl: cannot stat {key}\n")
        old = self.values[key]
        if verb in ("swap", "write"):
            self.values[key] = rest[0]
        out = f"{old}\n{SWAP_MARK}\n{self.values[key]}\n" if verb == "swap" else \
            f"{self.values[key]}\n"
        return CommandResult(0, out, "")


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
