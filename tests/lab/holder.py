"""A stand-in controller for the recovery tests: changes a knob on every host, brings a vxlan
tunnel up on pair A, starts a long process, says READY, and waits. Ctrl-C (SIGINT) makes it
set everything back; SIGKILL leaves the undo journal for `abtui recover`.

python -m tests.lab.holder PROFILE SYSCTL VALUE
"""

from __future__ import annotations

import asyncio
import sys

from abtui.core.model import Knob, KnobKind
from abtui.hosts.connect import open_hosts
from abtui.hosts.knobs import KnobManager, resolve_targets
from abtui.hosts.restore import set_back
from abtui.hosts.tunnels import TunnelManager
from abtui.hosts.undo import UndoJournal
from abtui.profile import load_profile


async def main(profile_path: str, key: str, value: str) -> None:
    profile = load_profile(profile_path)
    hosts = await open_hosts(profile)
    journal = UndoJournal()
    knobs = KnobManager(hosts.links, hosts.dialects, journal=journal)
    tunnels = TunnelManager(hosts.links, hosts.dialects, profile.pairs, journal=journal)
    knob = Knob("held", KnobKind.SYSCTL, (value,), key=key)
    snd = hosts.links[profile.pairs[0].sender]
    proc = None
    try:
        await knobs.apply(knob, value, resolve_targets(profile.pairs, knob))
        await tunnels.switch("A", "vxlan")
        proc = await snd.stream("sleep 300 | cat")
        journal.record_pgid(snd.alias, proc.pgid or 0, "sleep")
        print(f"READY {proc.pgid}", flush=True)
        await asyncio.sleep(600)
    finally:
        failures = await set_back(knobs, tunnels, journal, [proc] if proc else [])
        await hosts.close()
        print("RESTORED" if not failures else f"FAILED {failures}", flush=True)


if __name__ == "__main__":
    try:
        asyncio.run(main(*sys.argv[1:4]))
    except KeyboardInterrupt:
        sys.exit(130)
