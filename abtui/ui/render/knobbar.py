"""The knob bar: the scope, each knob's key and value, and the run status, packed into lines
as wide as the screen (a chip is never split between lines unless it alone is wider). Values
are what hosts and events said: text, never markup."""

from __future__ import annotations

import math
import re
from typing import Any

from textual import events
from textual.content import Content
from textual.widgets import ProgressBar, Static

from abtui.core.text import visible
from abtui.ui.model.state import ConsoleState
from abtui.ui.render.chips import pack_chips

KNOB_NAME = re.compile(r"[A-Za-z][A-Za-z0-9_.-]*")  # safe inside a click action


class PlanProgress(ProgressBar):
    """The plan's progress bar, without an ETA. Textual's bar, once mounted, refreshes its
    ETA from a timer every second whether or not it shows one (a wake-up of the console's
    main thread a second for nothing, 0.15 ms each): this one has no timer; its bar and
    percentage follow `update` as Textual's do."""

    def on_mount(self, event: events.Mount | None = None) -> None:
        if event is not None:  # (Textual hands it in)
            event.prevent_default()  # not ProgressBar.on_mount: its first update, that timer
        self.update()


def show_progress(bar: ProgressBar, progress: dict[str, Any] | None) -> None:
    """The plan's progress bar under the knob bar: shown while a plan has progress."""
    bar.display = progress is not None
    if progress is not None:
        bar.update(total=max(int(progress.get("total") or 0), 1),
                   progress=int(progress.get("done") or 0))


def knobbar_content(scope: str, scope_pairs: list[str], knob_keys: dict[str, str],
                    state: ConsoleState, progress: dict[str, Any] | None,
                    width: int) -> Content:
    """The bar for `scope` ("all" or a pair) in `width` columns; `progress` the plan's."""
    shown = "A+B" if scope == "all" and len(state.pairs) == 2 else scope
    chips = [Content.from_markup("[@click=screen.cycle_scope][b reverse] $scope [/][/]",
                                 scope=visible(shown))]
    for key, knob in knob_keys.items():
        value = state.knob_value(knob, scope_pairs)
        markup = "[b $accent]$key[/] $knob=$value"
        if KNOB_NAME.fullmatch(knob):
            markup = f"[@click=screen.knob('{knob}')]{markup}[/]"
        chips.append(Content.from_markup(markup, key=visible(key), knob=visible(knob),
                                         value=visible(str(value))))
    planning = progress is not None and progress.get("done") != progress.get("total")
    # between a plan's steps no run is up, yet the plan goes on: not "stopped"
    run = "running" if state.running else "between steps" if planning else "stopped"
    if progress:
        run += f" plan {progress.get('done')}/{progress.get('total')}"
        eta = progress.get("eta_s")
        if isinstance(eta, int | float) and math.isfinite(eta):
            run += f", {eta:.0f} s left"
    chips.append(Content.styled(run, "dim"))
    return pack_chips(chips, width)


class KnobBar(Static):
    """Shows the bar; its height is the bar's lines, set only when they change."""

    lines = 0

    def show(self, content: Content) -> int:
        """Show the bar; its lines."""
        lines = content.plain.count("\n") + 1
        if lines != self.lines:  # an explicit height: a layout pass, for sure
            self.styles.height = lines
        self.update(content, layout=False)
        self.lines = lines
        return lines
