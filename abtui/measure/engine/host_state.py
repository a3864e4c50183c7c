"""The session's hosts' state beside the knobs, recorded at its start (before abtui sets
anything) and at its end (after it set everything back): a HOST_STATE event per host and
moment (abtui.hosts.state), and at the end a mark naming what changed in between, so a
session whose hosts moved under it says so. Reading never fails the session: what a host
cannot say is recorded as unavailable."""

from __future__ import annotations

import asyncio
from typing import Any

from abtui.core import events
from abtui.core.events import Event
from abtui.core.model import LinkState, Profile
from abtui.hosts.state import TIMEOUT_S, read_all
from abtui.measure.ports import Emit
from abtui.remote.link import HostLink
from abtui.remote.os.dialect import Dialect

HOSTS_CHANGED = "hosts changed during the session"  # the end's mark begins so
# the end's reading holds up the set-back's last steps (links closed, the journal settled)
END_TIMEOUT_S = 5.0


class HostStateRecorder:
    """Reads and emits the hosts' state; keeps the start's to say what the end changed."""

    def __init__(self, profile: Profile, emit: Emit) -> None:
        self.profile = profile
        self._emit = emit
        self.readings: dict[str, dict[str, dict[str, Any]]] = {}  # host -> moment -> data

    async def record(self, moment: str, links: dict[str, HostLink],
                     dialects: dict[str, Dialect]) -> None:
        """Every connected host's reading at `moment` ("start", "end"), as events."""
        up = {a: link for a, link in links.items()
              if getattr(link, "state", None) is LinkState.CONNECTED}
        try:
            states = await read_all(up, dialects, self.profile.pairs,
                                    timeout=END_TIMEOUT_S if moment == "end" else TIMEOUT_S)
        except Exception as exc:  # recording must never end a session
            self._emit(Event.of(events.Error(message=f"host state at {moment}: {exc}")))
            return
        for alias, st in states.items():
            payload = events.HostStateRead(moment=moment, device=st.device, items=st.items,
                                           unavailable=st.unavailable)
            self.readings.setdefault(alias, {})[moment] = payload.to_data()
            self._emit(Event.of(payload, host=alias))
        if moment == "end":
            self._say_changes()

    async def record_end(self, links: dict[str, HostLink],
                         dialects: dict[str, Dialect]) -> bool:
        """The end's reading, in the middle of the set-back: True when it was cancelled, so
        that the caller finishes setting back before the cancellation goes on."""
        try:
            await self.record("end", links, dialects)
        except asyncio.CancelledError:
            self._emit(Event.of(events.Error(message="host state at end: not read "
                                                     "(interrupted)")))
            return True
        return False

    def _say_changes(self) -> None:
        # the reports' diff, imported at the session's end: not on the way to a first frame
        from abtui.reports.host_state import MAX_LISTED, diff

        changed = [c for host, got in self.readings.items()
                   for c in diff(got.get("start"), got.get("end"), host)]
        if changed:
            listed = "; ".join(c.line() for c in changed[:MAX_LISTED])
            more = f" (and {len(changed) - MAX_LISTED} more)" \
                if len(changed) > MAX_LISTED else ""
            self._emit(Event.of(events.Mark(text=f"{HOSTS_CHANGED}: {listed}{more}")))
