"""What a phase's numbers stand on besides its configuration, flagged beside them: traffic on
the data link that was not ours (COMPETING events, abtui.measure.engine.traffic), the
harness saturated (iperf3's own process ≥ 95 % of a core: "harness-bound") and one core
saturated by softirq ("softirq-bound on rcv core 3"). A configuration's cell whose phases
carry a flag shows ⚠ beside its figure, and so does any Δ and verdict made of it.

Rules:
- competing traffic: a phase with at least one flagged span (the span's rule is the
  engine's); the rate said is the mean of its flagged spans' excess.
- harness-bound: a run within the phase whose iperf3 reported its own CPU (sender or
  receiver side) at ≥ SATURATED × 100 % of one core.
- softirq-bound: at least half of a host's CPU samples in the phase have one core at
  ≥ SATURATED of its time in softirq; the core named is the one most often so. A namespace
  host's samples are the whole machine's (abtui.core.cpu.SHARED_NOTE), and the flag says so.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable
from dataclasses import dataclass, field

import numpy as np

from abtui.core import cpu as rules
from abtui.core.numbers import rate_unit
from abtui.reports import samples, stats
from abtui.reports.cpu import iperf3_cpu
from abtui.reports.formatting import md_table
from abtui.reports.naming import labels
from abtui.sessions.records import NO_PHASE
from abtui.sessions.session import Session

SATURATED = 0.95
ROLE = {"sender": "snd", "receiver": "rcv"}
MARK = "⚠"


@dataclass(slots=True)
class Flags:
    """One pair's flags over some phases: each a short word and its sentence."""

    words: list[str] = field(default_factory=list)
    lines: list[str] = field(default_factory=list)

    def __bool__(self) -> bool:
        return bool(self.words)

    def add(self, word: str, line: str) -> None:
        if line not in self.lines:
            self.words.append(word)
            self.lines.append(line)

    def mark(self) -> str:
        """What a table cell carries: ` ⚠ harness-bound, competing traffic`, or ""."""
        words = list(dict.fromkeys(self.words))
        return f" {MARK} {', '.join(words)}" if words else ""


def competing(session: Session, pair: str, phases: Iterable[int]) -> str | None:
    """`competing traffic: 310 Mbit/s not ours (4 spans)`, or None."""
    keep = set(phases)
    spans = [c for c in session.competing if c.get("pair") == pair
             and c.get("phase_index") in keep and isinstance(c.get("excess_bps"), int | float)]
    if not spans:
        return None
    mean = sum(float(c["excess_bps"]) for c in spans) / len(spans)
    unit = rate_unit([mean])
    devices = sorted({str(c.get("device")) for c in spans if c.get("device")})
    on = f" on {', '.join(devices)}" if devices else ""
    return (f"competing traffic: {mean / unit.div:.0f} {unit.name} not ours{on} "
            f"({len(spans)} span{'s' if len(spans) != 1 else ''})")


def harness(session: Session, pair: str, phases: list[int]) -> list[str]:
    """`harness-bound (sender iperf3 97 %)` per side whose iperf3 saturated its core."""
    out = []
    for side in ("sender", "receiver"):
        # the cheap test first: `within` reads the pair's intervals
        top = [c for r in session.runs_of(pair)
               if (c := iperf3_cpu(r, side)) is not None and c >= SATURATED * 100
               and samples.within(session, r, phases)]
        worst = max(top, default=None)
        if worst is not None and worst >= SATURATED * 100:
            out.append(f"harness-bound ({side} iperf3 {worst:.0f} % of a core)")
    return out


def softirq(session: Session, pair: str, phases: list[int]) -> list[str]:
    """`softirq-bound on rcv core 3 (in 8 of 10 samples)` per host whose samples show one
    core saturated by softirq."""
    out = []
    hosts = session.hosts_of(pair)
    for side in ("sender", "receiver"):
        host = hosts.get(side) or session.cpu_hosts.get((pair, side))
        cols = session.cpu.get((pair, host or ""))
        if cols is None or not len(cols) or "soft_peak" not in cols.names:
            continue
        phase = np.frombuffer(cols["phase"], dtype=np.int32)
        keep = np.isin(phase, np.asarray(phases, dtype=np.int32)) & (phase != NO_PHASE)
        if not keep.any():
            continue
        share = np.frombuffer(cols["soft_peak"], dtype=np.float64)[keep]
        core = np.frombuffer(cols["soft_core"], dtype=np.int32)[keep]
        hot = share >= SATURATED
        if hot.sum() * 2 < keep.sum():
            continue
        named = Counter(int(c) for c in core[hot]).most_common(1)[0][0]
        shared = rules.shared(session.facts.get(host or ""))
        whose = " (the machine's: namespace hosts share its CPUs)" if shared else ""
        out.append(f"softirq-bound on {ROLE[side]} core {named}{whose} (≥ "
                   f"{SATURATED * 100:.0f} % softirq in {int(hot.sum())} of "
                   f"{int(keep.sum())} samples)")
    return out


def of(session: Session, pair: str, phases: list[int]) -> Flags:
    """Every flag of a pair over `phases` (a table's cell)."""
    flags = Flags()
    said = competing(session, pair, phases)
    if said:
        flags.add("competing traffic", said)
    for line in harness(session, pair, phases):
        flags.add("harness-bound", line)
    for line in softirq(session, pair, phases):
        flags.add("softirq-bound", line)
    return flags


def of_cell(session: Session, cell: stats.Cell | None) -> Flags:
    return of(session, cell.pair, cell.phases) if cell is not None else Flags()


def delta_mark(session: Session, *cells: stats.Cell | None) -> str:
    """What a Δ (and its verdict) made of these cells carries: ` ⚠ flagged` or ""."""
    words = [w for c in cells for w in of_cell(session, c).words]
    return f" {MARK} on {', '.join(dict.fromkeys(words))}" if words else ""


def report_section(session: Session, table: dict[str, dict[str, stats.Cell]]) -> list[str]:
    """The report's list of flagged configurations (nothing when none is)."""
    shown = labels(session, table, short=True)
    rows = []
    for config, row in table.items():
        for pair, cell in row.items():
            for line in of_cell(session, cell).lines:
                rows.append([shown.get(config, config), pair, line])
    if not rows:
        return []
    return ["## Flagged measurements", "",
            f"{MARK} These cells' numbers (and every Δ and verdict made of them, marked "
            f"{MARK} in the tables) stand on stretches that were not only the configuration "
            "at work:", "", md_table(["configuration", "pair", "flag"], rows), ""]


def verdict_note(session: Session) -> list[str]:
    """Under an alternation's (or a bisection's) verdicts: the stretches they stand on that
    carry a flag, counted per pair (nothing when none does, or no verdict was recorded)."""
    if not any(m.get("verdicts") or m.get("bisect") for m in session.marks):
        return []
    said = []
    for pair in session.pairs:
        phases = session.phases_of(pair)
        counts: Counter[str] = Counter()
        for ph in phases:
            counts.update(set(of(session, pair, [ph.index]).words))
        said += [f"pair {pair}: {word} in {n} of {len(phases)} stretches"
                 for word, n in counts.items()]
    if not said:
        return []
    return [f"{MARK} These verdicts stand on flagged stretches: " + "; ".join(said)
            + " (see Flagged measurements below).", ""]
