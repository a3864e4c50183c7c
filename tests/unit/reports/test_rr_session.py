"""A session with a request/response load (sockperf): the report's table, the JSON export and
the latency gate read its round trips: from the recorded lab session
(tests/fixtures/sessions/rr) and from synthetic ones with a known slowdown."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import numpy as np
import pytest

from abtui.core.events import (
    Event,
    Phase,
    RequestResponse,
    RunEnd,
    RunStart,
    SessionEnd,
    SessionStart,
)
from abtui.parse.sockperf import bins
from abtui.reports import compare, exports, latency, report
from abtui.sessions.reader import iter_events
from abtui.sessions.session import Session
from tests import synth

RR = Path(__file__).resolve().parents[2] / "fixtures" / "sessions" / "rr.abtui.jsonl.gz"
CONFIGS = [{"cc": "reno"}, {"cc": "bbr"}]


def test_the_recorded_session_reads_back_its_round_trips() -> None:
    s = Session.load(str(RR))
    assert set(s.rr) == {"A", "B"}
    for pair in s.pairs:
        lat = latency.rr_latency(s, pair)
        # every interval's count is in the bins it recorded
        recorded = sum(ev.payload.n for ev in iter_events(RR)
                       if ev.kind == "rr" and ev.pair == pair)
        assert lat.n == recorded > 400
        assert lat.min <= lat.percentiles["p50"] <= lat.percentiles["p90"] <= lat.max
    text = report.markdown(s, chart=False)
    section = text[text.index("## Request/response latency (sockperf ping-pong"):]
    rows = [line for line in section.split("\n## ")[0].splitlines() if line.startswith("| tcp")]
    assert len(rows) == 4 and "round trips" in section
    assert "sockperf ping-pong --mps 300 --tcp (alongside)" in text  # what ran, in the runs
    doc = json.loads(exports.dumps(exports.to_json(s)))
    conf = doc["configurations"][0]
    assert conf["rr_latency"]["replies"] > 100 and conf["rr_latency"]["percentiles_ms"]["p90"]


def _plan(rtt_ms: list[float], seed: int, runs: int = 6) -> Iterator[Event]:
    """Pair A: per configuration, `runs` runs of 5 RR intervals of 400 round trips each
    around rtt_ms[k] (lognormal, 20 % spread)."""
    rng = np.random.default_rng(seed)
    t = synth.T0
    yield Event.of(SessionStart.from_data({"profile_text": synth.PROFILE}), t)
    run = 0
    for k, config in enumerate(CONFIGS):
        for _ in range(runs):
            run += 1
            yield Event.of(RunStart.from_data({"run": run, "config": dict(config),
                                               "skew_ms": 0.1}), t, pair="A")
            for s in range(5):
                t += 1
                yield synth._interval(t, "A", run, run, s + 1, 1e9)
                values = [float(v) for v in rtt_ms[k] * rng.lognormal(0, 0.2, 400)]
                lat = latency.of_values(values)
                yield Event.of(RequestResponse(
                    run=run, phase=run, start=float(s), end=s + 1.0, n=lat.n, avg_ms=lat.avg,
                    p50_ms=lat.percentiles["p50"], p90_ms=lat.percentiles["p90"],
                    p99_ms=lat.percentiles["p99"], p999_ms=None, max_ms=lat.max,
                    bins=bins(values)), t, pair="A")
            yield Event.of(Phase(phase=run, config=dict(config), start=t - 5, end=t), t,
                           pair="A")
            yield Event.of(RunEnd(run=run, status="ok", message="", summary=None, ping=None),
                           t, pair="A")
            t += 2
    yield Event.of(SessionEnd(reason="plan done"), t)


def _session(rtt_ms: list[float], seed: int) -> Session:
    return Session.from_events(list(_plan(rtt_ms, seed)), name=f"s{seed}")


def test_the_gate_judges_sockperf_round_trips_where_both_sides_have_them() -> None:
    left, same, slower = (_session([0.05, 0.08], 4), _session([0.05, 0.08], 5),
                          _session([0.05, 0.12], 6))
    cases = [c for c in compare.gate(left, slower, 5, latency="p99") if
             latency.stat_of(c.metric)]
    by = {c.config: c for c in cases}
    bbr = next(c for k, c in by.items() if "bbr" in k)
    reno = next(c for k, c in by.items() if "reno" in k)
    assert bbr.metric == "latency p99 sockperf" and "RTT of sockperf" in bbr.name
    assert bbr.failed and not reno.failed
    assert not any(c.failed for c in compare.gate(left, same, 5, latency="p99"))
    # a run's p99 of 2 000 round trips: the runs' values sit close, so +50 % is plain
    base = latency.run_values(left, "A", [p.index for p in left.phases_of("A")
                                          if p.config == {"cc": "bbr"}], "p99", "sockperf")
    assert len(base) == 6 and np.std(base) / np.mean(base) < 0.1


def test_a_ping_only_side_is_judged_on_ping() -> None:
    s = _session([0.05, 0.08], 4)
    assert latency.has_rr(s, "A") and not latency.has_rr(Session.from_events([]), None)
    with pytest.raises(ValueError):
        latency.run_values(s, "A", [0], "p42", "sockperf")
