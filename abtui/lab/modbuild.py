"""Kernel modules built out of tree from a Debian kernel source package plus patches, for the
kernel the lab's x86 VM guests boot.

A seed whose change lives in one driver (WireGuard's "receive: use gro call instead of plain
call") is a module build, not a kernel: the driver's folder of `linux-source-6.1` (the 6.1.192
tree, the very source of Debian's 6.1.0-57 kernel), patched or not, compiled against Debian's
`linux-headers` of the guests' kernel. The same source unpatched gives the module Debian ships
(the same srcversion), so the two builds differ by the patch alone.

- the source tree is abtui.lab.kbuild's (fetched and unpacked once, pristine);
- the headers are Debian's packages for the release (`linux-headers-RELEASE`, the `-common`
  and `linux-kbuild-X.Y` it depends on, at exactly the version it names), fetched with
  `apt-get download` into the kernel cache's `headers/` folder and unpacked there; the
  flavour's Makefile includes the common tree by its absolute /usr/src path, rewritten to the
  cache's;
- each build copies the driver's folder (subfolders included) into its own folder, applies
  the patches (`patch -p1 --fuzz=0`, paths as in the whole tree), and runs
  `make -C HEADERS M=FOLDER CONFIG_X=m modules` in it: a fresh folder every time;
- builds are cached under `builds/KEY`, KEY the hash of the source package, the driver's
  folder, the headers packages, the patches (in order) and the compiler's version, beside
  kbuild's kernels (same lock files); `build.json` records the module's srcversion and
  vermagic, which the lab's insmod checks on the guest.

Nothing here loads a module.
"""

from __future__ import annotations

import hashlib
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path

from abtui.core.errors import BadInput
from abtui.lab import kbuild
from abtui.lab.kernels import apt_download, cache_root

# the drivers this builder knows: module name -> (its folder in the tree, its Kconfig option)
DRIVERS = {"wireguard": ("drivers/net/wireguard", "CONFIG_WIREGUARD")}
_RELEASE_RE = re.compile(r"(?P<major>[0-9]+)\.(?P<minor>[0-9]+)\.[0-9]+-[0-9]+-[a-z0-9]+")
# Debian's headers Makefile: `include /usr/src/linux-headers-…-common/Makefile`
_INCLUDE_RE = re.compile(r"^include /usr/src/(\S+)$", re.M)


@dataclass(frozen=True, slots=True)
class ModuleSpec:
    """What a module build is made of: the driver, the kernel release it is for, the source
    package and the patches in order."""

    module: str  # a key of DRIVERS: wireguard
    release: str  # the guests' `uname -r`: 6.1.0-57-amd64
    patches: tuple[Path, ...] = ()
    source: str = ""  # "" the release's own: linux-source-6.1 for 6.1.0-57-amd64

    def source_package(self) -> str:
        if self.source:
            return self.source
        m = _RELEASE_RE.fullmatch(self.release)
        if m is None:
            raise BadInput(f"module build for {self.release!r}: not a Debian kernel release "
                           "(such as 6.1.0-57-amd64)")
        return f"linux-source-{m['major']}.{m['minor']}"

    def driver(self) -> tuple[str, str]:
        try:
            return DRIVERS[self.module]
        except KeyError:
            raise BadInput(f"module build {self.module!r}: abtui builds "
                           f"{', '.join(DRIVERS)} only") from None


@dataclass(frozen=True, slots=True)
class BuiltModule:
    """A finished module build: the .ko, its srcversion and vermagic, and what it took."""

    key: str
    file: Path
    srcversion: str
    vermagic: str
    info: dict[str, object] = field(default_factory=dict)


def headers_dir() -> Path:
    return cache_root() / "headers"


# ---- the headers ----------------------------------------------------------------------------

def cached_headers(release: str) -> Path | None:
    """The unpacked headers tree of `release` in the cache (the flavour's folder under
    usr/src), None when not fetched yet."""
    stamp = headers_dir() / f"linux-headers-{release}.ready"
    tree = headers_dir() / f"linux-headers-{release}" / "usr" / "src" / f"linux-headers-{release}"
    return tree if stamp.is_file() and (tree / "Makefile").is_file() else None


def headers_digest(release: str) -> str:
    """The hash of the headers packages, as recorded when they were unpacked."""
    stamp = headers_dir() / f"linux-headers-{release}.ready"
    try:
        return str(json.loads(stamp.read_text())["sha256"])
    except (OSError, ValueError, KeyError) as exc:
        raise BadInput(f"headers of {release}: their record {stamp} is missing or unreadable "
                       f"({exc}); fetch them again") from exc


def headers_tree(release: str, *, fetch: bool = True) -> Path:
    tree = cached_headers(release)
    if tree is not None:
        return tree
    if not fetch:
        raise BadInput(f"headers of {release}: not fetched yet (into {headers_dir()})")
    return _fetch_headers(release)


def _depends(deb: Path) -> list[str]:
    """`name=version` of each package a headers .deb depends on exactly or at least (the
    version it names): the -common headers and linux-kbuild, made by the same build."""
    proc = subprocess.run(["dpkg-deb", "-f", str(deb), "Depends"], capture_output=True,
                          text=True)
    return parse_depends(proc.stdout)


def parse_depends(text: str) -> list[str]:
    """A headers package's Depends field -> `name=version` of the headers and kbuild packages
    it names with a version (compilers and the rest are the machine's own)."""
    out = []
    for part in text.split(","):
        m = re.match(r"\s*(linux-(?:headers|kbuild)-\S+)\s*\((?:=|>=)\s*(\S+)\)", part)
        if m:
            out.append(f"{m.group(1)}={m.group(2)}")
    return out


def _fetch_headers(release: str) -> Path:
    """`apt-get download linux-headers-RELEASE` and what it depends on at its version, each
    unpacked (`dpkg-deb -x`) into one root; in a scratch folder moved in place. 14 MB, a few
    seconds on this machine."""
    kbuild.need("apt-get", "dpkg-deb", why=f"headers of {release}")
    root = headers_dir()
    root.mkdir(parents=True, exist_ok=True)
    name = f"linux-headers-{release}"
    with tempfile.TemporaryDirectory(prefix=f".{name}-", dir=root) as tmp:
        work = Path(tmp)
        debs = apt_download([name], work, f"headers of {release}")
        depends = _depends(debs[0])
        debs += apt_download(depends, work, f"headers of {release} ({', '.join(depends)})")
        h = hashlib.sha256()
        unpack = work / "root"
        for deb in sorted(debs, key=lambda p: p.name):
            h.update(deb.name.encode() + b"\0" + kbuild.file_sha256(deb).encode() + b"\0")
            proc = subprocess.run(["dpkg-deb", "-x", str(deb), str(unpack)],
                                  capture_output=True, text=True)
            if proc.returncode != 0:
                raise BadInput(f"headers of {release}: unpacking {deb.name} failed: "
                               f"{proc.stderr.strip()}")
        src = unpack / "usr" / "src"
        makefile = src / name / "Makefile"
        if not makefile.is_file():
            raise BadInput(f"headers of {release}: {name} has no usr/src/{name}/Makefile")
        final = root / name
        # the flavour's Makefile includes the common tree by its /usr/src path: the cache's
        makefile.write_text(rehome_makefile(makefile.read_text(), final))
        if final.exists():
            shutil.rmtree(final)
        os.rename(unpack, final)
        (root / f"{name}.ready").write_text(json.dumps(
            {"debs": sorted(d.name for d in debs), "sha256": h.hexdigest()}) + "\n")
    return final / "usr" / "src" / name


def rehome_makefile(text: str, root: Path) -> str:
    """Debian's flavour Makefile with its /usr/src include pointed under `root` (the folder
    the packages were unpacked into)."""
    return _INCLUDE_RE.sub(lambda m: f"include {root / 'usr' / 'src' / m.group(1)}", text)


# ---- the build -------------------------------------------------------------------------------

def compiler_version() -> str:
    kbuild.need("gcc", "make", why="building a kernel module (Debian: gcc make)")
    proc = subprocess.run(["gcc", "-dumpfullversion"], capture_output=True, text=True)
    return proc.stdout.strip() or "?"


def module_key(spec: ModuleSpec, source_sha256: str, headers_sha256: str,
               compiler: str) -> str:
    """The hash naming a module build: every input that changes the .ko."""
    folder, option = spec.driver()
    h = hashlib.sha256()
    for part in ("module", spec.module, folder, option, spec.source_package(), source_sha256,
                 spec.release, headers_sha256, compiler):
        h.update(part.encode() + b"\0")
    for patch in spec.patches:
        h.update(b"patch\0" + patch.read_bytes())
    return h.hexdigest()[:16]


def _finished(key: str) -> BuiltModule | None:
    record = kbuild.builds_dir() / key / "build.json"
    if not record.is_file():
        return None
    info = json.loads(record.read_text())
    ko = Path(str(info.get("file", "")))
    if not ko.is_file():
        return None
    return BuiltModule(key, ko, str(info["srcversion"]), str(info["vermagic"]), info)


def cached_module(spec: ModuleSpec) -> BuiltModule | None:
    """The finished build of `spec`, None when it was not built yet (nothing fetched or
    compiled)."""
    tree = kbuild.cached_source(spec.source_package())
    if tree is None or cached_headers(spec.release) is None or shutil.which("gcc") is None:
        return None
    key = module_key(spec, kbuild.source_digest(tree), headers_digest(spec.release),
                     compiler_version())
    return _finished(key)


def modinfo(ko: Path, field_name: str) -> str:
    proc = subprocess.run(["modinfo", "-F", field_name, str(ko)], capture_output=True,
                          text=True)
    return proc.stdout.strip()


def build(spec: ModuleSpec, *, jobs: int | None = None, fetch: bool = True) -> BuiltModule:
    """The module `spec` names, built once (in a fresh folder) and cached."""
    folder_in_tree, option = spec.driver()
    compiler = compiler_version()
    tree = kbuild.source_tree(spec.source_package(), fetch=fetch)
    headers = headers_tree(spec.release, fetch=fetch)
    key = module_key(spec, kbuild.source_digest(tree), headers_digest(spec.release), compiler)
    folder = kbuild.builds_dir() / key
    with kbuild.locked(kbuild.builds_dir() / f"{key}.lock"):
        done = _finished(key)
        if done is not None:
            return done
        if folder.exists():
            shutil.rmtree(folder)  # an interrupted build is redone from scratch
        folder.mkdir(parents=True)
        if spec.patches:
            kbuild.check_series(tree, spec.patches)
        src = folder / "src"
        driver = src / folder_in_tree
        driver.parent.mkdir(parents=True)
        shutil.copytree(tree / folder_in_tree, driver)
        for patch in spec.patches:
            kbuild.apply_patch(src, patch, tree.name)
        started, cpu0 = time.monotonic(), kbuild.children_cpu()
        log = folder / "build.log"
        with log.open("w") as fh:
            kbuild.run_make(["make", "-C", str(headers), f"M={driver}", f"{option}=m",
                             f"-j{jobs or os.cpu_count() or 1}", "modules"], driver, fh, "modules")
        ko = driver / f"{spec.module}.ko"
        if not ko.is_file():
            raise BadInput(f"module build: no {ko.name} after `make modules` (see {log})")
        info: dict[str, object] = {
            "module": spec.module, "release": spec.release, "source": spec.source_package(),
            "source_tree": tree.name, "headers": headers.name,
            "patches": [p.name for p in spec.patches], "compiler": compiler, "file": str(ko),
            "srcversion": modinfo(ko, "srcversion"), "vermagic": modinfo(ko, "vermagic"),
            "wall_s": round(time.monotonic() - started, 1),
            "cpu_s": round(kbuild.children_cpu() - cpu0, 1), "load": kbuild.load_average(),
            "built": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
        }
        if not str(info["vermagic"]).startswith(f"{spec.release} "):
            raise BadInput(f"module build: {ko} has vermagic {info['vermagic']!r}, not "
                           f"{spec.release}'s")
        (folder / "build.json").write_text(json.dumps(info, indent=1) + "\n")
        return BuiltModule(key, ko, str(info["srcversion"]), str(info["vermagic"]), info)


def main(argv: list[str]) -> int:
    """`python -m abtui.lab.modbuild MODULE RELEASE [PATCH...]`: build (or find) that module
    and print its file, srcversion and vermagic. Exit 2 with one line when it cannot be had."""
    from abtui.core.errors import AbtuiError

    if len(argv) < 2:
        print("usage: python -m abtui.lab.modbuild MODULE RELEASE [PATCH...]\n"
              "  (MODULE: wireguard; RELEASE: the guests' uname -r, such as 6.1.0-57-amd64)",
              file=sys.stderr)
        return 2
    try:
        built = build(ModuleSpec(argv[0], argv[1], tuple(Path(p) for p in argv[2:])))
    except AbtuiError as exc:
        print(f"abtui: {exc}", file=sys.stderr)
        return 2
    print(f"{built.file} srcversion {built.srcversion} vermagic {built.vermagic!r} "
          f"({built.key}: {json.dumps(built.info)})")
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
