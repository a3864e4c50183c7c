"""Host facts on connect, in one control-shell round trip: OS, kernel, CPU, tools, data NIC.

One POSIX-sh script runs on every host and branches on `uname -s` itself, so Linux and FreeBSD
hosts both answer in a single round trip with `key=value` lines that `parse_facts` reads.
"""

from __future__ import annotations

import contextlib
from shlex import quote

from abtui.core.clock import CMDLINE_WORD, parse_clock
from abtui.core.errors import BadInput
from abtui.core.model import DEFAULT_IPERF3, HostFacts
from abtui.profile.fields import PROGRAM_RE
from abtui.remote.checks import validate_device
from abtui.remote.link import HostLink
from abtui.remote.os.freebsd.knobs import parse_freebsd_pciconf

_SCRIPT = r"""
os=$(uname -s); echo "os=$os"
echo "hostname=$(hostname 2>/dev/null || uname -n)"
echo "kernel_release=$(uname -r)"
echo "kernel_version=$(uname -v)"
dev=__DEV__
case $os in
Linux)
  echo "cpu_model=$(sed -n 's/^model name[[:space:]]*: //p' /proc/cpuinfo | head -n 1)"
  echo "cpu_count=$(getconf _NPROCESSORS_ONLN 2>/dev/null || nproc)"
  # shell builtins only (no fork: a slow guest answers in time)
  f=; m=/sys/devices/system/cpu/cpu0/cpufreq/cpuinfo_max_freq
  [ -r "$m" ] && read -r f < "$m"
  if [ -n "$f" ]; then echo "cpu_mhz=$((f / 1000))"
  else
    while IFS=: read -r k v; do
      case $k in "cpu MHz"*) echo "cpu_mhz=${v# }"; break;; esac
    done < /proc/cpuinfo
  fi
  # a named network namespace (ip netns) of a machine that runs other things on the same
  # kernel: its /proc/stat is the whole machine's (`ip` only runs where namespaces exist)
  set -- /run/netns/*
  if [ ! -e "$1" ]; then echo "cpu_scope=own"
  elif n=$(ip netns identify 2>/dev/null); then
    if [ -n "$n" ]; then echo "cpu_scope=shared"; else echo "cpu_scope=own"; fi
  else echo "cpu_scope="; fi
  # an instruction-counted guest of the lab says so on its kernel command line (builtins)
  c=; [ -r /proc/cmdline ] && read -r c < /proc/cmdline
  for w in $c; do case $w in __CLOCK__=*) echo "clock=${w#*=}";; esac; done
  if [ -n "$dev" ]; then
    ethtool -i "$dev" 2>/dev/null |
      sed -n 's/^driver: /nic_driver=/p; s/^firmware-version: /nic_firmware=/p'
    echo "link_speed=$(cat "/sys/class/net/$dev/speed" 2>/dev/null)"
  fi ;;
FreeBSD)
  echo "cpu_model=$(sysctl -n hw.model)"
  echo "cpu_count=$(sysctl -n hw.ncpu)"
  echo "cpu_mhz=$(sysctl -n hw.clockrate 2>/dev/null)"
  echo "cpu_scope=own"
  if [ -n "$dev" ]; then
    drv=${dev%%[0-9]*}; unit=${dev#"$drv"}
    echo "nic_driver=$drv"
    echo "nic_desc=$(sysctl -n "dev.$drv.$unit.%desc" 2>/dev/null)"
    echo "nic_firmware=$(sysctl -n "dev.$drv.$unit.fw_version" 2>/dev/null)"
    media=$(ifconfig "$dev" 2>/dev/null | sed -n 's/^[[:space:]]*media: //p' | head -n 1)
    echo "link_speed=$media"
    pciconf -lv 2>/dev/null | sed 's/^/pciconf:/'
  fi ;;
esac
echo "iperf3_version=$(__IPERF3__ --version 2>/dev/null | head -n 1)"
if command -v ping >/dev/null 2>&1; then
  v=$(ping -V 2>/dev/null | head -n 1); echo "ping_version=${v:-present}"
else echo "ping_version="; fi
"""


def facts_command(device: str | None = None, iperf3: str = DEFAULT_IPERF3) -> str:
    """The facts script for `sh`; the data device and the iperf3 program the runs use (both
    validated) are the only things put in."""
    dev = quote(validate_device(device)) if device else "''"
    if not PROGRAM_RE.fullmatch(iperf3):
        raise BadInput(f"iperf3 program {iperf3!r} is not a program name or path")
    return (_SCRIPT.replace("__DEV__", dev).replace("__IPERF3__", quote(iperf3))
            .replace("__CLOCK__", CMDLINE_WORD))


def parse_facts(alias: str, out: str, device: str | None = None) -> HostFacts:
    """The script's `key=value` lines -> HostFacts. Never raises; unknown keys are ignored."""
    values: dict[str, str] = {}
    pciconf: list[str] = []
    for line in out.splitlines():
        if line.startswith("pciconf:"):
            pciconf.append(line[len("pciconf:"):])
            continue
        key, sep, value = line.partition("=")
        if sep and key.isidentifier():
            values.setdefault(key, value.strip())
    facts = HostFacts(alias=alias)
    for name in ("os", "hostname", "kernel_release", "kernel_version", "cpu_model",
                 "iperf3_version", "ping_version", "nic_driver", "nic_firmware", "cpu_scope"):
        setattr(facts, name, values.get(name, ""))
    with contextlib.suppress(BadInput):  # a word that is not a clock is not one
        facts.clock = parse_clock(values.get("clock", ""))
    count = values.get("cpu_count", "")
    facts.cpu_count = int(count) if count.isdigit() else None
    try:
        mhz = float(values.get("cpu_mhz", ""))
        facts.cpu_mhz = mhz if 0 < mhz < 1e6 else None
    except ValueError:
        facts.cpu_mhz = None
    speed = values.get("link_speed", "")
    if speed.lstrip("-").isdigit():
        facts.link_speed = f"{int(speed)} Mb/s" if int(speed) > 0 else ""
    else:
        facts.link_speed = speed
    if device and pciconf:
        info = parse_freebsd_pciconf("\n".join(pciconf), device)
        desc = " ".join(v for v in (info.get("vendor"), info.get("device")) if v)
        if desc:
            facts.nic_driver = f"{facts.nic_driver} ({desc})" if facts.nic_driver else desc
    elif values.get("nic_desc") and facts.nic_driver:
        facts.nic_driver = f"{facts.nic_driver} ({values['nic_desc']})"
    return facts


async def gather_facts(link: HostLink, device: str | None = None, iperf3: str = DEFAULT_IPERF3,
                       timeout: float = 15.0) -> HostFacts:
    """Ask the host about itself in one round trip."""
    out = await link.check(facts_command(device, iperf3), timeout=timeout)
    return parse_facts(link.alias, out, device)
