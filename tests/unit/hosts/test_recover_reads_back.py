"""`abtui recover` reads each setting before it writes (abtui.hosts.restore), on fake hosts:
a value the live session found set by someone else, or one that is none of the values the
journal says abtui wrote, is left as it is and said in one line; abtui's own value is set
back; a journal from before abtui recorded its values is set back as it always was."""

from __future__ import annotations

import json

import pytest

from abtui.hosts import restore
from abtui.hosts.undo import pending_recovery, read_journal
from tests.unit.hosts.fake_hosts import FakeDialect, FakeLink

DEAD = 999999990  # no such process: the journal's writer is gone


HOST_VALUES: dict[str, str] = {}
LOG: list[tuple[str, str]] = []


@pytest.fixture
def hosts(monkeypatch):
    HOST_VALUES.clear()
    LOG.clear()
    monkeypatch.setattr(restore, "HostLink",
                        lambda alias, **kw: FakeLink(alias, LOG, values=HOST_VALUES, **kw))

    async def dialect(_link):
        return FakeDialect()

    monkeypatch.setattr(restore, "detect_dialect", dialect)
    return HOST_VALUES


def _writes() -> list[str]:
    return FakeLink("h", LOG).writes()


SETTING = {"host": "h", "kind": "sysctl", "key": "net.x", "device": None}


def _journal(tmp_path, *records):
    lines = [{"op": "start", "pid": DEAD}, {"op": "host", "alias": "h"},
             {"op": "original", **SETTING, "value": "1", "knob": "x"}, *records]
    (tmp_path / "j.jsonl").write_text("".join(json.dumps(r) + "\n" for r in lines))
    return pending_recovery(tmp_path)


async def _recover(pending):
    said: list[tuple[bool, str]] = []
    ok = await restore.recover_all(pending, lambda done, line: said.append((done, line)))
    return ok, said


@pytest.mark.parametrize("records, now, left, why", [
    # the live session found it set by someone else (drift) and wrote nothing after
    ([{"op": "wrote", **SETTING, "value": "2"}, {"op": "foreign", **SETTING, "value": "7"}],
     "7", True, "set by someone else during the session, recorded as drift"),
    # never read back: a value none of abtui's
    ([{"op": "wrote", **SETTING, "value": "2"}, {"op": "wrote", **SETTING, "value": "3"}],
     "7", True, "not a value abtui set ('2', '3'): someone else changed it since"),
    # abtui's own value: set back
    ([{"op": "wrote", **SETTING, "value": "2"}, {"op": "wrote", **SETTING, "value": "3"}],
     "3", False, ""),
    # a journal that does not say what abtui wrote (an older abtui's): set back as before
    ([], "7", False, ""),
])
async def test_recover_leaves_someone_elses_value(tmp_path, hosts, records, now, left, why):
    pending = _journal(tmp_path, *records)
    hosts["net.x"] = now
    ok, said = await _recover(pending)
    assert ok, said
    (line,) = [text for _done, text in said]
    if left:
        assert line == f"h: left net.x = {now!r} as it is: {why} (its original was '1')"
        assert hosts["net.x"] == now and _writes() == []
    else:
        assert line == "h: restored net.x = '1'" and hosts["net.x"] == "1"
    assert not (tmp_path / "j.jsonl").exists()  # nothing left for a next recover


async def test_a_value_back_at_its_original_is_not_written(tmp_path, hosts):
    pending = _journal(tmp_path, {"op": "wrote", **SETTING, "value": "2"})
    hosts["net.x"] = "1"
    ok, said = await _recover(pending)
    assert ok and said == [(True, "h: net.x already is '1'")] and _writes() == []


def test_the_journal_reads_back_what_abtui_wrote_and_found(tmp_path):
    (p,) = _journal(tmp_path, {"op": "wrote", **SETTING, "value": "2"},
                    {"op": "wrote", **SETTING, "value": "2"},
                    {"op": "foreign", **SETTING, "value": "7"})
    ident = ("h", "sysctl", "net.x", None)
    assert (p.written, p.foreign) == ({ident: ["2"]}, {ident: "7"})
    assert read_journal(tmp_path / "j.jsonl").originals == {ident: "1"}
