"""Sessions from recorded outputs through the real parsers (abtui.parse), as `abtui import
--session` will run them: what the parser found is what the session holds."""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import Any

import pytest

from abtui.parse.importer import import_text
from abtui.reports import report, stats
from abtui.sessions import importing
from abtui.sessions.session import Session

FIX = Path(__file__).resolve().parents[2] / "fixtures"


def _parse(path: Path) -> dict[str, Any]:
    return import_text(path.read_text(), str(path)).to_json()


def _run(tmp_path: Path, *pairs: str) -> Session:
    parser = argparse.ArgumentParser()
    importing.add_arguments(parser)
    argv = ["--session", str(tmp_path / "imp"), "--config", "kernel=6.1"]
    for spec in pairs:
        argv += ["--pair", spec]
    assert importing.run(parser.parse_args(argv), _parse) == 0
    return Session.load(tmp_path / "imp.abtui.jsonl.gz")


def test_recorded_outputs_become_runs_with_their_intervals(tmp_path: Path,
                                                           capsys: pytest.CaptureFixture[str]
                                                           ) -> None:
    omit, tcp = FIX / "iperf3-3.12/omit.client.txt", FIX / "iperf3-3.12/tcp.client.txt"
    ping, refused = FIX / "ping/iputils.txt", FIX / "iperf3-3.12/refused.client.txt"
    s = _run(tmp_path, f"stock:{tcp}", f"stock:{ping}", f"patched:{omit}",
             f"patched@kernel=6.2:{refused}")
    assert str(tmp_path / "imp.abtui.jsonl.gz") == capsys.readouterr().out.strip()
    cells = stats.cells(s)["kernel=6.1"]
    for pair, path in (("stock", tcp), ("patched", omit)):
        parsed = _parse(path)
        kept = [iv["bits_per_second"] for iv in parsed["intervals"] if not iv["omitted"]]
        assert len(s.intervals[pair]) == len(parsed["intervals"])
        assert cells[pair].intervals.n == len(kept)  # omitted intervals left out of stats
        assert cells[pair].intervals.mean == pytest.approx(sum(kept) / len(kept))
        assert cells[pair].throughput.n == 1  # one run: one run-level value
    rtts = [r["rtt_ms"] for r in _parse(ping)["replies"] if r["rtt_ms"] is not None]
    assert cells["stock"].rtt.n == len(rtts)
    assert cells["stock"].rtt.max == pytest.approx(max(rtts))
    failed = [r for r in s.runs if r.status == "error"]
    assert len(failed) == 1 and failed[0].config == {"kernel": "6.2"}
    assert "Connection refused" in failed[0].message
    md = report.markdown(s)
    assert "| configuration | stock (Gbit/s) | patched (Gbit/s) | Δ patched vs stock |" in md


def test_bidir_log_gives_a_tx_and_an_rx_pair(tmp_path: Path) -> None:
    bidir = FIX / "iperf3-3.12/bidir.client.txt"
    s = _run(tmp_path, f"A:{bidir}")
    assert s.pairs == ["A", "A-rx"]
    parsed = _parse(bidir)
    for pair, direction, summary in (("A", "tx", "summary"), ("A-rx", "rx", "reverse_summary")):
        ivs = [iv["bits_per_second"] for iv in parsed["intervals"]
               if iv["direction"] == direction]
        assert list(s.intervals[pair]["bps"]) == ivs
        run = s.runs_of(pair)[0]
        assert run.summary == parsed[summary]
