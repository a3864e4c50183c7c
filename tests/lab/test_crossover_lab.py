"""`abtui run --alternate tcp_rmem=… --design crossover` on the namespace lab's two pairs: at
every boundary both pairs switch together, each to the other value; every phase the session
records carries the value its pair's receiver really had throughout it (read out of band,
`ip netns exec … sysctl`, while it ran), the two pairs ran opposite values at once, one
verdict is judged on both, and the report's alternation table names the design. Real sshd,
iperf3 and sysctls in namespaces."""

from __future__ import annotations

import json
import re
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest

from abtui.lab.netns import Lab
from abtui.measure.alternate.design import mirror, schedule
from abtui.sessions.session import Session
from tests.lab.test_alternate_lab import BIG, TINY, _profile, _ran

pytestmark = [pytest.mark.lab, pytest.mark.usefixtures("no_strays")]

KEY = "net.ipv4.tcp_rmem"
SEED = 5


def _read(netns: str) -> str:
    got = subprocess.run(["ip", "netns", "exec", netns, "sysctl", "-n", KEY],
                         capture_output=True, text=True, timeout=10)
    return " ".join(got.stdout.split())


def _collapsed(values: list[str] | tuple[str, ...]) -> list[str]:
    """The values with a repeated one kept once (a boundary that keeps it opens no phase)."""
    return [v for i, v in enumerate(values) if i == 0 or values[i - 1] != v]


class Sampler(threading.Thread):
    """Each receiver's tcp_rmem, read out of band every ~0.1 s: (pair, began, ended, value)."""

    def __init__(self, receivers: dict[str, str]) -> None:
        super().__init__(daemon=True)
        self.receivers = receivers
        self.reads: list[tuple[str, float, float, str]] = []
        self.done = threading.Event()

    def run(self) -> None:
        while not self.done.is_set():
            for pair, netns in self.receivers.items():
                began = time.time()
                value = _read(netns)
                self.reads.append((pair, began, time.time(), value))
            self.done.wait(0.1)


def test_a_crossover_runs_each_pair_s_own_value_and_says_its_design(lab: Lab,
                                                                    tmp_path: Path) -> None:
    receivers = {h.pair: h.netns for h in lab.hosts(2) if h.role == "receiver"}
    assert set(receivers) == {"A", "B"}
    before = {p: _read(ns) for p, ns in receivers.items()}
    out = tmp_path / "cross.jsonl"
    sampler = Sampler(receivers)
    sampler.start()
    began = time.monotonic()
    try:
        proc = subprocess.run(
            [sys.executable, "-m", "abtui", "run", str(_profile(lab, tmp_path)), "--headless",
             "--alternate", f"tcp_rmem={BIG},{TINY}", "--design", "crossover", "--every", "1",
             "--max-runs", "6", "--until-verdict", "--seed", str(SEED), "--out", str(out)],
            capture_output=True, text=True, timeout=120)
    finally:
        sampler.done.set()
        sampler.join()
    took = time.monotonic() - began
    _ran(proc)
    err = proc.stderr
    assert "crossed over A and B" in err and "B the mirror" in err, err
    assert "--seed 5 --design crossover" in err
    final = re.findall(r"abtui: (\S+): tcp_rmem=.* vs .*?: (.*)", err.split(
        "alternation ended", 1)[1])
    assert [p for p, _ in final] == ["A+B"], err  # one verdict, on both pairs
    assert "family-wise α 0.05 over 1 comparison" in err
    # the hosts end as they began
    assert {p: _read(ns) for p, ns in receivers.items()} == before

    session = Session.load(out)
    checked = {"A": 0, "B": 0}
    spans: dict[str, list[tuple[float, float, str]]] = {"A": [], "B": []}
    for phase in session.phases:
        value = phase.config.get("tcp_rmem")
        if phase.start is None or phase.end is None or value is None:
            continue
        spans[phase.pair].append((phase.start, phase.end, value))
        inside = [v for p, t0, t1, v in sampler.reads
                  if p == phase.pair and t0 >= phase.start + 0.05 and t1 <= phase.end - 0.05]
        assert all(v == value for v in inside), (phase, inside)
        checked[phase.pair] += bool(inside)
    assert min(checked.values()) >= 3, (checked, len(sampler.reads))
    # the pairs ran opposite values at once: in the middle of each phase of A, B's phase
    opposite = 0
    for start, end, value in spans["A"][1:]:
        mid = (start + end) / 2
        other = [v for s, e, v in spans["B"] if s <= mid <= e]
        if other:
            assert other[0] != value, (start, end, value, spans["B"])
            opposite += 1
    assert opposite >= 2, spans
    # A's values in the seed's order, B's in its mirror (the phases collapse a kept value)
    order = schedule((BIG, TINY), 3, SEED)
    for pair, expect in (("A", order), ("B", mirror(order, (BIG, TINY)))):
        runs, seen = _collapsed(expect), _collapsed([v for _s, _e, v in spans[pair]])
        if seen[:1] != runs[:1]:  # the hosts' own value, before the first was set
            seen = seen[1:]
        # all but the last (the alternation may end in it, and the restore follow)
        assert seen[:-1] == runs[:len(seen) - 1], (pair, seen, runs)

    # the report: md, csv and json name the design
    md = subprocess.run([sys.executable, "-m", "abtui", "export", str(out), "--format", "md"],
                        capture_output=True, text=True, timeout=60)
    assert md.returncode == 0, md.stderr
    table = md.stdout.split("## Alternation verdict", 1)[1].split("\n## ", 1)[0]
    assert "| A+B | crossover | tcp_rmem=" in table, table
    js = subprocess.run([sys.executable, "-m", "abtui", "export", str(out), "--format",
                         "json"], capture_output=True, text=True, timeout=60)
    rows = json.loads(js.stdout)["alternation"]
    assert [(r["pair"], r["design"]) for r in rows] == [("A+B", "crossover")]
    print(f"\ncrossover: {took:.1f} s, {len(sampler.reads)} reads out of band, phases checked "
          f"{checked}; {final[0][1]}")
