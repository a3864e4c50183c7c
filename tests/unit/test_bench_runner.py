"""`make bench` judges its records: budgets, FAIL and error records, the exit code; and the
fidelity bench's own reader of what iperf3 printed finds a figure abtui got wrong."""

from __future__ import annotations

import json
import math
import os
import subprocess
import sys
from dataclasses import asdict
from pathlib import Path

import pytest

from abtui.core.events import Event, IntervalMeasured, RunEnd, RunStart
from abtui.measure.ports import iperf_summary_of
from abtui.parse.iperf3.text import Iperf3TextParser
from abtui.sessions.session import Session
from tests.bench import __main__ as runner
from tests.bench import judge as j
from tests.bench.bench_engine import compare_run, read_printed

ROOT = Path(__file__).resolve().parents[2]
FIXTURES = ROOT / "tests" / "fixtures"


@pytest.mark.parametrize(("value", "budget", "ok"), [
    (4.9, "<= 5", True), (5.1, "<= 5", False), (100, ">= 100", True), (99.9, ">= 100", False),
    (1, "== 1", True), (0.999, "== 1", False), (0.97, "0.97..1.03", True),
    (1.031, "0.97..1.03", False), (0.96, "0.97..1.03", False), (2e5, ">= 200000", True)])
def test_within_each_form_of_budget(value: float, budget: str, ok: bool) -> None:
    assert j.within(value, budget) is ok


def test_a_malformed_budget_is_refused() -> None:
    with pytest.raises(ValueError, match="budget '< 5'"):
        j.within(1.0, "< 5")


def test_every_budget_of_the_table_is_well_formed() -> None:
    for name, budget in j.BUDGETS.items():
        if budget is not None:
            j.against(budget)  # raises when malformed
        assert name == name.strip() and " " not in name


def _rec(name: str, value: object, **kw: object) -> dict:
    return {"name": name, "value": value, "unit": "MB", "note": "n", **kw}


def test_judge_marks_ok_fail_skipped_error_and_unbudgeted() -> None:
    budgets = {"a": "<= 5", "b": None}
    assert j.judge(_rec("a", 4), budgets)["status"] == "ok"
    failed = j.judge(_rec("a", 6), budgets)
    assert (failed["status"], failed["budget"]) == ("FAIL", "<= 5")
    assert j.judge(_rec("b", 6), budgets)["status"] == "—"
    assert j.judge(_rec("zzz", 6), budgets)["status"] == "—"  # no budget in the table
    for missing in (None, math.nan, "fast"):
        err = j.judge(_rec("a", missing), budgets)
        assert err["status"] == "error" and "no value measured" in err["note"]
    skipped = j.judge({"name": "b", "value": None, "skipped": "no VM hosts"}, budgets)
    assert skipped["status"] == "skipped" and "no VM hosts" in skipped["note"]
    behind = j.judge(_rec("a", 1, failed="the console fell behind"), budgets)
    assert behind["status"] == "FAIL" and behind["note"].startswith("the console fell behind")


def test_a_raising_measurement_is_an_error_line_for_each_of_its_records(capsys) -> None:
    @j.measures("x_ms", "y_ms")
    def boom() -> list[dict]:
        raise RuntimeError("the lab did not come up\nsecond line")

    records = j.measure(boom)
    assert [(r["name"], r["status"]) for r in records] == [("x_ms", "error"), ("y_ms", "error")]
    assert records[0]["note"] == "boom raised RuntimeError: the lab did not come up"
    assert "Traceback" in capsys.readouterr().err


def test_a_record_a_measurement_forgot_is_an_error() -> None:
    @j.measures("x_ms", "y_ms")
    def half() -> dict:
        return _rec("x_ms", 1)

    records = j.measure(half)
    assert [r["name"] for r in records] == ["x_ms", "y_ms"]
    assert records[1]["status"] == "error" and "returned no such record" in records[1]["note"]


def test_the_run_exits_non_zero_on_a_fail_or_an_error_and_lists_every_budgeted_record(
        monkeypatch) -> None:
    monkeypatch.setattr(j, "BUDGETS", {"fast_ms": "<= 5", "never_made": "<= 1"})

    @j.measures("fast_ms")
    def fast() -> dict:
        return _rec("fast_ms", 3)

    records = runner.run([fast], everything=True)
    assert [(r["name"], r["status"]) for r in records] == [("fast_ms", "ok"),
                                                           ("never_made", "error")]
    assert j.exit_code(records) == 1
    assert j.exit_code(runner.run([fast], everything=False)) == 0
    monkeypatch.setitem(j.BUDGETS, "fast_ms", "<= 1")
    assert j.exit_code(runner.run([fast], everything=False)) == 1


def test_make_bench_exits_non_zero_on_an_impossible_budget(tmp_path: Path) -> None:
    """A real (small) run of the parse bench through `python -m tests.bench`'s main, with a
    budget no parser meets: the record is FAIL, the results file says so, the exit code is 1.
    The calibrations at its start and end shortened too (their loop and iperf3 run took 2 s of
    CPU of the 3.4 s this test took)."""
    results = tmp_path / "bench-results.json"
    code = ("import sys, tests.bench.judge as j, tests.bench.bench_parse as p\n"
            "import tests.bench.calibrate as c\n"
            "from tests.bench.__main__ import main\n"
            "j.BUDGETS['parse_lines_per_s'] = 'ratio >= 1e12'\n"
            "p.INTERVALS, p.SINGLE, p.REPEATS = 500, 2000, 1\n"
            "c.LOOP, c.IPERF3_S = 30_000, 1\n"
            "raise SystemExit(main(['bench', 'parse_lines']))\n")
    proc = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True,
                          env={**os.environ, "ABTUI_BENCH_RESULTS": str(results)}, timeout=120)
    assert proc.returncode == 1, proc.stdout + proc.stderr
    (line,) = [ln for ln in proc.stdout.splitlines() if ln.startswith("parse_lines_per_s")]
    assert "ratio >= 1e12" in line and " FAIL " in line
    got = json.loads(results.read_text())
    (rec,) = got["results"]
    assert (rec["name"], rec["status"], rec["budget"]) == ("parse_lines_per_s", "FAIL",
                                                           "ratio >= 1e12")
    assert rec["value"] > 0 and rec["reference"] > 0 and rec["judged"] > 0
    assert set(got["calibration"]) == {"start", "end"}
    assert got["calibration"]["start"]["python_loop_s"] > 0


# ---- the fidelity bench's reader --------------------------------------------------------------
def _session_of(text: str, tamper: dict[tuple[int, str], float] | None = None) -> Session:
    """The session abtui would record for one run printing `text` (abtui's own parser)."""
    parser = Iperf3TextParser()
    events = [Event.of(RunStart.from_data({"run": "r1"}), pair="A")]
    for k, iv in enumerate(parser.feed_text(text)):
        data = {"run": "r1", **iv.to_json()}
        for (at, key), value in (tamper or {}).items():
            if at == k:
                data[key] = value
        events.append(Event.of(IntervalMeasured.from_data(data), pair="A"))
    summary = iperf_summary_of(parser.finish())
    events.append(Event.of(RunEnd.from_data({
        "run": "r1", "status": "ok", "summary": asdict(summary) if summary else None}), pair="A"))
    return Session.from_events(events)


@pytest.mark.parametrize("fixture", ["iperf3-3.18/tcp-text.txt", "iperf3-3.12/p2.client.txt",
                                     "iperf3-3.12/tcp.client.txt"])
def test_fidelity_reader_agrees_with_abtui_on_recorded_output(fixture: str) -> None:
    text = (FIXTURES / fixture).read_text()
    printed = read_printed(text)
    compared, wrong = compare_run(printed, _session_of(text), "A", 0)
    assert wrong == [] and compared >= 5 * len(printed.intervals) + 4 > 4


def test_fidelity_reader_finds_a_figure_abtui_got_wrong() -> None:
    text = (FIXTURES / "iperf3-3.12/p2.client.txt").read_text()
    # one stream's rate taken for the aggregate's ([SUM] 23.7 Gbits/sec in the 2nd interval)
    _, wrong = compare_run(read_printed(text), _session_of(text, {(1, "bits_per_second"): 11.8e9}),
                           "A", 0)
    assert wrong == ["run 0 interval 1 bps: 11800000000.0 vs 23.7"]
    # a rounding slip below iperf3's printed precision is no difference; one above it is
    _, wrong = compare_run(read_printed(text), _session_of(text, {(0, "bits_per_second"): 13.94e9}),
                           "A", 0)
    assert wrong == []
    _, wrong = compare_run(read_printed(text), _session_of(text, {(0, "bits_per_second"): 13.96e9}),
                           "A", 0)
    assert len(wrong) == 1


def test_fidelity_reader_counts_a_missing_interval_and_summary() -> None:
    text = (FIXTURES / "iperf3-3.18/tcp-text.txt").read_text()
    cut = "\n".join(line for line in text.splitlines() if "1.00-2.01" not in line)
    compared, wrong = compare_run(read_printed(text), _session_of(cut), "A", 0)
    assert wrong[0] == "run 0: 1 intervals, iperf3 printed 2" and compared > 0
    no_end = "\n".join(line for line in text.splitlines() if "sender" not in line)
    _, wrong = compare_run(read_printed(no_end), _session_of(text), "A", 0)
    assert wrong == ["run 0: iperf3 printed no sender summary"]


# ---- budgets against a same-run reference -----------------------------------------------------
def test_a_reference_budget_judges_the_ratio_speedup_or_difference() -> None:
    budgets = {"frame_s": "ratio <= 1.5", "flip_ms": "speedup >= 12", "p99_ms": "diff <= 10"}
    ok = j.judge(_rec("frame_s", 0.6, unit="s", reference=0.5), budgets)
    assert (ok["status"], ok["ratio"], ok["judged"]) == ("ok", 1.2, 1.2)
    assert j.judge(_rec("frame_s", 0.8, unit="s", reference=0.5), budgets)["status"] == "FAIL"
    flip = j.judge(_rec("flip_ms", 1.0, reference=20.0), budgets)
    assert (flip["status"], flip["judged"], flip["ratio"]) == ("ok", 20.0, 0.05)
    assert j.judge(_rec("flip_ms", 2.0, reference=20.0), budgets)["status"] == "FAIL"
    assert j.judge(_rec("p99_ms", 19.0, reference=10.0), budgets)["status"] == "ok"
    assert j.judge(_rec("p99_ms", 21.0, reference=10.0), budgets)["status"] == "FAIL"


@pytest.mark.parametrize("reference", ["absent", None, math.nan, "fast", 0.0])
def test_a_budgeted_record_without_its_same_run_reference_is_an_error(reference) -> None:
    """The machine's speed moves by 2x between runs: a speed budget judged on the value alone
    would measure the machine, so a record that lost its reference fails the run."""
    budgets = {"frame_s": "ratio <= 1.5"}
    extra = {} if reference == "absent" else {"reference": reference}
    rec = j.judge(_rec("frame_s", 0.1, unit="s", **extra), budgets)
    assert rec["status"] == "error" and "no same-run reference" in rec["note"]
    assert j.exit_code([rec]) == 1


def test_a_speed_record_with_an_absolute_budget_is_an_error_other_records_are_not() -> None:
    budgets = {"frame_s": "<= 0.5", "cpu": "<= 2", "rate": ">= 1", "rss_mb": "<= 150",
               "share": "<= 0.05"}
    for name, unit in (("frame_s", "s"), ("cpu", "%cpu"), ("rate", "lines/s")):
        rec = j.judge(_rec(name, 0.1, unit=unit), budgets)
        assert rec["status"] == "error" and "must be against a same-run reference" in rec["note"]
    assert j.judge(_rec("rss_mb", 100, unit="MB"), budgets)["status"] == "ok"
    assert j.judge(_rec("share", 0.01, unit="share"), budgets)["status"] == "ok"


def test_a_malformed_reference_budget_is_refused() -> None:
    for budget in ("ratio < 3", "speedup 12", "diff <= ten"):
        with pytest.raises(ValueError, match="budget"):
            j.against(budget)


def test_every_speed_budget_of_the_table_is_against_a_reference() -> None:
    """The table's own speed records (what the benches here make): none judged alone."""
    speed = {"knob_flip_4hosts_median_ms", "knob_flip_vs_openssh_mux_ms", "start_skew_p95_ms",
             "ui_latency_p99_ms", "console_cpu_2pairs_pct", "ui_cpu_8pairs_pct",
             "ui_latency_p99_8pairs_ms", "parse_lines_per_s", "first_frame_s",
             "demo_first_number_warm_s"}
    for name in speed:
        assert j.against(j.BUDGETS[name] or "") is not None, name


def _results(path: Path, ratios: dict[str, float]) -> Path:
    path.write_text(json.dumps({"calibration": {}, "results": [
        {"name": n, "value": r, "reference": 1.0, "ratio": r} for n, r in ratios.items()]}))
    return path


def test_compare_passes_ratios_within_the_tolerance_and_fails_those_further_apart(
        tmp_path: Path) -> None:
    from tests.bench import compare

    a = _results(tmp_path / "a.json", {"flip_ms": 0.05, "frame_s": 1.2})
    close = _results(tmp_path / "b.json", {"flip_ms": 0.055, "frame_s": 1.1})
    far = _results(tmp_path / "c.json", {"flip_ms": 0.05, "frame_s": 1.6})
    lines, ok = compare.compare(a, close)
    assert ok and any(line.startswith("frame_s") and "9%" in line for line in lines)
    lines, ok = compare.compare(a, far)
    assert not ok and any(line.startswith("frame_s") and "> 20%" in line for line in lines)
    lone = _results(tmp_path / "d.json", {"flip_ms": 0.05})
    assert compare.compare(a, lone)[1] is False


def test_compare_holds_a_difference_budget_to_its_difference_on_the_budget_scale(
        tmp_path: Path) -> None:
    """A latency budgeted as a difference is compared by that difference as a share of the
    budget, not by its ratio to a reference near zero (0.5 against 2.5 ms is 5x apart)."""
    from tests.bench import compare

    def run(path: Path, value: float, ref: float) -> Path:
        path.write_text(json.dumps({"calibration": {}, "results": [
            {"name": "p99_ms", "value": value, "reference": ref, "ratio": value / ref,
             "judged": value - ref, "budget": "diff <= 10"},
            {"name": "flip_ms", "value": 1.0, "reference": 300.0, "ratio": 1 / 300,
             "judged": 300.0, "budget": "speedup >= 100"}]}))
        return path

    quiet = run(tmp_path / "a.json", 8.5, 0.5)
    lines, ok = compare.compare(quiet, run(tmp_path / "b.json", 10.0, 2.5))  # +8.0 / +7.5
    assert ok and any(line.startswith("p99_ms") and "5%" in line for line in lines)
    assert any(line.startswith("flip_ms") and "300" in line for line in lines)
    lines, ok = compare.compare(quiet, run(tmp_path / "c.json", 10.0, 7.0))  # +8.0 / +3.0
    assert not ok and any(line.startswith("p99_ms") and "> 20%" in line for line in lines)


def test_a_record_in_rounds_is_judged_on_the_median_of_its_rounds() -> None:
    """Each round's value beside its own reference: a load that came and went moves both
    arms of its round, so the median of the rounds' figures holds where the figure of the two
    medians would swing (here 2.0 against the rounds' 1.25)."""
    budgets = {"cpu": "ratio <= 1.5", "flip_ms": "speedup >= 20", "p99_ms": "diff <= 10"}
    rounds = [[1.0, 0.8], [2.0, 1.6], [3.0, 2.4], [2.5, 1.0], [2.0, 1.6]]
    rec = j.judge(_rec("cpu", 2.0, unit="%cpu", reference=1.0, rounds=rounds), budgets)
    assert (rec["status"], rec["ratio"], rec["judged"]) == ("ok", 1.25, 1.25)
    assert j.judge(_rec("cpu", 2.0, unit="%cpu", reference=1.0), budgets)["status"] == "FAIL"
    flip = j.judge(_rec("flip_ms", 1.0, reference=19.0,
                        rounds=[[1.0, 21.0], [1.1, 23.1], [0.9, 9.0]]), budgets)
    assert (flip["status"], flip["judged"]) == ("ok", 21.0)
    lat = j.judge(_rec("p99_ms", 30.0, reference=10.0,
                       rounds=[[12.0, 4.0], [30.0, 10.0], [29.0, 1.0]]), budgets)
    assert (lat["status"], lat["judged"]) == ("FAIL", 20.0)
    # a round missing a figure is left out, not taken for zero
    part = j.judge(_rec("cpu", 2.0, unit="%cpu", reference=1.0,
                        rounds=[[1.0, 1.0], [None, 1.0], [1.2, 1.0]]), budgets)
    assert part["judged"] == 1.1
