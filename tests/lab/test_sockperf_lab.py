"""A request/response load on the lab: real sockperf in the namespaces, beside iperf3.

sockperf's server on each pair's receiver, its client on the sender, released with iperf3 and
interrupted when iperf3 ends; its round trips come back as RR events per interval and phase,
their count and median checked against sockperf's own summary (RUN_END's `rr`, what sockperf
printed), and nothing of it left on the hosts.
"""

from __future__ import annotations

import shutil

import pytest

from abtui.core.events import EventKind
from abtui.lab.netns import Lab
from abtui.reports import latency
from abtui.reports.report import markdown
from abtui.sessions.session import Session
from tests.lab.engine_kit import lab_profile, run_plan, stray_pids

pytestmark = [pytest.mark.lab, pytest.mark.usefixtures("no_strays"),
              pytest.mark.skipif(shutil.which("sockperf") is None,
                                 reason="sockperf is not installed (Debian package sockperf)")]


@pytest.mark.parametrize("mode", ["ping-pong", "under-load"])
async def test_sockperf_beside_iperf3_gives_percentiles_per_interval(lab: Lab, mode: str
                                                                     ) -> None:
    profile = lab_profile(lab, duration=6, interval=1.0, sockperf=mode, sockperf_mps=400)
    rec, _ = await run_plan(profile)
    session = Session.from_events(rec.events, name="rr")
    for start in rec.of(EventKind.RUN_START):
        pair, run = start.pair, start.payload.run
        end = rec.run_end(run)
        assert end["status"] == "ok", end
        own = end["rr"]  # sockperf's own summary, as it printed it
        assert own is not None and own["observations"] > 200, own
        rr = [e.payload for e in rec.of(EventKind.RR, pair) if e.payload.run == run]
        assert rr, f"{pair}: no RR event"
        # every observation sockperf counted is in an interval (none retired in a plan run)
        assert sum(p.n for p in rr) == own["observations"]
        assert all(0 <= p.start < p.end <= profile.test.duration + 35 for p in rr)
        for p in rr:
            assert p.p50_ms is not None and 0 < p.p50_ms <= p.max_ms
            assert sum(c for _, c in p.bins) == p.n
        # the phase's median from the journal's bins, against sockperf's own (3 digits kept)
        phases = sorted({ph.index for ph in session.phases if ph.pair == pair})
        ours = latency.rr_latency(session, pair, phases=phases)
        assert ours.n == own["observations"]
        theirs = own["percentiles_ms"]["p50"]
        assert ours.percentiles["p50"] == pytest.approx(theirs, rel=0.02, abs=0.002)
    report = markdown(session, chart=False)
    assert "Request/response latency (sockperf" in report
    assert not stray_pids(lab, ("sockperf",))
