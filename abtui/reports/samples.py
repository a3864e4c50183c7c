"""Where a cell's numbers come from: a session's interval and ping columns turned into
per-interval values and run-level segments (abtui.reports.throughput), narrowed to phases and
runs, with omitted intervals, straddling ones and --bidir's way back counted as the metric
needs. Apart from abtui.reports.stats, which summarizes and compares what this returns: this
module reads a session's columns and never tests anything.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

import numpy as np

from abtui.core.configuration import config_id
from abtui.reports import throughput
from abtui.reports.throughput import Segment
from abtui.sessions.records import NO_PHASE, Phase, Run
from abtui.sessions.session import Session

if TYPE_CHECKING:
    from numpy.typing import NDArray

# UDP interval series (NaN on TCP intervals): metric -> session interval column
UDP_COLUMNS = {"jitter_ms": "jitter", "lost": "lost", "packets": "packets"}


def _column(cols: Any, name: str, dtype: Any) -> NDArray[Any]:
    return np.frombuffer(cols[name], dtype=dtype) if len(cols) else np.empty(0, dtype=dtype)


def _counted(session: Session, pair: str, mask: NDArray[np.bool_], metric: str
             ) -> NDArray[np.bool_]:
    """`mask` narrowed to the intervals that count in `metric`: not omitted, and in the pair's
    direction (sender -> receiver) or, for throughput_rx, --bidir's way back."""
    cols = session.intervals[pair]
    keep = mask & (_column(cols, "omitted", np.int8) == 0)
    return keep & (_column(cols, "rx", np.int8) == (1 if metric == "throughput_rx" else 0))


def _mask(source: Any, phases: Sequence[int] | None, runs: Sequence[int] | None
          ) -> NDArray[np.bool_]:
    mask = np.ones(len(source), dtype=bool)
    if phases is not None:
        phase = _column(source, "phase", np.int32)
        mask &= np.isin(phase, np.asarray(phases, dtype=np.int32)) & (phase != NO_PHASE)
    if runs is not None:
        mask &= np.isin(_column(source, "run", np.int32), np.asarray(runs, dtype=np.int32))
    return mask


def values(session: Session, pair: str, metric: str, *, phases: Sequence[int] | None = None,
           runs: Sequence[int] | None = None) -> NDArray[np.float64]:
    """A metric's per-interval (or per-ping) values on one pair, restricted to phases and/or
    runs (by index): for noise and the interval-level summaries, never as samples.

    throughput and retransmits_per_s come from intervals (omitted ones and those that
    straddle a knob change left out), rtt from pings (lost ones left out); throughput_rx is
    --bidir's other direction, which throughput never includes; jitter_ms, lost and packets
    are UDP's per-interval series (NaN on TCP intervals); retransmits the counts iperf3
    printed (NaN where a line has none: the receiver's, UDP's)."""
    source = session.pings[pair] if metric == "rtt" else session.intervals[pair]
    if not len(source):
        return np.empty(0)
    mask = _mask(source, phases, runs)
    if metric == "rtt":
        rtt = _column(source, "rtt", np.float64)[mask]
        return rtt[np.isfinite(rtt)]
    keep = _counted(session, pair, mask, metric)
    if metric in ("throughput", "throughput_rx"):
        return _column(source, "bps", np.float64)[keep]
    if metric in UDP_COLUMNS:
        return _column(source, UDP_COLUMNS[metric], np.float64)[keep]
    span = (_column(source, "end", np.float64) - _column(source, "start", np.float64))[keep]
    retr = _column(source, "retransmits", np.float64)[keep]
    if metric == "retransmits":
        return retr
    with np.errstate(divide="ignore", invalid="ignore"):
        return np.where(span > 0, retr / span, np.nan)


def ping_rtts(session: Session, pair: str, *, phases: Sequence[int] | None = None,
              runs: Sequence[int] | None = None) -> NDArray[np.float64]:
    """A pair's ping round trips (ms) in these phases/runs, a lost one as NaN (abtui.reports.
    latency counts them apart); `values(..., "rtt")` leaves the lost ones out."""
    source = session.pings[pair]
    if not len(source):
        return np.empty(0)
    return _column(source, "rtt", np.float64)[_mask(source, phases, runs)]


def ping_rtts_by_run(session: Session, pair: str, phases: Sequence[int]
                     ) -> dict[int, NDArray[np.float64]]:
    """ping_rtts within these phases, one array per run (by run index, in run order)."""
    source = session.pings[pair]
    if not len(source):
        return {}
    mask = _mask(source, phases, None)
    rtt = _column(source, "rtt", np.float64)[mask]
    run = _column(source, "run", np.int32)[mask]
    return {int(r): rtt[run == r] for r in np.unique(run).tolist()}


def rr_bins(session: Session, pair: str, *, phases: Sequence[int] | None = None,
            runs: Sequence[int] | None = None) -> tuple[NDArray[np.float64], NDArray[np.float64]]:
    """A pair's request/response round trips (ms, binned) in these phases/runs, and each
    bin's count (abtui.core.events.RequestResponse)."""
    source = session.rr.get(pair)
    if source is None or not len(source):
        return np.empty(0), np.empty(0)
    mask = _mask(source, phases, runs)
    return (_column(source, "rtt", np.float64)[mask],
            _column(source, "count", np.float64)[mask])


def rr_bins_by_run(session: Session, pair: str, phases: Sequence[int]
                   ) -> dict[int, tuple[NDArray[np.float64], NDArray[np.float64]]]:
    """rr_bins within these phases, one (values, counts) per run (by run index)."""
    source = session.rr.get(pair)
    if source is None or not len(source):
        return {}
    mask = _mask(source, phases, None)
    rtt = _column(source, "rtt", np.float64)[mask]
    count = _column(source, "count", np.float64)[mask]
    run = _column(source, "run", np.int32)[mask]
    return {int(r): (rtt[run == r], count[run == r]) for r in np.unique(run).tolist()}


def segments(session: Session, pair: str, *, phases: Sequence[int] | None = None,
             runs: Sequence[int] | None = None, by_phase: bool = True,
             metric: str = "throughput") -> list[Segment]:
    """A pair's counted intervals as abtui.reports.throughput segments: one per (run, phase) within
    the given phases/runs, or one per run (`by_phase=False`: a run's own figure, whatever
    phases it crossed). Intervals go in in recorded order, as the console adds them."""
    return list(keyed_segments(session, pair, phases=phases, runs=runs, by_phase=by_phase,
                               metric=metric).values())


def keyed_segments(session: Session, pair: str, *, phases: Sequence[int] | None = None,
                   runs: Sequence[int] | None = None, by_phase: bool = True,
                   metric: str = "throughput") -> dict[tuple[int, int], Segment]:
    """`segments` by (run index, phase index) (phase 0 with `by_phase=False`): what else was
    measured in the same stretch (host CPU) is matched to them by that key."""
    cols = session.intervals[pair]
    if not len(cols):
        return {}
    keep = _counted(session, pair, _mask(cols, phases, runs), metric)
    idx = np.flatnonzero(keep)
    run = _column(cols, "run", np.int32)[idx].tolist()
    phase = _column(cols, "phase", np.int32)[idx].tolist() if by_phase else [0] * len(run)
    bps = _column(cols, "bps", np.float64)[idx].tolist()
    start = _column(cols, "start", np.float64)[idx].tolist()
    end = _column(cols, "end", np.float64)[idx].tolist()
    out: dict[tuple[int, int], Segment] = {}
    for key, rate, s, e in zip(zip(run, phase, strict=True), bps, start, end, strict=True):
        span = throughput.span_of(s, e)  # None: unknown, left out of the rate
        if math.isfinite(rate) and span is not None:
            seg = out.get(key)
            if seg is None:
                seg = out[key] = Segment()
            seg.add(rate, span)
    return out


def run_values(session: Session, pair: str, phases: Sequence[int],
               metric: str = "throughput") -> list[float]:
    """Run-level samples of throughput (or throughput_rx) within the given phases."""
    return throughput.run_values(segments(session, pair, phases=phases, metric=metric))


def run_rate(session: Session, run: Run) -> float | None:
    """A run's own figure: bits ÷ seconds of its intervals in the pair's direction, omitted
    ones left out and straddling ones kept (as iperf3's summary counts them); None when it
    delivered none."""
    segs = segments(session, run.pair, runs=[run.index], by_phase=False)
    return segs[0].rate if segs else None


def within(session: Session, run: Run, phases: Sequence[int]) -> bool:
    """Whether a run lies wholly within these phases: it has intervals, and each is in one of
    them or straddles a knob change between two of them (one at either end of the run leads
    to or from a phase it never reached). Only then is iperf3's own summary of the run (its
    sender and receiver lines, its CPU) a figure of those phases."""
    cols = session.intervals.get(run.pair)
    if cols is None or not len(cols):
        return False
    mine = _column(cols, "phase", np.int32)[_column(cols, "run", np.int32) == run.index]
    counted = mine != NO_PHASE
    if not mine.size or not np.isin(mine[counted], np.asarray(phases, dtype=np.int32)).all():
        return False
    return bool(counted[0] and counted[-1])  # a straddler between two of its phases


def whole_run(session: Session, phase: Phase) -> Run | None:
    """The run a phase is exactly, if it is one: every interval of the phase is that run's and
    every interval of that run is in the phase (none in another phase, none straddling a knob
    change). Only then is iperf3's own summary of the run a figure of the phase (plan mode);
    a stretch of a continuous run is not."""
    cols = session.intervals[phase.pair]
    if not len(cols):
        return None
    runs = np.unique(_column(cols, "run", np.int32)[
        _column(cols, "phase", np.int32) == phase.index]).tolist()
    if len(runs) != 1 or not within(session, session.runs[runs[0]], [phase.index]):
        return None
    return session.runs[runs[0]]


def measured_side(session: Session, phase: Phase) -> str | None:
    """Whose iperf3 lines a phase's throughput is, "sender" or "receiver": for TCP the
    client's (the sender's; the receiver's with -R), for UDP the receiving side's, as its runs'
    recorded options say. None when they do not say it (or disagree)."""
    cols = session.intervals[phase.pair]
    if not len(cols):
        return None
    in_phase = _column(cols, "phase", np.int32) == phase.index
    sides = set()
    for ix in np.unique(_column(cols, "run", np.int32)[in_phase]).tolist():
        options = session.runs[ix].options or {}
        if "udp" not in options and "reverse" not in options:
            return None
        sides.add("receiver" if options.get("udp") or options.get("reverse") else "sender")
    return sides.pop() if len(sides) == 1 else None


def config_groups(session: Session, pair: str) -> dict[str, list[Phase]]:
    """A pair's phases grouped by configuration, in order of first appearance."""
    groups: dict[str, list[Phase]] = {}
    for ph in session.phases_of(pair):
        groups.setdefault(config_id(ph.config), []).append(ph)
    return groups

