"""Latency through a session: the report's table with percentiles (seed 002's), the JSON
export's `latency`, and the gate's `--latency` cases (abtui.reports.latency)."""

from __future__ import annotations

import json
from collections.abc import Iterator, Sequence
from pathlib import Path

import numpy as np
import pytest

from abtui.cli import main
from abtui.core.events import Event, Phase, Ping, RunEnd, RunStart, SessionEnd, SessionStart
from abtui.reports import compare, exports, gate, latency, report
from abtui.reports.formatting import fmt_ms
from abtui.sessions.session import Session
from abtui.sessions.writer import SessionWriter
from tests import synth

CONFIGS = [{"cc": "reno"}, {"cc": "bbr"}]


def _plan(rtt_ms: Sequence[float], runs: int = 6, pings: int = 120, seed: int = 3
          ) -> Iterator[Event]:
    """Plan mode on pair A: per configuration k, `runs` runs, each with steady throughput and
    `pings` replies around rtt_ms[k] (lognormal, 10 % spread), one in 60 lost."""
    rng = np.random.default_rng(seed)
    t = synth.T0
    yield Event.of(SessionStart.from_data({"profile_text": synth.PROFILE}), t)
    run = 0
    for k, config in enumerate(CONFIGS):
        for _ in range(runs):
            run += 1
            yield Event.of(RunStart.from_data({"run": run, "config": dict(config),
                                               "skew_ms": 0.1}), t, pair="A")
            for s in range(pings):
                lost = s % 60 == 59
                rtt = None if lost else round(float(rtt_ms[k] * rng.lognormal(0, 0.1)), 4)
                yield Event.of(Ping(run=run, phase=run, seq=s, rtt_ms=rtt), t + s * 0.01,
                               pair="A")
            for s in range(5):
                t += 1
                yield synth._interval(t, "A", run, run, s + 1, 1e9 * (1 + 0.001 * s))
            yield Event.of(Phase(phase=run, config=dict(config), start=t - 5, end=t), t,
                           pair="A")
            yield Event.of(RunEnd(run=run, status="ok", message="", summary=None, ping=None),
                           t, pair="A")
            t += 2
    yield Event.of(SessionEnd(reason="plan done"), t)


def _write(path: Path, events: Iterator[Event]) -> Path:
    with SessionWriter(path, profile="synth") as w:
        for ev in events:
            w.write(ev)
    assert w.final_path is not None
    return w.final_path


@pytest.fixture
def base(tmp_path: Path) -> Path:
    return _write(tmp_path / "base.abtui.jsonl", _plan([0.05, 0.08]))


def test_report_latency_table_has_percentiles(base: Path) -> None:
    s = Session.load(str(base))
    text = report.markdown(s)
    section = text[text.index("## Latency"):]
    header = next(line for line in section.splitlines() if line.startswith("| configuration"))
    assert [h.strip() for h in header.strip("|").split("|")][-5:] == [
        "p50", "p90", "p99", "p99.9", "replies"]
    # 6 runs × 118 replies: p99 from 708 replies, p99.9 not (needs 1000)
    reno = next(line for line in section.splitlines() if "reno" in line and "| A" in line)
    cells = [c.strip() for c in reno.strip("|").split("|")]
    expect = latency.latency(s, "A", phases=[p.index for p in s.phases_of("A")
                                             if p.config == {"cc": "reno"}])
    assert expect.n == 708 and expect.lost == 12
    assert cells[-1] == "708 (12 lost)"
    assert cells[-2] == "—" and cells[-3] != "—"
    assert cells[-3] == fmt_ms(expect.percentiles["p99"])
    assert cells[-5] == fmt_ms(expect.percentiles["p50"])
    assert expect.percentiles["p50"] < expect.percentiles["p90"] < expect.percentiles["p99"]
    assert "nearest-rank" in section


def test_json_export_carries_latency_per_phase_and_configuration(base: Path) -> None:
    s = Session.load(str(base))
    doc = json.loads(exports.dumps(exports.to_json(s)))
    ph = doc["phases"][0]
    lat = ph["summary"]["latency"] if "summary" in ph else ph["latency"]
    assert lat["replies"] == 118 and lat["lost"] == 2
    assert lat["percentiles_ms"]["p90"] is not None and lat["percentiles_ms"]["p99"] is not None
    assert lat["percentiles_ms"]["p99.9"] is None
    confs = {c["config"]: c for c in doc["configurations"]}
    assert len(confs) == 2
    p50 = sorted(c["latency"]["percentiles_ms"]["p50"] for c in confs.values())
    assert p50[0] == pytest.approx(0.05, rel=0.05) and p50[1] == pytest.approx(0.08, rel=0.05)


def test_gate_judges_latency_and_catches_a_slower_rtt(tmp_path: Path) -> None:
    left = Session.load(str(_write(tmp_path / "l.abtui.jsonl", _plan([0.05, 0.08], seed=4))))
    same = Session.load(str(_write(tmp_path / "s.abtui.jsonl", _plan([0.05, 0.08], seed=5))))
    slower = Session.load(str(_write(tmp_path / "w.abtui.jsonl",
                                     _plan([0.05, 0.12], seed=6))))
    cases = [c for c in compare.gate(left, slower, 5, latency="p99") if
             latency.stat_of(c.metric)]
    assert len(cases) == 2
    by = {c.config: c for c in cases}
    bbr = next(c for k, c in by.items() if "bbr" in k)
    reno = next(c for k, c in by.items() if "reno" in k)
    assert bbr.failed and "the RTT +" in bbr.line() and "latency p99 RTT" in bbr.name
    assert not reno.failed
    assert gate.rtt_change(bbr.delta.pct) == pytest.approx(50, abs=10)
    # the throughput cases are judged alongside, in one control
    assert len(compare.gate(left, slower, 5, latency="p99")) == 4
    assert not any(c.failed for c in compare.gate(left, same, 5, latency="p99"))
    # p99.9 needs 1000 replies a run: every run left out, too few runs to test
    few = [c for c in compare.gate(left, slower, 5, latency="p99.9") if
           latency.stat_of(c.metric)]
    assert few and all(c.answer == gate.UNTESTED for c in few)


def test_cli_latency_gate_exit_codes(tmp_path: Path, capsys: pytest.CaptureFixture[str]
                                     ) -> None:
    left = _write(tmp_path / "l.abtui.jsonl", _plan([0.05, 0.08], seed=4))
    slower = _write(tmp_path / "w.abtui.jsonl", _plan([0.05, 0.12], seed=6))
    assert main(["compare", str(left), str(slower), "--fail-on-regression", "5%",
                 "--latency", "avg"]) == 1
    err = capsys.readouterr().err
    assert "latency avg RTT" in err and "regression" in err
    assert main(["compare", str(left), str(slower), "--latency", "p99"]) == 2
    assert "--fail-on-regression" in capsys.readouterr().err


def test_gate_command_judges_latency(tmp_path: Path, capsys: pytest.CaptureFixture[str]
                                     ) -> None:
    from abtui.commands.gate import LATENCY_STATS

    assert LATENCY_STATS == latency.STATS
    left = _write(tmp_path / "l.abtui.jsonl", _plan([0.05, 0.08], seed=4))
    slower = _write(tmp_path / "w.abtui.jsonl", _plan([0.05, 0.12], seed=6))
    assert main(["gate", str(left), str(slower), "--latency", "p50"]) == 1
    out = capsys.readouterr().out
    assert "(latency p50 RTT, judged on 1/RTT)" in out and "regression" in out
