"""Pilot tests of the console on a replay: panes, knob keys, phases, lost links, errors,
export, save, help, palette, quitting."""

from __future__ import annotations

import csv
import math
from pathlib import Path

import pytest
from textual.binding import Binding
from textual.command import CommandList, CommandPalette
from textual.widgets import DataTable, HelpPanel, Input, ProgressBar

from abtui.core.events import Event, EventKind, Facts, Link
from abtui.core.model import LinkState
from abtui.measure.replay.synthetic import T0, synthetic_events, synthetic_profile
from abtui.sessions.reader import load_events
from abtui.ui.app import AbtuiApp
from abtui.ui.render.screens import CompareScreen, PathPrompt, TunnelSwitcher
from abtui.ui.render.widgets import PairPane
from tests.ui.console_kit import FakeClock, SpyController, make_app, replayed, settle, until

pytestmark = pytest.mark.ui


def log_text(app) -> str:  # type: ignore[no-untyped-def]
    return "\n".join(app.log_lines)


@pytest.mark.parametrize("pairs,size,cols", [(2, (80, 24), 2), (3, (80, 24), 2),
                                             (8, (160, 48), 4)])
async def test_a_pane_per_pair_two_per_80_columns(pairs: int, size: tuple[int, int],
                                                  cols: int) -> None:
    app = make_app(pairs=pairs, intervals=6)
    async with app.run_test(size=size) as pilot:
        await replayed(pilot, 6)
        panes = list(app.query(PairPane))
        assert [p.state.label for p in panes] == list("ABCDEFGH"[:pairs])
        assert app.query_one("#panes").styles.grid_size_columns == cols
        tops = sorted({p.region.y for p in panes})
        assert len(tops) == -(-pairs // cols)  # rows of the grid
        a = panes[0]
        assert "a-snd → a-rcv" in str(a.border_title)
        assert "6.1.0-18-amd64" in a.text("head")
        assert a.series("bps").data == list(a.state.bps)
        assert len(a.state.bps) == 6
        # one scale for every pane: the highest interval seen anywhere
        ceilings = {p.series("bps").ceiling for p in panes}
        assert ceilings == {max(max(p.state.bps) for p in panes)}


async def test_knob_key_calls_set_knob_and_adds_a_phase_row() -> None:
    app = make_app(intervals=10)
    async with app.run_test() as pilot:
        await replayed(pilot, 10)
        table = app.query_one("#phases", DataTable)
        rows_before = table.row_count  # initial, and the recording's tcp_wmem flip
        assert rows_before == 2
        await pilot.press("t")
        await until(pilot, lambda: table.row_count == rows_before + 1)
        assert app.controller.calls[-1] == ("set_knob", "tso", "off", ["A", "B"])
        labels = [str(table.get_cell_at((i, 0))) for i in range(table.row_count)]
        assert labels[-1] == "tcp_wmem=4096 16384 65536, tso=off"  # as export names it
        pane_b = app.query_one("#pane-B", PairPane)
        assert "tso=off" in pane_b.text("config")
        assert "tso=off" in str(app.query_one("#knobbar").render())
        # the next interval of each affected pair carries the marker
        assert pane_b.state.pending_marker
        # scope: tab selects A only; the next knob press touches A alone
        await pilot.press("tab")
        assert app.knobbar().plain.startswith(" A  ")
        await pilot.press("c")
        await until(pilot, lambda: app.state.pairs["A"].config["cc"] == "bbr")
        assert app.controller.calls[-1] == ("set_knob", "cc", "bbr", ["A"])
        assert app.state.pairs["B"].config["cc"] == "reno"


async def test_knob_change_marks_the_sparklines_and_moves_the_level() -> None:
    profile = synthetic_profile(2)
    ctl = SpyController(profile, speed=50.0, seed=1)  # live synthetic stream, 20 ms/interval
    app = AbtuiApp(ctl)
    async with app.run_test() as pilot:
        await until(pilot, lambda: app.state.pairs["B"].intervals >= 8)
        await pilot.press("w")  # tcp_wmem to 64 KiB: about half the throughput
        await until(pilot, lambda: ctl.configs["B"]["tcp_wmem"] == "4096 16384 65536")
        n = app.state.pairs["B"].intervals
        await until(pilot, lambda: app.state.pairs["B"].intervals >= n + 8)
        await ctl.stop()
        for label in "AB":
            ps = app.state.pairs[label]
            assert list(ps.markers).count(True) == 1
            spark = app.query_one(f"#pane-{label}", PairPane).series("bps")
            assert list(spark.markers) == list(ps.markers)
            at = list(ps.markers).index(True)
            before, after = list(ps.bps)[:at - 1], list(ps.bps)[at + 1:]
            assert sum(after) / len(after) < 0.7 * sum(before) / len(before)


def _lost_link_recording() -> list[Event]:
    """Ten intervals for both pairs; then b-snd's link is lost and only A goes on."""
    profile = synthetic_profile(2)
    events = synthetic_events(profile, intervals=20, seed=3, flip_at=100)
    cut = T0 + 10
    out = [e for e in events if e.t <= cut]
    out.append(Event.of(Link(state=str(LinkState.LOST), message="connection reset"), cut + 0.5,
                        host="b-snd"))
    out += [e for e in events if e.t > cut and e.pair != "B"]
    return out


async def test_lost_link_shows_while_the_other_pane_keeps_updating() -> None:
    app = make_app(events=_lost_link_recording())
    async with app.run_test() as pilot:
        await until(pilot, lambda: app.state.intervals_seen >= 30
                    and not app.controller.running)
        a, b = app.query_one("#pane-A", PairPane), app.query_one("#pane-B", PairPane)
        assert b.has_class("-lost") and not a.has_class("-lost")
        assert "LOST" in str(b.border_subtitle)
        assert "connected" in str(a.border_subtitle)
        assert a.state.intervals == 20 and b.state.intervals == 10
        assert "b-snd: link lost: connection reset" in log_text(app)


async def test_refused_knob_shows_in_pane_and_log_never_a_traceback() -> None:
    app = make_app(intervals=4, refuse={"tso"})
    async with app.run_test() as pilot:
        await replayed(pilot, 4)
        await pilot.press("t")
        pane = app.query_one("#pane-A", PairPane)
        await until(pilot, lambda: bool(pane.state.error))
        assert "refused tso=off" in pane.state.error
        # the pane and the log show it at their next repaint (paced): waited for, not assumed
        await until(pilot, lambda: pane.shows("error")
                    and "refused" in log_text(app))
        assert "refused" in pane.text("error")
        assert app.state.pairs["A"].config["tso"] == "on"  # nothing changed
        assert app.is_running


@pytest.mark.parametrize("key,name,check", [
    ("e", "out/table.csv", "csv"),  # a path typed by the user, in a folder to be made
    ("s", None, "session"),  # the default path offered: a new session in the folder
])
async def test_export_and_save_write_the_confirmed_path(tmp_path, key: str, name: str | None,
                                                        check: str) -> None:  # type: ignore[no-untyped-def]
    app = make_app(intervals=10)
    app.files.save_dir = app.files.sessions_dir = tmp_path
    async with app.run_test() as pilot:
        await replayed(pilot, 10)
        await pilot.press(key)
        assert isinstance(app.screen, PathPrompt)
        if name:
            app.screen.query_one("#path", Input).value = str(tmp_path / name)
            await pilot.pause()
        where = str(app.screen.query_one("#where").render())
        target = Path(where.removeprefix("will write "))
        assert target.parent.is_relative_to(tmp_path)
        await pilot.press("enter")
        if check == "csv":
            await until(pilot, target.exists)
            rows = list(csv.DictReader(target.read_text().splitlines()))
            assert len(rows) == 20  # a row per interval, as `abtui export --format csv` writes
            assert {r["pair"] for r in rows} == {"A", "B"}
            assert {r["configuration"] for r in rows if r["pair"] == "B"} == {
                "cc=reno, tcp_wmem=4096 16384 4194304, tso=on, tunnel=none",
                "cc=reno, tcp_wmem=4096 16384 65536, tso=on, tunnel=none"}
            await until(pilot, lambda: f"exported csv to {target}" in log_text(app))
        else:
            assert target.name.endswith(".abtui.jsonl.gz")  # the name it has once finished
            await until(pilot, target.exists)
            events = load_events(target)
            assert len(events) == app.record.received
            assert sum(e.kind is EventKind.INTERVAL for e in events) == 20


async def test_a_line_said_after_the_last_event_is_stamped_with_the_time_now() -> None:
    """A save, export or mark after measuring stopped: its log line says the seconds since
    the session's start now, not the last event's time."""
    clock = FakeClock()
    app = make_app(intervals=2, clock=clock)
    async with app.run_test() as pilot:
        await replayed(pilot, 2)
        last = app.recent[-1].t - app.recent[0].t
        clock.now += 1.5
        app.say("saved 12 events to somewhere")
        line = app.log_lines[-1]
        assert line.endswith("saved 12 events to somewhere")
        assert float(line.split("s", 1)[0]) >= last + 1.4, (last, line)


async def test_help_palette_compare_and_tunnel_switcher_open() -> None:
    app = make_app(intervals=6)
    async with app.run_test() as pilot:
        await replayed(pilot, 6)
        await pilot.press("question_mark")  # Textual's keys panel
        assert app.screen.query(HelpPanel)
        keys = [(k, b.binding.description) for k, b in app.screen.active_bindings.items()]
        assert any(k == "w" and "tcp_wmem" in d for k, d in keys)
        await pilot.press("question_mark")
        assert not app.screen.query(HelpPanel)
        await pilot.press("ctrl+p")
        assert isinstance(app.screen, CommandPalette)
        await pilot.press(*"compare")
        hits = app.screen.query_one(CommandList)
        await until(pilot, lambda: hits.option_count > 0 and "compare" in str(
            hits.get_option_at_index(0).prompt).lower())  # the search has answered
        await pilot.press("enter")
        await until(pilot, lambda: isinstance(app.screen, CompareScreen))
        assert app.screen.query_one("#compare-table", DataTable).row_count == 2
        await pilot.press("escape")
        await pilot.press("ctrl+t")
        assert isinstance(app.screen, TunnelSwitcher)
        assert app.screen.types == ["none", "wireguard", "vxlan"]
        await pilot.press("down", "enter")
        await until(pilot, lambda: app.state.pairs["B"].tunnel == "wireguard")
        assert "tunnel wireguard" in app.query_one("#pane-B", PairPane).text("head")


async def test_the_tunnel_switcher_disables_what_a_host_cannot_make() -> None:
    """A host's facts say which tunnel types it can make: one that a host of the scope
    cannot is shown with that host's reason, and cannot be picked."""
    from textual.widgets import OptionList

    app = make_app(intervals=6)
    async with app.run_test() as pilot:
        await replayed(pilot, 6)
        b_rcv = app.state.pairs["B"].receiver
        app.receive(Event.of(Facts(facts={
            "alias": b_rcv, "kernel_release": "6.1.0-19-amd64", "tunnels": {
                "none": "yes", "wireguard": "userspace",
                "vxlan": "no: the kernel has no vxlan support"}}), T0, host=b_rcv))
        await settle(pilot)
        await pilot.press("tab")  # scope: from A+B to A
        await pilot.press("ctrl+t")
        assert isinstance(app.screen, TunnelSwitcher)
        assert app.screen.types == ["none", "wireguard", "vxlan"]  # A's hosts said nothing
        await pilot.press("escape")
        await pilot.press("tab")  # scope B
        await pilot.press("ctrl+t")
        assert isinstance(app.screen, TunnelSwitcher)
        assert app.screen.types == ["none", "wireguard"]
        options = app.screen.query_one("#tunnel-list", OptionList)
        vxlan = options.get_option("vxlan")
        assert vxlan.disabled
        assert str(vxlan.prompt) == f"vxlan  — {b_rcv}: the kernel has no vxlan support"
        await pilot.press("escape")


async def test_plan_mode_shows_progress_and_fills_the_table() -> None:
    ctl = SpyController(synthetic_profile(2), speed=math.inf)
    app = AbtuiApp(ctl, autostart=False)
    async with app.run_test() as pilot:
        await pilot.press("p")
        await until(pilot, lambda: (app.state.progress or {}).get("done") == 4
                    and not ctl.running and not app.table_throttle.pending
                and not app.text_throttle.pending)
        bar = app.query_one("#plan-progress", ProgressBar)
        assert bar.display and bar.total == 4 and bar.progress == 4
        assert "plan 4/4, 0 s left" in app.knobbar().plain
        assert app.query_one("#phases", DataTable).row_count == 4
        assert all(r.per_pair["A"].n == 5 for r in app.state.phases.values())


async def test_compare_with_a_saved_session(tmp_path) -> None:  # type: ignore[no-untyped-def]
    from abtui.sessions import writer

    profile = synthetic_profile(2)
    path = tmp_path / "before.abtui.jsonl"
    with writer.SessionWriter(path, profile="synthetic", pairs=["A", "B"], compact=False) as w:
        for e in synthetic_events(profile, intervals=10, seed=11):
            w.write(e)
    app = make_app(intervals=10)
    async with app.run_test(size=(120, 36)) as pilot:
        await replayed(pilot, 10)
        await app.run_action("compare_saved", app.main_screen)
        await pilot.pause()
        app.screen.query_one("#session", Input).value = str(path)
        app.screen.query_one("#session", Input).focus()
        await pilot.press("enter")
        await until(pilot, lambda: isinstance(app.screen, CompareScreen))
        c = app.screen.comparison
        assert c.columns == ["pair", "configuration", "before", "this session", "Δ"]
        assert [(r[0], r[1]) for r in c.rows] == [  # the knobs every row shares said above
            ("A", "tcp_wmem=4096 16384 4194304"), ("A", "tcp_wmem=4096 16384 65536"),
            ("B", "tcp_wmem=4096 16384 4194304"), ("B", "tcp_wmem=4096 16384 65536")]
        assert all("%" in r[4] for r in c.rows)  # a delta for each matched configuration
        assert set(c.lines) == {"saved A", "saved B", "now A", "now B"}
        await pilot.press("escape")
        await app.run_action("compare_saved", app.main_screen)
        await pilot.pause()
        app.screen.query_one("#session", Input).value = str(tmp_path / "missing")
        app.screen.query_one("#session", Input).focus()
        await pilot.press("enter")
        await pilot.pause()
        assert "no such session" in str(app.screen.query_one("#why").render())


async def test_palette_lists_every_binding_and_knob() -> None:
    app = make_app(intervals=1)
    async with app.run_test() as pilot:
        await replayed(pilot, 1)
        actions = {a for _, a, _ in app.palette_actions()}
        for b in app.main_screen.BINDINGS:  # the main keys, quit and the knobs included
            assert b.action in actions  # type: ignore[union-attr]
        for knob in app.profile.knobs:
            assert f"knob('{knob.name}')" in actions


async def test_ctrl_q_restores_then_leaves() -> None:
    app = make_app(intervals=4)
    async with app.run_test() as pilot:
        await replayed(pilot, 4)
        await pilot.press("w")
        await until(pilot, lambda: len(app.controller.calls) == 1)
        await pilot.press("ctrl+q")
        await until(pilot, lambda: not app.is_running)
    assert app.controller.calls[-1] == ("shutdown",)
    restores = [e for e in app.recent if e.kind is EventKind.RESTORE]
    assert {(e.host, e.payload.knob) for e in restores} == {("a-snd", "tcp_wmem"),
                                                          ("b-snd", "tcp_wmem")}
    assert app.return_code == 0


async def test_second_ctrl_q_forces_out_when_restoring_hangs() -> None:
    app = make_app(intervals=2, step_delay=30.0)
    async with app.run_test() as pilot:
        await replayed(pilot, 2)
        app.controller._changed.add(("tso", "a-snd"))  # something to restore, slowly
        await pilot.press("ctrl+q")
        await until(pilot, lambda: bool(app.screen.query("Label")))
        assert app.is_running and "Leaving" in str(app.screen.query_one("Label").render())
        await pilot.press("ctrl+q")
        await until(pilot, lambda: not app.is_running)
    assert app.return_code == 1


def test_every_knob_gets_a_key_profile_bindings_first() -> None:
    from dataclasses import replace

    profile = synthetic_profile(2)
    knobs = profile.knobs
    profile.knobs = [replace(knobs[0], binding="m"),  # the console's mark: reassigned
                     replace(knobs[1], binding=None), knobs[2], knobs[3]]
    app = AbtuiApp(SpyController(profile))
    assert app.knob_keys == {"1": "tcp_wmem", "2": "tso", "c": "cc", "u": "tunnel"}
    bound = {b.id: b.key for b in app.get_default_screen().BINDINGS if isinstance(b, Binding)}
    assert bound["knob.tcp_wmem"] == "1" and bound["knob.cc"] == "c"


async def test_keys_do_nothing_once_leaving_has_begun() -> None:
    app = make_app(intervals=2, step_delay=30.0)
    async with app.run_test() as pilot:
        await replayed(pilot, 2)
        app.controller._changed.add(("tso", "a-snd"))  # restoring takes a while
        await pilot.press("ctrl+q")
        await settle(pilot)
        await pilot.press("w", "space", "p")
        await settle(pilot)
        assert not [c for c in app.controller.calls if c[0] == "set_knob"]
        assert not app.controller.running
        await pilot.press("ctrl+q")
        await until(pilot, lambda: not app.is_running)


def test_console_keys_are_the_ones_profiles_may_not_bind() -> None:
    """Plain keys the console acts on are exactly abtui.profile's RESERVED_KEYS (a profile
    binding any other letter to a knob keeps it)."""
    from abtui.profile import RESERVED_KEYS

    plain = {b.key for b in AbtuiApp.BINDINGS if isinstance(b, Binding) and
             "ctrl+" not in b.key}
    reserved = {"question_mark" if k == "?" else k for k in RESERVED_KEYS}
    assert plain <= reserved
