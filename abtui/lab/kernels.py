"""Kernels for the lab's VM hosts: what a `--kernel SPEC` names, resolved to a bootable image.

A SPEC is one of
- a Debian kernel package name (`linux-image-6.1.0-47-amd64`): fetched once with
  `apt-get download` into the kernel cache, unpacked with `dpkg-deb -x`, its modules indexed with
  `depmod`, and reused by every later lab;
- a kernel image (`.../boot/vmlinuz-RELEASE` or a `bzImage`) whose modules lie in
  `lib/modules/RELEASE` beside its `boot/` folder (the layout of an unpacked package), or in this
  machine's `/lib/modules/RELEASE`;
- a kernel build tree (a folder with `arch/x86/boot/bzImage` and `.config`), booted as
  virtme-ng boots one: with CONFIG_MODULES=y, the .ko files `make modules` left in the tree
  (modules.order, modules.builtin, modules.builtin.modinfo and System.map beside them).

Nothing here starts a VM (abtui.lab.vm.guest does).
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
import tempfile
from collections.abc import Sequence
from dataclasses import asdict, dataclass
from pathlib import Path

from abtui.core.errors import BadInput, MissingPrerequisite

DEBIAN_PACKAGE_RE = re.compile(r"linux-image-[0-9][A-Za-z0-9.+~-]*")
_RELEASE_RE = re.compile(r"[0-9][A-Za-z0-9.+_~-]*")


@dataclass(frozen=True, slots=True)
class Kernel:
    """A kernel a VM host can boot: the image virtme-ng is given, and its release."""

    spec: str
    image: str
    release: str
    modules: str  # the modules folder (lib/modules/RELEASE; a tree's .virtme_mods), "" if none
    kind: str  # "package" | "image" | "tree"

    def to_json(self) -> dict[str, str]:
        return asdict(self)


def cache_root() -> Path:
    """Where fetched kernel packages are kept (`ABTUI_KERNEL_CACHE` overrides); `lab down`
    leaves it: a package is fetched once."""
    env = os.environ.get("ABTUI_KERNEL_CACHE")
    if env:
        return Path(env)
    from platformdirs import user_cache_dir

    return Path(user_cache_dir("abtui")) / "kernels"


def resolve(spec: str, *, fetch: bool = True) -> Kernel:
    """The kernel a SPEC names, fetching a Debian package into the cache when needed."""
    text = spec.strip()
    if not text:
        raise BadInput("--kernel: give a kernel image, a build tree or a Debian package name")
    if DEBIAN_PACKAGE_RE.fullmatch(text) and not Path(text).exists():
        return _package(text, fetch=fetch)
    path = Path(text).expanduser()
    if path.is_dir():
        return _tree(text, path)
    if path.is_file():
        return _image(text, path)
    raise BadInput(f"--kernel {text}: no such file or folder, and not a Debian kernel package "
                   "name (such as linux-image-6.1.0-47-amd64)")


def _release_from_name(image: Path) -> str | None:
    m = re.fullmatch(r"(?:vmlinuz|vmlinux|bzImage)-(.+)", image.name)
    return m.group(1) if m and _RELEASE_RE.fullmatch(m.group(1)) else None


def _image(spec: str, image: Path) -> Kernel:
    release = _release_from_name(image) or _release_from_file(image)
    if release is None:
        raise BadInput(f"--kernel {spec}: cannot tell this image's kernel release (name it "
                       "vmlinuz-RELEASE, or give the build tree)")
    prefix = image.resolve().parent.parent
    candidates = [prefix / "lib" / "modules" / release, prefix / "usr" / "lib" / "modules" /
                  release, Path("/lib/modules") / release]
    modules = next((c for c in candidates if c.is_dir()), None)
    if modules is None:
        raise BadInput(f"--kernel {spec}: no modules for {release}: expected "
                       f"{candidates[0]} (the layout of an unpacked kernel package) or "
                       f"{candidates[2]}")
    if not (modules / "modules.dep").is_file():
        raise BadInput(f"--kernel {spec}: {modules} has no modules.dep: index it with "
                       f"`depmod -b {modules.parent.parent.parent} {release}`")
    return Kernel(spec, str(image.resolve()), release, str(modules), "image")


def _tree(spec: str, tree: Path) -> Kernel:
    image = tree / "arch" / "x86" / "boot" / "bzImage"
    if not image.is_file() or not (tree / ".config").is_file():
        raise BadInput(f"--kernel {spec}: a folder must be a built kernel tree: "
                       f"{image} or .config is missing (run `make` there first)")
    release_file = tree / "include" / "config" / "kernel.release"
    release = release_file.read_text().strip() if release_file.is_file() else ""
    modules = _tree_modules(spec, tree) if _config(tree, "CONFIG_MODULES") == "y" else ""
    return Kernel(spec, str(tree.resolve()), release or _release_from_file(image) or "?",
                  modules, "tree")


def _config(tree: Path, name: str) -> str:
    """A .config option's value (`y`, `m`, ...), "" when unset."""
    m = re.search(rf"^{name}=(\S+)$", (tree / ".config").read_text(errors="replace"), re.M)
    return m.group(1) if m else ""


# virtme-ng's module folder inside a built tree: its own fake release, symlinks to the tree's
# .ko files, indexed by depmod against the tree's System.map (as virtme-prep-kdir-mods makes it)
VIRTME_MODS = Path(".virtme_mods")
TREE_MODULES = VIRTME_MODS / "lib" / "modules" / "0.0.0"


def _tree_modules(spec: str, tree: Path) -> str:
    """A built tree's modules, as virtme-ng boots them: the .ko files `make modules` leaves in
    the tree (listed in modules.order), linked and indexed under .virtme_mods. Prepared here,
    once, when modules.order is newer than the index: every guest booting the tree (two per
    pair) then finds it ready instead of preparing it at the same time."""
    needed = ("modules.order", "modules.builtin", "modules.builtin.modinfo", "System.map")
    missing = [n for n in needed if not (tree / n).is_file()]
    if missing:
        raise BadInput(f"--kernel {spec}: the tree's .config has CONFIG_MODULES=y but "
                       f"{', '.join(missing)} {'is' if len(missing) == 1 else 'are'} missing "
                       "(run `make modules` there; guests load their NIC and tunnel drivers "
                       "as modules)")
    index = tree / TREE_MODULES / "modules.dep"
    if not index.is_file() or index.stat().st_mtime < (tree / "modules.order").stat().st_mtime:
        _link_tree_modules(spec, tree.resolve())
    return str(tree.resolve() / TREE_MODULES)


def _link_tree_modules(spec: str, tree: Path) -> None:
    """What virtme-ng's virtme-prep-kdir-mods does, link for link (so `vng` finds the folder
    up to date and leaves it): a relative symlink per module of modules.order under
    .virtme_mods/lib/modules/0.0.0/kernel, the build's module lists beside them, then
    `depmod -ae -F System.map` (the same links and the same index: compared on a Debian
    package's tree). In Python because the script spawns processes per module: 30 s to 65 s
    for Debian's 4 000 modules on a 2-core machine at load 10–15, this 6–15 s (mostly the
    filesystem's symlink calls)."""
    depmod = shutil.which("depmod", path=os.environ.get("PATH", "") + ":/usr/sbin:/sbin")
    if depmod is None:
        raise MissingPrerequisite(f"--kernel {spec}: `depmod` is missing (kmod) to index the "
                                  "tree's modules")
    moddir = tree / TREE_MODULES
    (moddir / "modules.dep").unlink(missing_ok=True)  # an interrupted run is redone
    (moddir / "kernel").mkdir(parents=True, exist_ok=True)
    _symlink(moddir / "build", tree)
    _symlink(tree / VIRTME_MODS / "usr", tree / VIRTME_MODS)  # depmod's usrmerge lookup
    for old in [p for p in (moddir / "kernel").rglob("*") if p.is_symlink()]:
        old.unlink()
    for line in (tree / "modules.order").read_text().splitlines():
        name = re.sub(r"\.o$", ".ko", line.strip())
        if not name:
            continue
        if not (tree / name).exists():
            name = name.removeprefix("kernel/")
        _symlink(moddir / "kernel" / name, tree / name)
    for name in ("modules.builtin", "modules.builtin.modinfo", "modules.order"):
        _symlink(moddir / name, tree / name)
    proc = subprocess.run([depmod, "-ae", "-F", "System.map", "-b", str(VIRTME_MODS), "0.0.0"],
                          cwd=tree, capture_output=True, text=True)
    if proc.returncode != 0 or not (moddir / "modules.dep").is_file():
        why = proc.stderr.strip().splitlines()
        raise BadInput(f"--kernel {spec}: indexing the tree's modules failed: "
                       f"{why[-1] if why else 'depmod wrote no modules.dep'}")


def _symlink(link: Path, target: Path) -> None:
    """`ln -srf TARGET LINK`: a relative symlink, replacing what is there."""
    link.parent.mkdir(parents=True, exist_ok=True)
    if link.is_symlink() or link.exists():
        link.unlink()
    link.symlink_to(os.path.relpath(target, link.parent))


def _release_from_file(image: Path) -> str | None:
    """The release string a bzImage carries in its header (offset 0x20E points at it)."""
    try:
        with image.open("rb") as fh:
            head = fh.read(0x10000)
    except OSError:
        return None
    if len(head) < 0x210 or head[0x202:0x206] != b"HdrS":
        return None
    offset = int.from_bytes(head[0x20E:0x210], "little") + 0x200
    text = head[offset:offset + 200].split(b"\0")[0].decode("ascii", "replace")
    release = text.split(" ")[0]
    return release if _RELEASE_RE.fullmatch(release) else None


# ---- Debian packages -----------------------------------------------------------------------

def package_dir(name: str) -> Path:
    return cache_root() / name


def _package(name: str, *, fetch: bool) -> Kernel:
    root = package_dir(name) / "root"
    stamp = package_dir(name) / "ready"
    if not stamp.is_file():
        if not fetch:
            raise BadInput(f"--kernel {name}: not fetched yet (into {package_dir(name)})")
        _fetch_package(name)
    boots = sorted((root / "boot").glob("vmlinuz-*"))
    if not boots:
        raise BadInput(f"--kernel {name}: the package has no boot/vmlinuz-* "
                       f"(in {root}); is it a kernel image package?")
    kernel = _image(name, boots[0])
    return Kernel(name, kernel.image, kernel.release, kernel.modules, "package")


def cached_packages() -> list[str]:
    """The Debian kernel packages fetched into the cache, by name."""
    root = cache_root()
    return sorted(p.name for p in root.glob("linux-image-*") if (p / "ready").is_file()) \
        if root.is_dir() else []


def apt_download(names: Sequence[str], work: Path, what: str,
                 hint: str = "run `apt-get update` first") -> list[Path]:
    """`apt-get download` of exactly `names` into the scratch folder `work` (made writable for
    apt's sandbox user): the .deb files it added, one per name. Else BadInput naming `what`,
    with apt's last line and `hint`."""
    os.chmod(work, 0o755)
    before = set(work.glob("*.deb"))
    proc = subprocess.run(["apt-get", "download", "-q", *names], cwd=work,
                          capture_output=True, text=True)
    got = sorted(set(work.glob("*.deb")) - before)
    if proc.returncode != 0 or len(got) != len(names):
        why = (proc.stderr.strip() or proc.stdout.strip()).splitlines()
        raise BadInput(f"{what}: apt-get download failed: {why[-1] if why else 'no .deb'} "
                       f"({hint})")
    return got


def _fetch_package(name: str) -> None:
    """`apt-get download NAME` (exactly that package: a wildcard would fetch every version),
    `dpkg-deb -x`, `depmod -b`; done in a scratch folder and moved in place, so an interrupted
    fetch leaves nothing half made."""
    for program in ("apt-get", "dpkg-deb", "depmod"):
        if shutil.which(program, path=os.environ.get("PATH", "") + ":/usr/sbin:/sbin") is None:
            raise MissingPrerequisite(f"--kernel {name}: `{program}` is missing (a Debian "
                                      "system's apt, dpkg and kmod fetch kernel packages)")
    final = package_dir(name)
    final.parent.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(prefix=f".{name}-", dir=final.parent) as tmp:
        work = Path(tmp)
        debs = apt_download([name], work, f"--kernel {name}",
                            "is it a package name `apt-cache search linux-image` lists? run "
                            "`apt-get update` first")
        _checked(["dpkg-deb", "-x", str(debs[0]), str(work / "root")], name)
        for deb in debs:
            deb.unlink()
        for modules in sorted((work / "root" / "lib" / "modules").glob("*")):
            _checked(["depmod", "-b", str(work / "root"), modules.name], name)
        (work / "ready").write_text(name + "\n")
        if final.exists():
            shutil.rmtree(final)
        os.rename(work, final)
        work.mkdir()  # for TemporaryDirectory's cleanup


def _checked(args: list[str], name: str) -> None:
    proc = subprocess.run(args, capture_output=True, text=True)
    if proc.returncode != 0:
        raise BadInput(f"--kernel {name}: `{' '.join(args)}` failed: {proc.stderr.strip()}")


def main(argv: list[str]) -> int:
    """`python -m abtui.lab.kernels SPEC...`: resolve (fetching packages into the cache) and print
    each kernel; exit 2 with one line when one cannot be had."""
    from abtui.core.errors import AbtuiError

    try:
        for spec in argv:
            k = resolve(spec)
            print(f"{k.spec}: {k.release} ({k.image})")
    except AbtuiError as exc:
        print(f"abtui: {exc}", file=sys.stderr)
        return 2
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
