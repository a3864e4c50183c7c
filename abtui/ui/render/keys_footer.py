"""The main screen's footer: the keys the screen shows, drawn as one line by one widget.

Textual's footer is a container of one widget per key (18 on the main screen, half the
screen's widgets): each mounted, styled and rendered on its own before the first frame, and
all of them removed and made again whenever the bindings refresh. This one is one widget: it
draws the same line (each key, its description, the palette's key at the right end), runs a
key when it is clicked (a disabled one rings), highlights the key under the pointer and shows
that key's tooltip; what does not fit the width is left out (`?` lists every key)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, ClassVar

from rich.cells import cell_len
from rich.style import Style
from rich.text import Text
from textual import events
from textual.screen import Screen
from textual.widget import Widget

DIVIDER = "▏"  # before the palette's key, as Textual's footer draws it


@dataclass(frozen=True, slots=True)
class FooterKey:
    """One key the footer shows: the key Textual simulates when it is clicked, how it is
    shown, what it does, whether it is enabled now, and its tooltip."""

    key: str
    display: str
    description: str
    enabled: bool = True
    tooltip: str = ""


@dataclass(frozen=True, slots=True)
class KeySpan:
    """Where a key is drawn on the line, columns [start, end), and what is drawn there: its
    key's text and its description's (the one place the line's text is made, so what is
    drawn and where a click lands never disagree)."""

    key: FooterKey
    start: int
    end: int
    key_text: str
    description_text: str


def shown_keys(screen: Screen[Any]) -> tuple[tuple[FooterKey, ...], FooterKey | None]:
    """The keys the footer shows for `screen` (an action's first shown binding, in the
    bindings' order, as Textual's footer picks them) and the command palette's key."""
    app = screen.app
    active = screen.active_bindings
    keys: list[FooterKey] = []
    actions: set[str] = set()
    for _node, binding, enabled, tooltip in active.values():
        if not binding.show or binding.action in actions:
            continue
        actions.add(binding.action)
        keys.append(FooterKey(binding.key, app.get_key_display(binding), binding.description,
                              enabled, tooltip))
    palette = None
    if app.ENABLE_COMMAND_PALETTE and app.COMMAND_PALETTE_BINDING in active:
        _node, binding, enabled, tooltip = active[app.COMMAND_PALETTE_BINDING]
        palette = FooterKey(binding.key, app.get_key_display(binding), binding.description,
                            enabled, binding.tooltip or tooltip or binding.description)
    return tuple(keys), palette


def key_spans(keys: tuple[FooterKey, ...], palette: FooterKey | None,
              width: int) -> list[KeySpan]:
    """Where each key goes on a line `width` columns wide: the keys from the left, each
    ` KEY DESCRIPTION `, as many as fit whole beside the palette's key at the right end."""
    last = _texts(palette, compact=True) if palette is not None else None
    right = cell_len("".join(last)) + cell_len(DIVIDER) if last is not None else 0
    spans: list[KeySpan] = []
    x = 0
    for key in keys:
        texts = _texts(key)
        end = x + cell_len("".join(texts))
        if end > width - right:
            break
        spans.append(KeySpan(key, x, end, *texts))
        x = end
    if palette is not None and last is not None and right <= width:
        spans.append(KeySpan(palette, width - right + cell_len(DIVIDER), width, *last))
    return spans


def _texts(key: FooterKey, compact: bool = False) -> tuple[str, str]:
    """A key's text and its description's: ` KEY ` and `DESCRIPTION `; compact (the
    palette's, as Textual draws it): `KEY `."""
    pad = "" if compact else " "
    return f"{pad}{key.display} ", f"{key.description} " if key.description else ""


class KeysFooter(Widget, can_focus=False):
    """The footer: see the module docstring."""

    ALLOW_SELECT = False
    COMPONENT_CLASSES: ClassVar[set[str]] = {"footer-key--key", "footer-key--description",
                         "footer-key--hover", "footer-key--divider"}
    DEFAULT_CSS = """
    KeysFooter {
        dock: bottom;
        height: 1;
        color: $footer-foreground;
        background: $footer-background;
        .footer-key--key {
            color: $footer-key-foreground;
            background: $footer-key-background;
            text-style: bold;
        }
        .footer-key--description {
            color: $footer-description-foreground;
            background: $footer-description-background;
        }
        .footer-key--hover {
            background: $block-hover-background;
        }
        .footer-key--divider {
            color: $foreground 20%;
        }
    }
    """

    def __init__(self, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.keys: tuple[FooterKey, ...] = ()
        self.palette: FooterKey | None = None
        self._hover: FooterKey | None = None
        self._spans: list[KeySpan] = []

    def on_mount(self) -> None:
        self.keys, self.palette = shown_keys(self.screen)  # drawn in the first frame
        self.screen.bindings_updated_signal.subscribe(self, self.bindings_changed)

    def on_unmount(self) -> None:
        self.screen.bindings_updated_signal.unsubscribe(self)

    def bindings_changed(self, screen: Screen[Any]) -> None:
        """The screen's bindings refreshed: drawn again only when what the keys show changed
        (the focus set or a run started refreshes them with the same keys). While the
        terminal has lost the focus the keys stay as they are, as Textual's footer does."""
        if screen is not self.screen or not screen.app.app_focus:
            return
        keys, palette = shown_keys(screen)
        if (keys, palette) != (self.keys, self.palette):
            self.keys, self.palette = keys, palette
            self.refresh()

    def render(self) -> Text:
        width = self.size.width
        self._spans = key_spans(self.keys, self.palette, width)
        key_style = self.get_component_rich_style("footer-key--key")
        description_style = self.get_component_rich_style("footer-key--description")
        hover = self.get_component_rich_style("footer-key--hover", partial=True)
        dim = Style(dim=True)
        line = Text(no_wrap=True, overflow="crop", end="")
        for span in self._spans:
            key = span.key
            if key is self.palette:
                line.append(" " * (span.start - cell_len(DIVIDER) - line.cell_len))
                line.append(DIVIDER, self.get_component_rich_style("footer-key--divider"))
            extra = (hover if key == self._hover else Style()) + (
                dim if not key.enabled else Style())
            line.append(span.key_text, key_style + extra)
            if span.description_text:
                line.append(span.description_text, description_style + extra)
        return line

    def key_at(self, x: int) -> FooterKey | None:
        """The key drawn at column `x`, if any."""
        return next((s.key for s in self._spans if s.start <= x < s.end), None)

    def on_click(self, event: events.Click) -> None:
        key = self.key_at(event.x)
        if key is None:
            return
        if key.enabled:
            self.app.simulate_key(key.key)
        else:
            self.app.bell()

    def on_mouse_move(self, event: events.MouseMove) -> None:
        self._set_hover(self.key_at(event.x))

    def on_leave(self, event: events.Leave) -> None:
        self._set_hover(None)

    def _set_hover(self, key: FooterKey | None) -> None:
        if key != self._hover:
            self._hover = key
            self.tooltip = (key.tooltip or None) if key is not None else None
            self.refresh()
