"""A profile's hosts, opened together: links, OS dialects and facts, concurrently.

What the engine, `abtui check` and the benches share to get from a profile to working links.
"""

from __future__ import annotations

import asyncio
from collections.abc import Sequence
from dataclasses import dataclass, field

from abtui.core.errors import AbtuiError, LeaseHeld, LeaseRefused, RemoteError
from abtui.core.model import HostFacts, Pair, Profile
from abtui.remote.facts import gather_facts
from abtui.remote.link import HostLink, StateCallback, connect_all
from abtui.remote.os.dialect import Dialect
from abtui.remote.os.pick import OS_COMMAND, dialect_for

NOT_ASKED = "its lease not asked for"  # (abtui.core.errors.lease_not_asked's reason)


def profile_hosts(pairs: Sequence[Pair]) -> list[str]:
    """Every host alias of the pairs, once, in order."""
    return list(dict.fromkeys(a for p in pairs for a in (p.sender, p.receiver)))


def host_device(pairs: Sequence[Pair], alias: str) -> str | None:
    """The data device of `alias` in the first pair that names one."""
    for p in pairs:
        for host, dev in ((p.sender, p.sender_device), (p.receiver, p.receiver_device)):
            if host == alias and dev:
                return dev
    return None


def host_iperf3(profile: Profile, alias: str) -> str:
    """The iperf3 program `alias` runs (its first pair's `[test] iperf3`): facts report it."""
    from abtui.remote.iperf_cmd import options_for

    for p in profile.pairs:
        if alias in (p.sender, p.receiver):
            return options_for(profile.test, p).iperf3
    return profile.test.iperf3


@dataclass(slots=True)
class Hosts:
    links: dict[str, HostLink] = field(default_factory=dict)
    dialects: dict[str, Dialect] = field(default_factory=dict)
    facts: dict[str, HostFacts] = field(default_factory=dict)
    errors: dict[str, str] = field(default_factory=dict)
    # host -> the controller holding its lease (abtui.remote.lease): another abtui drives it
    held: dict[str, str] = field(default_factory=dict)
    # host -> why its lease was not taken although it answered (something else at the
    # lease's name; a host before it in the one order refused): not driven
    unleased: dict[str, str] = field(default_factory=dict)

    async def close(self) -> None:
        await asyncio.gather(*(link.close() for link in self.links.values()),
                             return_exceptions=True)


def make_links(profile: Profile, on_state: StateCallback | None = None,
               reconnect: bool = True, lease: bool = True) -> dict[str, HostLink]:
    """A link per host of the profile; each takes its host's lease unless `lease` is False."""
    return {alias: HostLink(alias, ssh_config=profile.ssh_config,
                            known_hosts=profile.known_hosts, sudo=profile.sudo,
                            on_state=on_state, reconnect=reconnect,
                            accept_new_host_keys=profile.accept_new_host_keys, lease=lease)
            for alias in profile_hosts(profile.pairs)}


async def open_hosts(profile: Profile, on_state: StateCallback | None = None,
                     reconnect: bool = True, lease: bool = True) -> Hosts:
    """Connect to every host concurrently (each taking its lease), then learn each one's OS
    and facts (one round trip each). A host that fails is in `errors` (one line), one
    another controller holds in `held` too; the others work."""
    hosts = Hosts(links=make_links(profile, on_state, reconnect, lease))
    failed = await connect_all(list(hosts.links.values()))
    for alias, exc in failed.items():
        if isinstance(exc, LeaseHeld):
            hosts.held[alias] = exc.holder
        if isinstance(exc, LeaseRefused):
            hosts.unleased[alias] = exc.reason
        if exc is not None:
            hosts.errors[alias] = str(exc).removeprefix(f"{alias}: ")
    alive = [a for a in hosts.links if a not in hosts.errors]
    got = await asyncio.gather(*(gather_facts(hosts.links[a], host_device(profile.pairs, a),
                                              host_iperf3(profile, a))
                                 for a in alive), return_exceptions=True)
    for alias, facts in zip(alive, got, strict=True):
        if isinstance(facts, BaseException):
            hosts.errors[alias] = facts.reason if isinstance(facts, RemoteError) else str(facts)
            continue
        hosts.facts[alias] = facts
        try:
            hosts.dialects[alias] = dialect_for(facts.os)
        except AbtuiError as exc:
            hosts.errors[alias] = str(exc)
    return hosts


def held_line(held: dict[str, str], unleased: dict[str, str] | None = None) -> str:
    """One line naming the controller(s) holding hosts' leases, each with its hosts, and the
    hosts whose leases were not taken (not asked for: after a held one in the order)."""
    by_holder: dict[str, list[str]] = {}
    for alias, holder in held.items():
        by_holder.setdefault(holder, []).append(alias)
    parts = [f"{', '.join(aliases)} {'is' if len(aliases) == 1 else 'are'} driven by {holder}"
             for holder, aliases in by_holder.items()]
    asked = [a for a, why in (unleased or {}).items() if not why.startswith(NOT_ASKED)]
    parts += [f"{a}: {(unleased or {})[a]}" for a in asked]
    waiting = [a for a in (unleased or {}) if a not in asked]
    if waiting:
        parts.append(f"{', '.join(waiting)} not asked for (after "
                     f"{'them' if len(parts) > 1 else 'it'} in the hosts' one order)")
    return "; ".join(parts)


async def probe_tunnels(profile: Profile, hosts: Hosts) -> None:
    """Where the profile switches tunnels, each host says which types it can make: the facts
    carry it, `abtui check` reports it, the console's switcher offers only those. (The probe
    makes and removes a scratch interface: callers run it only once every host key is
    trusted.)"""
    from abtui.hosts.tunnels import probe_host, uses_tunnels

    if not uses_tunnels(profile.knobs, profile.tunnels):
        return
    aliases = list(hosts.dialects)
    got = await asyncio.gather(*(probe_host(hosts.links[a], hosts.dialects[a])
                                 for a in aliases), return_exceptions=True)
    for alias, probe in zip(aliases, got, strict=True):
        if isinstance(probe, dict):  # a host that cannot say stays unknown (empty)
            hosts.facts[alias].tunnels = probe


async def detect_dialect(link: HostLink) -> Dialect:
    """The dialect of a connected host, from `uname -s`."""
    return dialect_for(await link.check(OS_COMMAND))
