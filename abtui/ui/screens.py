"""The console's secondary screens: help, a path prompt (save/export), a text prompt (mark),
the tunnel switcher, quitting with restore progress, and the compare screen."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import ClassVar

from textual.app import ComposeResult
from textual.binding import Binding, BindingType
from textual.containers import Horizontal, Vertical, VerticalScroll
from textual.screen import ModalScreen, Screen
from textual.widgets import (
    Button,
    DataTable,
    Footer,
    Input,
    Label,
    OptionList,
    RadioButton,
    RadioSet,
    Static,
)
from textual.widgets.option_list import Option

CLOSE = Binding("escape", "dismiss_screen", "Close", id="close")


class _Modal(ModalScreen[object]):
    BINDINGS: ClassVar[list[BindingType]] = [CLOSE]

    def action_dismiss_screen(self) -> None:
        self.dismiss(None)


class HelpScreen(_Modal):
    """Every key of the console, knobs included (generated from the live bindings)."""

    def __init__(self, keys: list[tuple[str, str]]) -> None:
        super().__init__()
        self.keys = keys

    def compose(self) -> ComposeResult:
        rows = "\n".join(f"[b $accent]{k:>10}[/]  {d}" for k, d in self.keys)
        with VerticalScroll(classes="dialog wide"):
            yield Label("abtui console: keys", classes="dialog-title")
            yield Static("A pane per pair, all on one scale. Knob keys apply to the scope in "
                         "the knob bar (tab cycles it; click a pane to pick its pair). "
                         "Highlighted sparkline columns mark a knob change.", classes="dim")
            yield Static(rows)
            yield Label("escape closes", classes="dim")


class TextPrompt(_Modal):
    """One line of text (a mark's annotation)."""

    def __init__(self, title: str, placeholder: str = "") -> None:
        super().__init__()
        self.title_text = title
        self.placeholder = placeholder

    def compose(self) -> ComposeResult:
        with Vertical(classes="dialog"):
            yield Label(self.title_text, classes="dialog-title")
            yield Input(placeholder=self.placeholder, id="text")

    def on_input_submitted(self, event: Input.Submitted) -> None:
        self.dismiss(event.value.strip() or None)


class PathPrompt(_Modal):
    """A path (and for export a format): confirms the absolute path before writing."""

    def __init__(self, title: str, default: str, formats: tuple[str, ...] = ()) -> None:
        super().__init__()
        self.title_text = title
        self.default = default
        self.formats = formats

    def compose(self) -> ComposeResult:
        with Vertical(classes="dialog"):
            yield Label(self.title_text, classes="dialog-title")
            if self.formats:
                with RadioSet(id="format"):
                    for i, f in enumerate(self.formats):
                        yield RadioButton(f, value=i == 0, id=f"fmt-{f}")
            yield Input(value=self.default, id="path")
            yield Static(id="where", classes="dim")
            with Horizontal(classes="buttons"):
                yield Button("Write", variant="primary", id="write")
                yield Button("Cancel", id="cancel")

    def on_mount(self) -> None:
        self.query_one("#path", Input).focus()
        self._show_where()

    def _fmt(self) -> str | None:
        """The path's suffix when it names a format, else the format picked."""
        if not self.formats:
            return None
        suffix = Path(self.query_one("#path", Input).value.strip()).suffix.lstrip(".")
        if suffix in self.formats:
            return suffix
        rs = self.query_one(RadioSet)
        return self.formats[rs.pressed_index if rs.pressed_index >= 0 else 0]

    def _target(self) -> Path:
        raw = self.query_one("#path", Input).value.strip() or self.default
        p = Path(raw).expanduser()
        fmt = self._fmt()
        if fmt and not p.suffix:
            p = p.with_suffix("." + fmt)
        return p.resolve()

    def _show_where(self) -> None:
        self.query_one("#where", Static).update(f"will write {self._target()}")

    def on_input_changed(self) -> None:
        self._show_where()

    def on_radio_set_changed(self, event: RadioSet.Changed) -> None:
        fmt = self.formats[event.index]
        inp = self.query_one("#path", Input)
        p = Path(inp.value)
        if p.suffix.lstrip(".") in self.formats:
            inp.value = str(p.with_suffix("." + fmt))
        self._show_where()

    def on_input_submitted(self) -> None:
        self.dismiss((self._target(), self._fmt()))

    def on_button_pressed(self, event: Button.Pressed) -> None:
        self.dismiss((self._target(), self._fmt()) if event.button.id == "write" else None)


class TunnelSwitcher(_Modal):
    """The profile's tunnel types; those a host of the scope cannot make are shown disabled,
    with the host's reason, and cannot be picked."""

    def __init__(self, choices: list[tuple[str, str]], current: str, scope: str) -> None:
        super().__init__()
        self.choices = choices
        self.types = [t for t, why in choices if not why]
        self.current = current
        self.scope = scope

    def compose(self) -> ComposeResult:
        with Vertical(classes="dialog"):
            yield Label(f"Tunnel for {self.scope} (now {self.current})", classes="dialog-title")
            yield OptionList(*(Option(f"{t}  — {why}" if why else t, id=t, disabled=bool(why))
                               for t, why in self.choices), id="tunnel-list")

    def on_option_list_option_selected(self, event: OptionList.OptionSelected) -> None:
        self.dismiss(event.option.id)


class QuitScreen(ModalScreen[None]):
    """Restoring the hosts on the way out; a second ctrl+q forces out."""

    def compose(self) -> ComposeResult:
        with Vertical(classes="dialog"):
            yield Label("Leaving: stopping, restoring knobs, removing tunnels…",
                        classes="dialog-title")
            yield Static(id="restore-lines")
            yield Label("ctrl+q again forces out", classes="dim")

    def show(self, lines: list[str]) -> None:
        self.query_one("#restore-lines", Static).update("\n".join(lines[-12:]) or "…")


@dataclass(slots=True)
class Comparison:
    """What the compare screen shows, whatever it compares (this session, or two sessions)."""

    title: str
    columns: list[str]
    rows: list[list[str]]
    lines: dict[str, list[tuple[float, float]]]  # label -> (seconds, Gbit/s)
    bar_names: list[str] = field(default_factory=list)  # one per table row
    bars: dict[str, list[float]] = field(default_factory=dict)  # label -> Gbit/s per row


class CompareScreen(Screen[None]):
    """The table with plotext charts: pairs over time on one axis, per-row bars."""

    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("escape,ctrl+o", "app.pop_screen", "Back", id="compare.back")]

    def __init__(self, comparison: Comparison) -> None:
        super().__init__(id="compare")
        self.comparison = comparison

    def compose(self) -> ComposeResult:
        from textual_plotext import PlotextPlot

        yield Static(self.comparison.title, classes="dialog-title")
        table: DataTable[str] = DataTable(id="compare-table", cursor_type="row")
        yield table
        with Horizontal(id="charts"):
            yield PlotextPlot(id="over-time")
            yield PlotextPlot(id="per-phase")
        yield Footer()

    def on_mount(self) -> None:
        from textual_plotext import PlotextPlot

        c = self.comparison
        table = self.query_one("#compare-table", DataTable)
        table.add_columns(*c.columns)
        for row in c.rows:
            table.add_row(*row)
        over = self.query_one("#over-time", PlotextPlot).plt
        over.title("Gbit/s over time")
        for label, pts in c.lines.items():
            if pts:
                over.plot([t for t, _ in pts], [v for _, v in pts], label=label)
        over.xlabel("s")
        bars = self.query_one("#per-phase", PlotextPlot).plt
        bars.title("mean Gbit/s per row")
        if c.bar_names and c.bars:
            bars.multiple_bar(c.bar_names, list(c.bars.values()),  # type: ignore[call-arg]
                              labels=list(c.bars))  # plotext's keyword; its stub says label
        bars.xlabel("row")
