"""Every setting a session wrote or read, read back: a value someone else changed (a
colleague's `sysctl -w` on the host mid-session) is found here, never overwritten.

The engine reads back at every stretch boundary of an alternation, before every change it
makes and every few seconds while it measures (abtui.measure.engine.drift); each read is one
round trip of a host's control shell (about a millisecond), all hosts at once, every setting
of a host in that one round trip (`reads_command`: a round trip a setting, 10 a read-back on
the lab's 2 pairs, was two thirds of the live console's control-shell round trips). A
setting that reads otherwise than the value abtui last wrote (and read back) there, or,
where it wrote none, than the value it read there (a host's own value, which the labels name
as the knob's value until a flip), becomes the host's own: marked foreign in the knob layer
(`KnobManager.foreign`: no flip writes it again) and in the undo journal (`abtui recover`
leaves it), and returned as a `Changed` for the engine to record as drift and split the
phase.
"""

from __future__ import annotations

import asyncio
from collections.abc import Collection
from dataclasses import dataclass

from abtui.core.errors import RemoteError
from abtui.hosts.knobs import KnobManager
from abtui.remote.cork import together
from abtui.remote.os.dialect import Setting, same_value

# closes each setting's output in a host's reads sent as one command, with its exit status
READ_END = "@abtui-read-end"


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
        by_host: dict[str, list[Setting]] = {}
        for (host, s), _wrote in items:
            by_host.setdefault(host, []).append(s)
        with together(len(by_host), manager.uncorker()):  # the hosts' reads leave at once
            read = await asyncio.gather(*(_read_all(manager, h, ss)
                                          for h, ss in by_host.items()))
        got = dict(zip(by_host, read, strict=True))
        out = []
        for ((host, s), wrote) in items:
            now = got[host][by_host[host].index(s)]
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


async def _read_all(manager: KnobManager, host: str, settings: list[Setting]
                    ) -> list[str | BaseException]:
    """Each of `settings`' value on `host`, or the exception its read raised; read in one
    round trip of the host's control shell (one setting: the manager's own read)."""
    if len(settings) == 1:
        try:
            return [await manager.read(host, settings[0])]
        except Exception as exc:  # cannot be read now: said by the caller
            return [exc]
    dialect, link = manager.dialects.get(host), manager.links.get(host)
    if dialect is None or link is None:
        return [RemoteError(host, "not connected")] * len(settings)
    try:
        result = await link.run(reads_command([dialect.read_command(s) for s in settings]),
                                isolate=False, again=True)  # a lost link is waited for
    except Exception as exc:
        return [exc] * len(settings)
    outs = split_reads(result.stdout, len(settings))
    values: list[str | BaseException] = []
    for s, got in zip(settings, outs, strict=True):
        value = dialect.parse_value(s, got) if got is not None else None
        values.append(RemoteError(host, f"cannot read {s.label()}") if value is None
                      else value)
    return values


def reads_command(commands: list[str]) -> str:
    """Read commands (a dialect's, quoted there) run one after the other in one command, each
    one's output closed by a READ_END line with its exit status; their stderr is dropped (a
    setting that cannot be read is skipped, not explained)."""
    return "\n".join(f"{{ {c}\n}} </dev/null 2>/dev/null; printf '\\n{READ_END} %d\\n' \"$?\""
                     for c in commands)


def split_reads(out: str, n: int) -> list[str | None]:
    """`reads_command`'s output as each read's own output, None for a read that failed (or
    whose end line is missing: the whole answer is then none of them)."""
    parts: list[str | None] = []
    lines: list[str] = []
    for line in out.splitlines():
        if line.startswith(READ_END + " "):
            status = line[len(READ_END) + 1:].strip()
            if lines and lines[-1] == "":  # the newline printed before the end line
                lines.pop()
            text = "".join(f"{x}\n" for x in lines)
            parts.append(text if status == "0" else None)
            lines = []
        else:
            lines.append(line)
    return parts if len(parts) == n else [None] * n
