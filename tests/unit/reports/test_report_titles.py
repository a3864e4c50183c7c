"""Titles and order: a report and its charts are called what the profile calls them (not the
`--out` file's name), charts name each phase where it begins, and the generic table lists
configurations in the profile's order with the hosts' own value first, not in run order."""

from __future__ import annotations

import xml.etree.ElementTree as ET
from pathlib import Path

import pytest

from abtui.core import events as events_
from abtui.core.events import Event
from abtui.reports import report
from abtui.reports.plots import save_image
from abtui.sessions.session import Session
from tests import synth

PROFILE = synth.PROFILE.replace('name = "synth"', 'name = "wmem-sweep"\n'
                                'description = "send buffer against throughput"') + """
[[knobs]]
name = "wmem"
kind = "sysctl"
key = "net.ipv4.tcp_wmem"
values = ["64k", "1m"]
"""
# the hosts' own value (not one the profile lists) first, then 1m, then 64k: run order
FLIPS = [{"wmem": "4096 16384 4194304"}, {"wmem": "1m"}, {"wmem": "64k"}]
RATES = {"A": [3e9, 2e9, 1e9], "B": [3.1e9, 2.1e9, 1.1e9]}


@pytest.fixture
def session(monkeypatch: pytest.MonkeyPatch) -> Session:
    monkeypatch.setattr(synth, "PROFILE", PROFILE)
    events = list(synth.continuous(FLIPS, RATES, seconds=4))
    # what the engine reads on connect: every knob's value on the hosts, per pair
    read = [Event.of(events_.Config(config=dict(FLIPS[0])), events[0].t, pair)
            for pair in RATES]
    return Session.from_events([events[0], *read, *events[1:]], name="aim")  # `--out aim`


def _rows(md: str, section: str) -> list[str]:
    body = md.split(f"## {section}", 1)[1].split("\n## ", 1)[0]
    return [ln.split(" | ")[0].removeprefix("| ") for ln in body.splitlines()
            if ln.startswith("| ") and not ln.startswith("| configuration")]


def test_the_report_is_titled_by_its_profile_not_its_file(session: Session) -> None:
    md = report.markdown(session, chart=False)
    assert md.splitlines()[0] == "# wmem-sweep: send buffer against throughput"
    assert "- session: aim" in md  # the file's name is still said, below


def test_the_generic_table_starts_at_the_hosts_own_value_then_the_profile_s_order(
        session: Session) -> None:
    rows = _rows(report.markdown(session, chart=False), "Throughput per configuration")
    assert rows == ["wmem=4096 16384 4194304", "wmem=64k", "wmem=1m"], rows


def test_an_image_chart_names_its_profile_and_each_phase(session: Session,
                                                        tmp_path: Path) -> None:
    pytest.importorskip("matplotlib", reason="the `plot` extra is not installed")
    out = tmp_path / "aim.svg"
    save_image(session, out)
    texts = " ".join(t.text or "" for t in ET.parse(out).getroot().iter(
        "{http://www.w3.org/2000/svg}text"))
    assert "wmem-sweep: send buffer against throughput" in texts and "aim" not in texts
    for label in ("wmem=1m", "wmem=64k"):
        assert label in texts, texts
