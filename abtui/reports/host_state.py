"""Host state beside the knobs, as differences: between a session's start and end (its hosts
changed while it measured), and between two sessions (`abtui compare` and the gate print
them in a table before the results: `net.ipv4.tcp_sack 1 → 0`, `data0 mtu 1500 → 1400`).

A session's readings are its HOST_STATE events (abtui.core.events.HostStateRead), kept by
the session per host and moment. Two sessions' hosts are matched by alias, then, for a pair
both compare, sender with sender and receiver with receiver. An item one side could not
read is never a difference (it is listed once as unavailable); sessions recorded before
abtui read host state compare as they did, with a line saying there is nothing to compare.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from abtui.remote.host_state import DEV, shown
from abtui.reports.formatting import md_table
from abtui.sessions.session import Session

ABSENT = "—"


@dataclass(frozen=True, slots=True)
class Change:
    """One item that differs: on `host` (`a → b` when two hosts were matched), as shown."""

    host: str
    item: str
    before: str
    after: str

    def line(self) -> str:
        return f"{self.host}: {self.item} {self.before} → {self.after}"


def reading(session: Session, host: str, moment: str = "start") -> dict[str, Any] | None:
    """A host's reading at `moment` ("start" or "end"), the other one if only it was read."""
    got = session.host_states.get(host) or {}
    return got.get(moment) or (got.get("end") if moment == "start" else got.get("start"))


def diff(before: Mapping[str, Any] | None, after: Mapping[str, Any] | None, host: str,
         skip: frozenset[str] = frozenset()) -> list[Change]:
    """Every item whose value differs between two readings, in item order; an item only one
    side holds is a change from/to ABSENT unless the other side said it was unavailable."""
    if not before or not after:
        return []
    a, b = _items(before), _items(after)
    gone_a, gone_b = _unavailable(before), _unavailable(after)
    dev_a, dev_b = str(before.get("device") or ""), str(after.get("device") or "")
    device = dev_a if dev_a == dev_b or not dev_b else (
        f"{dev_a}/{dev_b}" if dev_a else dev_b)
    out = []
    if dev_a and dev_b and dev_a != dev_b:
        out.append(Change(host, "data device", dev_a, dev_b))
    for item in sorted(a.keys() | b.keys()):
        if item in skip or a.get(item) == b.get(item):
            continue
        if (item not in a and _covered(item, gone_a)) or (item not in b and
                                                          _covered(item, gone_b)):
            continue
        out.append(Change(host, shown(item, device), a.get(item, ABSENT),
                          b.get(item, ABSENT)))
    return out


def within(session: Session) -> list[Change]:
    """What changed on the session's hosts between its start and its end."""
    out = []
    for host, got in session.host_states.items():
        out += diff(got.get("start"), got.get("end"), host)
    return out


def matched_hosts(left: Session, right: Session,
                  pairs: list[tuple[str, str]]) -> list[tuple[str, str]]:
    """(left host, right host): the same alias, then each compared pair's sender with
    sender and receiver with receiver."""
    out = [(h, h) for h in left.host_states if h in right.host_states]
    used_l, used_r = {a for a, _ in out}, {b for _, b in out}
    for lp, rp in pairs:
        if not lp or not rp:
            continue
        lh, rh = left.hosts_of(lp), right.hosts_of(rp)
        for role in ("sender", "receiver"):
            a, b = lh.get(role), rh.get(role)
            if a and b and a in left.host_states and b in right.host_states \
                    and a not in used_l and b not in used_r:
                out.append((a, b))
                used_l.add(a)
                used_r.add(b)
    return out


def between(left: Session, right: Session, pairs: list[tuple[str, str]]) -> list[Change]:
    """Every difference between the two sessions' hosts, each session at its start."""
    out = []
    for a, b in matched_hosts(left, right, pairs):
        out += diff(reading(left, a), reading(right, b), a if a == b else f"{a} → {b}")
    return out


def compare_section(left: Session, right: Session, pairs: list[tuple[str, str]]) -> list[str]:
    """compare's table before the results (markdown lines); a line where there is none."""
    if not left.host_states or not right.host_states:
        which = " and ".join(s.name for s in (left, right) if not s.host_states)
        return [f"Host state: not recorded in {which} (recorded before abtui read it): "
                "nothing beside the knobs to compare.", ""]
    changes = between(left, right, pairs)
    out = ["## Host state beside the knobs", ""]
    if not matched_hosts(left, right, pairs):
        return [*out, "No host of one session matches one of the other's.", ""]
    if changes:
        out += [f"{len(changes)} setting{'s' if len(changes) != 1 else ''} differ between "
                "the sessions' hosts (each at its start); the results below include their "
                "effect:", "",
                md_table(["host", "setting", left.name, right.name],
                         [[c.host, c.item, c.before, c.after] for c in changes]), ""]
    else:
        out += ["The hosts' settings beside the knobs are the same in both sessions.", ""]
    for s in (left, right):
        changed = within(s)
        if changed:
            out += [f"⚠ {s.name}: its hosts changed during the session: "
                    + "; ".join(c.line() for c in changed[:MAX_LISTED])
                    + (f" (and {len(changed) - MAX_LISTED} more)"
                       if len(changed) > MAX_LISTED else ""), ""]
    out += _unavailable_lines(left, right)
    return out


MAX_LISTED = 8


def report_section(session: Session) -> list[str]:
    """A session's own: its hosts changed between start and end (nothing when they did not,
    or it has no reading)."""
    changed = within(session)
    if not changed:
        return []
    return ["## Hosts changed during the session", "",
            "⚠ What shapes the numbers besides the knobs was not the same at the end as at "
            "the start: results after the change ran under other settings.", "",
            md_table(["host", "setting", "start", "end"],
                     [[c.host, c.item, c.before, c.after] for c in changed]), ""]


def to_json(changes: list[Change], sides: tuple[str, str] = ("left", "right")
            ) -> list[dict[str, str]]:
    """Changes as JSON rows: `sides` names the two values (a session's own: start, end)."""
    return [{"host": c.host, "setting": c.item, sides[0]: c.before, sides[1]: c.after}
            for c in changes]


def _unavailable_lines(*sessions: Session) -> list[str]:
    """What hosts could not read, once per item and reason, naming the hosts (or "every
    host") that said so."""
    said: dict[tuple[str, str], list[str]] = {}
    everyone = []
    for s in sessions:
        for host in s.host_states:
            everyone.append(f"{s.name} {host}")
            got = reading(s, host) or {}
            dev = str(got.get("device") or "")
            for what, why in sorted(_unavailable(got).items()):
                said.setdefault((shown(what, dev), why), []).append(f"{s.name} {host}")
    if not said:
        return []
    parts = [f"{what} ({why}) on "
             + ("every host" if len(who) == len(everyone) else ", ".join(who))
             for (what, why), who in said.items()]
    return ["Not readable, so not compared: " + "; ".join(parts) + ".", ""]


def _items(reading: Mapping[str, Any]) -> dict[str, str]:
    items = reading.get("items")
    return {str(k): str(v) for k, v in items.items()} if isinstance(items, dict) else {}


def _unavailable(reading: Mapping[str, Any]) -> dict[str, str]:
    gone = reading.get("unavailable")
    return {str(k): str(v) for k, v in gone.items()} if isinstance(gone, dict) else {}


def _covered(item: str, unavailable: Mapping[str, str]) -> bool:
    """Is `item` one of what a reading said it could not read (`@dev offloads` covers
    `@dev offload tso`, `net.* sysctls` every sysctl, `host state` all)?"""
    if "host state" in unavailable:
        return True
    if item.startswith("sysctl ") and "net.* sysctls" in unavailable:
        return True
    for what in unavailable:
        if what.startswith(DEV) and item.startswith(DEV):
            stem = what.split()[1].rstrip("s")[:5]  # offloads/coalescing/rings/channels…
            if item.split()[1].startswith(stem):
                return True
    return False
