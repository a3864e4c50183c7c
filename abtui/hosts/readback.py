"""Every setting a session wrote or read, read back: a value someone else changed (a
colleague's `sysctl -w` on the host mid-session) is found here, never overwritten.

The engine reads back at every stretch boundary of an alternation, before every change it
makes and every few seconds while it measures (abtui.measure.engine.drift); each read is one
round trip of a host's control shell (about a millisecond), all hosts at once. A setting that
reads otherwise than the value abtui last wrote (and read back) there, or, where it wrote
none, than the value it read there (a host's own value, which the labels name as the knob's
value until a flip), becomes the host's own: marked foreign in the knob layer
(`KnobManager.foreign`: no flip writes it again) and in the undo journal (`abtui recover`
leaves it), and returned as a `Changed` for the engine to
record as drift and split the phase.
"""

from __future__ import annotations

import asyncio
from collections.abc import Collection
from dataclasses import dataclass

from abtui.hosts.knobs import KnobManager
from abtui.remote.os.dialect import Setting, same_value


@dataclass(frozen=True, slots=True)
class Changed:
    """A setting abtui wrote or read that reads otherwise now: on `host`, of knob `knob`,
    abtui set (or read) `expected`, the host has `found`."""

    host: str
    setting: Setting
    knob: str
    expected: str
    found: str
    wrote: bool = True  # `expected` is what abtui wrote (else what it read there)


async def read_back(manager: KnobManager, hosts: Collection[str]) -> list[Changed]:
    """Read back every setting `manager` wrote or read on `hosts` (the connected ones the caller
    trusts: not one that reconnects or switches builds) and is still abtui's; what someone
    else changed is marked foreign (in the manager and its journal) and returned. A setting
    that cannot be read now is skipped: a link that drops is the host verifier's to handle."""
    async with manager.lock:
        known = {ident: value for ident, (value, _knob) in manager.seen.items()}
        known.update(manager.written)  # what abtui wrote there, or else what it read there
        items = [(ident, value) for ident, value in known.items()
                 if ident[0] in hosts and ident not in manager.foreign]
        got = await asyncio.gather(*(manager.read(h, s) for (h, s), _w in items),
                                   return_exceptions=True)
        out = []
        for ((host, s), wrote), now in zip(items, got, strict=True):
            if isinstance(now, BaseException):
                if not isinstance(now, Exception):  # cancelled: not a reading
                    raise now
                continue  # cannot be read now (a link dropping): nothing said of it
            if same_value(now, wrote):
                continue
            manager.foreign[(host, s)] = now
            if manager.journal is not None and (host, s) in manager.originals:
                manager.journal.foreign(host, str(s.kind), s.key, s.device, now)
            knob = manager.originals.get((host, s), manager.seen.get((host, s), ("", "")))[1]
            out.append(Changed(host, s, knob, wrote, now, (host, s) in manager.written))
        return out
