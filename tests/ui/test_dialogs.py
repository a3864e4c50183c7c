"""The console's dialogs and the phase table as a user meets them: save beside a live journal,
typed session paths, comparing with a saved session by list or name, the tunnel list, labels
and units in the phase table, screenshots and exports in the sessions folder."""

from __future__ import annotations

from pathlib import Path

import pytest
from textual.widgets import DataTable, Input, OptionList

from abtui.core.events import Event, EventKind, KnobChanged, Tunnel
from abtui.measure.replay.synthetic import T0, synthetic_events, synthetic_profile
from abtui.sessions import paths, reader, writer
from abtui.ui.app import AbtuiApp
from abtui.ui.render.screens import CompareScreen, PathPrompt, SessionPicker, TunnelSwitcher
from tests.ui.console_kit import make_app, replayed, until

pytestmark = pytest.mark.ui


def log_text(app: AbtuiApp) -> str:
    return "\n".join(app.log_lines)


def where(app: AbtuiApp) -> str:
    return str(app.screen.query_one("#where").render())


async def test_save_beside_a_live_journal_offers_a_new_name(tmp_path: Path) -> None:
    """With the engine the session is journalled as it runs; `s` used to offer that very
    file and always fail ("exists already")."""
    app = make_app(intervals=6)
    live = paths.new_session_path("synthetic", tmp_path)
    live.write_text("")  # the engine's journal, being written
    app.controller.session_path = live
    app.files.sessions_dir = tmp_path
    async with app.run_test() as pilot:
        await replayed(pilot, 6)
        await pilot.press("s")
        assert isinstance(app.screen, PathPrompt)
        target = Path(where(app).removeprefix("will write "))
        assert target.parent == tmp_path and target.name.endswith(".abtui.jsonl.gz")
        assert paths.name_of(target) != paths.name_of(live)
        await pilot.press("enter")
        await until(pilot, target.exists)
        assert len(reader.load_events(target)) == app.record.received
        assert "failed" not in log_text(app)
        assert live.exists()  # the live journal is left alone


@pytest.mark.parametrize(("typed", "final"), [
    ("mine.abtui.jsonl", "mine.abtui.jsonl"),  # a plain journal, exactly where typed
    ("mine.jsonl", "mine.jsonl"),
    ("mine.abtui.jsonl.gz", "mine.abtui.jsonl.gz"),
    ("mine", "mine.abtui.jsonl.gz"),  # no session suffix: the usual finished name
])
async def test_a_typed_session_path_writes_what_the_dialog_says(tmp_path: Path, typed: str,
                                                                final: str, capsys) -> None:  # type: ignore[no-untyped-def]
    from abtui.cli import main

    app = make_app(intervals=4)
    app.files.sessions_dir = tmp_path
    async with app.run_test() as pilot:
        await replayed(pilot, 4)
        await pilot.press("s")
        app.screen.query_one("#path", Input).value = str(tmp_path / typed)
        await pilot.pause()
        target = tmp_path / final
        assert where(app) == f"will write {target}"
        await pilot.press("enter")
        await until(pilot, target.exists)
        assert sorted(p.name for p in tmp_path.iterdir()) == [final]
        # gzip'ed only when the name says so
        assert (target.read_bytes()[:2] == b"\x1f\x8b") == final.endswith(".gz")
        assert len(reader.load_events(target)) == app.record.received
        assert paths.find_session(str(tmp_path / typed)) == target
        # a second save to the same name is refused in the dialog, before anything is written
        await pilot.press("s")
        app.screen.query_one("#path", Input).value = str(tmp_path / typed)
        await pilot.pause()
        assert "exists already" in where(app)
        await pilot.press("enter")
        assert isinstance(app.screen, PathPrompt)
        await pilot.press("escape")
    capsys.readouterr()
    assert main(["export", str(tmp_path / typed), "--format", "json"]) == 0
    assert '"configurations"' in capsys.readouterr().out


def _saved(folder: Path, name: str) -> Path:
    profile = synthetic_profile(2)
    with writer.SessionWriter(folder / f"{name}.abtui.jsonl", profile="synthetic",
                              pairs=["A", "B"]) as w:
        for e in synthetic_events(profile, intervals=10, seed=11):
            w.write(e)
    return paths.finished_path(folder / name)


async def test_compare_with_a_saved_session_from_the_list_or_by_name(tmp_path: Path) -> None:
    before = _saved(tmp_path, "before")
    _saved(tmp_path, "older")
    app = make_app(intervals=10)
    app.files.sessions_dir = tmp_path
    async with app.run_test(size=(120, 36)) as pilot:
        await replayed(pilot, 10)
        await app.run_action("compare_saved", app.main_screen)
        await pilot.pause()
        assert isinstance(app.screen, SessionPicker)
        assert "will write" not in str(app.screen.query_one("Label").render())
        assert set(app.screen.sessions) == {before, tmp_path / "older.abtui.jsonl.gz"}
        options = app.screen.query_one("#sessions", OptionList)
        options.highlighted = app.screen.sessions.index(before)
        await pilot.press("enter")
        await until(pilot, lambda: isinstance(app.screen, CompareScreen))
        assert app.screen.comparison.columns[2] == "before"
        await pilot.press("escape")
        await app.run_action("compare_saved", app.main_screen)
        await pilot.pause()
        box = app.screen.query_one("#session", Input)
        box.value = "before"  # a name, as `abtui compare before …` takes it
        box.focus()
        await pilot.press("enter")
        await until(pilot, lambda: isinstance(app.screen, CompareScreen))
        assert app.screen.comparison.columns[2] == "before"


async def test_the_tunnel_list_starts_on_the_current_type() -> None:
    app = make_app(intervals=2)
    async with app.run_test() as pilot:
        await replayed(pilot, 2)
        for label in "AB":
            app.receive(Event.of(Tunnel(type="vxlan", target="10.0.0.2"), T0 + 5, pair=label))
        await until(pilot, lambda: app.state.pairs["B"].tunnel == "vxlan")
        await pilot.press("ctrl+t")
        assert isinstance(app.screen, TunnelSwitcher)
        options = app.screen.query_one("#tunnel-list", OptionList)
        assert options.get_option_at_index(options.highlighted or 0).id == "vxlan"
        await pilot.press("escape")


async def test_phase_table_labels_use_the_room_and_are_cut_where_they_differ() -> None:
    long = "x" * 40
    for size, whole in (((200, 50), True), ((80, 24), False)):
        app = make_app(intervals=2)
        async with app.run_test(size=size) as pilot:
            await replayed(pilot, 2)
            app.receive(Event.of(KnobChanged.from_data({
                "knob": "cc", "value": long, "pairs": ["A", "B"]}), T0 + 5))
            table = app.query_one("#phases", DataTable)
            await until(pilot, lambda t=table: t.row_count == 3)  # type: ignore[misc]
            label = str(table.get_cell_at((2, 0)))
            full = app.row_label(list(app.state.phases.values())[-1])
            assert len(full) > 60 and f"cc={long}" in full
            column = table.ordered_columns[0].width
            if whole:  # half the screen is the table's: room for it
                assert label == full and column == len(label)
            else:  # what sets the row apart (cc), cut at the column's end
                assert label.endswith("…") and len(label) == column
                assert label.startswith("cc=" + "x" * 20)
            titles = [str(c.label) for c in table.ordered_columns[1:]]
            assert titles == ["A Gbit/s (base)", "B Gbit/s Δ%"]


async def test_screenshot_and_export_go_to_the_sessions_folder(tmp_path: Path,
                                                             monkeypatch) -> None:  # type: ignore[no-untyped-def]
    monkeypatch.chdir(tmp_path)
    folder = tmp_path / "sessions"
    monkeypatch.setenv("HOME", str(tmp_path / "home"))  # no ~/Downloads there
    app = make_app(intervals=2)
    app.files.sessions_dir = folder
    async with app.run_test() as pilot:
        await replayed(pilot, 2)
        app.deliver_screenshot()  # what the palette's Screenshot calls
        await until(pilot, lambda: "screenshot saved to" in log_text(app))
        shots = list(folder.glob("*.svg"))
        assert len(shots) == 1 and str(shots[0]) in log_text(app)
        await pilot.press("e")
        target = Path(where(app).removeprefix("will write "))
        assert target.parent == folder and target.suffix == ".md"
        await pilot.press("enter")
        await until(pilot, target.exists)
    assert not list(tmp_path.glob("*.md"))  # nothing in the current directory


async def test_save_writes_every_event_not_only_the_window_in_memory(tmp_path: Path) -> None:
    """The console keeps only its latest events in memory (abtui.ui.flow.record); `s` reads the
    session's journal in a worker, so the copy is the whole session, however far the window
    has moved on."""
    from abtui.ui.flow.record import SessionRecord

    app = make_app(intervals=20)
    app.record = SessionRecord(app.state, app.event_log, window=5)
    app.files.sessions_dir = tmp_path
    target = tmp_path / "all.abtui.jsonl.gz"
    async with app.run_test() as pilot:
        await replayed(pilot, 20)
        assert len(app.recent) == 5 < app.record.received
        await pilot.press("s")
        app.screen.query_one("#path", Input).value = str(target)
        await pilot.pause()
        await pilot.press("enter")
        await until(pilot, target.exists)
        received = app.record.received
    events = reader.load_events(target)
    assert len(events) == received
    assert sum(e.kind is EventKind.INTERVAL for e in events) == 40
