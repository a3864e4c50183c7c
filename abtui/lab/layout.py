"""A lab's layout: its name, address block and interface prefix, and from them every host's
alias, namespace, addresses and links, and the paths of its keys and configs; what is up is read
from the lab's record (lab.json). Nothing here touches the machine, so naming is testable (and
used) without root; abtui.lab.netns.Lab is given one and its other parts (SSH access, VM pairs)
are given it too.
"""

from __future__ import annotations

import contextlib
import fcntl
import json
import os
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any, Self

from abtui.core.errors import BadInput

MAX_PAIRS = 8


def check_kernel_pairs(kernels: Mapping[str, str], pairs: int) -> dict[str, str]:
    """Pair letter (upper case) -> kernel SPEC, each letter one of the lab's pairs."""
    letters = [chr(ord("A") + p) for p in range(pairs)]
    out = {}
    for letter, spec in kernels.items():
        if letter.upper() not in letters:
            raise BadInput(f"--kernel {letter}={spec}: the lab has pairs {', '.join(letters)}")
        out[letter.upper()] = spec
    return dict(sorted(out.items()))


def check_nic_pairs(nics: Mapping[str, str], kernels: Mapping[str, str]) -> dict[str, str]:
    """Pair letter (upper case) -> data NIC model, each letter one of the VM pairs."""
    from abtui.lab.vm.guest import NIC_MODELS

    out = {}
    for letter, model in nics.items():
        if model not in NIC_MODELS:
            raise BadInput(f"--nic {letter}={model}: the NIC models are "
                           f"{', '.join(NIC_MODELS)}")
        if letter.upper() not in kernels:
            raise BadInput(f"--nic {letter}={model}: pair {letter.upper()} has no VM hosts "
                           "(give it a --kernel); namespace pairs are linked by veth")
        out[letter.upper()] = model
    return dict(sorted(out.items()))


def default_state_root() -> Path:
    """Where labs keep their keys and configs (`ABTUI_LAB_DIR` overrides)."""
    env = os.environ.get("ABTUI_LAB_DIR")
    if env:
        return Path(env)
    from platformdirs import user_state_dir

    return Path(user_state_dir("abtui")) / "labs"


@dataclass(frozen=True, slots=True)
class LabHost:
    """One lab host: its SSH alias, namespace and addresses."""

    alias: str
    netns: str
    pair: str
    role: str  # "sender" | "receiver"
    mgmt_address: str
    data_address: str
    root_link: str  # the root-namespace end of its management veth (a VM host's tap)
    kernel: str = ""  # a VM host's kernel SPEC; "" for a namespace host (this machine's kernel)
    nic: str = ""  # a VM host's data NIC model (abtui.lab.vm.guest.NIC_MODELS); "" for veth
    arch: str = ""  # "arm": the lab's 32-bit ARM guest (abtui.lab.vm.armhost); "" x86 or netns

    @property
    def nic_name(self) -> str:
        """The data link's device as users know it: `veth`, `virtio`, `e1000e`."""
        return self.nic or ("virtio" if self.kernel else "veth")

    @property
    def vm(self) -> bool:
        return bool(self.kernel)


class LabLayout:
    """A lab with a name (alias prefix), a 198.<octet>.0.0/16 block and an interface prefix."""

    def __init__(self, name: str = "lab", octet: int = 18, ifprefix: str = "abl",
                 state_dir: Path | None = None, mgmt: int = 255) -> None:
        if octet not in (18, 19):
            raise ValueError("the lab uses 198.18.0.0/15 only: octet must be 18 or 19")
        if not name.isalnum() or not ifprefix.isalnum() or len(ifprefix) > 6:
            raise ValueError("lab name and interface prefix must be short and alphanumeric")
        self.name = name
        self.octet = octet
        if not 200 <= mgmt <= 255:
            raise ValueError("the management subnet's third octet must be 200 to 255")
        self.ifprefix = ifprefix
        self.mgmt = mgmt
        self.state_dir = state_dir or (default_state_root() / name)

    @classmethod
    def default(cls) -> Self:
        """The user's lab; ABTUI_LAB="name,ifprefix,mgmt" picks other names (tests do)."""
        raw = os.environ.get("ABTUI_LAB")
        if not raw:
            return cls()
        try:
            name, ifprefix, mgmt = raw.split(",")
            return cls(name=name, octet=19, ifprefix=ifprefix, mgmt=int(mgmt))
        except ValueError as exc:
            raise BadInput(f"ABTUI_LAB={raw!r}: expected name,ifprefix,mgmt ({exc})") from exc

    def refuse_if_used(self, doing: str) -> None:
        """LabInUse, naming the process, when another one uses this lab (abtui.lab.lease)."""
        from abtui.lab.lease import refuse_if_used

        refuse_if_used(self.state_dir, self.name, doing)

    # ---- naming -------------------------------------------------------------------------
    @property
    def netns_prefix(self) -> str:
        return f"abtui-{self.name}-"

    @property
    def bridge(self) -> str:
        return f"{self.ifprefix}-mgmt"

    @property
    def bridge_address(self) -> str:
        return f"198.{self.octet}.{self.mgmt}.1"

    @property
    def ssh_config(self) -> Path:
        return self.state_dir / "ssh_config"

    @property
    def known_hosts(self) -> Path:
        return self.state_dir / "known_hosts"

    @property
    def client_key(self) -> Path:
        return self.state_dir / "id_ed25519"

    @property
    def profile_path(self) -> Path:
        return self.state_dir / "lab.toml"

    @property
    def meta_path(self) -> Path:
        return self.state_dir / "lab.json"

    def hosts(self, pairs: int, kernels: Mapping[str, str] | None = None,
              nics: Mapping[str, str] | None = None, arm: str | None = None
              ) -> list[LabHost]:
        """The hosts of a lab with `pairs` pairs; `kernels` (pair letter -> SPEC) marks VM
        pairs and `nics` (pair letter -> model) their data NIC, by default those of the lab
        that is up (a VM pair's NIC, when not named, is abtui.lab.vm.guest.DEFAULT_NIC);
        `arm`, the first ARM build's name, makes pair A's sender the ARM guest
        (abtui.lab.vm.armhost; by default as the lab that is up has it)."""
        from abtui.lab.vm.guest import DEFAULT_NIC

        if not 1 <= pairs <= MAX_PAIRS:
            raise ValueError(f"a lab has 1 to {MAX_PAIRS} pairs")
        if kernels is None:
            kernels = self.kernel_specs()
            nics = self.nic_models() if nics is None else nics
            arm = self.arm_first() if arm is None else arm
        nics = nics or {}
        out = []
        for p in range(1, pairs + 1):
            letter = chr(ord("a") + p - 1)
            for idx, (role, short) in enumerate((("sender", "snd"), ("receiver", "rcv")), 1):
                alias = f"{self.name}-{letter}-{short}"
                out.append(LabHost(
                    alias=alias,
                    netns=f"abtui-{alias}",
                    pair=letter.upper(),
                    role=role,
                    mgmt_address=f"198.{self.octet}.{self.mgmt}.{10 * p + idx}",
                    data_address=f"198.{self.octet}.{p}.{idx}",
                    root_link=f"{self.ifprefix}-{letter}{short[0]}",
                    kernel=kernels.get(letter.upper(), ""),
                    nic=nics.get(letter.upper(), DEFAULT_NIC)
                    if letter.upper() in kernels else "",
                ))
        if arm and out[0].vm:  # pair A's sender: the ARM guest, its first build
            out[0] = replace(out[0], kernel=arm, nic="virtio", arch="arm")
        return out

    def arm_first(self) -> str:
        """The first ARM build's name of the lab that is up, "" when it has no ARM host."""
        raw = self.record().get("arm", {})
        builds = raw.get("builds", {}) if isinstance(raw, dict) else {}
        return next(iter(builds), "") if isinstance(builds, dict) else ""

    def record(self) -> dict[str, Any]:
        """The lab's record (lab.json) as `up` wrote it; {} when there is none."""
        try:
            meta = json.loads(self.meta_path.read_text())
        except (OSError, ValueError):
            return {}
        return meta if isinstance(meta, dict) else {}

    @contextlib.contextmanager
    def record_lock(self) -> Iterator[None]:
        """The lab's record is read and written by one process at a time (two hosts switched
        by two `lab boot` commands at once)."""
        self.state_dir.mkdir(parents=True, exist_ok=True)
        with (self.state_dir / "lab.lock").open("a") as fh:
            fcntl.flock(fh, fcntl.LOCK_EX)
            try:
                yield
            finally:
                fcntl.flock(fh, fcntl.LOCK_UN)

    def pair_count(self) -> int:
        """Pairs of the lab that is up (from its record), 0 when none is recorded."""
        try:
            return int(self.record()["pairs"])
        except (KeyError, TypeError, ValueError):
            return 0

    def clock(self) -> str:
        """The VM guests' clock (abtui.core.clock): "" their host's, "icount:N" counted."""
        return str(self.record().get("clock") or "")

    def kernel_specs(self) -> dict[str, str]:
        """Pair letter -> kernel SPEC of the lab's VM pairs (from its record)."""
        kernels = self.record().get("kernels", {})
        return {k: str(v["spec"]) for k, v in kernels.items()} if isinstance(kernels, dict) \
            else {}

    def nic_models(self) -> dict[str, str]:
        """Pair letter -> data NIC model of the lab's VM pairs (from its record)."""
        nics = self.record().get("nics", {})
        return {str(k): str(v) for k, v in nics.items()} if isinstance(nics, dict) else {}

    def host(self, alias: str) -> LabHost | None:
        """The host of that alias in the lab that is up (or the largest lab), None if none."""
        return next((x for x in self.hosts(self.pair_count() or MAX_PAIRS) if x.alias == alias),
                    None)

    def vm_nics(self) -> dict[str, str]:
        """The NIC model of each VM pair of the lab that is up (a record from before NIC
        models were recorded: the default)."""
        from abtui.lab.vm.guest import DEFAULT_NIC

        return {k: DEFAULT_NIC for k in self.kernel_specs()} | self.nic_models()

    def data_bridge(self, pair: str) -> str:
        """The bridge a VM pair's data link runs on."""
        return f"{self.ifprefix}-{pair.lower()}d"
