"""`first_frame_s`'s reference: a bare Textual app, one static text filling the screen, started
the same way as the console (`python -m` in the same tmux, 160x48): what any Textual program
pays to its first frame on this machine now (the interpreter, Textual's imports, the driver,
one frame). It writes when its first frame was shown to $ABTUI_BENCH_FILE, as the console
does (abtui.ui.model.bench), and quits on ctrl+q."""

from __future__ import annotations

import json
import os
import time

from textual.app import App, ComposeResult
from textual.widgets import Static


class Bare(App[None]):
    def compose(self) -> ComposeResult:
        yield Static("a bare Textual app " * 40)

    def on_mount(self) -> None:
        self.call_after_refresh(self._first_frame_shown)

    def _first_frame_shown(self) -> None:
        with open(os.environ["ABTUI_BENCH_FILE"], "a") as out:
            out.write(json.dumps({"first_frame": time.time(), "cpu_s": time.process_time()})
                      + "\n")


if __name__ == "__main__":
    Bare().run()
