"""The garbage collector kept off what the console's start built, once it is live.

The console freezes what it built before its first frame and turns the collector on then
(abtui.ui.app). What it builds next, to go live, lives as long as it does too: asyncssh and
cryptography imported by the first link, numpy and scipy by the statistics, the runs' parsers,
Textual's caches (about 49,000 objects, counted at the pass). The collector's first full pass
came about ten of its middle passes after the first frame, with nothing frozen since: it went
over all of them, 38-44 ms of the main thread's CPU and 170-320 ms of wall time on the shared
2-core machine under load, on an interval's way to the screen in two live runs of five
(`ui_latency_p99_ms`, docs/performance.md). Frozen at the first interval, they are never
looked at again; the full passes that remain go over what the live console made since.
"""

from __future__ import annotations

import gc


class LiveFreeze:
    """Freezes the collector's objects once, when the console shows its first interval."""

    def __init__(self) -> None:
        self.done = False

    def live(self) -> None:
        """An interval is being shown: the start is over (the links up, the runs started)."""
        if not self.done:
            self.done = True
            gc.freeze()
