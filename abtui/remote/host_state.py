"""What shapes a host's numbers besides the knobs, read in one control-shell round trip: its
`net.*` sysctls, the data device's offloads, coalescing, rings, channels, MTU, qdisc, driver
and firmware, the NIC vectors' IRQ affinity, the CPU governor and the kernel command line.

The script is the host's dialect's (abtui.remote.os.linux.knobs, abtui.remote.os.freebsd.knobs call
`linux_command` / `freebsd_command`): sections, each `@@ NAME` then its lines, or
`@@! NAME why` when the host cannot say (a tool missing, a device without rings). A missing
tool is an item recorded as unavailable, never an error: the script always exits 0.
`parse_state` turns the sections into flat items (`sysctl net.ipv4.tcp_sack` = `1`,
`data0 mtu` = `1500`) so two readings compare item by item (abtui.reports.host_state).

The data device is the profile's, else the one that holds or routes to the pair's target
(`ip route get`), resolved on the host.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from shlex import quote

from abtui.remote.checks import validate_device

SECTION = "@@ "
DEV = "@dev"  # the data device in an item's name (`@dev mtu`); `shown` puts its name in
MISSING = "@@! "
ADDRESS = re.compile(r"[0-9A-Fa-f.:]{2,45}")
UNAVAILABLE_TOOL = "not installed"

# sysctls that move by themselves (counters, keys, the clock): never a difference worth a row
VOLATILE = re.compile(
    r"(^net\.netfilter\.nf_conntrack_count$|_count$|^net\.ipv4\.tcp_fastopen_key$|"
    r"stable_secret$|^net\.ipv4\.route\.flush$|^net\.ipv6\.route\.flush$|"
    r"^net\.core\.netdev_rss_key$|\.stats\.|_stats$|\.pcbcount$|\.drops$|"
    r"^net\.inet\.(tcp|udp|ip)\.(sendspace|recvspace)_max_seen$|"
    # deprecated twins of the _ms keys, which sysctl(8) leaves out: both readings agree
    r"\.neigh\.[^.]+\.(base_reachable_time|retrans_time)$)")

_LINUX = r"""
t=__TARGET__; dev=__DEV__
if [ -z "$dev" ] && [ -n "$t" ] && command -v ip >/dev/null 2>&1; then
  dev=$(ip -o addr show to "$t" 2>/dev/null | { read -r _ d _ && echo "$d"; })
  [ -n "$dev" ] || dev=$(ip -o route get "$t" 2>/dev/null |
    sed -n 's/.* dev \([^ ]*\).*/\1/p' | head -n 1)
fi
echo "@@ device"; echo "$dev"
if command -v grep >/dev/null 2>&1 && [ -d /proc/sys/net ]; then
  echo "@@ procsys"; grep -rs '' /proc/sys/net  # one process for every file (sysctl: 2x)
elif command -v sysctl >/dev/null 2>&1; then echo "@@ sysctl"; sysctl net 2>/dev/null
else echo "@@! sysctl __NOTOOL__"; fi
echo "@@ cmdline"; cat /proc/cmdline 2>/dev/null
g=; for f in /sys/devices/system/cpu/cpu[0-9]*/cpufreq/scaling_governor; do
  [ -r "$f" ] || continue; c=${f#/sys/devices/system/cpu/}; c=${c%%/*}
  read -r v < "$f" && g="$g$c $v
"; done
if [ -n "$g" ]; then echo "@@ governor"; printf '%s' "$g"
else echo "@@! governor no cpufreq on this host"; fi
if [ -n "$dev" ] && [ -d "/sys/class/net/$dev" ]; then
  echo "@@ mtu"; cat "/sys/class/net/$dev/mtu"
  if command -v ethtool >/dev/null 2>&1; then
    for o in k c g l i; do
      if out=$(ethtool -$o "$dev" 2>&1); then echo "@@ ethtool-$o"; printf '%s\n' "$out"
      else echo "@@! ethtool-$o $(printf '%s' "$out" | tail -n 1)"; fi
    done
  else for o in k c g l i; do echo "@@! ethtool-$o __NOTOOL__"; done; fi
  if command -v tc >/dev/null 2>&1; then echo "@@ qdisc"; tc qdisc show dev "$dev" 2>&1
  else echo "@@! qdisc __NOTOOL__"; fi
  echo "@@ irq"
  while read -r n rest; do
    case "$rest" in *"$dev"*) ;; *) continue;; esac
    n=${n%:}; a=; [ -r "/proc/irq/$n/smp_affinity_list" ] &&
      read -r a < "/proc/irq/$n/smp_affinity_list"
    set -- $rest; eval "name=\${$#}"; echo "$name $a"
  done < /proc/interrupts
else
  for s in mtu ethtool-k ethtool-c ethtool-g ethtool-l ethtool-i qdisc irq; do
    echo "@@! $s no data device${dev:+ ($dev not found)}"; done
fi
exit 0
"""

_FREEBSD = r"""
t=__TARGET__; dev=__DEV__
if [ -z "$dev" ] && [ -n "$t" ]; then
  dev=$(route -n get "$t" 2>/dev/null | sed -n 's/^ *interface: //p' | head -n 1)
fi
echo "@@ device"; echo "$dev"
echo "@@ sysctl"; sysctl -e net 2>/dev/null
echo "@@ cmdline"; kenv 2>/dev/null | grep -E '^(kernel|kernelname|boot_[a-z]+)=' ;
echo "@@! governor no cpufreq governor on FreeBSD (powerd, if any, is a daemon)"
if [ -n "$dev" ] && ifconfig "$dev" >/dev/null 2>&1; then
  echo "@@ ifconfig"; ifconfig -m "$dev"
  drv=${dev%%[0-9]*}; unit=${dev#"$drv"}
  echo "@@ devsysctl"; sysctl -e "dev.$drv.$unit" 2>/dev/null |
    grep -v -e '\.mac_stats\.' -e '\.queue[0-9]*\.' -e '_count=' -e 'interrupt_rate='
  echo "@@! qdisc no tc on FreeBSD"
  echo "@@ irq"
  vmstat -ai 2>/dev/null | while read -r name rest; do
    case "$name" in irq[0-9]*:) ;; *) continue;; esac
    case "$rest" in *"$dev"*) ;; *) continue;; esac
    n=${name#irq}; n=${n%:}
    echo "${name%:} $(cpuset -g -x "$n" 2>/dev/null | sed 's/.*: //')"
  done
else
  for s in ifconfig devsysctl qdisc irq; do echo "@@! $s no data device"; done
fi
exit 0
"""


def _script(template: str, device: str | None, target: str | None) -> str:
    dev = quote(validate_device(device)) if device else "''"
    tgt = quote(target) if target and ADDRESS.fullmatch(target) else "''"
    return (template.replace("__DEV__", dev).replace("__TARGET__", tgt)
            .replace("__NOTOOL__", UNAVAILABLE_TOOL))


def linux_command(device: str | None, target: str | None) -> str:
    """Linux's reading: `device` (validated) or the one holding / routing to `target`."""
    return _script(_LINUX, device, target)


def freebsd_command(device: str | None, target: str | None) -> str:
    """FreeBSD's reading: `sysctl net`, ifconfig's options and the driver's dev.* tree."""
    return _script(_FREEBSD, device, target)


@dataclass(slots=True)
class HostState:
    """One reading: `items` what the host said, `unavailable` what it could not say (why)."""

    device: str = ""
    items: dict[str, str] = field(default_factory=dict)
    unavailable: dict[str, str] = field(default_factory=dict)


def parse_state(out: str) -> HostState:
    """The script's sections -> flat items. Never raises: what it does not know is skipped."""
    sections: dict[str, list[str]] = {}
    state = HostState()
    current: list[str] | None = None
    for line in out.splitlines():
        if line.startswith(MISSING):
            name, _, why = line[len(MISSING):].partition(" ")
            state.unavailable[name] = why.strip() or "unavailable"
            current = None
        elif line.startswith(SECTION):
            current = sections.setdefault(line[len(SECTION):].strip(), [])
        elif current is not None:
            current.append(line)
    state.device = next((x.strip() for x in sections.pop("device", []) if x.strip()), "")
    dev = DEV  # items name the data device neutrally: two hosts' readings compare
    items = state.items
    for line in sections.pop("sysctl", []):
        key, sep, value = _split_sysctl(line)
        if sep and key.startswith("net.") and not VOLATILE.search(key):
            items[f"sysctl {key}"] = " ".join(value.split())
    procsys: dict[str, list[str]] = {}
    for line in sections.pop("procsys", []):
        path, sep, value = line.partition(":")
        if sep and path.startswith("/proc/sys/net/"):
            procsys.setdefault(_sysctl_key(path), []).append(value)
    for key, values in procsys.items():
        if not VOLATILE.search(key):
            items[f"sysctl {key}"] = " ".join(" ".join(values).split())
    cmdline = " ".join(x.strip() for x in sections.pop("cmdline", []) if x.strip())
    if cmdline:
        items["kernel cmdline"] = cmdline
    governors: dict[str, list[str]] = {}
    for line in sections.pop("governor", []):
        cpu, _, gov = line.strip().partition(" ")
        if gov:
            governors.setdefault(gov, []).append(cpu)
    if governors:
        items["cpu governor"] = ", ".join(
            gov if len(governors) == 1 else f"{gov} ({' '.join(cpus)})"
            for gov, cpus in sorted(governors.items()))
    for line in sections.pop("mtu", []):
        if line.strip():
            items[f"{dev} mtu"] = line.strip()
    for line in sections.pop("ethtool-k", []):
        name, sep, rest = line.strip().partition(":")
        if sep and rest.split() and not line.startswith("Features for"):
            items[f"{dev} offload {name}"] = " ".join(rest.split())
    for section, what in (("ethtool-c", "coalesce"), ("ethtool-g", "ring"),
                          ("ethtool-l", "channels")):
        items.update({f"{dev} {what} {k}": v for k, v in _current_settings(
            sections.pop(section, [])).items()})
    for line in sections.pop("ethtool-i", []):
        name, sep, rest = line.partition(":")
        if sep and name.strip() in ("driver", "version", "firmware-version") and rest.strip():
            items[f"{dev} {name.strip()}"] = rest.strip()
    qdisc = [" ".join(x.split()) for x in sections.pop("qdisc", []) if x.strip()]
    if qdisc:
        items[f"{dev} qdisc"] = "; ".join(qdisc)
    for line in sections.pop("irq", []):
        parts = line.split()
        if parts:
            items[f"{dev} irq {parts[0]} affinity"] = " ".join(parts[1:]) or "?"
    for line in sections.pop("ifconfig", []):
        _ifconfig(items, dev, line)
    for line in sections.pop("devsysctl", []):
        key, sep, value = _split_sysctl(line)
        if sep and not VOLATILE.search(key):
            items[f"sysctl {key}"] = " ".join(value.split())
    # names as the tables show them
    state.unavailable = {_ITEM.get(k, k).replace("DEV", DEV): v
                         for k, v in state.unavailable.items()}
    return state


_ITEM = {"sysctl": "net.* sysctls", "procsys": "net.* sysctls", "governor": "cpu governor",
         "cmdline": "kernel cmdline",
         "mtu": "DEV mtu", "ethtool-k": "DEV offloads", "ethtool-c": "DEV coalescing",
         "ethtool-g": "DEV rings", "ethtool-l": "DEV channels",
         "ethtool-i": "DEV driver and firmware", "qdisc": "DEV qdisc",
         "irq": "DEV irq affinity", "ifconfig": "DEV mtu and options",
         "devsysctl": "DEV driver sysctls"}


def shown(item: str, device: str) -> str:
    """An item as tables show it: a sysctl by its name, the data device by its name
    (`net.ipv4.tcp_sack`, `data0 mtu`)."""
    return item.removeprefix("sysctl ").replace(DEV, device or "data device", 1)


def _sysctl_key(path: str) -> str:
    """/proc/sys/net/ipv4/conf/eth0.1/rp_filter -> net.ipv4.conf.eth0/1.rp_filter (sysctl's
    own spelling, as abtui.remote.os.linux.knobs.Linux.proc_path reads it back)."""
    return path.removeprefix("/proc/sys/").translate(str.maketrans("./", "/."))


def _split_sysctl(line: str) -> tuple[str, str, str]:
    """`k = v` (Linux sysctl), `k=v` (FreeBSD -e) or `k: v`."""
    for sep in (" = ", "=", ": "):
        key, found, value = line.partition(sep)
        if found and key.strip() and " " not in key.strip():
            return key.strip(), found, value.strip()
    return line, "", ""


def _current_settings(lines: list[str]) -> dict[str, str]:
    """`ethtool -c/-g/-l`: `key: value` lines, only the current ones where the output gives
    maximums first (`Pre-set maximums:` then `Current hardware settings:`)."""
    out: dict[str, str] = {}
    current = not any(x.strip().lower().startswith("pre-set maximums") for x in lines)
    for line in lines:
        low = line.strip().lower()
        if low.startswith("pre-set maximums"):
            current = False
            continue
        if low.startswith("current hardware settings"):
            current = True
            continue
        if not current:
            continue
        name, sep, rest = line.partition(":")
        name, rest = name.strip(), rest.strip()
        if not sep or not name or name.startswith(("Coalesce parameters", "Ring parameters",
                                                   "Channel parameters")):
            continue
        if name.startswith("Adaptive RX"):  # `Adaptive RX: on  TX: off`
            m = re.match(r"(\S+)\s+TX:\s*(\S+)", rest)
            if m:
                out["adaptive-rx"], out["adaptive-tx"] = m.group(1), m.group(2)
            continue
        if rest:
            out[name] = rest
    return out


def _ifconfig(items: dict[str, str], dev: str, line: str) -> None:
    """FreeBSD `ifconfig -m DEV`: its mtu, enabled options and capabilities."""
    m = re.search(r"\bmtu (\d+)", line)
    if m:
        items[f"{dev} mtu"] = m.group(1)
    for word in ("options", "capabilities"):
        m = re.search(rf"\b{word}=[0-9a-f]+<([^>]*)>", line)
        if m:
            items[f"{dev} {'offloads' if word == 'options' else 'capabilities'}"] = \
                m.group(1).replace(",", " ")
    m = re.search(r"^\s*media: (.*)$", line)
    if m:
        items[f"{dev} media"] = m.group(1).strip()
