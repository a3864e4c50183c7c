"""Statistics, the Markdown/CSV/JSON exports, compare, import, and the CLI around them."""

from __future__ import annotations

import csv
import dataclasses
import io
import json
from pathlib import Path

import numpy as np
import pytest

from abtui.cli import main
from abtui.core.errors import BadInput
from abtui.reports import compare, exports, report, stats
from abtui.sessions import importing
from abtui.sessions.session import Session
from abtui.sessions.writer import SessionWriter
from tests import synth

WMEM = [{"wmem": "default"}, {"wmem": "64k"}, {"wmem": "default"}]
RATES = {"A": [10e9, 5e9, 10e9], "B": [11e9, 5.5e9, 11e9]}


def _write(path: Path, events) -> Path:  # type: ignore[no-untyped-def]
    with SessionWriter(path, profile="synth") as w:
        for ev in events:
            w.write(ev)
    assert w.final_path is not None
    return w.final_path


@pytest.fixture
def continuous(tmp_path: Path) -> Path:
    return _write(tmp_path / "cont.abtui.jsonl",
                  synth.continuous(WMEM, RATES, seconds=10, ping_interval=0.5))


# ---- statistics ----------------------------------------------------------------------------

def test_verdicts_match_hand_computed_cases() -> None:
    from scipy.stats import t

    same = stats.verdict([5.0] * 5, [5.0] * 5)
    assert same.text == "~ (p=1.00 n=5+5)" and not same.significant
    # 5+5, means 3 and 8, variance 2.5 each: Welch's t on ln(8/3), delta method
    apart = stats.verdict([1, 2, 3, 4, 5], [6, 7, 8, 9, 10])
    va, vb = 2.5 / (5 * 9), 2.5 / (5 * 64)
    df = (va + vb) ** 2 / (va**2 / 4 + vb**2 / 4)
    assert apart.p == pytest.approx(2 * t.sf(np.log(8 / 3) / (va + vb) ** 0.5, df))
    assert apart.significant and apart.text == "+166.7% (p=0.011 n=5+5)"
    overlap = stats.verdict([1, 2, 3, 4, 5], [1.5, 2.5, 3.5, 4.5, 5.5])
    assert overlap.text == "~ (p=0.63 n=5+5)"
    assert stats.verdict([1.0], [2.0]).text == "? (n=1+1: too few runs)"
    assert stats.verdict([1.0, 2.0], [3.0]).text == "? (n=2+1: too few runs)"
    assert stats.verdict([1, 2, 3], [4, 5, 6]).text == "~ (p=0.071 n=3+3)"  # judged from 2+2
    assert stats.verdict([1, 2, 3], [4, 5, 6, 7, 8]).significant


def test_summary_delta_and_noise() -> None:
    s = stats.summarize([1.0, 2.0, 3.0, 4.0, float("nan")])
    assert (s.n, s.mean, s.median, s.min, s.max) == (4, 2.5, 2.5, 1.0, 4.0)
    assert s.stdev == pytest.approx(1.2909944)
    assert s.noisy and not stats.summarize([100, 101, 99]).noisy
    d = stats.delta([10, 10.2, 9.8], [11, 11.2, 10.8])
    assert d is not None and d.pct == pytest.approx(10.0)
    assert d.low is not None and d.high is not None and d.low < 10 < d.high  # see test_one_figure
    assert stats.delta([], [1.0]) is None and stats.delta([1.0], [2.0]).low is None


def test_phases_exclude_straddling_intervals(continuous: Path) -> None:
    s = Session.load(continuous)
    assert [p.label for p in s.phases_of("A")] == ["wmem=default", "wmem=64k", "wmem=default"]
    a = stats.phase_stats(s, s.phases_of("A")[1])["throughput"]
    assert a.n == 10 and a.min > 4.9e9 and a.max < 5.1e9  # the half-rate straddlers are out
    assert len(s.intervals["A"]) == 32  # 30 in phases + 2 straddling
    cell = stats.cells(s)["wmem=default"]["A"]
    assert len(cell.samples) == 2 and cell.throughput.n == 2 and cell.intervals.n == 20
    assert stats.cells(s)["wmem=64k"]["B"].rtt.n == 20


# ---- exports -------------------------------------------------------------------------------

def test_markdown_reads_like_a_review_table(continuous: Path) -> None:
    md = report.markdown(Session.load(continuous))
    assert "| configuration | A (Gbit/s) | B (Gbit/s) | Δ B vs A |" in md
    row = next(line for line in md.splitlines() if line.startswith("| wmem=64k | 5.00"))
    assert row.endswith("| 5.49 | +10.0% ? (n=1+1: too few runs) |")  # one run: no interval
    assert "| A | sender | lab-a-snd | Linux | 6.1.0 | veth |" in md
    assert "| wmem=64k | A | 0.04" in md  # latency table
    assert "## Δ vs configuration `wmem=default`" in md and "-50." in md
    assert "```text" in md and "phase boundaries" in md
    # the command line that ran (continuous: hour-long runs, restarted), not option names
    assert ("| A | tx | `iperf3 -c 198.18.1.2 -p 5201 -t 3600 -i 1 --forceflush -V` "
            "(rebuilt from the recorded options) |") in md


def test_csv_has_one_row_per_interval(continuous: Path) -> None:
    buf = io.StringIO()
    n = exports.write_csv(Session.load(continuous), buf)
    rows = list(csv.DictReader(io.StringIO(buf.getvalue())))
    assert n == len(rows) == 64
    assert set(rows[0]) >= {"session", "pair", "phase", "configuration", "start", "end",
                            "bits_per_second", "retransmits", "cwnd_bytes", "rtt_ms"}
    straddlers = [r for r in rows if r["straddles"] == "True"]
    assert len(straddlers) == 4 and all(r["configuration"] == "" for r in straddlers)
    first = rows[0]
    assert (first["pair"], first["configuration"], first["retransmits"]) == (
        "A", "wmem=default", "2")
    assert 0.04 < float(first["rtt_ms"]) < 0.07


def test_json_has_design_fields_and_the_whole_session(continuous: Path) -> None:
    doc = json.loads(json.dumps(exports.to_json(Session.load(continuous)), allow_nan=False))
    assert doc["pairs"] == ["A", "B"]
    ph = doc["phases"][2]
    assert ph["pair"] == "A" and ph["config"] == {"wmem": "64k"} and len(ph["intervals"]) == 10
    assert ph["summary"]["sender_bits_per_second"] == pytest.approx(5e9, rel=0.01)
    assert len(doc["straddling_intervals"]) == 4 and doc["marks"][0]["text"] == "done"
    assert doc["hosts"]["lab-b-snd"]["kernel_release"] == "6.1.1"
    assert doc["knob_changes"][0]["value"] == "64k" and doc["session"]["profile"] == "synth"


# ---- compare -------------------------------------------------------------------------------

def _plan(tmp: Path, name: str, configs, a_rates) -> Path:  # type: ignore[no-untyped-def]
    b_rates = [[1e9] * len(r) for r in a_rates]
    return _write(tmp / f"{name}.abtui.jsonl", synth.plan(configs, {"A": a_rates, "B": b_rates}))


def test_compare_matches_configurations_and_lists_one_sided(tmp_path: Path) -> None:
    left = Session.load(_plan(tmp_path, "left", [{"cc": "reno"}, {"cc": "bbr"}],
                              [[1.00e9, 1.01e9, 1.02e9, 1.03e9, 1.04e9], [2e9] * 5]))
    right = Session.load(_plan(tmp_path, "right", [{"cc": "reno"}, {"cc": "cubic"}],
                               [[1.10e9, 1.11e9, 1.12e9, 1.13e9, 1.14e9], [3e9] * 5]))
    doc = compare.to_json(left, right)
    by = {(r["pair"], r["config_label"]): r for r in doc["rows"]}
    reno = by[("A", "cc=reno")]
    assert reno["delta_pct"] == pytest.approx((1.12 - 1.02) / 1.02 * 100)
    assert reno["verdict"]["significant"] and reno["verdict"]["method"] == "welch-log"
    assert by[("B", "cc=reno")]["verdict"]["text"] == "~ (p=1.00 n=5+5)"
    assert by[("A", "cc=bbr")]["only"] == "left" and by[("A", "cc=cubic")]["only"] == "right"
    md = compare.markdown(left, right)
    assert ("| A | cc=reno | 1.02 ± 0.02 (n=5) | 1.12 ± 0.02 (n=5) | +9.8% [+7.5, +12.2] "
            "(p<0.001 n=5+5) |") in md
    assert "(p<0.001 n=5+5)" in md and "only in left" in md and "only in right" in md


# ---- import --------------------------------------------------------------------------------

def _iperf(source: str, bps: float, n: int = 4) -> dict:  # type: ignore[type-arg]
    return {"source": source, "kind": "iperf3",
            "summary": {"protocol": "tcp", "sender_bits_per_second": bps,
                        "receiver_bits_per_second": bps, "retransmits": 0},
            "intervals": [{"start": i, "end": i + 1.0, "bytes": int(bps / 8),
                           "bits_per_second": bps, "retransmits": 0, "cwnd_bytes": None,
                           "omitted": False} for i in range(n)]}


def test_import_writes_a_session_per_pair_and_config(tmp_path: Path) -> None:
    assert importing.parse_pair_spec("after@tunnel=wireguard,mtu=1420:logs/b:1.txt") == (
        "after", {"tunnel": "wireguard", "mtu": "1420"}, "logs/b:1.txt")
    with pytest.raises(BadInput, match="--pair 'nofile'"):
        importing.parse_pair_spec("nofile")
    ping = {"source": "p.txt", "kind": "ping", "summary": {"rtt_avg_ms": 0.5},
            "replies": [{"seq": 1, "rtt_ms": 0.4}, {"seq": 2, "rtt_ms": 0.6}]}
    items = [importing.ImportItem("before", _iperf("a.txt", 1e9), {"tunnel": "wireguard"}),
             importing.ImportItem("before", ping, {"tunnel": "wireguard"}),
             importing.ImportItem("after", _iperf("b.txt", 1.5e9), {"tunnel": "wireguard"}),
             importing.ImportItem("after", {"source": "c.txt", "kind": "iperf3",
                                            "error": "unable to connect"}, {"tunnel": "none"})]
    path = importing.write_session(tmp_path / "imp.abtui.jsonl", items, t0=1000.0)
    s = Session.load(path)
    assert s.pairs == ["before", "after"]
    table = stats.cells(s)
    assert table["tunnel=wireguard"]["after"].throughput.mean == 1.5e9
    assert table["tunnel=wireguard"]["before"].rtt.mean == pytest.approx(0.5)
    assert [r.status for r in s.runs] == ["ok", "ok", "ok", "error"]
    assert s.runs[3].message == "c.txt: unable to connect"
    assert next(r for r in s.runs if r.options == {"source": "p.txt"}).ping == {
        "rtt_avg_ms": 0.5}
    md = report.markdown(s, base="before")
    assert "| tunnel=wireguard | 1.00 | 1.50 | +50.0% ? (n=1+1: too few runs) |" in md
    assert "| before | — | imported from a.txt | — |" in md  # not a command abtui ran


# ---- CLI -----------------------------------------------------------------------------------

def test_cli_export_compare_sessions(continuous: Path, tmp_path: Path,
                                     capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["export", str(continuous), "--format", "json"]) == 0
    assert json.loads(capsys.readouterr().out)["pairs"] == ["A", "B"]
    out = tmp_path / "r.csv"
    assert main(["export", str(continuous), "--format", "csv", "--out", str(out)]) == 0
    assert len(out.read_text().splitlines()) == 65
    html = tmp_path / "chart.html"
    assert main(["export", str(continuous), "--format", "plot", "--out", str(html)]) == 0
    assert "<body>" in html.read_text() and capsys.readouterr().out == ""
    assert main(["compare", str(continuous), str(continuous)]) == 0
    assert "| A | wmem=64k | 5.00 | 5.00 | +0.0% ? (n=1+1" in capsys.readouterr().out
    assert main(["sessions", "--sessions-dir", str(continuous.parent), "--json"]) == 0
    listed = json.loads(capsys.readouterr().out)["sessions"]
    assert listed[0]["profile"] == "synth" and listed[0]["pairs"] == ["A", "B"]
    assert listed[0]["duration"] == pytest.approx(32.0)


def test_cli_unknown_base_config_or_pair_is_one_line(continuous: Path,
                                                    capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["export", str(continuous), "--base-config", "wmem=huge"]) == 2
    assert capsys.readouterr().err == ("abtui: --base-config 'wmem=huge': the session's "
                                       "configurations are wmem=default; wmem=64k\n")
    assert main(["export", str(continuous), "--base-pair", "Z"]) == 2
    assert "the session's pairs are A, B" in capsys.readouterr().err
    assert main(["export", str(continuous), "--base-config", "wmem=64k"]) == 0
    assert "## Δ vs configuration `wmem=64k`" in capsys.readouterr().out


@pytest.mark.parametrize("argv", [["export", "/nonexistent/s.gz"],
                                  ["compare", "/nonexistent/a", "/nonexistent/b"],
                                  ["export", "x", "--format", "pdf"]])
def test_cli_bad_input_exits_2_with_one_line(argv: list[str],
                                             capsys: pytest.CaptureFixture[str]) -> None:
    assert main(argv) == 2
    err = capsys.readouterr().err.strip()
    if argv[-1] == "pdf":  # argparse: usage, then one line naming the bad choice
        assert err.splitlines()[-1].endswith("invalid choice: 'pdf' (choose from md, csv, "
                                             "json, plot)") or "invalid choice" in err
    else:
        assert len(err.splitlines()) == 1 and err.startswith("abtui: /nonexistent/")
        assert "no such session" in err


def test_import_cli_helpers_write_a_named_session(tmp_path: Path,
                                                  capsys: pytest.CaptureFixture[str]) -> None:
    import argparse

    parser = argparse.ArgumentParser()
    importing.add_arguments(parser)
    parser.add_argument("--sessions-dir")
    (tmp_path / "a.txt").write_text("x")
    (tmp_path / "b.txt").write_text("y")
    argv = ["--session", "nic", "--sessions-dir", str(tmp_path), "--config", "tunnel=none",
            "--pair", f"before:{tmp_path}/a.txt", "--pair", f"after@tunnel=gre:{tmp_path}/b.txt"]
    rates = {"a.txt": 1e9, "b.txt": 2e9}
    args = parser.parse_args(argv)
    assert importing.run(args, lambda p: _iperf(p.name, rates[p.name])) == 0
    written = Path(capsys.readouterr().out.strip())
    assert written == tmp_path / "nic.abtui.jsonl.gz"
    s = Session.load(written)
    assert [r.config for r in s.runs] == [{"tunnel": "none"}, {"tunnel": "gre"}]
    with pytest.raises(BadInput, match="exists already"):
        importing.run(args, lambda p: _iperf(p.name, 1e9))
    args = parser.parse_args(["--session", "other", "--pair", "x:/nonexistent.txt"])
    with pytest.raises(BadInput, match=r"no such file /nonexistent\.txt"):
        importing.run(args, lambda p: {})


def test_test_options_are_the_iperf3_command_line_per_direction(continuous: Path) -> None:
    session = Session.load(continuous)
    session.runs.append(dataclasses.replace(session.runs[0], id=2, index=len(session.runs)))
    for run in session.runs:  # a newer abtui's option is left out, not guessed
        run.options = {"duration": 10, "interval": 2, "parallel": 2, "reverse": run.id == 2,
                       "zerocopy": True, "bitrate": None, "omit": 1, "extra_args": ["-Z"]}
    md = report.markdown(session)
    lines = [ln for ln in md.splitlines() if "`iperf3 " in ln]
    rebuilt = " (rebuilt from the recorded options) |"  # the fixture predates `argv`
    assert "| A | tx | `iperf3 -c 198.18.1.2 -p 5201 -t 10 -i 2 --forceflush -V -P 2 -O 1 -Z`" \
        + rebuilt in md
    assert "| A | rx (-R) | `iperf3 -c 198.18.1.2 -p 5201 -t 10 -i 2 --forceflush -V -P 2 " \
        "-R -O 1 -Z`" + rebuilt in md
    assert len(lines) == 3  # A ran both directions, B one
    assert "None" not in md and "False" not in md and "zerocopy" not in md
