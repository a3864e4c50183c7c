"""asyncssh's undocumented output hand-off taken away (as a newer asyncssh might rename it):
a run on real lab hosts streams its intervals and pings all the same, the public way (a task
reading each stream's stdout), and ends as it would (abtui.remote.asyncssh_privates)."""

from __future__ import annotations

import pytest

from abtui.core.events import EventKind
from abtui.lab.netns import Lab
from abtui.remote import asyncssh_privates as ap
from tests.lab.engine_kit import lab_profile, run_plan

pytestmark = [pytest.mark.lab, pytest.mark.usefixtures("no_strays")]


async def test_a_run_streams_the_public_way_without_asyncssh_s_private_hand_off(
        lab: Lab, monkeypatch: pytest.MonkeyPatch) -> None:
    ap.reset()
    monkeypatch.setattr(ap, "PRIVATES", tuple((name + "_gone", p) for name, p in ap.PRIVATES))
    try:
        rec, _ = await run_plan(lab_profile(lab, duration=2, ping=True))
    finally:
        monkeypatch.undo()
        why = ap.fallen_back()
        ap.reset()
    assert why is not None and "set_writer_gone" in why
    for pair in ("A", "B"):
        intervals = rec.of(EventKind.INTERVAL, pair)
        assert len(intervals) >= 3, (pair, len(intervals))  # 2 s at 0.5 s
        assert all(e.payload.bits_per_second > 0 for e in intervals)
        assert rec.of(EventKind.PING, pair), pair
    assert [e.payload.status for e in rec.of(EventKind.RUN_END)] == ["ok", "ok"]
