"""Whether the lab's hosts can be used: SSH logs in to each with the lab's own keys (its
ssh_config, known_hosts and client key), and why not where it cannot; and whether another
lab already uses the management subnet or the interface prefix a lab is about to take."""

from __future__ import annotations

import ipaddress
import json
import subprocess
from collections.abc import Sequence
from pathlib import Path

from abtui.core.text import visible

LOGIN_TIMEOUT_S = 10


def logins(ssh_config: Path, aliases: Sequence[str],
           timeout: float = LOGIN_TIMEOUT_S) -> dict[str, str]:
    """alias -> "" when `ssh` logs in with the lab's ssh_config (BatchMode: its keys only, no
    password asked) and runs `true`, else why, in one line; every host at once."""
    procs = {a: subprocess.Popen(["ssh", "-F", str(ssh_config), "-o", "BatchMode=yes",
                                  "-o", f"ConnectTimeout={max(1, int(timeout) - 1)}", a, "true"],
                                 stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                                 stderr=subprocess.PIPE, text=True) for a in aliases}
    out = {}
    for alias, proc in procs.items():
        try:
            _, err = proc.communicate(timeout=timeout)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.communicate()
            out[alias] = f"ssh did not log in within {timeout:g} s"
            continue
        lines = [ln.strip() for ln in err.splitlines() if ln.strip()]
        out[alias] = "" if proc.returncode == 0 else \
            "ssh with the lab's keys failed: " + \
            (visible(lines[-1]) if lines else f"exit {proc.returncode}")
    return out


def addresses(ip_json: str) -> list[tuple[str, ipaddress.IPv4Interface]]:
    """(interface, address) of `ip -j addr show` output (IPv4 only)."""
    try:
        links = json.loads(ip_json or "[]")
    except ValueError:
        return []
    out = []
    for link in links if isinstance(links, list) else []:
        for info in link.get("addr_info", []) if isinstance(link, dict) else []:
            if isinstance(info, dict) and info.get("family") == "inet":
                try:
                    out.append((str(link.get("ifname", "?")), ipaddress.IPv4Interface(
                        f"{info['local']}/{info['prefixlen']}")))
                except (KeyError, ValueError):
                    continue
    return out


def clash(ip_json: str, bridge: str, bridge_address: str) -> str | None:
    """Why a lab whose management bridge is `bridge` at `bridge_address` (/24) cannot come
    up here: its subnet is on another interface, or its bridge's name is another lab's (an
    address outside its subnet); None when nothing clashes."""
    subnet = ipaddress.IPv4Interface(f"{bridge_address}/24").network
    for ifname, addr in addresses(ip_json):
        if ifname != bridge and addr.network.overlaps(subnet):
            return (f"the management subnet {subnet} is in use on {ifname} ({addr}): another "
                    "lab's?")
        if ifname == bridge and addr.ip not in subnet:
            return (f"the interface prefix of {bridge} is in use by another lab (its address "
                    f"{addr} is not in {subnet})")
    return None


def root_addresses() -> str:
    """`ip -j addr show` of this (the root) namespace."""
    return subprocess.run(["ip", "-j", "addr", "show"], capture_output=True, text=True,
                          check=False).stdout
