"""Linux's build commands: kexec, grub-reboot, a reboot; modprobe and insmod; iproute2 for
the data interface a reload gives back (the shared states and parsers: abtui.remote.os.builds).
"""

from __future__ import annotations

from shlex import quote

from abtui.core.builds import Build, Method
from abtui.core.errors import BadInput
from abtui.remote.os.builds import (
    CARRIER_WAIT_STEPS,
    EXIT_NO_INTERFACE,
    IFACE_WAIT_STEPS,
    BuildCommands,
    Interface,
    module_name,
    param_words,
    tagged,
)


class LinuxBuilds(BuildCommands):
    """Linux: kexec, grub-reboot, a reboot; modprobe and insmod; iproute2 for the interface."""

    name = "linux"

    KERNEL_STATE = ('echo "boot $(cat /proc/sys/kernel/random/boot_id)"; '
                    'echo "release $(uname -r)"; echo "version $(uname -v)"')
    DETACHED = ("if command -v setsid >/dev/null 2>&1; then setsid -f sh -c {inner}; "
                "else nohup sh -c {inner} & fi >/dev/null 2>&1 </dev/null")

    REBOOT = "systemctl reboot || reboot"

    def boot(self, build: Build) -> str:
        if build.method is Method.KEXEC:
            image, initrd = build.kexec_image()
            load = f"kexec -l {quote(image)}"
            if initrd:
                load += f" --initrd={quote(initrd)}"
            load += " --reuse-cmdline"
            if build.append:
                load += f" --append={quote(build.append)}"
            go = "if [ -d /run/systemd/system ]; then systemctl kexec; else kexec -e; fi"
            return f"{load} || return $?; {self.later(go)}"
        if build.method is Method.GRUB_REBOOT:
            return f"grub-reboot {quote(build.entry)} || return $?; {self.later(self.REBOOT)}"
        if build.method is Method.REBOOT:
            return self.later(self.REBOOT)
        raise BadInput(f"a Linux host does not boot a build by {build.method}")

    # A guest under emulation spends most of a command starting programs (from a 9p root):
    # files are read with the shell's `read`, and the interface set up by one `ip -batch`.
    @staticmethod
    def _show(tag: str, path: str) -> str:
        """`tag CONTENT` for a readable one-line file, with shell builtins only."""
        return f"[ -r {path} ] && read -r v < {path} && echo \"{tag} $v\""

    def module_state(self, module: str, build: Build) -> str:
        d = f"/sys/module/{module_name(module)}"
        out = (f"[ -d {d} ] && echo loaded; {self._show('srcversion', f'{d}/srcversion')}; "
               f"{self._show('version', f'{d}/version')}; ")
        for name, _ in build.params:
            out += self._show(f"param {name}", quote(f"{d}/parameters/{name}")) + "; "
        return out + "true"

    def interface(self, device: str) -> str:
        d = quote(f"/sys/class/net/{device}")
        return (f"{self._show('mac', f'{d}/address')} && {self._show('mtu', f'{d}/mtu')} && "
                f"{self._show('flags', f'{d}/flags')} && ip -o addr show dev {quote(device)}")

    def parse_interface(self, out: str, device: str) -> Interface | None:
        tags = tagged(out)
        if not tags.get("mac") or not tags.get("mtu"):
            return None
        try:
            up = bool(int(tags.get("flags", "0"), 16) & 1)  # IFF_UP
        except ValueError:
            up = False
        addresses = []
        for line in out.splitlines():
            words = line.split()
            for i, w in enumerate(words[:-1]):
                if w == "inet" or (w == "inet6" and "global" in words):
                    addresses.append(words[i + 1])
        return Interface(device, tags["mac"], tags["mtu"], up, tuple(addresses))

    def reload(self, module: str, build: Build, iface: Interface | None) -> str:
        m = quote(module_name(module))
        out = (f"if [ -d /sys/module/{m} ]; then modprobe -r {m} || rmmod {m} || return $?; fi; ")
        if build.method is Method.MODPROBE:
            out += f"modprobe {m}{param_words(build)} || return $?; "
        elif build.method is Method.INSMOD:
            # insmod resolves nothing: the modules the file depends on (`modprobe -r` took
            # them along with the old build) are loaded first, from the running kernel's own
            f = quote(build.file)
            out += (f"d=$(modinfo -F depends {f} 2>/dev/null | tr , ' '); "
                    f"[ -z \"$d\" ] || modprobe -a $d || return $?; "
                    f"insmod {f}{param_words(build)} || return $?; ")
        else:
            raise BadInput(f"a Linux host does not load a module by {build.method}")
        return out + (self._give_back(iface) if iface is not None else "true")

    @staticmethod
    def _give_back(iface: Interface) -> str:
        """The interface found again by its MAC (a reload may name it anew), renamed, its MTU,
        state and addresses as before, its link up again."""
        dev, mac = quote(iface.name), quote(iface.mac)
        find = ("n=; for f in /sys/class/net/*/address; do read -r a < \"$f\"; "
                f"[ \"$a\" = {mac} ] && {{ n=${{f%/address}}; n=${{n##*/}}; break; }}; done")
        gone = quote(f"no interface with MAC {iface.mac} after the reload")
        lines = [f"link set dev {iface.name} mtu {iface.mtu}" + (" up" if iface.up else "")]
        lines += [f"addr replace {a} dev {iface.name}" for a in iface.addresses]
        out = (f"i=0; while :; do {find}; [ -n \"$n\" ] && break; i=$((i+1)); "
               f"[ $i -ge {IFACE_WAIT_STEPS} ] && {{ echo {gone} >&2; "
               f"return {EXIT_NO_INTERFACE}; }}; sleep 0.1; done; "
               f"{{ [ \"$n\" = {dev} ] || printf '%s\\n' \"link set dev $n down\" "
               f"\"link set dev $n name \"{dev}; "
               f"printf '%s\\n' {' '.join(quote(x) for x in lines)}; }} | ip -batch - "
               "|| return $?; ")
        if iface.up:  # its link negotiated again before anything is sent through it
            out += (f"i=0; until read -r c < /sys/class/net/{dev}/carrier 2>/dev/null && "
                    f"[ \"$c\" = 1 ]; do i=$((i+1)); [ $i -ge {CARRIER_WAIT_STEPS} ] && break; "
                    "sleep 0.1; done; ")
        return out + "true"

