"""A built kernel tree assembled from an unpacked Debian kernel package, for the lab tests that
boot `--kernel TREE` without compiling a kernel: what `make` leaves in a tree, file for file.

- `arch/x86/boot/bzImage` <- `boot/vmlinuz-R`, `.config` <- `boot/config-R`, `System.map` <-
  `boot/System.map-R`, `include/config/kernel.release` <- R;
- every module where the build leaves it: `kernel/net/wireguard/wireguard.ko` of the package
  (the path `make modules_install` gives it under `lib/modules/R`) at `net/wireguard/
  wireguard.ko` in the tree, and `modules.order` listing those tree paths, as a 6.1 build
  writes it; `modules.builtin` and `modules.builtin.modinfo` as the build writes them.

virtme-ng boots such a tree with `--run TREE` (its kdir mode): it links the tree's modules
under `.virtme_mods/lib/modules/0.0.0` (virtme-prep-kdir-mods) and indexes them against
`System.map`; abtui.lab.kernels prepares that once per tree. Files are hard links into the
kernel cache where it is on the same filesystem (copies elsewhere): seconds, no extra space.
"""

from __future__ import annotations

import os
import shutil
from pathlib import Path

from abtui.lab.kernels import Kernel


def _place(src: Path, dst: Path) -> None:
    dst.parent.mkdir(parents=True, exist_ok=True)
    try:
        os.link(src, dst)
    except OSError:
        shutil.copy2(src, dst)


def tree_from_package(kernel: Kernel, tree: Path) -> Path:
    """`tree` made a built tree of `kernel` (an unpacked package: image and modules folder)."""
    release = kernel.release
    boot = Path(kernel.image).parent
    modules = Path(kernel.modules)
    _place(boot / f"vmlinuz-{release}", tree / "arch" / "x86" / "boot" / "bzImage")
    _place(boot / f"config-{release}", tree / ".config")
    _place(boot / f"System.map-{release}", tree / "System.map")
    (tree / "include" / "config").mkdir(parents=True, exist_ok=True)
    (tree / "include" / "config" / "kernel.release").write_text(release + "\n")
    order = []
    for line in (modules / "modules.order").read_text().splitlines():
        installed = line.strip()
        if not installed:
            continue
        in_tree = installed.removeprefix("kernel/")
        _place(modules / installed, tree / in_tree)
        order.append(in_tree)
    (tree / "modules.order").write_text("".join(f"{p}\n" for p in order))
    for name in ("modules.builtin", "modules.builtin.modinfo"):
        _place(modules / name, tree / name)
    return tree
