"""CPU cost beside throughput: what each side spent to move the bits.

Per configuration and pair, as the throughput table (configuration | pairs | Δ vs the base
pair): the sender's and the receiver's CPU in % of one core (100 = one core busy, as top and
iperf3 count), and the efficiency: throughput per busy core, or CPU cycles per byte where the
host's facts give its CPU frequency. Samples are run-level values like throughput's (one per
run within a phase), so Δ, interval and verdict come from abtui.reports.stats unchanged.

Where a figure comes from: the host's CPU samples (CPU events: busy ticks ÷ all ticks × CPUs
over the samples of that run and phase), else iperf3's own figure of the run (its `CPU
Utilization`, the iperf3 process alone, a run only when it lies within one configuration). A
namespace host's samples are the whole machine's (abtui.core.cpu.SHARED_NOTE), and so are a
side's whose sender and receiver are one host: such a cell reads `shared` (no figure, no Δ: a
whole machine's 196-200 % compared with another's +0.0 % says nothing about the pair), with
the caveat right under the table.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from typing import Any

import numpy as np

from abtui.core import cpu as rules
from abtui.core.numbers import rate_unit
from abtui.reports import samples, stats
from abtui.reports.formatting import fmt_delta, fmt_rate, md_table
from abtui.reports.naming import labels
from abtui.sessions.records import NO_PHASE, Run
from abtui.sessions.session import Session

SIDES = ("sender", "receiver")
Key = tuple[int, int]  # (run index, phase index)
SHARED_CELL = "shared"  # a CPU cell whose host's samples are the whole machine's


def host_samples(session: Session, pair: str, host: str | None,
                 phases: list[int]) -> dict[Key, tuple[float, float]]:
    """(busy cores, softirq share) of `host` per (run, phase) within `phases`, from its CPU
    samples: the ticks of every sample in that stretch added up, then shared out."""
    cols = session.cpu.get((pair, host or ""))
    if cols is None or not len(cols):
        return {}
    phase = np.frombuffer(cols["phase"], dtype=np.int32)
    keep = np.isin(phase, np.asarray(phases, dtype=np.int32)) & (phase != NO_PHASE)
    run = np.frombuffer(cols["run"], dtype=np.int32)
    ticks = np.stack([np.frombuffer(cols[f], dtype=np.float64) for f in rules.FIELDS], axis=1)
    ncpu = np.frombuffer(cols["cpus"], dtype=np.int32)
    out: dict[Key, tuple[float, float]] = {}
    for key in sorted({(int(r), int(p)) for r, p in zip(run[keep], phase[keep], strict=True)}):
        sel = keep & (run == key[0]) & (phase == key[1])
        total = ticks[sel].sum(axis=0).tolist()
        cores = rules.busy_cores(total, int(ncpu[sel].max()))
        soft = rules.softirq_share(total)
        if cores is not None and soft is not None:
            out[key] = (cores, soft)
    return out


def iperf3_cpu(run: Run, side: str) -> float | None:
    """iperf3's own total CPU % of one side of a run, None when the run has none."""
    c = (run.summary or {}).get(f"{side}_cpu")
    total = c.get("total") if isinstance(c, dict) else None
    return float(total) if isinstance(total, int | float) and not isinstance(total, bool) \
        else None


class CpuCell:
    """One pair under one configuration: per side, run-level CPU % and efficiency, and where
    they came from ("host": its samples; "iperf3": iperf3's own; "": nothing)."""

    def __init__(self, session: Session, pair: str, phases: list[int]) -> None:
        self.cpu: dict[str, list[float]] = {}
        self.softirq: dict[str, list[float]] = {}
        self.efficiency: dict[str, list[float]] = {}
        self.source: dict[str, str] = {}
        self.cycles: dict[str, bool] = {}
        self.shared: dict[str, bool] = {}  # side -> its samples are a shared machine's
        hosts = session.hosts_of(pair)
        segs = samples.keyed_segments(session, pair, phases=phases)
        for side in SIDES:
            host = hosts.get(side) or session.cpu_hosts.get((pair, side))
            mhz = (session.facts.get(host or "") or {}).get("cpu_mhz")
            self.cycles[side] = isinstance(mhz, int | float) and mhz > 0
            sampled = host_samples(session, pair, host, phases)
            self.shared[side] = bool(sampled) and (
                rules.shared(session.facts.get(host or "")) or
                (bool(hosts.get("sender")) and hosts.get("sender") == hosts.get("receiver")))
            if sampled:
                self.source[side] = "host"
                self.cpu[side] = [c * 100 for c, _ in sampled.values()]
                self.softirq[side] = [s * 100 for _, s in sampled.values()]
                self.efficiency[side] = _efficiency(
                    [(segs[k].rate, c) for k, (c, _) in sampled.items() if k in segs],
                    mhz if self.cycles[side] else None)
                continue
            runs: list[tuple[Run, float]] = []
            for r in session.runs_of(pair):
                own = iperf3_cpu(r, side)
                if own is not None and samples.within(session, r, phases):
                    runs.append((r, own))
            self.source[side] = "iperf3" if runs else ""
            self.cpu[side] = [c for _, c in runs]
            self.softirq[side] = []
            self.efficiency[side] = _efficiency(
                [(samples.run_rate(session, r), c / 100) for r, c in runs],
                mhz if self.cycles[side] else None)


def _efficiency(pairs: list[tuple[float | None, float]], mhz: float | None) -> list[float]:
    """bits/s per busy core; with the CPU frequency, cycles per byte moved."""
    out = []
    for rate, cores in pairs:
        if rate is None or rate <= 0 or cores <= 0:
            continue
        out.append(cores * mhz * 1e6 / (rate / 8) if mhz else rate / cores)
    return out


def cells(session: Session, table: dict[str, dict[str, stats.Cell]]
          ) -> dict[str, dict[str, CpuCell]]:
    return {config: {pair: CpuCell(session, pair, c.phases) for pair, c in row.items()}
            for config, row in table.items()}


def _get(what: str, side: str) -> Callable[[CpuCell], list[float]]:
    def get(c: CpuCell) -> list[float]:
        return list(getattr(c, what)[side])
    return get


def _metric_table(session: Session, cpu: dict[str, dict[str, CpuCell]], bp: str | None,
                  get: Callable[[CpuCell], list[float]], div: float,
                  seen: list[stats.Delta | None], names: dict[str, str], side: str) -> str:
    """configuration (named as the throughput table names it) | each pair's figure | Δ of
    each other pair vs the base pair; SHARED_CELL and no Δ where `side`'s host's figures
    are a shared machine's."""
    others = [p for p in session.pairs if p != bp]
    rows = []
    for config, row in cpu.items():
        figures = [(SHARED_CELL if row[p].shared[side] else
                    fmt_rate(stats.summarize(get(row[p])), div)) if p in row else "—"
                   for p in session.pairs]
        deltas = []
        for p in others:
            if bp not in row or p not in row or row[bp].shared[side] or row[p].shared[side]:
                deltas.append("—")
                continue
            d, v = stats.compare_samples(get(row[bp]), get(row[p]))
            seen.append(d)
            deltas.append(fmt_delta(d, v))
        rows.append([names.get(config, config), *figures, *deltas])
    return md_table(["configuration", *session.pairs, *[f"Δ {p} vs {bp}" for p in others]],
                    rows)


def sections(session: Session, table: dict[str, dict[str, stats.Cell]], bp: str | None,
             seen: list[stats.Delta | None]) -> list[str]:
    """The report's CPU section; nothing when the session has no CPU figure at all."""
    cpu = cells(session, table)
    every = [c for row in cpu.values() for c in row.values()]
    if not any(c.cpu[s] for c in every for s in SIDES):
        return []
    if all(c.shared[s] for c in every for s in SIDES):
        return ["## CPU cost per configuration", "", shared_line(session), ""]
    names = labels(session, table, short=True)
    out = ["## CPU cost per configuration", "", *shared_note(session, every)]
    for side in SIDES:
        sources = {c.source[side] for c in every} - {""}
        what = " and ".join("the host's CPU samples" if s == "host" else "iperf3's own figure"
                            for s in sorted(sources)) or "nothing recorded"
        out += [f"### {side.capitalize()} CPU (% of one core; {what})", "",
                _metric_table(session, cpu, bp, _get("cpu", side), 1.0, seen, names, side),
                ""]
        if any(c.softirq[side] for c in every):
            out += [f"{side.capitalize()} softirq share of all its CPU time (%):", "",
                    _metric_table(session, cpu, bp, _get("softirq", side), 1.0, seen,
                                  names, side), ""]
    for side in SIDES:
        cyc = all(c.cycles[side] for c in every if c.efficiency[side])
        if not any(c.efficiency[side] for c in every):
            continue
        if cyc:
            title, div = "CPU cycles per byte (fewer is better)", 1.0
        else:
            u = rate_unit([stats.summarize(c.efficiency[side]).mean or 0.0 for c in every])
            div, title = u.div, f"{u.name} per busy core (more is better)"
        out += [f"### {side.capitalize()} efficiency: {title}", "",
                _metric_table(session, cpu, bp, _get("efficiency", side), div, seen,
                              names, side), ""]
    out += [LEGEND, ""]
    return out


def shared_note(session: Session, cells: Iterable[CpuCell]) -> list[str]:
    """The caveat a table with SHARED_CELL cells carries right under its title (empty when
    it has none): whose figures they would have been, and why they are not shown."""
    if not any(c.shared[side] for c in cells for side in SIDES):
        return []
    hosts = sorted(h for h, f in session.facts.items() if rules.shared(f))
    who = f"the host CPU of {', '.join(hosts)} is" if hosts else \
        "a pair's sender and receiver are one host, whose CPU is"
    return [f"⚠ `{SHARED_CELL}`: {who} {rules.SHARED_NOTE}. Its samples are one machine's, "
            "every pair's traffic included, whatever the pair itself did: no figure and no "
            "Δ is printed for them. iperf3's own figures (the runs table) are its "
            "process's alone.", ""]


def shared_line(session: Session) -> str:
    """The whole CPU section in one line, when every host's samples are one machine's (a
    namespace lab): tables of `shared` cells would say nothing more."""
    hosts = sorted(h for h, f in session.facts.items() if rules.shared(f))
    who = ", ".join(hosts) if hosts else "every pair's sender and receiver (one host)"
    return (f"No CPU figure per pair: the hosts ({who}) all share one machine, whose CPU "
            "is every pair's together; iperf3's own figures (its process alone) are in the "
            "runs table.")


LEGEND = ("CPU %: busy time (user, system, irq, softirq) ÷ elapsed, 100 = one core busy; "
          "from the host's samples during each run and phase, else iperf3's own figure for "
          "its process. Efficiency: the run's throughput ÷ the side's busy cores, or busy "
          "cycles (at the CPU's maximum frequency from the host's facts) per byte. Each "
          "figure is the mean of run-level values; Δ and verdict as for throughput (a "
          "positive CPU Δ is more CPU spent).")


def has_cpu(session: Session) -> bool:
    """Whether the session has any CPU figure (host samples, or iperf3's own in a run)."""
    return bool(session.cpu) or any(iperf3_cpu(r, side) is not None
                                    for r in session.runs for side in SIDES)


def slot_cells(session: Session, pair: str, phases: list[int] | None) -> list[str]:
    """A procedure table's CPU cells for one pair's cell: sender and receiver CPU %, the
    mean of their run-level values as the CPU section has them (— where none, SHARED_CELL
    where they are a shared machine's)."""
    if phases is None:
        return ["—", "—"]
    c = CpuCell(session, pair, phases)
    return [SHARED_CELL if c.shared[side] else
            fmt_rate(stats.summarize(c.cpu[side]), 1.0, spread=False) for side in SIDES]


def cell_json(c: CpuCell) -> dict[str, Any]:
    """A CpuCell for the JSON export: per side, where its figures come from, the run-level
    CPU % (100 = one core), softirq share and efficiency values and their summaries."""
    out: dict[str, Any] = {}
    for side in SIDES:
        out[side] = {
            "source": c.source[side] or None,
            "shared": c.shared[side],  # the host's samples are a shared machine's
            "cpu_percent": stats.summarize(c.cpu[side]).to_json(),
            "run_samples": c.cpu[side],
            "softirq_percent": stats.summarize(c.softirq[side]).to_json(),
            "efficiency": {"unit": "cycles/byte" if c.cycles[side] else "bits/s per core",
                           **stats.summarize(c.efficiency[side]).to_json(),
                           "run_samples": c.efficiency[side]},
        }
    return out


def series_json(session: Session) -> list[dict[str, Any]]:
    """Each host's CPU samples: time, run index, busy % of one core and softirq % per sample
    (the ticks themselves are in the session file)."""
    out = []
    for (pair, host), cols in session.cpu.items():
        busy, soft = [], []
        for i in range(len(cols)):
            row = [cols[f][i] for f in rules.FIELDS]
            cores = rules.busy_cores(row, cols["cpus"][i])
            share = rules.softirq_share(row)
            busy.append(None if cores is None else cores * 100)
            soft.append(None if share is None else share * 100)
        out.append({"pair": pair, "host": host, "shared": rules.shared(session.facts.get(host)),
                    "t": list(cols["t"]), "run": list(cols["run"]), "busy_percent": busy,
                    "softirq_percent": soft, "cpus": list(cols["cpus"]),
                    "peak_cpu_busy_percent": [p * 100 for p in cols["peak"]]})
    return out


def run_columns(run: Run) -> list[str]:
    """The runs table's CPU cells: iperf3's own sender and receiver figures."""
    out = []
    for side in SIDES:
        c: Any = (run.summary or {}).get(f"{side}_cpu")
        if isinstance(c, dict) and all(isinstance(c.get(k), int | float)
                                       for k in ("total", "user", "system")):
            out.append(f"{c['total']:.1f} ({c['user']:.1f}u/{c['system']:.1f}s)")
        else:
            out.append("—")
    return out


RUN_HEADER = ["sender CPU %", "receiver CPU %"]
RUN_NOTE = (" sender/receiver CPU %: iperf3's own `CPU Utilization` (its process, % of one "
            "core, user/system); — where iperf3 did not give it (a side it never heard "
            "from in a stopped run; a client with -R in text mode).")
