"""The console's secondary screens: a path prompt (save/export), a confirmation (the setup
saved to the profile), a saved-session picker
(compare), a text prompt (mark), the tunnel switcher, quitting with restore progress, and the
compare screen. Whatever they show that came from hosts or files is text, never markup."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import ClassVar

from rich.text import Text
from textual.app import ComposeResult
from textual.binding import Binding, BindingType
from textual.containers import Horizontal, Vertical
from textual.content import Content
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

from abtui.core.errors import BadInput
from abtui.core.text import UNKNOWN, visible
from abtui.ui.render.tables import Comparison, column_widths

CLOSE = Binding("escape", "dismiss_screen", "Close", id="close")


class _Modal(ModalScreen[object]):
    BINDINGS: ClassVar[list[BindingType]] = [CLOSE]

    def action_dismiss_screen(self) -> None:
        self.dismiss(None)


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
    """A path (and for export a format): shows, before writing, the absolute path of the file
    that will be written, as the writer will name it (`resolve`: e.g. a session's final
    name), and whether a file is there already (`replace`: overwrite it, else refuse)."""

    def __init__(self, title: str, default: str, formats: tuple[str, ...] = (), *,
                 note: str = "", resolve: Callable[[Path], Path] | None = None,
                 replace: bool = True) -> None:
        super().__init__()
        self.title_text = title
        self.default = default
        self.formats = formats
        self.note = note
        self.resolve = resolve
        self.replace = replace

    def compose(self) -> ComposeResult:
        with Vertical(classes="dialog"):
            yield Label(Content(visible(self.title_text)), classes="dialog-title")
            if self.note:
                yield Static(Content(visible(self.note)), classes="dim")
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
        if p.is_dir():  # a folder: the default file name in it
            p = p / Path(self.default).name
        fmt = self._fmt()
        if fmt and not p.suffix:
            p = p.with_suffix("." + fmt)
        if self.resolve is not None:
            p = self.resolve(p)
        return p.resolve()

    def _refusal(self, target: Path) -> str:
        if target.is_dir():
            return f"{target} is a folder"
        if target.exists() and not self.replace:
            return f"{target} exists already: pick another name"
        return ""

    def _show_where(self) -> None:
        target = self._target()
        refusal = self._refusal(target)
        text = refusal or f"will write {target}" + (
            " (replacing the file there)" if target.exists() else "")
        self.query_one("#where", Static).update(Content(visible(text)))
        self.query_one("#write", Button).disabled = bool(refusal)

    def on_input_changed(self) -> None:
        self._show_where()

    def on_radio_set_changed(self, event: RadioSet.Changed) -> None:
        fmt = self.formats[event.index]
        inp = self.query_one("#path", Input)
        p = Path(inp.value)
        if p.suffix.lstrip(".") in self.formats:
            inp.value = str(p.with_suffix("." + fmt))
        self._show_where()

    def _submit(self) -> None:
        target = self._target()
        if not self._refusal(target):
            self.dismiss((target, self._fmt()))

    def on_input_submitted(self) -> None:
        self._submit()

    def on_button_pressed(self, event: Button.Pressed) -> None:
        if event.button.id == "write":
            self._submit()
        else:
            self.dismiss(None)


class Confirm(_Modal):
    """A question answered by Enter (yes: dismissed with True) or Esc (no): the lines say
    what yes will do (saving the setup to the profile: each knob's new value)."""

    BINDINGS: ClassVar[list[BindingType]] = [
        CLOSE, Binding("enter", "confirm", "Confirm", id="confirm", priority=True)]

    def __init__(self, title: str, lines: list[str], yes: str = "Save") -> None:
        super().__init__()
        self.title_text = title
        self.lines = lines
        self.yes = yes

    def compose(self) -> ComposeResult:
        with Vertical(classes="dialog wide"):
            yield Label(Content(visible(self.title_text)), classes="dialog-title")
            yield Static(Content(visible("\n".join(self.lines))), id="what")
            yield Static(f"Enter: {self.yes.lower()}   Esc: cancel", classes="dim")
            with Horizontal(classes="buttons"):
                yield Button(self.yes, variant="primary", id="yes")
                yield Button("Cancel", id="cancel")

    def on_mount(self) -> None:
        self.query_one("#yes", Button).focus()

    def action_confirm(self) -> None:
        self.dismiss(True)

    def on_button_pressed(self, event: Button.Pressed) -> None:
        self.dismiss(True if event.button.id == "yes" else None)


class SessionPicker(_Modal):
    """A saved session, picked from the sessions folder's list (newest first) or typed as a
    file or a name, as `abtui compare` takes them; dismissed with its file's Path."""

    def __init__(self, title: str, sessions: list[Path],
                 find: Callable[[str], Path]) -> None:
        super().__init__()
        self.title_text = title
        self.sessions = sessions
        self.find = find

    def compose(self) -> ComposeResult:
        with Vertical(classes="dialog"):
            yield Label(Content(visible(self.title_text)), classes="dialog-title")
            if self.sessions:
                yield OptionList(*(Option(Content(visible(p.name)), id=str(i))
                                   for i, p in enumerate(self.sessions)), id="sessions")
            else:
                yield Static("no saved sessions in the sessions folder yet", classes="dim")
            yield Input(placeholder="or a session file or name", id="session")
            yield Static(id="why", classes="error")

    def on_mount(self) -> None:
        if self.sessions:
            self.query_one("#sessions", OptionList).focus()
        else:
            self.query_one("#session", Input).focus()

    def on_option_list_option_selected(self, event: OptionList.OptionSelected) -> None:
        self.dismiss(self.sessions[int(event.option.id or 0)])

    def on_input_submitted(self, event: Input.Submitted) -> None:
        ref = event.value.strip()
        if not ref:
            return
        try:
            self.dismiss(self.find(ref))
        except BadInput as exc:  # said here, and the dialog stays for another try
            self.query_one("#why", Static).update(Content(visible(str(exc))))


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
            yield Label(Content(visible(f"Tunnel for {self.scope} (now {self.current})")),
                        classes="dialog-title")
            yield OptionList(*(Option(Content(visible(f"{t}  — {why}" if why else t)), id=t,
                                      disabled=bool(why))
                               for t, why in self.choices), id="tunnel-list")

    def on_mount(self) -> None:
        """The list starts on the scope's current type."""
        options = self.query_one("#tunnel-list", OptionList)
        ids = [t for t, _ in self.choices]
        if self.current in ids and self.current in self.types:
            options.highlighted = ids.index(self.current)

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
        self.query_one("#restore-lines", Static).update(
            Content("\n".join(visible(line) for line in lines[-12:]) or "…"))


class CompareScreen(Screen[None]):
    """The table with plotext charts: pairs over time on one axis, per-row bars."""

    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("escape,ctrl+o", "app.pop_screen", "Back", id="compare.back")]

    def __init__(self, comparison: Comparison) -> None:
        super().__init__(id="compare")
        self.comparison = comparison

    def compose(self) -> ComposeResult:
        from textual_plotext import PlotextPlot

        yield Static(Content(visible(self.comparison.title)), classes="dialog-title")
        if self.comparison.note:
            yield Static(Content(visible(self.comparison.note)), id="compare-note",
                         classes="dim")
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
        columns = [visible(col) for col in c.columns]
        rows = [[visible(cell) for cell in row] for row in c.rows]
        # the screen's width (less a scrollbar's): cells too long for it wrap, never cut
        widths = column_widths(columns, rows, self.app.size.width - 2)
        for col, width in zip(columns, widths, strict=True):
            table.add_column(Text(col), width=width)
        for row in rows:  # rich Text: a DataTable reads a str cell as markup
            table.add_row(*(Text(cell) for cell in row), height=None)
        over = self.query_one("#over-time", PlotextPlot).plt
        over.title(f"{c.unit.name} over time")
        for label, pts in c.lines.items():
            if pts:
                over.plot([t for t, _ in pts], [v for _, v in pts], label=label)
        over.xlabel("s")
        values = [v for pts in c.lines.values() for _, v in pts]
        if values:  # 3 significant digits, as every number abtui prints (not `5610.0`)
            over.yticks(*_ticks(min(values), max(values)))
            times = [t for pts in c.lines.values() for t, _ in pts]
            over.xticks(*_ticks(min(times), max(times)))
        bars = self.query_one("#per-phase", PlotextPlot).plt
        names, heights = c.drawn_bars()
        bars.title(f"mean {c.unit.name} per row ({UNKNOWN}: not measured)"
                   if names != c.bar_names else f"mean {c.unit.name} per row")
        if names and heights:
            bars.multiple_bar(names, heights,  # type: ignore[call-arg]
                              labels=list(c.bars))  # plotext's keyword; its stub says label
            tallest = max((h for row in heights for h in row), default=0.0)
            bars.yticks(*_ticks(0.0, tallest))
        bars.xlabel("row")


def _ticks(lo: float, hi: float, n: int = 5) -> tuple[list[float], list[str]]:
    """An axis's ticks from `lo` to `hi` and their labels in 3 significant digits."""
    from abtui.core.numbers import sig

    if hi <= lo:
        return [lo], [sig(lo)]
    at = [lo + (hi - lo) * i / (n - 1) for i in range(n)]
    return at, [sig(x) for x in at]
