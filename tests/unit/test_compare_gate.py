"""The regression gate (`abtui compare BASE NEW --fail-on-regression PCT`, `--format junit`)
on sessions recorded on the lab (tests/fixtures/sessions/record.sh): base and same are the lab
twice; slower had the receivers' tcp_rmem cut to 16 KiB behind abtui's back."""

from __future__ import annotations

from pathlib import Path
from xml.etree import ElementTree as ET

import pytest

from abtui.cli import main
from abtui.reports import compare
from abtui.sessions.session import Session
from tests import synth

SESSIONS = Path(__file__).resolve().parents[1] / "fixtures" / "sessions"
BASE, SAME, SLOWER = (str(SESSIONS / f"{n}.jsonl") for n in ("base", "same", "slower"))


def test_exit_codes_on_recorded_sessions(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["compare", BASE, SAME, "--fail-on-regression", "2%"]) == 0
    assert "0 of 4 judged configurations worse" in capsys.readouterr().err
    assert main(["compare", BASE, SLOWER, "--fail-on-regression", "2%"]) == 1
    err = capsys.readouterr().err
    assert err.count("abtui: regression: ") == 4 and "4 of 4 judged" in err
    assert main(["compare", BASE, SLOWER]) == 0  # no gate asked for: a table, exit 0
    assert main(["compare", BASE, SLOWER, "--fail-on-regression", "2%%"]) == 2
    assert main(["compare", BASE, SLOWER, "--fail-on-regression", "-3"]) == 2
    assert "expected a percentage" in capsys.readouterr().err


def test_the_whole_interval_must_be_below_the_threshold() -> None:
    cases = compare.gate(Session.load(BASE), Session.load(SLOWER), 80)
    # A at 4 MiB: -85.6% [-91.9, -74.6] (reaches above -80%); A at 64 KiB: [-94.2, -80.5]
    highs = {(c.pair, c.config.rsplit(" ", 1)[1]): c for c in cases}
    assert highs[("A", "4194304")].delta.high > -80 and not highs[("A", "4194304")].failed
    assert highs[("A", "65536")].delta.high < -80 and highs[("A", "65536")].failed
    assert main(["compare", BASE, SLOWER, "--fail-on-regression", "95"]) == 0


def test_junit_has_a_case_per_pair_and_configuration(tmp_path: Path) -> None:
    out = tmp_path / "gate.xml"
    assert main(["compare", BASE, SLOWER, "--format", "junit", "--fail-on-regression", "2%",
                 "--out", str(out)]) == 1
    suite = ET.parse(out).getroot().find("testsuite")
    assert suite is not None and suite.get("tests") == "4" and suite.get("failures") == "4"
    cases = suite.findall("testcase")
    assert sorted((c.get("classname"), c.get("name")) for c in cases) == [
        (f"abtui.compare.{p}", f"tcp_wmem=4096 16384 {w}") for p in "AB"
        for w in ("4194304", "65536")]
    assert all(c.find("failure") is not None for c in cases)
    assert main(["compare", BASE, SAME, "--format", "junit", "--out", str(out)]) == 0
    suite = ET.parse(out).getroot().find("testsuite")
    assert suite is not None and suite.get("failures") == "0"
    assert all(c.find("failure") is None for c in suite.findall("testcase"))


def test_what_cannot_be_judged_is_skipped_not_passed() -> None:
    left = Session.from_events(synth.continuous([{"wmem": "default"}], {"A": [10e9]},
                                                pairs=("A",)), "left")
    right = Session.from_events(synth.continuous([{"wmem": "64k"}], {"A": [10e9]},
                                                 pairs=("A",)), "right")
    cases = compare.gate(left, right, 2)
    assert {c.skipped for c in cases} == {"only in left", "only in right"}
    assert not any(c.failed for c in cases)
    xml = ET.fromstring(compare.junit(left, right, cases, 2))
    assert len(xml.findall(".//skipped")) == 2
