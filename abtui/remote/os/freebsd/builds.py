"""FreeBSD's build commands: nextboot and a reboot; kldunload/kldload; ifconfig for the data
interface a reload gives back (the shared states and parsers: abtui.remote.os.builds).
"""

from __future__ import annotations

from shlex import quote

from abtui.core.builds import Build, Method
from abtui.core.errors import BadInput
from abtui.remote.os.builds import (
    EXIT_NO_INTERFACE,
    IFACE_WAIT_STEPS,
    BuildCommands,
    Interface,
    module_name,
)


class FreeBSDBuilds(BuildCommands):
    """FreeBSD: nextboot and a reboot; kldunload/kldload; ifconfig for the interface."""

    name = "freebsd"

    KERNEL_STATE = ('echo "boot $(sysctl -n kern.boottime)"; echo "release $(uname -r)"; '
                    'echo "version $(uname -v)"; echo "bootfile $(sysctl -n kern.bootfile)"')
    DETACHED = "daemon -f sh -c {inner} >/dev/null 2>&1 </dev/null"

    def boot(self, build: Build) -> str:
        reboot = self.later("shutdown -r now")
        if build.method is Method.NEXTBOOT:
            return f"nextboot -k {quote(build.kernel)} || return $?; {reboot}"
        if build.method is Method.REBOOT:
            return reboot
        raise BadInput(f"a FreeBSD host does not boot a build by {build.method}")

    def module_state(self, module: str, build: Build) -> str:
        m = quote(module_name(module))
        return (f"if kldstat -q -n {m}; then echo loaded; kldstat -v -n {m} | "
                "awk 'NR == 2 { f = $5; if ($6 ~ /^\\(/) f = substr($6, 2, length($6) - 2); "
                "print \"file \" f }'; fi; true")

    def interface(self, device: str) -> str:
        return f"ifconfig {quote(device)}"

    def parse_interface(self, out: str, device: str) -> Interface | None:
        mac = mtu = ""
        up, addresses = False, []
        for line in out.splitlines():
            words = line.split()
            if line.startswith(f"{device}:"):
                up = "<UP" in line or ",UP," in line or ",UP>" in line
                if "mtu" in words:
                    mtu = words[words.index("mtu") + 1]
            elif words[:1] == ["ether"] and len(words) > 1:
                mac = words[1]
            elif words[:1] == ["inet"] and "netmask" in words:
                mask = words[words.index("netmask") + 1]
                bits = bin(int(mask, 16)).count("1") if mask.startswith("0x") else 32
                addresses.append(f"{words[1]}/{bits}")
            elif words[:1] == ["inet6"] and "prefixlen" in words and "%" not in words[1]:
                addresses.append(f"{words[1]}/{words[words.index('prefixlen') + 1]}")
        if not mac or not mtu:
            return None
        return Interface(device, mac, mtu, up, tuple(addresses))

    def reload(self, module: str, build: Build, iface: Interface | None) -> str:
        if build.method is not Method.KLD:
            raise BadInput(f"a FreeBSD host does not load a module by {build.method}")
        m = quote(module_name(module))
        out = (f"if kldstat -q -n {m}; then kldunload -n {m} || return $?; fi; "
               f"kldload {quote(build.file or module)} || return $?; ")
        if iface is None:
            return out + "true"
        dev, gone = quote(iface.name), quote(f"no {iface.name} after the reload")
        out += (f"i=0; until ifconfig {dev} >/dev/null 2>&1; do i=$((i+1)); "
                f"[ $i -ge {IFACE_WAIT_STEPS} ] && {{ echo {gone} >&2; "
                f"return {EXIT_NO_INTERFACE}; }}; sleep 0.1; done; "
                f"ifconfig {dev} mtu {quote(iface.mtu)} || return $?; ")
        if iface.up:
            out += f"ifconfig {dev} up || return $?; "
        for a in iface.addresses:
            family = "inet6" if ":" in a else "inet"
            out += f"ifconfig {dev} {family} {quote(a)} alias || return $?; "
        return out + "true"
