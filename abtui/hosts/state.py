"""Every host's state beside the knobs (abtui.remote.host_state), read at once: one batched
command per host through its control shell, never an error (a host that cannot answer is an
item recorded as unavailable, with its reason)."""

from __future__ import annotations

import asyncio
from collections.abc import Mapping, Sequence

from abtui.core.errors import RemoteError
from abtui.core.model import Pair
from abtui.remote.host_state import HostState, parse_state
from abtui.remote.link import HostLink
from abtui.remote.os.dialect import Dialect

TIMEOUT_S = 15.0


def data_device(pairs: Sequence[Pair], alias: str) -> tuple[str | None, str | None]:
    """(the device the profile names for `alias`, the target that finds it on the host):
    its first pair's."""
    for p in pairs:
        for host, dev in ((p.sender, p.sender_device), (p.receiver, p.receiver_device)):
            if host == alias:
                return dev or None, p.target
    return None, None


async def read_state(link: HostLink, dialect: Dialect, device: str | None,
                     target: str | None, timeout: float = TIMEOUT_S) -> HostState:
    """One host's reading; what it could not say in `unavailable`."""
    command = dialect.host_state_command(device, target)
    if not command:
        return HostState(unavailable={"host state": f"not read on {dialect.name}"})
    try:
        result = await link.run(command, timeout=timeout)
    except RemoteError as exc:
        return HostState(unavailable={"host state": exc.reason})
    state = parse_state(result.stdout)
    if not state.items and not result.ok:
        why = (result.stderr.strip() or f"exit {result.exit_status}").splitlines()[-1]
        state.unavailable["host state"] = why
    return state


async def read_all(links: Mapping[str, HostLink], dialects: Mapping[str, Dialect],
                   pairs: Sequence[Pair], timeout: float = TIMEOUT_S) -> dict[str, HostState]:
    """Each connected host's reading, concurrently, each within `timeout` s."""
    aliases = [a for a in links if a in dialects]
    got = await asyncio.gather(*(read_state(links[a], dialects[a], *data_device(pairs, a),
                                            timeout=timeout)
                                 for a in aliases), return_exceptions=True)
    out = {}
    for alias, state in zip(aliases, got, strict=True):
        if isinstance(state, BaseException) and not isinstance(state, Exception):
            raise state  # a cancellation goes on
        out[alias] = state if isinstance(state, HostState) else HostState(
            unavailable={"host state": str(state) or type(state).__name__})
    return out
