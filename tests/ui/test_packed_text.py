"""A pane's packed lines (abtui.ui.widgets.PackedText) look exactly as Textual's Static draws
the same text, cell by cell (character and style), in the pane's classes and after a theme
change; only the cheaper way of drawing them differs."""

from __future__ import annotations

from rich.style import Style
from textual.app import App, ComposeResult
from textual.containers import Vertical
from textual.content import Content
from textual.geometry import Region
from textual.widget import Widget
from textual.widgets import Static

from abtui.ui.widgets import PackedText, pack_chips

CHIPS = [Content.assemble(("19.1", "bold"), " Gbit/s"), Content.assemble(("mean ", "dim"), "18.7"),
         Content.assemble(("min ", "dim"), "0.020"), Content.assemble(("max ", "dim"), "21.3"),
         Content.assemble(("retr ", "dim"), "12", (" (Σ 340)", "dim"))]


class Both(App[None]):
    CSS = """
    .pane { border: round $primary 60%; padding: 0 1; height: auto; width: 40; }
    .metric { height: auto; }
    .config { color: $text-muted; height: auto; }
    """

    def compose(self) -> ComposeResult:
        for cls in ("metric", "config"):
            with Vertical(classes="pane"):
                yield PackedText(id=f"packed-{cls}", classes=cls)
                yield Static(id=f"static-{cls}", classes=cls)


def _cells(widget: Widget) -> list[list[tuple[str, Style | None]]]:
    size = widget.size
    strips = widget.render_lines(Region(0, 0, size.width, size.height))
    return [[(ch, seg.style.clear_meta_and_links() if seg.style else None)
             for seg in strip if not seg.control for ch in seg.text]
            for strip in strips]


async def test_packed_lines_are_drawn_as_a_static_draws_them() -> None:
    app = Both()
    async with app.run_test(size=(100, 30)) as pilot:
        for cls in ("metric", "config"):
            content = pack_chips(CHIPS, 38)
            assert "\n" in content.plain  # more than one line at this width
            packed = app.query_one(f"#packed-{cls}", PackedText)
            static = app.query_one(f"#static-{cls}", Static)
            for widget in (packed, static):
                widget.styles.height = content.plain.count("\n") + 1
                widget.update(content, layout=False)
            await pilot.pause()
            assert _cells(packed) == _cells(static)
            assert any(style is not None and style.bold for line in _cells(packed)
                       for _ch, style in line)  # the spans' own styles are drawn
        app.theme = "textual-light"  # recoloured: the kept strips and styles are not reused
        await pilot.pause()
        for cls in ("metric", "config"):
            assert _cells(app.query_one(f"#packed-{cls}")) == \
                _cells(app.query_one(f"#static-{cls}"))
