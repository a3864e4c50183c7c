"""KnobManager's all-or-nothing logic and targets, with fake hosts (the lab tests use real
ones): originals journalled before the first change, a refusal sets the others back."""

from __future__ import annotations

import os

import pytest

from abtui.core.errors import BadInput, KnobRefused, WriteFailed
from abtui.core.events import EventKind
from abtui.core.model import Knob, KnobKind, Pair, Scope
from abtui.hosts import undo
from abtui.hosts.knobs import KnobManager, resolve_targets
from abtui.hosts.undo import UndoJournal, read_journal
from abtui.profile.knobs import iperf3_setting
from abtui.remote.cork import release
from tests.unit.filelimit import file_size_limit
from tests.unit.hosts.fake_hosts import FakeDialect, FakeLink

PAIRS = [Pair("A", "a-snd", "a-rcv", "198.19.1.2", "data0", "data0"),
         Pair("B", "b-snd", "b-rcv", "198.19.2.2", "eth1", "eth2"),
         Pair("C", "a-snd", "c-rcv", "198.19.3.2", "data0", "data0")]


def _manager(tmp_path, refuse=()):
    log, events = [], []
    hosts = ["a-snd", "a-rcv", "b-snd", "b-rcv"]
    links = {h: FakeLink(h, log, h in refuse) for h in hosts}
    journal = UndoJournal(tmp_path)
    m = KnobManager(links, {h: FakeDialect() for h in hosts}, journal=journal,
                    emit=events.append)
    return m, links, log, events, journal


KNOB = Knob("x", KnobKind.SYSCTL, ("1", "2"), key="net.x")


async def test_flip_on_all_hosts_records_originals_first(tmp_path):
    m, links, log, events, journal = _manager(tmp_path)
    targets = resolve_targets(PAIRS[:2], KNOB)
    result = await m.apply(KNOB, "2", targets)
    assert result.values == dict.fromkeys(links, "2")
    assert all(link.values["net.x"] == "2" for link in links.values())
    first_write = next(i for i, (_h, c) in enumerate(log) if c.startswith("swap"))
    assert all(c.startswith("read") for _h, c in log[:first_write])
    log.clear()
    await m.apply(KNOB, "1", targets)
    assert [c.split()[0] for _h, c in log] == ["swap"] * 4  # one round trip per host
    assert [e.kind for e in events] == [EventKind.ORIGINAL] * 4
    assert read_journal(journal.path).originals[("a-snd", "sysctl", "net.x", None)] == "1"
    assert len(events) == 4  # originals only once
    restored = await m.restore_all()
    assert all(r.ok for r in restored) and read_journal(journal.path).empty


async def test_restore_sets_back_only_what_it_wrote_and_says_what_it_left(tmp_path):
    """Read back first: a host whose value is no longer the one abtui wrote (someone set it
    since) is left as it is, said in its RESTORE event and noted in the journal (nothing for
    `abtui recover`), and not a failure; one already back at its original is not written;
    the others are set back."""
    m, links, log, events, journal = _manager(tmp_path)
    await m.apply(KNOB, "2", resolve_targets(PAIRS[:2], KNOB))
    links["a-snd"].values["net.x"] = "7"  # another hand, since
    links["a-rcv"].values["net.x"] = "1"  # set back to its original by hand
    del log[:]
    restored = {r.host: r for r in await m.restore_all()}
    assert {h: links[h].values["net.x"] for h in links} == \
        {"a-snd": "7", "a-rcv": "1", "b-snd": "1", "b-rcv": "1"}
    assert restored["a-snd"].left == "7" and not restored["a-snd"].ok
    assert restored["a-snd"].message == ("left as it is: reads '7', not the '2' abtui set "
                                         "(set by someone else since)")
    assert [h for h, r in restored.items() if r.ok] == ["a-rcv", "b-snd", "b-rcv"]
    assert ("a-rcv", "write net.x 1") not in log and ("b-snd", "write net.x 1") in log
    said = [e for e in events if e.kind is EventKind.RESTORE and e.host == "a-snd"]
    assert [(e.payload.ok, e.payload.left) for e in said] == [(False, "7")]
    assert read_journal(journal.path).empty  # left to its new owner: nothing to recover
    assert '"left":"7"' in journal.path.read_text()
    assert m.originals == {}


async def test_a_first_flip_on_four_hosts_is_one_fsync_and_on_disk_before_any_write(
        tmp_path, monkeypatch):
    """The originals of a flip's first touch of a setting (and how to reach each host) reach
    the disk in one fsync for the 4 hosts, not one per record (8), before the first write is
    sent, with the value each host gets (`wrote`); a flip to a value not written before costs
    one more (its `wrote` records, so `abtui recover` can tell abtui's values from someone
    else's), and later flips, with nothing to record, cost none."""
    m, _links, log, _events, journal = _manager(tmp_path)
    fsyncs = []
    real_fsync = os.fsync
    monkeypatch.setattr(undo.os, "fsync", lambda fd: (fsyncs.append(fd), real_fsync(fd)))
    on_disk_at_first_swap = []
    run = FakeLink.run

    async def watching(self, command, timeout=10.0, isolate=True, again=False):
        if command.startswith("swap") and not on_disk_at_first_swap:
            on_disk_at_first_swap.append((len(fsyncs),
                                          len(read_journal(journal.path).originals)))
        return await run(self, command, timeout, isolate, again)

    monkeypatch.setattr(FakeLink, "run", watching)
    targets = resolve_targets(PAIRS[:2], KNOB)
    await m.apply(KNOB, "2", targets)
    assert on_disk_at_first_swap == [(1, 4)]
    assert len(fsyncs) == 1
    await m.apply(KNOB, "1", targets)
    assert len(fsyncs) == 2
    for value in ("2", "1", "2"):
        await m.apply(KNOB, value, targets)
    assert len(fsyncs) == 2
    assert [c.split()[0] for _h, c in log] == ["read"] * 4 + ["swap"] * 20
    assert set(map(tuple, read_journal(journal.path).written.values())) == {("2", "1")}


async def test_one_refusal_sets_the_others_back(tmp_path):
    m, links, _log, _events, _j = _manager(tmp_path, refuse={"b-rcv"})
    with pytest.raises(KnobRefused, match=r"^b-rcv: knob x='2' refused: net.x: invalid value.*"
                                          r"set back on 3 other host"):
        await m.apply(KNOB, "2", resolve_targets(PAIRS[:2], KNOB))
    assert all(link.values["net.x"] == "1" for link in links.values())


async def test_a_refusal_before_any_change_leaves_nothing_to_restore(tmp_path):
    """A read-only setting (net.core.rmem_max in a namespace) refused on every host: the
    originals recorded before the write are forgotten, so the exit restores nothing, says no
    "could not restore", and the undo journal holds nothing for `abtui recover`."""
    m, _links, _log, _events, journal = _manager(tmp_path, refuse={"a-rcv", "b-rcv"})
    rcv = Knob("x", KnobKind.SYSCTL, ("1", "2"), key="net.x", scope=Scope.RECEIVER)
    with pytest.raises(KnobRefused, match="nothing was changed"):
        await m.apply(rcv, "2", resolve_targets(PAIRS[:2], rcv))
    assert m.originals == {}
    assert await m.restore_all() == []
    assert read_journal(journal.path).empty


async def test_a_refusal_keeps_only_what_was_not_set_back(tmp_path):
    """One host refuses and another cannot be set back: that one's original stays (and is
    restored later); the hosts set back hold their originals and are forgotten."""
    m, links, _log, _events, journal = _manager(tmp_path, refuse={"b-rcv"})
    links["a-snd"].refuse_back = True
    with pytest.raises(KnobRefused, match="could NOT set back a-snd"):
        await m.apply(KNOB, "2", resolve_targets(PAIRS[:2], KNOB))
    assert list(m.originals) == [("a-snd", m.setting(KNOB, resolve_targets(PAIRS, KNOB)[0]))]
    assert read_journal(journal.path).originals == {("a-snd", "sysctl", "net.x", None): "1"}
    links["a-snd"].refuse_back = False
    assert [(r.host, r.ok) for r in await m.restore_all()] == [("a-snd", True)]
    assert read_journal(journal.path).empty


async def test_invalid_value_is_refused_before_anything_runs(tmp_path):
    m, _links, log, _e, _j = _manager(tmp_path)
    with pytest.raises(KnobRefused, match="invalid value") as refused:
        await m.apply(KNOB, "a\nb", resolve_targets(PAIRS[:2], KNOB))
    assert log == []
    assert refused.value.exit_code == 2  # abtui's own refusal: bad input (`run --set`)


def test_targets_follow_scope_pairs_and_devices():
    snd = Knob("t", KnobKind.ETHTOOL_FEATURE, ("on", "off"), key="tso", scope=Scope.SENDER)
    assert [(t.host, t.device) for t in resolve_targets(PAIRS, snd)] == \
        [("a-snd", "data0"), ("b-snd", "eth1")]  # a-snd shared by A and C: once
    rcv = Knob("t", KnobKind.MTU, ("1500",), scope=Scope.RECEIVER, pairs=("B",))
    assert [(t.host, t.device) for t in resolve_targets(PAIRS, rcv)] == [("b-rcv", "eth2")]
    assert [t.host for t in resolve_targets(PAIRS, rcv, ["A", "C"])] == ["a-rcv", "c-rcv"]
    with pytest.raises(BadInput, match="no pair 'Z'"):
        resolve_targets(PAIRS, rcv, ["Z"])


def test_iperf3_knobs_name_a_test_option_as_the_loader_does():
    """One rule for loader, check and engine: the key names a TestOptions field."""
    par = Knob("streams", KnobKind.IPERF3, ("1", "4"), key="parallel")
    assert iperf3_setting(par, "4") == ("parallel", 4)
    rev = Knob("R", KnobKind.IPERF3, ("on", "off"), key="reverse")
    assert iperf3_setting(rev, "on") == ("reverse", True)
    assert iperf3_setting(rev, "off") == ("reverse", False)
    with pytest.raises(BadInput, match="not an iperf3 option"):
        iperf3_setting(Knob("bad", KnobKind.IPERF3, (), key="-P"), "1")
    with pytest.raises(BadInput, match="not a valid parallel"):
        iperf3_setting(par, "; rm")


class AnyDialect(FakeDialect):
    """Takes every setting as it is: the OS-specific checks are the dialects' own tests."""

    def check_setting(self, s):
        return s

    def normalize(self, s, value):
        return value


class FreeBSDDialect(AnyDialect):
    name = "freebsd"


async def test_each_host_gets_its_os_kind_key_and_value(tmp_path):
    """[knobs.os.linux]: the Linux host writes the translated value under its own key and
    device (an ethtool setting), the FreeBSD host the sysctl as given."""
    log: list[tuple[str, str]] = []
    links = {h: FakeLink(h, log) for h in ("a-snd", "b-snd")}
    links["a-snd"].values = {"dev.ix.2.enable_aim": "1"}
    links["b-snd"].values = {"adaptive-rx": "on"}
    m = KnobManager(links, {"a-snd": FreeBSDDialect(), "b-snd": AnyDialect()})
    aim = Knob("enable_aim", KnobKind.SYSCTL, ("0", "1", "2"), key="dev.ix.2.enable_aim",
               scope=Scope.SENDER, os_kinds={"linux": KnobKind.ETHTOOL_COALESCE},
               os_keys={"linux": "adaptive-rx"},
               os_values={"linux": {"0": "off", "1": "on", "2": "on"}})
    targets = resolve_targets(PAIRS[:2], aim)
    assert [(t.host, t.device) for t in targets] == [("a-snd", "data0"), ("b-snd", "eth1")]
    assert m.setting(aim, targets[0]).device is None  # a sysctl on FreeBSD: no device
    assert m.setting(aim, targets[1]).kind is KnobKind.ETHTOOL_COALESCE
    await m.apply(aim, "0", targets)
    assert links["a-snd"].values == {"dev.ix.2.enable_aim": "0"}
    assert links["b-snd"].values == {"adaptive-rx": "off"}


async def test_an_undo_journal_that_cannot_be_written_stops_the_change_before_it_is_made(
        tmp_path):
    """The originals cannot reach the disk (a real write error: a file size limit): the flip
    is refused in one line naming the journal, no host is written to, and no later flip is
    made either (the journal holds nothing for them), even once there is room again."""
    m, links, log, _events, journal = _manager(tmp_path)
    targets = resolve_targets(PAIRS[:2], KNOB)
    with file_size_limit(journal.path.stat().st_size + 10), \
            pytest.raises(WriteFailed, match=f"^{journal.path}: cannot write the undo journal "
                                             r"\(File too large\); nothing more is changed"):
        await m.apply(KNOB, "2", targets)
    with pytest.raises(WriteFailed):
        await m.apply(KNOB, "2", targets)
    assert not [c for _h, c in log if not c.startswith("read")]
    assert all(link.values["net.x"] == "1" for link in links.values())


async def test_a_flips_commands_are_sent_to_leave_together(tmp_path, monkeypatch):
    """The originals' reads go as they are; the swaps of one flip are written inside one
    release expecting every host's (abtui.remote.cork.together), none outside it."""
    m, _links, _log, _events, _journal = _manager(tmp_path)
    seen = []
    run = FakeLink.run

    async def watched(self, command, *args, **kw):
        held = release()
        seen.append((command.split()[0], None if held is None else held.expected))
        return await run(self, command, *args, **kw)

    monkeypatch.setattr(FakeLink, "run", watched)
    targets = resolve_targets(PAIRS[:2], KNOB)
    await m.apply(KNOB, "2", targets)
    await m.apply(KNOB, "1", targets)
    assert seen == [("read", None)] * 4 + [("swap", 4)] * 8
    assert release() is None


async def test_a_flip_works_its_hosts_out_again_for_another_knob_or_dialect(tmp_path):
    """What a flip worked out once (settings, values as each OS writes them) is kept, but
    not past a knob read again from the profile or a host whose dialect was made again."""
    m, links, _log, _events, _journal = _manager(tmp_path)
    targets = resolve_targets(PAIRS[:2], KNOB)
    for value in ("2", "1", "2"):
        await m.apply(KNOB, value, targets)

    class Padded(FakeDialect):
        def normalize(self, s, value):  # type: ignore[no-untyped-def]
            return value + "0"

    m.dialects["a-snd"] = Padded()
    await m.apply(KNOB, "1", targets)
    assert {h: link.values["net.x"] for h, link in links.items()} == \
        {"a-snd": "10", "a-rcv": "1", "b-snd": "1", "b-rcv": "1"}
    again = Knob("x", KnobKind.SYSCTL, ("1", "2"), key="net.x", os_values={"linux": {"2": "5"}})
    await m.apply(again, "2", targets)
    assert {h: link.values["net.x"] for h, link in links.items()} == \
        {"a-snd": "50", "a-rcv": "5", "b-snd": "5", "b-rcv": "5"}
