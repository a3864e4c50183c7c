"""The data link's counters on a run's sender, read on the run's beat: a LINK_BYTES event
per reading, which abtui.measure.engine.traffic sets against iperf3's own bytes.

One short control-shell command a reading (abtui.remote.traffic: shell builtins on Linux, no
fork once the device is known); the first finds the device (the profile's, else the one that
holds or routes to the target), the next ones read it by name. A failure is said once and
the sampler goes on.
"""

from __future__ import annotations

import asyncio
import functools
from collections.abc import Callable
from typing import TYPE_CHECKING

from abtui.core import events
from abtui.core.errors import RemoteError
from abtui.remote.os.dialect import Dialect
from abtui.remote.traffic import parse_counters

if TYPE_CHECKING:  # types only: the objects are handed in by their owner
    from abtui.measure.run.context import RunContext

# the command that reads a device's counters (None: find the device from the target)
CountersFor = Callable[[str | None], str]


def counters_for(dialect: Dialect | None, target: str) -> Callable[[str | None], str] | None:
    """The command that reads a sender's data-link counters, for a device (None: the one
    that holds or routes to `target`); None where the host's OS has none."""
    if dialect is None or not dialect.link_counters_command(None, target):
        return None
    return functools.partial(_command, dialect, target)


def _command(dialect: Dialect, target: str, device: str | None) -> str:
    return dialect.link_counters_command(device, target)


class LinkCounterSampler:
    """A run's sender's data-link counters every `period` s, the first at the release."""

    def __init__(self, ctx: RunContext, counters_for: CountersFor, period: float) -> None:
        self.ctx = ctx
        self.counters_for = counters_for
        self.period = period
        self.device: str | None = ctx.spec.pair.sender_device or None
        self._complained = False

    async def run(self) -> None:
        """Read until cancelled, on a steady beat (a slow reply is not made up for)."""
        loop = asyncio.get_running_loop()
        due = loop.time()
        while True:
            await self.read_once()
            due = max(due + self.period, loop.time())
            await asyncio.sleep(due - loop.time())

    async def read_once(self) -> None:
        link = self.ctx.sender
        try:
            out = await link.check(self.counters_for(self.device),
                                   timeout=max(2.0, self.period))
        except RemoteError as exc:
            self._complain(exc.reason)
            return
        got = parse_counters(out)
        if got is None:
            self._complain(f"unreadable answer {out.strip()[:80]!r}")
            return
        self.device = got.device
        self.ctx.event(events.LinkBytes(
            run=self.ctx.spec.run_id, device=got.device, clock=got.clock,
            tx_bytes=got.tx_bytes, rx_bytes=got.rx_bytes, tx_packets=got.tx_packets,
            rx_packets=got.rx_packets), host=link.alias)

    def _complain(self, reason: str) -> None:
        if not self._complained:
            self._complained = True
            self.ctx.event(events.Error(
                message=f"data link counters: {reason} (traffic not ours is not looked for "
                        "in this run)"), host=self.ctx.sender.alias)
