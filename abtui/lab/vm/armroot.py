"""The 32-bit ARM guest's userspace: Debian's armhf packages unpacked into an initramfs.

The x86 guests share this machine's root filesystem (virtme-ng); an ARM guest cannot, so it
boots an initramfs made here from Debian's own armhf builds of what a lab host runs: busybox
(coreutils and the init's shell), dash (root's shell: busybox's shell prefers its own
applets to PATH, and its `ip` has no xfrm), iperf3, iproute2, dropbear (the SSH server) and
perf (`linux-perf`: a profiled run's `perf record`), with the shared libraries they need
(their Depends; maintainer-script tools such as debconf and adduser, PAM, and the perl and
python interpreters perf's libraries depend on left out: never run in the guest). 24 MB
compressed.

apt is asked with a private state (its own package lists for armhf, under the kernel cache):
this machine's apt configuration, architectures and package lists are left as they are.
The base archive is made once per set of package versions; a guest's own files (its name,
addresses, host key, the lab's authorized key) are a second, small cpio archive the kernel
unpacks over the first (the initramfs format allows several, concatenated).
"""

from __future__ import annotations

import contextlib
import gzip
import hashlib
import io
import json
import os
import re
import shutil
import stat
import subprocess
import tempfile
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path

from abtui.core.errors import BadInput, MissingPrerequisite
from abtui.lab.kernels import cache_root

# what a lab host runs, as Debian's armhf packages. dash is root's shell: Debian's busybox
# shell runs its own applets before PATH (its `ip` has no xfrm), dash runs iproute2's
ARMHF_PACKAGES = ("busybox-static", "dash", "iperf3", "libiperf0", "iproute2", "dropbear-bin",
                  "linux-perf")
# dependencies not needed to run the programs above: maintainer scripts' tools, PAM, the perl
# and python interpreters and their libraries of modules (perf links libperl and libpython, to
# run scripts abtui never asks for: the shared libraries are enough for it to start)
_SKIP = re.compile(r"^(debconf.*|cdebconf|adduser|dpkg|install-info|init-system-helpers|"
                   r"perl.*|libpam.*|lib.*-perl|.*-common|gcc-\d+-base|python3.*|"
                   r"libpython3[.\d]*-(stdlib|minimal)|media-types)$")
ARCH = "armhf"
# what the base's init mounts and runs: the guest's own script, from its overlay
INIT = """#!/bin/sh
mount -t proc proc /proc
mount -t sysfs sysfs /sys
mount -t devtmpfs devtmpfs /dev 2>/dev/null
mkdir -p /dev/pts /dev/shm
mount -t devpts devpts /dev/pts
mount -t tmpfs tmpfs /tmp
mount -t tmpfs tmpfs /run
ip link set lo up
[ -f /etc/hostname ] && hostname -F /etc/hostname
if [ -x /etc/abtui/guest.sh ]; then /etc/abtui/guest.sh; fi
echo "abtui: the guest's script ended; a shell on the console"
exec /bin/sh
"""
BASE_FILES = {
    "init": (0o755, INIT),
    "etc/passwd": (0o644, "root:x:0:0:root:/root:/bin/dash\n"),
    "etc/group": (0o644, "root:x:0:\n"),
    "etc/shells": (0o644, "/bin/sh\n/bin/dash\n"),
    "etc/nsswitch.conf": (0o644, "passwd: files\ngroup: files\nhosts: files\n"),
    "etc/hosts": (0o644, "127.0.0.1 localhost\n"),
}
BASE_DIRS = ("proc", "sys", "dev", "tmp", "run", "root", "root/.ssh", "etc/dropbear",
             "var/log", "etc/abtui", "sbin", "usr/sbin", "usr/bin", "bin")


def root_dir() -> Path:
    return cache_root() / "armhf"


@dataclass(frozen=True, slots=True)
class Userspace:
    """The assembled base: its archive and the package versions it holds."""

    archive: Path
    debs: tuple[str, ...]


def _apt_options(state: Path) -> list[str]:
    return ["-o", f"APT::Architecture={ARCH}", "-o", f"APT::Architectures::={ARCH}",
            "-o", f"Dir::State::Lists={state / 'lists'}", "-o", f"Dir::Cache={state / 'cache'}",
            "-o", f"Dir::State::status={state / 'status'}", "-o", "Debug::NoLocking=1",
            "-q"]


def _need(*programs: str) -> None:
    missing = [p for p in programs if shutil.which(p) is None]
    if missing:
        raise MissingPrerequisite(f"the ARM guest's userspace needs {', '.join(missing)} "
                                  "(Debian: apt, dpkg, busybox-static)")


def _apt_state() -> Path:
    """apt's private state for armhf, its package lists fetched once."""
    state = root_dir() / "apt"
    for d in ("lists/partial", "cache/archives/partial"):
        (state / d).mkdir(parents=True, exist_ok=True)
    (state / "status").touch()
    if not any((state / "lists").glob("*_Packages*")):
        update_lists(state)
    return state


def update_lists(state: Path) -> None:
    proc = subprocess.run(["apt-get", *_apt_options(state), "update"], capture_output=True,
                          text=True)
    if proc.returncode != 0 or not any((state / "lists").glob("*_Packages*")):
        why = (proc.stderr.strip() or proc.stdout.strip()).splitlines()
        raise BadInput(f"armhf package lists: `apt-get update` failed: "
                       f"{why[-1] if why else 'no package list'}")


def depends(control: str) -> list[str]:
    """The packages a control record's Depends and Pre-Depends name (an alternative's first)."""
    names: list[str] = []
    for m in re.finditer(r"^(?:Pre-)?Depends: (.*)$", control, re.M):
        for item in m.group(1).split(","):
            first = item.split("|")[0].strip()
            name = re.split(r"[\s(:]", first, maxsplit=1)[0]
            if name and name not in names:
                names.append(name)
    return names


def closure(wanted: Iterable[str],
            records: Callable[[list[str]], Mapping[str, str]]) -> list[str]:
    """`wanted` and the library packages they need, given the packages' control records
    (`records(names)`, asked a level at a time: one apt-cache call each): non-library
    dependencies of maintainer scripts (debconf, adduser), PAM and perl left out."""
    out: list[str] = []
    level = list(dict.fromkeys(wanted))
    top = set(level)
    while level:
        found = records(level)
        lost = [n for n in level if n not in found]
        if lost:
            raise BadInput(f"armhf package {lost[0]}: not in the package lists")
        out += level
        following: list[str] = []
        for name in level:
            for dep in depends(found[name]):
                if dep not in out and dep not in following and (
                        dep in top or not _SKIP.match(dep)):
                    following.append(dep)
        level = following
    return out


def _show(state: Path, names: list[str]) -> dict[str, str]:
    """The control records apt-cache has for `names` (the candidate version of each)."""
    proc = subprocess.run(["apt-cache", *_apt_options(state), "show", "--no-all-versions",
                           *names], capture_output=True, text=True)
    records: dict[str, str] = {}
    for block in proc.stdout.split("\n\n"):
        m = re.search(r"^Package: (\S+)$", block, re.M)
        if m:
            records.setdefault(m.group(1), block)
    return records


def resolve(state: Path) -> list[str]:
    """The armhf packages the userspace is made of: ARMHF_PACKAGES and their libraries;
    kept beside the package lists it was read from (apt-cache takes half a minute a call on a
    loaded machine, with a private state it cannot keep its own cache for)."""
    lists = sorted((state / "lists").glob("*_Packages*"))
    stamp = ",".join(f"{p.name}:{p.stat().st_mtime_ns}" for p in lists) + "|" + \
        ",".join(ARMHF_PACKAGES)
    kept = state / "resolved.json"
    with contextlib.suppress(OSError, ValueError, KeyError):
        known = json.loads(kept.read_text())
        if known["stamp"] == stamp:
            return [str(n) for n in known["packages"]]
    names = closure(ARMHF_PACKAGES, lambda names: _show(state, names))
    kept.write_text(json.dumps({"stamp": stamp, "packages": names}))
    return names


def fetch(state: Path, names: list[str]) -> list[Path]:
    """The packages' .deb files, downloaded once into the private cache."""
    debs_dir = root_dir() / "debs"
    debs_dir.mkdir(parents=True, exist_ok=True)
    os.chmod(debs_dir, 0o755)  # apt's sandbox user writes the download here
    have = {p.name.split("_")[0]: p for p in debs_dir.glob("*.deb")}
    needed = [n for n in names if n not in have]
    if needed:
        proc = subprocess.run(["apt-get", *_apt_options(state), "download", *needed],
                              cwd=debs_dir, capture_output=True, text=True)
        if proc.returncode != 0:
            why = (proc.stderr.strip() or proc.stdout.strip()).splitlines()
            raise BadInput(f"armhf packages: `apt-get download` failed: "
                           f"{why[-1] if why else '?'}")
        have = {p.name.split("_")[0]: p for p in debs_dir.glob("*.deb")}
    return [have[n] for n in names]


def assemble() -> Userspace:
    """The base archive (made once per set of package versions): fetched, unpacked, docs
    dropped, busybox's applets linked where no package gave the command, the init added."""
    _need("apt-get", "apt-cache", "dpkg-deb", "busybox")
    state = _apt_state()
    debs = fetch(state, resolve(state))
    key = hashlib.sha256("\n".join(sorted(d.name for d in debs)).encode()).hexdigest()[:16]
    archive = root_dir() / f"base-{key}.cpio.gz"
    if archive.is_file():
        return Userspace(archive, tuple(d.name for d in debs))
    with tempfile.TemporaryDirectory(prefix="abtui-armhf-", dir=root_dir()) as tmp:
        root = Path(tmp) / "root"
        root.mkdir()
        for deb in debs:
            proc = subprocess.run(["dpkg-deb", "-x", str(deb), str(root)], capture_output=True,
                                  text=True)
            if proc.returncode != 0:
                raise BadInput(f"armhf package {deb.name}: cannot unpack it: "
                               f"{proc.stderr.strip()}")
        for junk in ("usr/share/doc", "usr/share/man", "usr/share/locale", "usr/share/info",
                     "usr/share/lintian", "usr/share/bash-completion", "etc/init.d"):
            shutil.rmtree(root / junk, ignore_errors=True)
        for d in BASE_DIRS:
            (root / d).mkdir(parents=True, exist_ok=True)
        for name, (mode, text) in BASE_FILES.items():
            (root / name).write_text(text)
            os.chmod(root / name, mode)
        link_applets(root, _applets())
        data = cpio_newc(_tree_entries(root))
        part = archive.with_suffix(".part")
        part.write_bytes(gzip.compress(data, 6, mtime=0))
        os.rename(part, archive)
    return Userspace(archive, tuple(d.name for d in debs))


def _applets() -> list[str]:
    """busybox's applets as full paths (the host's busybox-static: the same Debian version and
    configuration as the armhf one)."""
    proc = subprocess.run(["busybox", "--list-full"], capture_output=True, text=True)
    return [line.strip() for line in proc.stdout.splitlines() if line.strip()]


def link_applets(root: Path, applets: Iterable[str]) -> int:
    """A symlink to /bin/busybox for each applet no package put in place (iproute2's `ip`
    stays: busybox's has no xfrm); how many were made."""
    made = 0
    for path in applets:
        target = root / path.lstrip("/")
        name = target.name
        if any((root / d / name).exists() or (root / d / name).is_symlink()
               for d in ("bin", "sbin", "usr/bin", "usr/sbin")):
            continue
        target.parent.mkdir(parents=True, exist_ok=True)
        target.symlink_to("/bin/busybox")
        made += 1
    return made


# ---- cpio (newc), as the kernel unpacks an initramfs -------------------------------------------

def _tree_entries(root: Path) -> list[tuple[str, int, bytes]]:
    """(name, mode, data) for every path under `root`, parents first; a symlink's data is its
    target."""
    entries: list[tuple[str, int, bytes]] = []
    for dirpath, dirnames, filenames in os.walk(root):
        dirnames.sort()
        base = Path(dirpath)
        for name in sorted(dirnames) + sorted(filenames):
            path = base / name
            rel = str(path.relative_to(root))
            st = path.lstat()
            if stat.S_ISLNK(st.st_mode):
                entries.append((rel, st.st_mode, os.readlink(path).encode()))
            elif stat.S_ISDIR(st.st_mode):
                entries.append((rel, st.st_mode, b""))
            elif stat.S_ISREG(st.st_mode):
                entries.append((rel, st.st_mode, path.read_bytes()))
    return entries


def cpio_newc(entries: Iterable[tuple[str, int, bytes]]) -> bytes:
    """A cpio archive in the "new ASCII" format the kernel's initramfs unpacker reads: every
    entry owned by root, its mode kept, hard links not used."""
    out = io.BytesIO()

    def put(name: str, mode: int, data: bytes, ino: int) -> None:
        raw = name.encode() + b"\0"
        fields = [ino, mode, 0, 0, 1, 0, len(data), 0, 0, 0, 0, len(raw), 0]
        out.write(b"070701" + b"".join(b"%08X" % f for f in fields) + raw)
        out.write(b"\0" * (-(110 + len(raw)) % 4))
        out.write(data)
        out.write(b"\0" * (-len(data) % 4))

    ino = 1
    for name, mode, data in entries:
        put(name, mode, data, ino)
        ino += 1
    put("TRAILER!!!", 0, b"", 0)
    return out.getvalue()


def overlay(files: Mapping[str, tuple[int, bytes]]) -> bytes:
    """A guest's own files as a gzipped cpio archive to append to the base (the kernel
    unpacks both, the second over the first); their folders made too."""
    dirs = sorted({str(Path(name).parents[i]) for name in files
                   for i in range(len(Path(name).parents) - 1)})
    entries = [(d, stat.S_IFDIR | 0o755, b"") for d in dirs]
    entries += [(name, stat.S_IFREG | mode, data) for name, (mode, data) in sorted(files.items())]
    return gzip.compress(cpio_newc(entries), 6, mtime=0)


def cached() -> Userspace | None:
    """The base archive made from the packages already fetched, None when they are not (no
    network, no apt asked: the tests' fast check)."""
    kept = root_dir() / "apt" / "resolved.json"
    try:
        names = [str(n) for n in json.loads(kept.read_text())["packages"]]
    except (OSError, ValueError, KeyError):
        return None
    debs = {p.name.split("_")[0]: p for p in (root_dir() / "debs").glob("*.deb")}
    if any(n not in debs for n in names):
        return None
    files = sorted(debs[n].name for n in names)
    key = hashlib.sha256("\n".join(files).encode()).hexdigest()[:16]
    archive = root_dir() / f"base-{key}.cpio.gz"
    return Userspace(archive, tuple(debs[n].name for n in names)) if archive.is_file() else None


def main() -> int:
    """`python -m abtui.lab.vm.armroot`: assemble the base (fetching what is missing) and print
    it; exit 2 with one line when it cannot be had."""
    import sys

    from abtui.core.errors import AbtuiError

    try:
        made = assemble()
    except AbtuiError as exc:
        print(f"abtui: {exc}", file=sys.stderr)
        return 2
    print(f"{made.archive} ({made.archive.stat().st_size} bytes, {len(made.debs)} packages)")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
