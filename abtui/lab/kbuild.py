"""Kernels built from a Debian kernel source package plus a patch series, for the lab's guests.

A seed's change is a patch; its BEFORE is the tree without it. Debian's `linux-source-6.1`
(6.1.192) is the pre-patch state of the ARM "kernel mode NEON in softirq context" series, so
the lab builds both kernels itself:

- the source package is fetched once (`apt-get download`, exactly that name) into the kernel
  cache's `sources/` folder and unpacked there (`dpkg-deb --fsys-tarfile`, the .tar.xz inside);
  the unpacked tree stays pristine: a build without patches reads it as it is;
- a build with patches gets its own copy (hard links, seconds) patched with `patch -p1
  --fuzz=0` (GNU patch writes a new file, so the pristine tree keeps its own);
- every build is made out of tree (`make O=...`) in a fresh output folder: Kbuild's dependency
  files miss the generated `<asm/simd.h>` wrapper the series replaces, so an incremental
  rebuild keeps the objects that include it (aes-ce-glue, ghash-ce-glue, crypto/simd) and the
  AFTER kernel would keep BEFORE's `may_use_simd()`;
- the config is `allnoconfig` with a fragment merged in (KCONFIG_ALLCONFIG); every line of the
  fragment must survive into `.config` (Kconfig drops an option whose dependencies are unmet,
  silently) or the build stops naming them;
- builds are cached under `builds/KEY`, KEY the hash of the source package, the fragment, the
  patches (in order), the architecture, target and compiler version: the same inputs are built
  once, by one process at a time (a lock file).

Nothing here boots a kernel.
"""

from __future__ import annotations

import fcntl
import hashlib
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import IO

from abtui.core.errors import BadInput, MissingPrerequisite
from abtui.lab.kernels import apt_download, cache_root

SOURCE_PACKAGE_RE = re.compile(r"linux-source-[0-9][0-9.]*")
# the option lines of a config fragment: `CONFIG_X=v` and `# CONFIG_X is not set`
_SET_RE = re.compile(r"^(CONFIG_[A-Za-z0-9_]+)=(.*)$")
_UNSET_RE = re.compile(r"^# (CONFIG_[A-Za-z0-9_]+) is not set$")


@dataclass(frozen=True, slots=True)
class BuildSpec:
    """What a build is made of: the source package, the config fragment, the patches in order,
    and how it is compiled."""

    source: str  # a Debian kernel source package: linux-source-6.1
    config: Path  # a fragment merged onto allnoconfig
    patches: tuple[Path, ...] = ()
    arch: str = "arm"
    cross_compile: str = "arm-linux-gnueabihf-"
    target: str = "zImage"

    def compiler(self) -> str:
        return f"{self.cross_compile}gcc"


@dataclass(frozen=True, slots=True)
class Built:
    """A finished build: its image, output folder and what it took."""

    key: str
    image: Path
    out: Path
    info: dict[str, object] = field(default_factory=dict)


def sources_dir() -> Path:
    return cache_root() / "sources"


def builds_dir() -> Path:
    return cache_root() / "builds"


# ---- the source package -------------------------------------------------------------------

def need(*programs: str, why: str) -> None:
    """BadInput naming the programs missing from PATH (and the sbin folders), and why they
    are needed."""
    path = os.environ.get("PATH", "") + ":/usr/sbin:/sbin"
    missing = [p for p in programs if shutil.which(p, path=path) is None]
    if missing:
        raise MissingPrerequisite(f"{why}: {', '.join('`' + m + '`' for m in missing)} "
                                  f"{'is' if len(missing) == 1 else 'are'} missing")


def cached_source(name: str) -> Path | None:
    """The unpacked tree of source package `name` in the cache, None when not fetched yet
    (the newest, where several versions were fetched)."""
    ready = sorted(sources_dir().glob(f"{name}_*.ready"), key=lambda p: p.stat().st_mtime)
    for stamp in reversed(ready):
        tree = stamp.with_suffix("")
        if tree.is_dir():
            return tree
    return None


def source_tree(name: str, *, fetch: bool = True) -> Path:
    """The pristine unpacked tree of Debian source package `name`, fetched and unpacked once."""
    if not SOURCE_PACKAGE_RE.fullmatch(name):
        raise BadInput(f"kernel source {name!r}: give a Debian kernel source package name "
                       "(such as linux-source-6.1)")
    tree = cached_source(name)
    if tree is not None:
        return tree
    if not fetch:
        raise BadInput(f"kernel source {name}: not fetched yet (into {sources_dir()})")
    return _fetch_source(name)


def _fetch_source(name: str) -> Path:
    """`apt-get download NAME`, then the .tar.xz inside unpacked; in a scratch folder moved in
    place, so an interrupted fetch leaves nothing half made. 138 MB, ~20 s on this machine."""
    need("apt-get", "dpkg-deb", "tar", "xz", why=f"kernel source {name}")
    root = sources_dir()
    root.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(prefix=f".{name}-", dir=root) as tmp:
        work = Path(tmp)
        (deb,) = apt_download([name], work, f"kernel source {name}")
        stem = deb.name.removesuffix(".deb").removesuffix("_all")
        digest = file_sha256(deb)
        unpack = work / "unpack"
        unpack.mkdir()
        inner = f"./usr/src/{name}.tar.xz"
        pipeline = (f"dpkg-deb --fsys-tarfile {_q(deb)} | tar -xO {_q(inner)} | xz -dc | "
                    f"tar -x -C {_q(unpack)}")
        proc = subprocess.run(["bash", "-o", "pipefail", "-c", pipeline],
                              capture_output=True, text=True)
        tops = [p for p in unpack.iterdir() if p.is_dir()] if unpack.is_dir() else []
        if proc.returncode != 0 or len(tops) != 1 or not (tops[0] / "Makefile").is_file():
            why = proc.stderr.strip().splitlines()
            raise BadInput(f"kernel source {name}: unpacking {deb.name} failed: "
                           f"{why[-1] if why else 'no kernel tree inside'}")
        final = root / stem
        if final.exists():
            shutil.rmtree(final)
        os.rename(tops[0], final)
        os.rename(deb, root / deb.name)
        (root / f"{stem}.ready").write_text(json.dumps({"deb": deb.name, "sha256": digest}) + "\n")
    return final


def _q(path: Path | str) -> str:
    return "'" + str(path).replace("'", "'\\''") + "'"


def file_sha256(path: Path) -> str:
    """A file's SHA-256, read a MiB at a time (packages of hundreds of MB)."""
    h = hashlib.sha256()
    with path.open("rb") as fh:
        for block in iter(lambda: fh.read(1 << 20), b""):
            h.update(block)
    return h.hexdigest()


def source_digest(tree: Path) -> str:
    """The source package's hash, as recorded when it was unpacked."""
    stamp = tree.with_name(tree.name + ".ready")
    try:
        return str(json.loads(stamp.read_text())["sha256"])
    except (OSError, ValueError, KeyError) as exc:
        raise BadInput(f"kernel source {tree}: its record {stamp} is missing or unreadable "
                       f"({exc}); fetch it again") from exc


# ---- patches and the config ---------------------------------------------------------------

def patched_files(patch: Path) -> list[str]:
    """The files a patch touches, as paths in the tree (`-p1`)."""
    files: list[str] = []
    for line in patch.read_text(errors="replace").splitlines():
        m = re.match(r"^\+\+\+ (\S+)", line)
        if m and m.group(1) != "/dev/null":
            name = m.group(1).split("/", 1)[1] if "/" in m.group(1) else m.group(1)
            if name not in files:
                files.append(name)
    return files


def check_series(tree: Path, patches: Sequence[Path]) -> None:
    """That the patches apply to `tree` in order, exactly (no fuzz, no offsets beyond what
    `patch` reports): tried on a copy of the files they touch, the tree left as it is. Raises
    BadInput naming the patch and `patch`'s own words when one does not."""
    need("patch", why="applying a patch series")
    with tempfile.TemporaryDirectory(prefix="abtui-series-") as tmp:
        work = Path(tmp)
        for patch in patches:
            for name in patched_files(patch):
                src, dst = tree / name, work / name
                if src.is_file() and not dst.exists():
                    dst.parent.mkdir(parents=True, exist_ok=True)
                    shutil.copy2(src, dst)
        for patch in patches:
            apply_patch(work, patch, tree.name)


def apply_patch(tree: Path, patch: Path, label: str = "") -> None:
    """Apply one patch to `tree` (`-p1`, no fuzz); BadInput naming it and `label` (the tree
    it is meant for) when it does not apply."""
    if not patch.is_file():
        raise BadInput(f"patch {patch}: no such file")
    proc = subprocess.run(["patch", "-p1", "--batch", "--forward", "--fuzz=0", "-s", "-i",
                           str(patch.resolve())], cwd=tree, capture_output=True, text=True)
    if proc.returncode != 0:
        why = " ".join((proc.stdout + proc.stderr).split())
        raise BadInput(f"patch {patch.name} does not apply to {label or tree.name}: "
                       f"{why[:300]}")


def fragment_options(config: Path) -> dict[str, str]:
    """A config fragment's options: name -> value ("n" for `# CONFIG_X is not set`)."""
    try:
        text = config.read_text()
    except OSError as exc:
        raise BadInput(f"kernel config {config}: cannot read it ({exc.strerror})") from exc
    options: dict[str, str] = {}
    for number, raw in enumerate(text.splitlines(), 1):
        line = raw.strip()
        set_m, unset_m = _SET_RE.match(line), _UNSET_RE.match(line)
        if set_m:
            options[set_m.group(1)] = set_m.group(2)
        elif unset_m:
            options[unset_m.group(1)] = "n"
        elif line and not line.startswith("#"):
            raise BadInput(f"kernel config {config}:{number}: not a config line: {line!r}")
    if not options:
        raise BadInput(f"kernel config {config}: no CONFIG_ options in it")
    return options


def dropped_options(wanted: dict[str, str], dot_config: str) -> list[str]:
    """The fragment's options `.config` does not hold as asked (Kconfig dropped or changed)."""
    got: dict[str, str] = {}
    for raw in dot_config.splitlines():
        set_m, unset_m = _SET_RE.match(raw.strip()), _UNSET_RE.match(raw.strip())
        if set_m:
            got[set_m.group(1)] = set_m.group(2)
        elif unset_m:
            got[unset_m.group(1)] = "n"
    return [f"{k}={v}" for k, v in wanted.items() if got.get(k, "n") != v]


# ---- the build ----------------------------------------------------------------------------

def compiler_version(spec: BuildSpec) -> str:
    need(spec.compiler(), "make", "flex", "bison", "bc",
          why=f"building a {spec.arch} kernel (Debian: gcc-arm-linux-gnueabihf make flex "
              "bison bc)")
    proc = subprocess.run([spec.compiler(), "-dumpfullversion"], capture_output=True,
                          text=True)
    return proc.stdout.strip() or "?"


def build_key(spec: BuildSpec, source_sha256: str, compiler: str) -> str:
    """The hash naming a build: every input that changes the image."""
    h = hashlib.sha256()
    for part in (spec.source, source_sha256, spec.arch, spec.cross_compile, spec.target,
                 compiler):
        h.update(part.encode() + b"\0")
    # the fragment's options, not its text: a comment changed rebuilds nothing
    for name, value in sorted(fragment_options(spec.config).items()):
        h.update(f"config\0{name}={value}\0".encode())
    for patch in spec.patches:
        h.update(b"patch\0" + patch.read_bytes())
    return h.hexdigest()[:16]


def image_path(spec: BuildSpec, out: Path) -> Path:
    return out / "arch" / spec.arch / "boot" / spec.target


@contextmanager
def locked(path: Path) -> Iterator[None]:
    """Hold an exclusive lock on `path` (made when missing): one build of a key at a time,
    across processes."""
    path.parent.mkdir(parents=True, exist_ok=True)
    with path.open("a") as fh:
        fcntl.flock(fh, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(fh, fcntl.LOCK_UN)


def cached_build(spec: BuildSpec) -> Built | None:
    """The finished build of `spec`, None when it was not built yet (nothing fetched or
    compiled: the tests' fast checks ask this)."""
    tree = cached_source(spec.source)
    if tree is None or shutil.which(spec.compiler()) is None:
        return None
    key = build_key(spec, source_digest(tree), compiler_version(spec))
    return _finished(spec, key)


def _finished(spec: BuildSpec, key: str) -> Built | None:
    folder = builds_dir() / key
    record = folder / "build.json"
    image = image_path(spec, folder / "out")
    if record.is_file() and image.is_file():
        return Built(key, image, folder / "out", json.loads(record.read_text()))
    return None


def build(spec: BuildSpec, *, jobs: int | None = None, log: Path | None = None,
          fetch: bool = True) -> Built:
    """The kernel `spec` names, built once (out of tree, in a fresh output folder) and cached."""
    options = fragment_options(spec.config)
    compiler = compiler_version(spec)
    tree = source_tree(spec.source, fetch=fetch)
    key = build_key(spec, source_digest(tree), compiler)
    folder = builds_dir() / key
    with locked(builds_dir() / f"{key}.lock"):
        done = _finished(spec, key)
        if done is not None:
            return done
        if folder.exists():
            shutil.rmtree(folder)  # an interrupted build is redone from scratch
        folder.mkdir(parents=True)
        src = tree
        if spec.patches:
            check_series(tree, spec.patches)
            src = folder / "src"
            subprocess.run(["cp", "-al", str(tree), str(src)], check=True)
            for patch in spec.patches:
                apply_patch(src, patch, tree.name)
        out = folder / "out"
        out.mkdir()
        make = ["make", f"O={out}", f"ARCH={spec.arch}", f"CROSS_COMPILE={spec.cross_compile}"]
        logfile = log or folder / "build.log"
        started, cpu0 = time.monotonic(), children_cpu()
        with logfile.open("w") as fh:
            run_make([*make, f"KCONFIG_ALLCONFIG={spec.config.resolve()}", "allnoconfig"],
                     src, fh, "allnoconfig")
            dropped = dropped_options(options, (out / ".config").read_text())
            if dropped:
                raise BadInput(f"kernel config {spec.config}: Kconfig dropped "
                               f"{', '.join(dropped)} (a dependency is not set)")
            run_make([*make, f"-j{jobs or os.cpu_count() or 1}", spec.target], src, fh,
                     spec.target)
        image = image_path(spec, out)
        info: dict[str, object] = {
            "source": spec.source, "source_tree": tree.name, "config": spec.config.name,
            "patches": [p.name for p in spec.patches], "compiler": compiler,
            "wall_s": round(time.monotonic() - started, 1),
            "cpu_s": round(children_cpu() - cpu0, 1), "image_bytes": image.stat().st_size,
            "load": load_average(), "built": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
        }
        (folder / "build.json").write_text(json.dumps(info, indent=1) + "\n")
        return Built(key, image, out, info)


def run_make(args: list[str], cwd: Path, log: IO[str], what: str) -> None:
    """Run a build command in `cwd`, its output into `log`; BadInput naming `what` and the
    log when it fails."""
    proc = subprocess.run(args, cwd=cwd, stdout=log, stderr=subprocess.STDOUT)
    if proc.returncode != 0:
        raise BadInput(f"kernel build: `make {what}` failed in {cwd} (see {log.name})")


def children_cpu() -> float:
    """The CPU seconds this process's finished children took (a build's cost)."""
    t = os.times()
    return t.children_user + t.children_system


def load_average() -> float:
    """The machine's one-minute load (-1 where unknown), recorded beside a build's time."""
    try:
        return os.getloadavg()[0]
    except OSError:
        return -1.0


def main(argv: list[str]) -> int:
    """`python -m abtui.lab.kbuild fetch SOURCE`: fetch and unpack a source package into the
    cache (`make kernels` does, for the tests' fast check of the series);
    `python -m abtui.lab.kbuild SOURCE CONFIG [PATCH...]`: build (or find) that kernel and
    print its image. Exit 2 with one line when it cannot be had."""
    from abtui.core.errors import AbtuiError

    try:
        if len(argv) == 2 and argv[0] == "fetch":
            print(source_tree(argv[1]))
            return 0
        if len(argv) < 2:
            print("usage: python -m abtui.lab.kbuild fetch SOURCE-PACKAGE\n"
                  "       python -m abtui.lab.kbuild SOURCE-PACKAGE CONFIG-FRAGMENT [PATCH...]",
                  file=sys.stderr)
            return 2
        built = build(BuildSpec(argv[0], Path(argv[1]), tuple(Path(p) for p in argv[2:])))
    except AbtuiError as exc:
        print(f"abtui: {exc}", file=sys.stderr)
        return 2
    print(f"{built.image} ({built.key}: {json.dumps(built.info)})")
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
