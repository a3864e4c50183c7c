"""The md report names each configuration by the knobs that set it apart (as the console's
phase table does), with the knobs every configuration shares said once in the overview; the
CSV keeps the whole configuration (it is read by programs, row by row)."""

from __future__ import annotations

import csv
from pathlib import Path

import pytest

from abtui.cli import main

PLAN = str(Path(__file__).resolve().parents[2] / "fixtures" / "sessions" / "plan.abtui.jsonl.gz")
SHARED = "cc=bbr, tcp_rmem=4096 131072 33554432, tcp_wmem=4096 16384 4194304"


def _export(capsys: pytest.CaptureFixture[str], fmt: str) -> str:
    assert main(["export", PLAN, "--format", fmt]) == 0
    return capsys.readouterr().out


def test_rows_name_what_sets_them_apart(capsys: pytest.CaptureFixture[str]) -> None:
    md = _export(capsys, "md")
    assert f"- in every configuration: {SHARED}\n" in md.replace("\n  ", " ")  # (wrapped)
    table = md.split("## Throughput per configuration")[1].split("\n\n")[1]
    names = [line.split(" | ")[0].removeprefix("| ") for line in table.splitlines()[2:]]
    assert names == ["tso=on, tunnel=none", "tso=on, tunnel=vxlan", "tso=off, tunnel=none",
                     "tso=off, tunnel=vxlan"]
    assert "## Δ vs configuration `tso=on, tunnel=none`" in md
    assert md.count("tcp_rmem=") == 1  # said once, not per row of every table


def test_the_csv_keeps_the_whole_configuration(capsys: pytest.CaptureFixture[str]) -> None:
    rows = list(csv.DictReader(_export(capsys, "csv").splitlines()))
    assert {r["configuration"] for r in rows} == {
        f"{SHARED}, tso={t}, tunnel={u}" for t in ("on", "off") for u in ("none", "vxlan")}


def test_base_config_takes_the_short_name_or_the_whole_one(
        capsys: pytest.CaptureFixture[str]) -> None:
    for name in ("tso=off, tunnel=vxlan", f"{SHARED}, tso=off, tunnel=vxlan"):
        assert main(["export", PLAN, "--format", "md", "--base-config", name]) == 0
        assert "## Δ vs configuration `tso=off, tunnel=vxlan`" in capsys.readouterr().out
