"""A console driver for the lab: the real console on the real engine, pressed as a person does,
checked after every key against the hosts and against what the session computes.

The console (abtui.ui.app.AbtuiApp) runs in-process under Textual's Pilot on an Engine over the
lab's profile, with the session journalled as `abtui tui` does. A walk is a list of steps drawn
from a seed before anything runs (`plan_walk`): knob keys, scope (tab, a, b), space, ctrl+r, p,
m + text, ctrl+t + a choice, s, e, ctrl+o, escape, ?, ctrl+l, ctrl+p, resizes between 160×48
and 80×24, and pauses. After every step `Walker.check` looks at:

- alive: the app still runs, and the dialog a step opened is closed again;
- screen follows the journal: every pane's interval count (`n N`) reaches, within LAG_S, what
  the engine had recorded when the check began;
- tables, on the events the console has folded (the engine's first `app.record.received`;
  the window it keeps, `app.recent`, must be their tail): the phase table
  (`app.phase_rows()`) equals abtui.stats' cells of the
  same events (what `abtui export` computes) — labels, counts and means —; no interval counts
  in two rows and straddling ones in none; a pane's current-phase mean/min/max are those of
  its current phase's non-straddling intervals;
- hosts, read independently over SSH (tests/lab/hostview.py): each knob's value as the
  console holds it (state, knob bar, panes) and as the engine's current phase records it
  equals what the hosts report;
- the step did what its key says: the scope chip, a knob flipped on the scope's pairs only,
  space starting or stopping, a mark recorded, a file saved or exported where the dialog said;
- at the current size, every knob chip and every pane's count is on screen;
- no error or refusal in the event log, and every open run still delivers intervals.

At the end (`Walker.finish`): stop with space, read the phase table off the screen, ctrl+q;
then every knob has its original host value, no tunnel, process or undo journal is left, and
`abtui export --format json` of the saved session equals the table read off the screen, with
each exported phase's configuration equal to what the hosts reported during it.

Failures are collected per check (first step and message, how often) so one run reports all
that is wrong; the walk stops early only when the app is gone. `Failures.report` starts with the
seed and the command that replays it.

Public surface used: app.state (pairs[..].config, phases), app.phase_rows(), app.knob_keys,
app.record.received, app.recent, a pane's lines (PairPane.text: tcp, config, head), the
widgets' ids (#knobbar, #phases, #plan-progress),
engine.book.phases[label].config (the configuration the engine records for the phase in force).
"""

from __future__ import annotations

import contextlib
import json
import math
import os
import random
import re
import subprocess
import sys
import time
from collections import Counter, deque
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from textual.pilot import Pilot
from textual.widgets import DataTable, Input, OptionList, Static
from textual.worker import WorkerState

from abtui.core.events import Event, EventKind
from abtui.core.labels import short_value
from abtui.core.model import KnobKind, Profile
from abtui.measure.engine.front import Engine
from abtui.ui.app import AbtuiApp
from abtui.ui.render.widgets import PairPane
from tests.lab.hostview import HostReader, Reading, norm

LAG_S = float(os.environ.get("ABTUI_WALK_LAG_S", "3"))  # the screen may trail the journal
SETTLE_S = 45.0  # a knob change or a tunnel switch must be done by then (a loaded machine)
STALL_S = 8.0  # an open run must have delivered an interval this recently
BIG, SMALL = (160, 48), (80, 24)
BUSY_GROUPS = {"knobs", "controller", "files"}
COUNT = re.compile(r"\bn (\d+)\b")
CELL = re.compile(r"(-?\d+(?:\.\d+)?)\s*n(\d+)")
# what the console logs when one of its own calls fails or a host refuses a knob (a run's
# error — a stream that stalls on a loaded machine — is the engine's report, noted apart)
ERROR_LINE = re.compile(r"\b(failed|refused)\b|Traceback", re.I)

# (action, weight): what a step does, and how often it is drawn
ACTIONS: tuple[tuple[str, int], ...] = (
    ("knob", 26), ("tunnel_key", 2), ("tunnel", 3), ("tab", 6), ("scope", 6), ("space", 6),
    ("restart", 4), ("plan", 3), ("mark", 3), ("save", 3), ("export", 3), ("compare", 3),
    ("escape", 4), ("resize", 7), ("help", 2), ("log", 2), ("palette", 2), ("dwell", 8),
)


# ---- the walk -----------------------------------------------------------------------------

@dataclass(slots=True)
class Step:
    n: int
    action: str
    arg: Any = None
    dwell: float = 0.0

    def __str__(self) -> str:
        return f"#{self.n} {self.action}" + ("" if self.arg is None else f" {self.arg}")


def plan_walk(seed: int, count: int, knob_keys: dict[str, str], profile: Profile,
              skip: Iterable[str] = ()) -> list[Step]:
    """`count` steps drawn from `seed` (the same seed gives the same walk); `skip` leaves
    actions out (to look past a known defect)."""
    rng = random.Random(seed)
    tunnel = next((k for k in profile.knobs if k.kind is KnobKind.TUNNEL), None)
    plain_keys = [k for k, name in knob_keys.items() if name != (tunnel.name if tunnel else "")]
    tunnel_key = next((k for k, name in knob_keys.items() if tunnel and name == tunnel.name),
                      None)
    actions = [a for a, _ in ACTIONS if a not in skip]
    weights = [w for a, w in ACTIONS if a not in skip]
    pairs = [p.label for p in profile.pairs]
    steps: list[Step] = []
    size = BIG
    for n in range(count):
        action = rng.choices(actions, weights)[0]
        arg: Any = None
        if action == "knob" and plain_keys:
            arg = rng.choice(plain_keys)
        elif action == "tunnel_key":
            if tunnel_key is None:
                action = "dwell"
            arg = tunnel_key
        elif action == "tunnel":
            arg = rng.choice([*(tunnel.values if tunnel else ()), "escape"])
        elif action == "scope":
            arg = rng.choice(pairs)
        elif action == "mark":
            arg = rng.choice([f"walk mark {n}", f"mark {n} [b]not bold[/b] $x"])
        elif action == "save":
            arg = rng.choice(["default", "typed"])
        elif action == "export":
            arg = rng.choice(["default", "csv", "json", "md"])
        elif action == "resize":
            size = SMALL if size == BIG else BIG
            arg = size
        steps.append(Step(n, action, arg, round(rng.uniform(0.0, 0.5), 2)))
    return steps


# ---- failures -----------------------------------------------------------------------------

@dataclass(slots=True)
class Failures:
    """Each failed check once (its first step and message), with the steps it failed at."""

    first: dict[str, tuple[int, str]] = field(default_factory=dict)
    steps: dict[str, list[int]] = field(default_factory=dict)
    timing: list[tuple[str, float]] = field(default_factory=list)  # (step, seconds)
    spent: dict[str, float] = field(default_factory=dict)  # check -> seconds in all
    notes: list[str] = field(default_factory=list)  # seen, but not the console's fault

    def add(self, check: str, step: int, message: str) -> None:
        self.first.setdefault(check, (step, message))
        self.steps.setdefault(check, []).append(step)

    def __bool__(self) -> bool:
        return bool(self.first)

    def report(self, seed: int, count: int, steps: Sequence[Step], test: str) -> str:
        lines = [f"console walk: seed {seed}, {count} steps; replay with "
                 f"ABTUI_WALK_SEED={seed} ABTUI_WALK_STEPS={count} pytest -q {test}"]
        for check, (step, message) in self.first.items():
            at = self.steps[check]
            where = ", ".join(map(str, at[:12])) + (", …" if len(at) > 12 else "")
            what = steps[step] if 0 <= step < len(steps) else "start" if step < 0 else "end"
            lines.append(f"- {check}: first at step {step} ({what}), "
                         f"{len(at)}× (steps {where}): {message}")
        lines += [f"note: {n}" for n in self.notes]
        lines.append("walk: " + " | ".join(str(s) for s in steps))
        lines.append(self.timing_line())
        return "\n".join(lines)

    def timing_line(self) -> str:
        if not self.timing:
            return "timing: -"
        slow = sorted(self.timing, key=lambda x: -x[1])[:5]
        total = sum(t for _, t in self.timing)
        return (f"timing: {total:.0f} s in all; slowest: "
                + ", ".join(f"{name} {t:.1f} s" for name, t in slow) + "; checks: "
                + ", ".join(f"{name} {t:.1f} s" for name, t in self.spent.items()))


# ---- reading the console ------------------------------------------------------------------

def plain(widget: Any) -> str:
    """A Static's text as shown (markup rendered, no styles)."""
    visual = widget.visual
    return str(getattr(visual, "plain", visual))


def screen_text(app: AbtuiApp) -> str:
    """The current screen as text (AbtuiApp.screen_text)."""
    return app.screen_text()


class LogTap(deque):  # type: ignore[type-arg]
    """The console's log lines (app.log_lines), also kept whole for the checks."""

    def __init__(self, lines: Iterable[str], maxlen: int | None, sink: list[str]) -> None:
        super().__init__(lines, maxlen)
        self.sink = sink
        sink.extend(self)

    def append(self, line: str) -> None:
        super().append(line)
        self.sink.append(line)


def countable(e: Event) -> bool:
    """An interval counted in its pair's series (not --bidir's way back, not omitted)."""
    d = e.record()
    return (e.kind is EventKind.INTERVAL and isinstance(d.get("bits_per_second"), int | float)
            and not d.get("omitted") and d.get("direction") != "rx")


class Journal(list):  # type: ignore[type-arg]
    """Every event the engine emitted, in order (subscribe it before the console), with
    running tallies the checks need after every step without rescanning."""

    def __init__(self) -> None:
        super().__init__()
        self.counts: Counter[str] = Counter()  # countable intervals per pair
        self.last_interval: dict[str, float] = {}
        self.open_runs: dict[str, float] = {}  # pair -> when its open run started
        self.changes = 0  # KNOB, TUNNEL and KNOB_ERROR events
        self.progress: dict[str, Any] | None = None

    def __call__(self, e: Event) -> None:
        self.append(e)
        if countable(e) and e.pair:
            self.counts[e.pair] += 1
            self.last_interval[e.pair] = e.t
        elif e.kind is EventKind.RUN_START and e.pair:
            self.open_runs[e.pair] = e.t
        elif e.kind is EventKind.RUN_END and e.pair:
            self.open_runs.pop(e.pair, None)
        elif e.kind in (EventKind.KNOB, EventKind.TUNNEL, EventKind.KNOB_ERROR):
            self.changes += 1
        elif e.kind is EventKind.PROGRESS:
            self.progress = e.record()


def interval_counts(events: Iterable[Event]) -> Counter[str]:
    return Counter(e.pair for e in events if countable(e) and e.pair)


def parse_cell(cell: str) -> tuple[float, int] | None:
    """A phase-table cell's figure and count: "12.3 n5 +1.2%" -> (12.3, 5), "155 n2" ->
    (155.0, 2)."""
    m = CELL.search(cell)
    return (float(m.group(1)), int(m.group(2))) if m else None


@dataclass(frozen=True, slots=True)
class Cell:
    """One pair under one configuration, as a table shows it: its figure in Gbit/s and how
    many values it is made of (what the cell prints), and, where known, how many intervals
    went into it (not printed; what tells two poolings apart)."""

    gbit: float
    n: int
    intervals: int | None = None


Table = dict[str, dict[str, Cell | None]]  # row label -> pair -> cell (None: "—")


def console_table(rows: Sequence[tuple[str, Sequence[str]]], pairs: Sequence[str],
                  intervals: Sequence[dict[str, int]] | None = None,
                  div: float = 1e9) -> Table:
    """The phase table from its labels and cells as shown (`app.phase_rows()`, or read off
    the screen; its figures in bits/s ÷ `div`, the unit its columns name), with each row's
    interval counts per pair when the console's state is at hand."""
    out: Table = {}
    for i, (label, cells) in enumerate(rows):
        row: dict[str, Cell | None] = {}
        for p, text in zip(pairs, cells, strict=False):
            got = parse_cell(str(text))
            row[p] = None if got is None else Cell(
                got[0] * div / 1e9, got[1], intervals[i].get(p) if intervals is not None else None)
        out[str(label)] = row
    return out


def export_table(configurations: Iterable[dict[str, Any]], labels: dict[str, str]) -> Table:
    """abtui export's `configurations` (stats.cells as JSON) by row label: the cell's figure
    is the mean of its run-level values (`throughput`), printed with their number; `labels`
    maps a configuration's id to the label tables print (the export's phases carry both)."""
    out: Table = {}
    for c in configurations:
        t, iv = c["throughput"], c.get("intervals") or {}
        out.setdefault(labels.get(c["config"], c["config"]), {})[c["pair"]] = (
            Cell(t["mean"] / 1e9, t["n"], iv.get("n")) if t.get("n") else None)
    return out


def table_differences(console: Table, export: Table, pairs: Sequence[str]
                      ) -> dict[str, list[str]]:
    """Where the console's table and the export's differ, by kind: "labels" (the rows'
    names and order), "numbers" (figure or count under one label), "pooling" (which
    intervals go together in a row, whatever the rows are called)."""
    out: dict[str, list[str]] = {}
    # a row with nothing counted yet (a configuration just entered) may show or not
    console = {k: v for k, v in console.items() if any(v.values())}
    export = {k: v for k, v in export.items() if any(v.values())}
    if set(console) != set(export):  # the same rows (in whatever order)
        out["labels"] = [f"console only {sorted(console.keys() - export.keys())}, export only "
                         f"{sorted(export.keys() - console.keys())}"]
    for label in console.keys() & export.keys():
        for p in pairs:
            a, b = console[label].get(p), export[label].get(p)
            if differs(a, b):
                out.setdefault("numbers", []).append(
                    f"{label!r} {p}: console {fmt(a)} ≠ export {fmt(b)}")

    # intervals per row where both tables know them, else the values the cells print
    by_intervals = all(c is None or c.intervals is not None
                       for t in (console, export) for row in t.values() for c in row.values())

    def pooled(table: Table) -> list[tuple[int, ...]]:
        rows = (tuple(how_many(row.get(p), by_intervals) for p in pairs)
                for row in table.values())
        return sorted(r for r in rows if any(r))

    pooled_c, pooled_e = pooled(console), pooled(export)
    if pooled_c != pooled_e:
        what = "intervals" if by_intervals else "values"
        out["pooling"] = [f"{what} per row and pair, sorted: console {pooled_c} ≠ export "
                          f"{pooled_e}"]
    return out


def differs(a: Cell | None, b: Cell | None) -> bool:
    """Two cells differ in what they print (to the figure's rounding) or, where both know
    it, in how many intervals they hold."""
    if a is None or b is None:
        return (a is None) != (b is None)
    if a.n != b.n or abs(a.gbit - b.gbit) > 0.0051 * max(abs(a.gbit), abs(b.gbit)):
        return True
    return a.intervals is not None and b.intervals is not None and a.intervals != b.intervals


def how_many(cell: Cell | None, intervals: bool) -> int:
    if cell is None:
        return 0
    return cell.intervals if intervals and cell.intervals is not None else cell.n


def fmt(v: Cell | None) -> str:
    if v is None:
        return "—"
    return f"{v.gbit:.2f} n{v.n}" + ("" if v.intervals is None else f" ({v.intervals} intervals)")


# ---- the driver ---------------------------------------------------------------------------

class Walker:
    """Presses a walk's keys on a running console and checks it after each (module doc)."""

    def __init__(self, app: AbtuiApp, pilot: Pilot[Any], engine: Engine, journal: Journal,
                 reader: HostReader, profile: Profile, originals: Reading, tmp: Path,
                 failures: Failures) -> None:
        self.app, self.pilot, self.engine, self.journal = app, pilot, engine, journal
        self.reader, self.profile, self.originals, self.tmp = reader, profile, originals, tmp
        self.failures = failures
        self.pairs = [p.label for p in profile.pairs]
        self.scopes = ["all", *self.pairs]
        self.scope = "all"
        self.size = BIG
        self.step = -1
        self.readings: list[Reading] = []
        self.shown_div = 1e9  # the unit (bits/s ÷ div) of the table finish() read off the screen
        self.shown_baseline: str | None = None  # the baseline row's name in that table
        self.read_at = -1  # how many changes the journal held at the last reading
        self.log: list[str] = []
        self.log_checked = 0
        self.plan_running = False
        self.knob_of_key = dict(app.knob_keys)
        app.event_log.lines = LogTap(app.log_lines, app.log_lines.maxlen, self.log)

    # ---- helpers ------------------------------------------------------------------------
    def fail(self, check: str, message: str) -> None:
        self.failures.add(check, self.step, message)

    def dead(self) -> str | None:
        # an exception that ended the app is raised again when its run_test context ends
        if self.app.return_code is not None or not self.app.is_running:
            return f"the app exited (return code {self.app.return_code})"
        return None

    async def pause(self, seconds: float = 0.05) -> None:
        await self.pilot.pause(seconds)

    async def wait_for(self, cond: Any, timeout: float) -> bool:
        deadline = time.monotonic() + timeout
        while not cond():
            if time.monotonic() > deadline or self.dead():
                return bool(cond())
            await self.pause(0.05)
        return True

    def scope_pairs(self) -> list[str]:
        return list(self.pairs) if self.scope == "all" else [self.scope]

    def busy(self) -> list[str]:
        workers = [f"{w.group}:{w.name}" for w in self.app.workers
                   if w.group in BUSY_GROUPS and w.state in (WorkerState.PENDING,
                                                             WorkerState.RUNNING)]
        workers += [f"knobs:{t.get_name()}" for t in self.app.calls.flips if not t.done()]
        changing = [f"knob change on {label}" for label, ph in self.engine.book.phases.items()
                    if ph.pending is not None]
        return workers + changing

    async def settle(self, timeout: float = SETTLE_S) -> None:
        """Until no console call is in flight and no knob change is half done."""
        if not await self.wait_for(lambda: not self.busy(), timeout):
            self.fail("settles", f"still busy {timeout:.0f} s after the key: {self.busy()}")

    def open_runs(self) -> dict[str, float]:
        """pair -> when its open run started (a RUN_START not yet followed by a RUN_END)."""
        return dict(self.journal.open_runs)

    async def stable_reading(self) -> Reading | None:
        """The hosts read between knob changes: nothing pending before and after, and no
        change recorded while reading (the plan flips knobs on its own)."""
        for _ in range(6):
            if not await self.wait_for(lambda: not self.busy(), 10):
                continue
            before = self._changes()
            reading = await self.reader.read()
            if self._changes() == before and not self.busy():
                self.read_at = before
                # and the console has folded every change recorded so far
                await self.folded(len(self.journal))
                return reading
            await self.pause(0.2)
        self.fail("hosts-readable", "the hosts could not be read between two knob changes")
        return None

    async def folded(self, n: int) -> bool:
        """Until the console has taken in the journal's first `n` events."""
        return await self.wait_for(lambda: self.app.record.received >= n, LAG_S)

    def _changes(self) -> int:
        return self.journal.changes

    def pane(self, label: str) -> PairPane:
        return self.app.query_one(f"#pane-{label}", PairPane)

    def pane_count(self, label: str) -> int | None:
        try:
            m = COUNT.search(self.pane(label).text("tcp"))
        except Exception:  # a pane without that line: reported as no count
            return None
        return int(m.group(1)) if m else None

    def knobbar(self) -> str:
        return plain(self.app.query_one("#knobbar", Static))

    def main_screen_active(self) -> bool:
        return self.app.screen is self.app.screen_stack[0]

    # ---- steps --------------------------------------------------------------------------
    async def run(self, steps: Sequence[Step]) -> None:
        t0 = time.monotonic()
        await self.startup()
        self.failures.timing.append(("start", time.monotonic() - t0))
        for step in steps:
            t0 = time.monotonic()
            self.step = step.n
            why = self.dead()
            if why:
                self.fail("alive", why)
                return
            try:
                await getattr(self, f"do_{step.action}")(step)
            except Exception as exc:  # the driver's own trouble with a dead or odd screen
                why = self.dead()
                self.fail("alive" if why else "driver", why or f"{type(exc).__name__}: {exc}")
                if why:
                    return
            acted = time.monotonic() - t0
            await self.pause(step.dwell)
            await self.check()
            if self.dead():
                return
            self.failures.timing.append((f"{step} (key {acted:.1f} s)", time.monotonic() - t0))

    async def startup(self) -> None:
        """Until the console has connected and both pairs have shown intervals."""
        self.step = -1
        ok = await self.wait_for(lambda: all(self.journal.counts[p] >= 2
                                             for p in self.pairs), 60)
        if not ok:
            self.fail("starts", f"no intervals from every pair within 60 s "
                      f"({dict(self.journal.counts)}); log: {self.log[-5:]}")
        await self.settle()
        await self.check()

    async def press(self, *keys: str) -> None:
        """Keys as a terminal sends them: queued one after another, each processed before
        the next. (Pilot.press also waits for the process to go idle, up to 2 s a key, which
        a console streaming from the lab on a loaded machine never is.)"""
        from textual import events
        from textual.keys import key_to_character

        for key in keys:  # Textual's key names ("question_mark", "ctrl+l", "a")
            self.app.post_message(events.Key(key, key_to_character(key)))
            with contextlib.suppress(Exception):  # a timeout: the checks wait for effects
                await self.pilot.pause(0)

    async def open_dialog(self, key: str, kind: type, what: str,
                          focus: type | None = None) -> Any:
        """Press `key`; the dialog it opens, once `focus` (a widget type) has the focus."""
        await self.press(key)
        if not await self.wait_for(lambda: isinstance(self.app.screen, kind), 5):
            self.fail("dialog-opens", f"{key}: no {what} dialog (screen: "
                      f"{type(self.app.screen).__name__})")
            return None
        screen = self.app.screen
        if focus is not None and not await self.wait_for(
                lambda: isinstance(screen.focused, focus), 5):
            self.fail("dialog-focus", f"{key}: the {what} dialog gave no {focus.__name__} "
                      f"the focus ({type(screen.focused).__name__} has it)")
        await self.pause()
        return screen

    async def do_knob(self, step: Step) -> None:
        await self._flip(step.arg, self.knob_of_key[step.arg], lambda: self.press(step.arg))

    async def do_tunnel_key(self, step: Step) -> None:
        await self.do_knob(step)

    async def do_tunnel(self, step: Step) -> None:
        from abtui.ui.render.screens import TunnelSwitcher

        knob = next(k for k in self.profile.knobs if k.kind is KnobKind.TUNNEL)

        async def choose() -> bool:
            screen = await self.open_dialog("ctrl+t", TunnelSwitcher, "tunnel", OptionList)
            if screen is None:
                return False
            if step.arg == "escape":
                await self.press("escape")
                return False
            ol = screen.query_one(OptionList)
            ids = [ol.get_option_at_index(i) for i in range(ol.option_count)]
            usable = [o.id for o in ids if not o.disabled]
            if step.arg not in usable:
                self.fail("tunnel-choice", f"{step.arg} not offered: {[o.id for o in ids]}")
                await self.press("escape")
                return False
            await self.press("home", *["down"] * usable.index(step.arg))

            def highlighted() -> str | None:
                return ol.get_option_at_index(ol.highlighted).id \
                    if ol.highlighted is not None else None

            await self.wait_for(lambda: highlighted() == step.arg, 2)  # keys land a bit later
            got = highlighted()
            if got != step.arg:
                self.fail("tunnel-choice", f"home + down ×{usable.index(step.arg)} "
                          f"highlights {got}, not {step.arg}")
                await self.press("escape")
                return False
            await self.press("enter")
            return True

        if step.arg == "escape":
            await choose()
            return
        await self._flip("ctrl+t", knob.name, choose, chosen=step.arg)

    async def _flip(self, key: str, knob: str, act: Any, chosen: str | None = None) -> None:
        """A knob key (or a tunnel choice): the knob changes on the scope's pairs, and only
        there; a pair whose host value did not change gets no new phase."""
        before = self.readings[-1] if self.readings and self._changes() == self.read_at \
            else await self.stable_reading()
        start = len(self.journal)
        scope = self.scope_pairs()
        plan = self.plan_running and knob in self.profile.plan.matrix
        if await act() is False:
            return
        await self.settle()
        after = await self.stable_reading()
        new = self.journal[start:]
        refused = [e for e in new if e.kind is EventKind.KNOB_ERROR]
        done = [e for e in new if e.kind is EventKind.KNOB and e.record().get("knob") == knob]
        if refused:
            self.fail("knob-refused", "; ".join(
                f"{e.record().get('knob')}={e.record().get('value')}: "
                f"{e.record().get('message')}" for e in refused))
        if before is None or after is None or plan:
            return
        b, a = before.pair_values(self.profile), after.pair_values(self.profile)
        first = scope[0]
        if chosen is None and not done and not refused:
            self.fail("knob-key", f"{key} ({knob}) on {'+'.join(scope)}: no change recorded")
        if chosen is None and a[first][knob] == b[first][knob] and not refused:
            self.fail("knob-key", f"{key} ({knob}) on {'+'.join(scope)}: {first}'s hosts "
                      f"still have {b[first][knob]!r}")
        want = chosen if chosen is not None else (norm(done[-1].record().get("value", ""))
                                                  if done else None)
        for p in self.pairs:
            if p in scope and want is not None and a[p][knob] != want and not refused:
                self.fail("knob-applied", f"{key} ({knob}={want}) on {'+'.join(scope)}: "
                          f"{p}'s hosts have {a[p][knob]!r}")
            if p not in scope and a[p][knob] != b[p][knob]:
                self.fail("knob-scope", f"{key} ({knob}) on {'+'.join(scope)} changed {p} "
                          f"too: {b[p][knob]!r} -> {a[p][knob]!r}")
            if p in scope and a[p] == b[p]:
                split = [e for e in new if e.kind is EventKind.PHASE and e.pair == p]
                if split:
                    self.fail("no-phase-without-change",
                              f"{key} ({knob}) left {p}'s hosts as they were "
                              f"({knob}={b[p][knob]!r}) but closed its phase "
                              f"{split[0].record().get('phase')} "
                              f"({split[0].record().get('config')})")

    async def do_tab(self, step: Step) -> None:
        await self.press("tab")
        self.scope = self.scopes[(self.scopes.index(self.scope) + 1) % len(self.scopes)]

    async def do_scope(self, step: Step) -> None:
        await self.press(str(step.arg).lower())
        self.scope = step.arg

    async def do_space(self, step: Step) -> None:
        was = bool(self.open_runs()) or self.plan_running
        said = self.app.state.running
        start = len(self.journal)
        await self.press("space")
        await self.settle()
        if was:
            ok = await self.wait_for(lambda: not self.open_runs(), 8)
            await self.pause(0.6)  # a plan or a follow loop would start the next run now
            if not ok or self.open_runs():
                self.fail("space-stops", f"space while measuring (console said "
                          f"{'running' if said else 'stopped'}): still running "
                          f"{sorted(self.open_runs())}; log: {self._new_log_errors() or '-'}")
            self.plan_running = False
        else:
            ok = await self.wait_for(lambda: set(self.open_runs()) == set(self.pairs), 20)
            if not ok:
                new = [e for e in self.journal[start:] if e.kind is EventKind.ERROR]
                self.fail("space-starts", f"space while stopped: runs open on "
                          f"{sorted(self.open_runs())}; errors: "
                          f"{[e.record().get('message') for e in new]}; log: "
                          f"{self._new_log_errors() or '-'}")

    async def do_restart(self, step: Step) -> None:
        await self.press("ctrl+r")
        await self.settle()
        self.plan_running = False
        if not await self.wait_for(lambda: set(self.open_runs()) == set(self.pairs), 20):
            self.fail("restart-runs", f"ctrl+r: runs open on {sorted(self.open_runs())}; log: "
                      f"{self._new_log_errors() or '-'}")

    async def do_plan(self, step: Step) -> None:
        start = len(self.journal)
        await self.press("p")
        await self.settle()
        got = await self.wait_for(lambda: any(e.kind is EventKind.PROGRESS
                                              for e in self.journal[start:]), 15)
        if self.dead():
            return
        if not got:
            self.fail("plan-starts", "p: no plan progress within 15 s")
            return
        self.plan_running = True
        bar = self.app.query_one("#plan-progress")
        if not await self.wait_for(lambda: bool(bar.display), LAG_S) and not self.dead():
            self.fail("plan-progress-shown", "p: the plan's progress bar is not shown")

    async def do_mark(self, step: Step) -> None:
        from abtui.ui.render.screens import TextPrompt

        start = len(self.journal)
        scope = self.scope
        if await self.open_dialog("m", TextPrompt, "mark", Input) is None:
            return
        # the text as typed, in one go (Pilot's key presses cost a second each when loaded)
        self.app.screen.query_one(Input).insert_text_at_cursor(step.arg)
        await self.pause()
        await self.press("tab")  # inside the dialog: must not change the scope behind it
        await self.press("enter")
        await self.settle()
        ok = await self.wait_for(lambda: any(
            e.kind is EventKind.MARK and e.record().get("text") == step.arg
            for e in self.journal[start:]), 5)
        if not ok:
            marks = [e.record().get("text") for e in self.journal[start:]
                     if e.kind is EventKind.MARK]
            self.fail("mark-recorded", f"m + {step.arg!r}: no such mark in the journal "
                      f"(marks: {marks})")
        elif not await self.wait_for(lambda: any(step.arg in line for line in self.log), LAG_S):
            self.fail("mark-shown", f"m + {step.arg!r}: recorded, but not in the event log as "
                      f"typed (last lines {self.log[-2:]})")
        if self._knobbar_scope() != scope:
            self.fail("dialog-keeps-scope", f"tab inside the mark dialog changed the scope "
                      f"from {scope} to {self._knobbar_scope()}")
            self.scope = self._knobbar_scope() or self.scope

    async def _path_dialog(self, key: str, what: str, path: Path | None) -> Path | None:
        """Open save/export, optionally type a path, confirm; returns the path it said."""
        from abtui.ui.render.screens import PathPrompt

        screen = await self.open_dialog(key, PathPrompt, what, Input)
        if screen is None:
            return None
        inp = screen.query_one("#path", Input)
        if path is not None:
            inp.value = str(path)  # typing the path (what a user does), in one go
            await self.pause()
        where = plain(screen.query_one("#where", Static))
        # "will write PATH", and " (replacing the file there)" when one is
        m = re.search(r"(/\S.*?)(?: \(replacing the file there\))?$", where)
        said = Path(m.group(1).strip()) if m else Path(inp.value)
        await self.press("enter")
        return said

    async def do_save(self, step: Step) -> None:
        typed = self.tmp / "saved" / f"walk-{step.n}.abtui.jsonl" if step.arg == "typed" \
            else None
        if typed:
            typed.parent.mkdir(exist_ok=True)
        intervals = sum(interval_counts(self.journal[:self.app.record.received]).values())
        lines = len(self.log)
        said = await self._path_dialog("s", "save", typed)
        if said is None:
            return
        await self.settle()
        target = typed or said  # a typed X.abtui.jsonl is written exactly there, plain
        if typed is not None and said != typed:
            self.fail("save-where-typed", f"s: typed {typed}, the dialog said it would "
                      f"write {said}")
        # the console says how it went in its log: "saved ..." or "save failed: ..."
        said_line = await self.wait_for(
            lambda: any("sav" in line.lower() for line in self.log[lines:]), 15)
        told = [line.strip() for line in self.log[lines:] if "sav" in line.lower()]
        if said_line and any(ERROR_LINE.search(line) for line in told):
            self.fail("save", f"s ({step.arg}, the dialog said {said}): {told[-1]}")
            return
        if not target.exists():
            self.fail("save", f"s ({step.arg}): nothing at {target} (the dialog said {said}); "
                      f"log: {told or self.log[-1:]}")
            return
        from abtui.sessions.session import Session

        try:
            saved = Session.load(target)
        except Exception as exc:
            self.fail("save", f"s ({step.arg}): {target} does not load: {exc}")
            return
        got = sum(int(saved.intervals[p]["t"].__len__()) for p in saved.intervals)
        if got < intervals:
            self.fail("save-complete", f"s ({step.arg}): {target} holds {got} intervals, the "
                      f"console had shown {intervals}")
        if typed is not None:
            if target.read_bytes()[:2] == b"\x1f\x8b":
                self.fail("save-where-typed", f"s: typed {typed.name}, written gzip'ed")
            try:  # what the user does next with it
                export_json(typed)
            except AssertionError as exc:
                self.fail("save-exports", str(exc))

    async def do_export(self, step: Step) -> None:
        typed = None if step.arg == "default" else \
            self.tmp / "exports" / f"walk-{step.n}.{step.arg}"
        if typed:
            typed.parent.mkdir(exist_ok=True)
        lines = len(self.log)
        said = await self._path_dialog("e", "export", typed)
        if said is None:
            return
        await self.settle()
        target = typed or said
        await self.wait_for(lambda: any("export" in line for line in self.log[lines:]), 30)
        told = [line.strip() for line in self.log[lines:] if "export" in line]
        if any(ERROR_LINE.search(line) for line in told):
            self.fail("export", f"e ({step.arg}, the dialog said {said}): {told[-1]}")
        elif not await self.wait_for(lambda: target.exists() and target.stat().st_size > 0, 5):
            self.fail("export", f"e ({step.arg}): nothing at {target} (the dialog said "
                      f"{said}); log: {told or self.log[-1:]}")
        elif typed is not None and said != typed:
            self.fail("export", f"e: typed {typed}, the dialog said it would write {said}")

    async def do_compare(self, step: Step) -> None:
        from abtui.ui.render.screens import CompareScreen

        screen = await self.open_dialog("ctrl+o", CompareScreen, "compare")
        if screen is None:
            return
        rows = screen.query_one("#compare-table", DataTable).row_count
        if rows != len(self.app.state.phases):
            self.fail("compare-rows", f"ctrl+o: {rows} rows, the phase table has "
                      f"{len(self.app.state.phases)}")
        await self.press("escape")

    async def do_escape(self, step: Step) -> None:
        await self.press("escape")

    async def do_resize(self, step: Step) -> None:
        self.size = step.arg
        await self.pilot.resize_terminal(*step.arg)
        await self.pause(0.2)

    async def do_help(self, step: Step) -> None:
        from textual.widgets import HelpPanel

        await self.press("question_mark")  # Textual's keys panel, beside the screen
        await self.pause()
        if not self.app.screen.query(HelpPanel):
            self.fail("help-opens", "?: no keys panel")
            return
        shown = set(self.app.screen.active_bindings)  # what the keys panel lists
        missing = [k for k in self.knob_of_key if k not in shown]
        if missing:
            self.fail("help-lists-keys", f"?: knob keys {missing} not in the help")
        await self.press("question_mark")

    async def do_log(self, step: Step) -> None:
        log = self.app.query_one("#log")
        bottom = self.app.query_one("#bottom")

        def how() -> tuple[bool, bool]:
            """Shown, and collapsed to its latest line (a short narrow screen: there ctrl+l
            shows the log whole or collapses it, elsewhere it shows or hides it)."""
            return bool(log.display), bottom.has_class("-collapsed")

        before = how()
        await self.press("ctrl+l")
        await self.pause()
        if how() == before:
            self.fail("log-toggles", "ctrl+l did not show/hide (or expand/collapse) the "
                      "event log")

    async def do_palette(self, step: Step) -> None:
        from textual.command import CommandPalette

        if await self.open_dialog("ctrl+p", CommandPalette, "command palette") is not None:
            await self.press("escape")

    async def do_dwell(self, step: Step) -> None:
        await self.pause(0.6)

    # ---- checks -------------------------------------------------------------------------
    async def check(self) -> None:
        why = self.dead()
        if why:
            self.fail("alive", why)
            return
        if not self.main_screen_active():
            self.fail("dialog-closes", f"after {self.step}: {type(self.app.screen).__name__} "
                      "still open")
            await self.press("escape")
        await self.timed("settle", self.settle())
        p = self.journal.progress
        if p and p.get("done") == p.get("total"):
            self.plan_running = False  # the plan ran to its end
        await self.timed("screen", self.check_screen_follows())
        await self.timed("tables", self.check_tables())
        await self.timed("hosts", self.check_hosts())
        await self.timed("visible", self.check_visible())
        self.check_log()
        self.check_measuring()

    async def timed(self, name: str, coro: Any) -> None:
        t0 = time.monotonic()
        await coro
        self.failures.spent[name] = self.failures.spent.get(name, 0.0) + time.monotonic() - t0

    async def check_screen_follows(self) -> None:
        target = Counter(self.journal.counts)

        def behind() -> dict[str, tuple[int | None, int]]:
            out = {}
            for p in self.pairs:
                shown = self.pane_count(p)
                if shown is None or shown < target[p]:
                    out[p] = (shown, target[p])
            return out

        if not await self.wait_for(lambda: not behind(), LAG_S):
            late = behind()
            app = self.app
            self.fail("screen-follows-journal", "; ".join(
                f"pane {p} shows n {s}, the journal had {t} when the check began "
                f"(waited {LAG_S:g} s)" for p, (s, t) in late.items()) +
                # where the events stand (the console's own attributes, for diagnosis)
                f"; console: {app.record.received} of {len(self.journal)} events taken in, "
                f"{len(app.feed.pending)} queued, next flush due "
                f"{app.feed.due} (now {time.perf_counter():.3f})")

    def baseline_label(self) -> str | None:
        """The console's name for the baseline's row (None: no such row yet)."""
        from abtui.core.configuration import config_changes

        state = self.app.state
        rows = [r for r in state.phases.values() if not config_changes(r.config, state.baseline)]
        return state.row_label(rows[0]) if rows else None

    async def check_tables(self) -> None:
        from abtui.core.configuration import config_id
        from abtui.reports import stats
        from abtui.sessions.session import Session

        received = self.app.record.received
        events = self.journal[:received]
        recent = list(self.app.recent)
        if received > len(self.journal) or any(
                a is not b for a, b in zip(recent, events[received - len(recent):],
                                           strict=True)):
            self.fail("console-events-prefix", "the console's events are not the journal's "
                      "first events (what `s` saves differs from what was recorded)")
        session = Session.from_events(events)
        labels = console_names({config_id(ph.config): session.config_label(ph.config)
                                for ph in session.phases}, self.baseline_label())
        export = export_table((c.to_json() for row in stats.cells(session).values()
                               for c in row.values()), labels)
        counts = [{p: sum(seg.n for seg in segs) for p, segs in row.segments.items()}
                  for row in self.app.state.phases.values()]
        unit = self.app.state.rate_unit()  # the unit phase_rows() prints in, now
        console = console_table(self.app.phase_rows(), self.pairs, counts, unit.div)
        for kind, diff in table_differences(console, export, self.pairs).items():
            self.fail(f"table-{kind}=export", "; ".join(diff))
        # every interval counts once, straddling ones nowhere
        rows = self.app.state.phases.values()
        for p in self.pairs:
            counted = sum(r.per_pair[p].n for r in rows if p in r.per_pair)
            want = sum(1 for e in events if e.pair == p and countable(e)
                       and not e.record().get("straddles"))
            if counted != want:
                self.fail("interval-counted-once", f"{p}: the phase table counts {counted} "
                          f"intervals, the journal has {want} outside straddles")
        self.check_pane_phase(events)

    def check_pane_phase(self, events: list[Event]) -> None:
        """A pane's current-phase numbers: its current phase's intervals, no straddler (n,
        min, max of their rates; its mean the phase's run-level figure, run_level). Once
        that phase is closed (a stop, or a change with no interval after it yet) the pane may
        show it still, or nothing."""
        for p in self.pairs:
            closed = {e.record().get("phase") for e in events
                      if e.kind is EventKind.PHASE and e.pair == p}
            mine = [e for e in events if e.pair == p and countable(e)]
            current = mine[-1].record().get("phase") if mine else None
            phase = [e.record() for e in mine
                     if e.record().get("phase") == current and not e.record().get("straddles")]
            values = [float(d["bits_per_second"]) for d in phase]
            wants = [(*summary(values)[:3], run_level(phase) if phase else None)] + (
                [summary([])] if current in closed else [])
            pane = self.app.state.pairs[p]
            ps = pane.phase
            got = (ps.n, ps.lo, ps.hi, pane.phase_rate) if ps.n else summary([])
            if not any(same(got, want) for want in wants):
                want = wants[0]
                strad = sum(1 for e in mine if e.record().get("phase") == current
                            and e.record().get("straddles"))
                self.fail("pane-phase-stats", f"pane {p}: current phase {current} has "
                          f"n {want[0]} min/max/mean {gbit(want[1])}/{gbit(want[2])}/"
                          f"{gbit(want[3])} ({strad} straddling left out); the pane has n "
                          f"{got[0]} {gbit(got[1])}/{gbit(got[2])}/{gbit(got[3])}")

    async def check_hosts(self) -> None:
        reading = await self.stable_reading()
        if reading is None:
            return
        self.readings.append(reading)
        want = reading.pair_values(self.profile)
        orig = self.originals.pair_values(self.profile)
        state, phases = [], []
        for p in self.pairs:
            config = self.app.state.pairs[p].config
            full = {**orig[p], **{k: norm(v) for k, v in self.engine.book.phases[p].config.items()}}
            for knob, value in want[p].items():
                if norm(config.get(knob, "<none>")) != value:
                    state.append(f"{p} {knob}: console {config.get(knob)!r}, hosts {value!r}")
                if full.get(knob) != value:
                    phases.append(f"{p} {knob}: phase {full.get(knob)!r}, hosts {value!r}")
        if state:
            self.fail("console-config=hosts", "; ".join(state))
        if phases:
            self.fail("phase-config=hosts", "; ".join(phases))
        bar = norm(self.knobbar())
        scope = self.scope_pairs()
        missing = []
        for knob, value in want[scope[0]].items():
            values = {p: want[p][knob] for p in scope}
            if len(set(values.values())) == 1:  # the scope's pairs agree: their value
                shown = [f"{knob}={value}"]
            else:  # they differ: the knob's chip names each pair's
                shown = [f"{knob}=", *(f"{p}:{v}" for p, v in values.items())]
            if not all(x in bar for x in shown):
                missing.append(" ".join(shown))
        if missing:
            self.fail("knobbar=hosts", f"knob bar {bar!r} lacks {missing} (scope "
                      f"{self.scope}: what its hosts have)")
        chip = self._knobbar_scope()
        if chip != self.scope:
            self.fail("scope-shown", f"knob bar scope {chip!r}, expected {self.scope!r}")
        panes = []
        for p in self.pairs:
            try:
                text = norm(self.pane(p).text("config") + " " + self.pane(p).text("head"))
            except Exception as exc:
                panes.append(f"{p}: {exc}")
                continue
            for knob in self.profile.knobs:
                v = want[p].get(knob.name)
                shown = [f"{knob.name}={v}"] + ([f"tunnel {v}"] if knob.kind is KnobKind.TUNNEL
                                                else [])
                if v is not None and not any(x in text for x in shown):
                    panes.append(f"{p} lacks {shown[0]!r}")
        if panes:
            self.fail("pane-config=hosts", "; ".join(panes))

    def _knobbar_scope(self) -> str | None:
        """The scope the knob bar shows: its first word naming pairs ("A+B", "all", "A")."""
        for word in self.knobbar().split()[:4]:
            if word == "all" or (len(self.pairs) > 1
                                 and set(word.split("+")) == set(self.pairs)):
                return "all"
            if word in self.pairs:
                return word
        return None

    async def check_visible(self) -> None:
        """At the current size: every knob's chip (its key and name) in the knob bar's part
        of the screen, and every pane with its interval count."""
        if not self.main_screen_active():
            return
        lines = screen_text(self.app).splitlines()
        w, h = self.size
        bar = self.app.query_one("#knobbar").region
        shown = " ".join(line[bar.x:bar.right] for line in lines[bar.y:bar.bottom])
        gone = [f"{key} {name}" for key, name in self.knob_of_key.items()
                if not re.search(rf"(^|\s){re.escape(key)} {re.escape(name)}\b", shown)]
        if gone:
            self.fail(f"knobs-shown-at-{w}x{h}", f"knob bar shows {shown.strip()!r}: no "
                      f"{gone}")
        counts = len(COUNT.findall("\n".join(lines)))
        if counts < len(self.pairs):
            panes = [line.strip() for line in lines if "cwnd" in line or "retr" in line]
            self.fail(f"panes-shown-at-{w}x{h}", f"{counts} pane interval counts on screen "
                      f"for {len(self.pairs)} pairs: {panes[:2]}")

    def _new_log_errors(self) -> list[str]:
        return [line for line in self.log[self.log_checked:] if ERROR_LINE.search(line)]

    def check_log(self) -> None:
        bad = self._new_log_errors()
        self.log_checked = len(self.log)
        if bad:
            self.fail("log-clean", " | ".join(line.strip() for line in bad[:4]))

    def check_measuring(self) -> None:
        now = time.time()
        last = self.journal.last_interval
        for p, started in self.open_runs().items():
            if now - started > STALL_S and now - last.get(p, 0) > STALL_S:
                self.fail("measuring", f"pair {p}: run open {now - started:.0f} s, last "
                          f"interval {now - last.get(p, started):.0f} s ago")

    # ---- the end ------------------------------------------------------------------------
    async def displayed_table(self) -> list[tuple[str, list[str]]]:
        table = self.app.query_one("#phases", DataTable)
        rows = self.app.phase_rows()
        await self.wait_for(lambda: [c for _, c in self._table_rows(table)] ==
                            [[str(c) for c in b] for _, b in rows], 3)
        return self._table_rows(table)

    @staticmethod
    def _table_rows(table: DataTable[Any]) -> list[tuple[str, list[str]]]:
        out = []
        for i in range(table.row_count):
            cells = [str(c) for c in table.get_row_at(i)]
            out.append((cells[0], cells[1:]))
        return out

    async def finish(self) -> list[tuple[str, list[str]]] | None:
        """Stop with space, read the phase table off the screen, leave with ctrl+q."""
        self.step += 1
        if self.dead():
            return None
        if not self.main_screen_active():
            await self.press("escape")
        if self.open_runs() or self.plan_running:
            await self.press("space")
            await self.settle()
            if not await self.wait_for(lambda: not self.open_runs(), 8):
                self.fail("space-stops", f"the final space left runs open on "
                          f"{sorted(self.open_runs())}; stopping from the palette")
                self.app.main_screen.action_stop()  # the palette's "Stop measuring"
                await self.settle()
                await self.wait_for(lambda: not self.open_runs(), 15)
        n = len(self.journal)
        await self.wait_for(lambda: self.app.record.received >= n, LAG_S)
        await self.pause(1.0)  # the table repaints at most twice a second
        await self.check_tables()
        shown = await self.displayed_table()
        rows = [(str(a), [str(c) for c in b]) for a, b in self.app.phase_rows()]
        wrong = [f"{a!r} {ca} shown as {b!r} {cb}" for (a, ca), (b, cb) in zip(rows, shown,
                                                                                strict=False)
                 if ca != cb or not shortened(a, b)]
        if len(shown) != len(rows) or wrong:
            self.fail("table-shown", f"the phase table on screen has {len(shown)} rows, the "
                      f"console {len(rows)}: {wrong[:3]}")
        labels = [b for b, _ in shown]
        if len(set(labels)) != len(labels):
            w, h = self.size
            self.fail("table-labels-distinct", f"at {w}x{h}, rows of different configurations "
                      f"read the same: {sorted({x for x in labels if labels.count(x) > 1})}")
        shown = [(a, cb) for (a, _), (_, cb) in zip(rows, shown, strict=False)]
        self.shown_div = self.app.state.rate_unit().div  # the unit the table showed
        self.shown_baseline = self.baseline_label()  # how it named the baseline's row
        await self.press("ctrl+q")
        if not await self.wait_for(lambda: self.app.return_code is not None, 90):
            self.fail("quits", "ctrl+q: still running 90 s later")
        elif self.app.return_code != 0:
            self.fail("quits", f"ctrl+q: return code {self.app.return_code}; log: "
                      f"{self._new_log_errors()}")
        return shown


Stats = tuple[int, float | None, float | None, float | None]  # n, min, max, mean


def summary(values: Sequence[float]) -> Stats:
    if not values:
        return (0, None, None, None)
    return (len(values), min(values), max(values), sum(values) / len(values))


def run_level(intervals: Sequence[dict[str, Any]]) -> float | None:
    """The figure a pane's mean and the tables print: per run, the intervals' bits ÷ their
    seconds; the mean over runs."""
    runs: dict[Any, list[float]] = {}
    for d in intervals:
        span = float(d["end"]) - float(d["start"])
        acc = runs.setdefault(d.get("run"), [0.0, 0.0])
        acc[0] += float(d["bits_per_second"]) * span
        acc[1] += span
    rates = [bits / secs for bits, secs in runs.values() if secs > 0]
    return sum(rates) / len(rates) if rates else None


def same(a: Stats, b: Stats) -> bool:
    return a[0] == b[0] and all(
        (x is None) == (y is None) and (x is None or y is None or math.isclose(x, y,
                                                                            rel_tol=1e-9))
        for x, y in zip(a[1:], b[1:], strict=True))


def shortened(label: str, shown: str) -> bool:
    """`shown` is `label`, or a short form of it (abtui.core.labels): each knob it names is
    one of the label's, by its name or its name's last part, its value as is or in binary
    units; those it leaves out are `…`; a row number may lead; the last knob may be cut."""
    if shown == label:
        return True
    parts = label.split(", ")
    forms = set(parts)
    for part in parts:
        name, _, value = part.partition("=")
        for n in (name, re.split(r"[_.\-]", name)[-1]):
            forms |= {f"{n}={value}", f"{n}={short_value(value)}"}
    shown = re.sub(r"^\d+ ", "", shown)
    items = shown.split(",")
    for i, item in enumerate(items):
        last_cut = i == len(items) - 1 and item.endswith("…")
        if item != "…" and item not in forms and not (
                last_cut and any(f.startswith(item[:-1]) for f in forms)):
            return False
    return "…" in shown or len(items) == len(parts)


def gbit(x: float | None) -> str:
    return "–" if x is None else f"{x / 1e9:.2f}"


# ---- after the console has gone ------------------------------------------------------------

def console_names(labels: dict[str, str], baseline: str | None) -> dict[str, str]:
    """The export's labels as the console names its rows: the baseline's (`initial` in the
    export) as the console's own baseline row reads (by its values of the knobs the other
    rows change, as the report names it: abtui.ui.model.state.ConsoleState.row_label)."""
    from abtui.core.configuration import INITIAL

    if baseline is None:
        return labels
    return {cid: baseline if label == INITIAL else label for cid, label in labels.items()}


def export_json(path: Path) -> dict[str, Any]:
    """`abtui export PATH --format json`, the real command."""
    out = subprocess.run([sys.executable, "-m", "abtui", "export", str(path), "--format",
                          "json"], capture_output=True, text=True, timeout=120)
    if out.returncode != 0:
        raise AssertionError(f"abtui export {path} --format json: rc {out.returncode}: "
                             f"{out.stderr.strip()}")
    return dict(json.loads(out.stdout))


def check_export(doc: dict[str, Any], shown: Sequence[tuple[str, Sequence[str]]] | None,
                 journal: list[Event], readings: list[Reading], originals: Reading,
                 profile: Profile, failures: Failures, step: int, div: float = 1e9,
                 baseline: str | None = None) -> None:
    """The saved session's export against the screen, the journal and the hosts: each
    phase's configuration against the readings taken while it measured."""
    pairs = [p.label for p in profile.pairs]
    if shown is not None:
        labels = console_names({ph["configuration"]: ph.get("label", ph["configuration"])
                                for ph in doc["phases"]}, baseline)
        export = export_table(doc["configurations"], labels)
        for kind, diff in table_differences(console_table(shown, pairs, div=div), export,
                                            pairs).items():
            failures.add(f"screen-table-{kind}=abtui-export", step, "; ".join(diff))
    # no interval in two phases, straddling ones in none
    seen: dict[tuple[Any, ...], int] = {}
    for ph in doc["phases"]:
        for iv in ph["intervals"]:
            key = (iv["pair"], iv["run"], iv["start"], iv["end"], iv.get("direction"))
            seen[key] = seen.get(key, 0) + 1
    twice = [k for k, n in seen.items() if n > 1]
    if twice:
        failures.add("export-interval-once", step, f"{len(twice)} intervals in two phases, "
                     f"e.g. {twice[:3]}")
    straddling = {(iv["pair"], iv["run"], iv["start"], iv["end"], iv.get("direction"))
                  for iv in doc["straddling_intervals"]}
    both = straddling & seen.keys()
    if both:
        failures.add("export-straddlers-nowhere", step, f"{len(both)} straddling intervals "
                     f"counted in a phase, e.g. {sorted(both)[:3]}")
    check_straddles(journal, failures, step)
    # each phase's configuration is what the hosts had while it lasted
    check_restarts(journal, profile, failures, step)
    # when each phase measured: from its first counted interval's start to its last's end
    measured: dict[tuple[str, Any], list[float]] = {}
    for e in journal:
        if countable(e) and not e.record().get("straddles"):
            span = e.record().get("end", 0) - e.record().get("start", 0)
            w = measured.setdefault((e.pair, e.record().get("phase")), [e.t - span, e.t])
            w[0], w[1] = min(w[0], e.t - span), max(w[1], e.t)
    orig = originals.pair_values(profile)
    wrong = []
    compared = 0
    for ph in doc["phases"]:
        start, end = measured.get((ph["pair"], ph["phase"]), (None, None))
        if start is None or end is None:
            continue
        full = {**orig[ph["pair"]], **{k: norm(str(v)) for k, v in ph["config"].items()}}
        for r in readings:
            if start + 0.3 < r.t < end - 0.3:
                compared += 1
                have = r.pair_values(profile)[ph["pair"]]
                bad = {k: (full.get(k), v) for k, v in have.items() if full.get(k) != v}
                if bad:
                    wrong.append(f"{ph['pair']} phase {ph['phase']} "
                                 f"({ph['configuration']}): " + ", ".join(
                                     f"{k} says {a!r}, hosts had {b!r}"
                                     for k, (a, b) in bad.items()))
                    break
    if wrong:
        failures.add("export-phase-config=hosts", step, "; ".join(wrong[:4]))
    failures.notes.append(f"{len(doc['phases'])} exported phases, {compared} (phase, host "
                          f"reading) pairs compared")


def check_restarts(journal: list[Event], profile: Profile, failures: Failures,
                   step: int) -> None:
    """A knob that only new connections see (every knob not declared `live`: a sysctl by
    default, a tunnel, an iperf3 option) ends the pair's run: what that run still measures
    after the change was measured under the old setting, so none of it may count in the new
    phase."""
    restarting = {k.name for k in profile.knobs if k.restarts}
    open_run: dict[str, Any] = {}
    superseded: dict[tuple[str, Any], tuple[str, float]] = {}  # (pair, run) -> knob, when
    counted = []
    for e in journal:
        if e.kind is EventKind.RUN_START and e.pair:
            open_run[e.pair] = e.record().get("run")
        elif e.kind is EventKind.KNOB and e.record().get("knob") in restarting:
            for p in e.record().get("pairs") or []:
                if p in open_run:
                    superseded[(p, open_run[p])] = (str(e.record().get("knob")), e.t)
        elif countable(e) and not e.record().get("straddles"):
            why = superseded.get((e.pair, e.record().get("run")))
            if why and e.t > why[1]:
                counted.append(f"{e.pair} run {e.record().get('run')} {e.record().get('start'):g}-"
                               f"{e.record().get('end'):g} s, {e.t - why[1]:.2f} s after "
                               f"{why[0]} changed, in phase {e.record().get('phase')}")
    if counted:
        failures.add("old-run-not-in-new-phase", step, f"{len(counted)} intervals of a run "
                     f"a restarting knob ended count in the phase after it, e.g. {counted[:3]}")


def check_straddles(journal: list[Event], failures: Failures, step: int,
                    latency: float = 0.3) -> None:
    """An interval whose span clearly contains a knob change on its pair is a straddler: the
    change's end lies after the interval began and `latency` before it arrived."""
    changes = [(e.t, set(e.record().get("pairs") or [])) for e in journal
               if e.kind is EventKind.KNOB]
    missed = []
    spanned = 0
    for e in journal:
        if not countable(e):
            continue
        if e.record().get("straddles"):
            spanned += 1
            continue
        start, end = e.record().get("start"), e.record().get("end")
        if not isinstance(start, int | float) or not isinstance(end, int | float):
            continue
        began = e.t - (end - start)
        for t, pairs in changes:
            if e.pair in pairs and began + 0.05 < t < e.t - latency:
                spanned += 1
                missed.append(f"{e.pair} run {e.record().get('run')} {start:g}-{end:g} s "
                              f"(knob change {e.t - t:.2f} s before it arrived)")
                break
    failures.notes.append(f"{len(changes)} knob changes, {spanned} intervals across one")
    if missed:
        failures.add("straddlers-marked", step, f"{len(missed)} intervals measured across a "
                     f"knob change not marked straddles, e.g. {missed[:3]}")
