"""A data device's byte and packet counters, read with the host's clock in one short command:
what abtui.measure.engine.traffic compares with iperf3's own bytes to see a flow that is not
ours on the link.

The command prints one line, `DEVICE CLOCK TX_BYTES RX_BYTES TX_PACKETS RX_PACKETS`: the
device the profile names, else the one that holds or routes to the pair's target (resolved
on the host; a sampler passes the name it got back from then on); CLOCK the host's time in
seconds (bash's EPOCHREALTIME, no fork; in another shell, such as a busybox guest's dash,
the seconds since boot /proc/uptime gives, to 10 ms: the guest's own clock, which an
instruction-counted guest's iperf3 figures are on too), `-` where the host has neither.
"""

from __future__ import annotations

from dataclasses import dataclass
from shlex import quote

from abtui.remote.checks import validate_device
from abtui.remote.host_state import ADDRESS

_LINUX_RESOLVE = (
    'if [ -z "$dev" ] && [ -n "$t" ]; then '
    'dev=$(ip -o addr show to "$t" 2>/dev/null | { read -r _ d _ && echo "$d"; }); '
    '[ -n "$dev" ] || dev=$(ip -o route get "$t" 2>/dev/null | '
    "sed -n 's/.* dev \\([^ ]*\\).*/\\1/p' | head -n 1); fi; ")

_LINUX = (
    's=/sys/class/net/$dev/statistics; [ -n "$dev" ] && [ -r "$s/tx_bytes" ] || '
    '{ echo "no statistics for data device ${dev:-(none found)}" >&2; exit 1; }; '
    'read -r a < "$s/tx_bytes"; read -r b < "$s/rx_bytes"; read -r c < "$s/tx_packets"; '
    'read -r e < "$s/rx_packets"; '
    'u=-; [ -n "${EPOCHREALTIME:-}" ] || { [ -r /proc/uptime ] && read -r u _ < /proc/uptime; }; '
    'echo "$dev ${EPOCHREALTIME:-$u} $a $b $c $e"')

_FREEBSD = (
    'if [ -z "$dev" ] && [ -n "$t" ]; then '
    "dev=$(route -n get \"$t\" 2>/dev/null | sed -n 's/^ *interface: //p' | head -n 1); fi; "
    '[ -n "$dev" ] || { echo "no data device found" >&2; exit 1; }; '
    'netstat -I "$dev" -bn | while read -r n m net addr ip ie idr ib op oe ob rest; do '
    'case $net in "<Link#"*) echo "$dev - $ob $ib $op $ip"; break;; esac; done')


def _vars(device: str | None, target: str | None) -> str:
    dev = quote(validate_device(device)) if device else "''"
    tgt = quote(target) if target and ADDRESS.fullmatch(target) else "''"
    return f"dev={dev}; t={tgt}; "


def linux_counters_command(device: str | None, target: str | None) -> str:
    return _vars(device, target) + (_LINUX_RESOLVE if not device else "") + _LINUX


def freebsd_counters_command(device: str | None, target: str | None) -> str:
    return _vars(device, target) + _FREEBSD


@dataclass(frozen=True, slots=True)
class Counters:
    """One reading of a device's counters; `clock` None where the host gave no clock."""

    device: str
    clock: float | None
    tx_bytes: int
    rx_bytes: int
    tx_packets: int
    rx_packets: int


def parse_counters(out: str) -> Counters | None:
    """The command's line -> Counters; None for anything else (never raises)."""
    for line in reversed(out.strip().splitlines()):
        parts = line.split()
        if len(parts) != 6 or not all(p.isdigit() for p in parts[2:]):
            continue
        try:
            clock = None if parts[1] == "-" else float(parts[1])
        except ValueError:
            continue
        return Counters(parts[0], clock, *(int(p) for p in parts[2:]))
    return None
