"""The lab's profile (`lab.toml`), rendered from the template shipped in `abtui/lab/templates`."""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass
from importlib import resources
from typing import Protocol

# tcp_wmem on the senders: the kernel default and a 64 KiB maximum. On real links this caps the
# window; on the lab's veth (RTT of microseconds) it barely moves throughput (measured).
TCP_WMEM_VALUES = ("4096 16384 4194304", "4096 16384 65536")
# tcp_rmem on the receivers: the kernel default, and a 16 KiB maximum that cuts lab throughput
# several times over (measured on the lab: ~14 -> ~2 Gbit/s), so a flip shows at once.
TCP_RMEM_VALUES = ("4096 131072 6291456", "4096 8192 16384")
# Tunnel types: this machine's kernel has no wireguard module (the userspace wireguard-go is
# used), no ESP crypto and no gre; the kernels VM hosts boot have them all.
NAMESPACE_TUNNELS = ("none", "wireguard", "vxlan")
VM_TUNNELS = ("none", "wireguard", "vxlan", "ipsec", "gre")
_TUNNEL_COMMENT = {
    False: "# The tunnel between the two hosts of each pair (this kernel has no wireguard "
           "module: the\n# userspace wireguard-go is used; no ESP crypto, so no ipsec here).",
    True: "# The tunnel between the two hosts of each pair: every pair boots a kernel of its "
          "own (VM\n# hosts), with kernel WireGuard, ESP (AES-GCM), gre and vxlan.",
}


class _Host(Protocol):
    @property
    def alias(self) -> str: ...
    @property
    def pair(self) -> str: ...
    @property
    def data_address(self) -> str: ...


def _toml_str(value: str) -> str:
    return json.dumps(value)  # a JSON string is a valid TOML basic string


# seconds a VM host has to come back on another build: a TCG guest boots in ~17 s on an idle
# 2-core machine, but took 5 minutes to answer SSH at load 15 (measured)
SWITCH_TIMEOUT_S = 900


@dataclass(frozen=True, slots=True)
class LabBuild:
    """A kernel build the lab's VM hosts can kexec into: its Debian package name (the knob's
    value), its image, and virtme-ng's initramfs made for it."""

    spec: str
    image: str
    initrd: str


def kernel_knob(builds: Sequence[LabBuild], pairs: Sequence[str],
                power: Sequence[str] = ()) -> str:
    """The `kernel` knob of a lab with VM pairs: its builds, each reached by kexec from inside
    the guest (measured to work under emulation), or where this machine has no `kexec` (the
    guests run this machine's programs) by the lab's power-cycle, the command `power` (argv,
    `{host}` and `{value}` in it); on the VM pairs `pairs`; "" when the lab has fewer than two
    builds to offer."""
    if len(builds) < 2 or not pairs:
        return ""
    method = ['method = "command"', f"command = [{', '.join(_toml_str(a) for a in power)}]",
              f"command_timeout = {SWITCH_TIMEOUT_S}"] if power else ['method = "kexec"']
    lines = [
        "# The kernel build the VM hosts run: every Debian build in the lab's kernel cache.",
        "# Each is reached by kexec from inside the guest, with virtme-ng's initramfs for the",
        "# build, or by `abtui lab boot HOST BUILD` (the lab power-cycles the guest onto it):",
        '# method = "command", command = ["abtui", "lab", "boot", "{host}", "{value}"].',
        "[[knobs]]",
        'name = "kernel"',
        'kind = "kernel"',
        f"values = [{', '.join(_toml_str(b.spec) for b in builds)}]",
        f"pairs = [{', '.join(_toml_str(p) for p in pairs)}]",
        "[knobs.build]",
        *method,
        f"timeout = {SWITCH_TIMEOUT_S}",
    ]
    for b in builds if not power else ():
        lines += [f"[knobs.builds.{_toml_str(b.spec)}]", f"image = {_toml_str(b.image)}",
                  f"initrd = {_toml_str(b.initrd)}"]
    return "\n".join(lines) + "\n"


def render_lab_profile(*, lab_name: str, ssh_config: str, known_hosts: str,
                       hosts: Sequence[_Host], pairs: int, congestion: list[str],
                       all_vm: bool = False, kernel: str = "") -> str:
    """The lab's profile text: pairs from the lab's hosts, knobs the lab's kernels support
    (`all_vm`: every pair is VM hosts, with every tunnel type; `kernel`: the VM pairs' kernel
    knob, kernel_knob's text)."""
    template = resources.files("abtui.lab").joinpath("templates/lab.toml.in").read_text()
    pair_blocks = []
    for p in range(pairs):
        snd, rcv = hosts[2 * p], hosts[2 * p + 1]
        pair_blocks.append("\n".join([
            "[[pairs]]",
            f"label = {_toml_str(snd.pair)}",
            f"sender = {_toml_str(snd.alias)}",
            f"receiver = {_toml_str(rcv.alias)}",
            f"target = {_toml_str(rcv.data_address)}",
            'sender_device = "data0"',
            'receiver_device = "data0"',
        ]))
    cc_values = [c for c in ("reno", "bbr", "cubic") if c in congestion] or congestion[:2]
    return template.format(
        lab_name=_toml_str(lab_name),
        ssh_config=_toml_str(ssh_config),
        known_hosts=_toml_str(known_hosts),
        pairs="\n\n".join(pair_blocks),
        tcp_wmem_values=", ".join(_toml_str(v) for v in TCP_WMEM_VALUES),
        tcp_rmem_values=", ".join(_toml_str(v) for v in TCP_RMEM_VALUES),
        cc_values=", ".join(_toml_str(v) for v in cc_values),
        # a guest sizes its defaults by its memory and build: set both pairs alike from the
        # start, or no configuration of one pair would match the other's
        tcp_wmem_initial=f"initial = {_toml_str(TCP_WMEM_VALUES[0])}\n" if all_vm else "",
        tcp_rmem_initial=f"initial = {_toml_str(TCP_RMEM_VALUES[0])}\n" if all_vm else "",
        tunnel_comment=_TUNNEL_COMMENT[all_vm],
        tunnel_values=", ".join(_toml_str(v) for v in
                                (VM_TUNNELS if all_vm else NAMESPACE_TUNNELS)),
        kernel_knob=f"\n{kernel}" if kernel else "",
    )
