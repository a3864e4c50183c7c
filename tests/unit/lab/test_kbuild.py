"""Kernels built from a source package plus a patch series (abtui.lab.kbuild): the config
fragment read and checked against what Kconfig kept, the cache key moved by every input that
changes the image (and by nothing else), and a series applied exactly or refused in one line.
The real tree and compiler are the slow tier's (tests/lab/test_arm_kernels_lab.py); the series
against Debian's cached tree is tests/unit/lab/test_arm_neon_series.py."""

from __future__ import annotations

import os
import shutil
from pathlib import Path

import pytest

from abtui.core.errors import BadInput
from abtui.lab import kbuild
from abtui.lab.kbuild import BuildSpec

ROOT = Path(__file__).resolve().parents[3]
FRAGMENT = ROOT / "profiles" / "kernel-configs" / "arm-virt-ipsec.config"
SERIES = sorted((ROOT / "profiles" / "patches" / "arm-neon-softirq").glob("*.patch"))

needs_patch = pytest.mark.skipif(shutil.which("patch") is None,
                                 reason="GNU patch is missing (Debian: patch)")


def test_the_fragment_reads_as_options_with_unset_ones_as_n() -> None:
    options = kbuild.fragment_options(FRAGMENT)
    assert options["CONFIG_KERNEL_MODE_NEON"] == "y"
    assert options["CONFIG_CRYPTO_AES_ARM_CE"] == "y"
    assert options["CONFIG_CRYPTO_MANAGER_DISABLE_TESTS"] == "n"  # self-tests on, as Debian


def test_a_line_that_is_not_config_is_named_with_its_line(tmp_path: Path) -> None:
    bad = tmp_path / "frag.config"
    bad.write_text("CONFIG_NET=y\nNET=y\n")
    with pytest.raises(BadInput, match=r"frag.config:2: not a config line: 'NET=y'"):
        kbuild.fragment_options(bad)


def test_options_kconfig_dropped_or_changed_are_named() -> None:
    wanted = {"CONFIG_A": "y", "CONFIG_B": "y", "CONFIG_C": "n", "CONFIG_D": "m"}
    dot = "CONFIG_A=y\n# CONFIG_B is not set\nCONFIG_D=y\n"
    assert kbuild.dropped_options(wanted, dot) == ["CONFIG_B=y", "CONFIG_D=m"]


def test_the_key_moves_with_patches_config_source_and_compiler_not_comments(
        tmp_path: Path) -> None:
    frag = tmp_path / "a.config"
    frag.write_text(FRAGMENT.read_text())
    before = BuildSpec("linux-source-6.1", frag)
    after = BuildSpec("linux-source-6.1", frag, tuple(SERIES))
    key = kbuild.build_key(before, "abc", "12.2.0")
    assert len({key, kbuild.build_key(after, "abc", "12.2.0"),
                kbuild.build_key(before, "abd", "12.2.0"),
                kbuild.build_key(before, "abc", "12.3.0")}) == 4
    frag.write_text("# a new comment\n" + FRAGMENT.read_text())
    assert kbuild.build_key(before, "abc", "12.2.0") == key
    frag.write_text(FRAGMENT.read_text() + "CONFIG_SMP=y\n")
    assert kbuild.build_key(before, "abc", "12.2.0") != key
    # the order of a series is part of it
    assert kbuild.build_key(BuildSpec("linux-source-6.1", frag, tuple(reversed(SERIES))),
                            "abc", "12.2.0") != kbuild.build_key(
        BuildSpec("linux-source-6.1", frag, tuple(SERIES)), "abc", "12.2.0")


def test_the_series_touches_the_files_the_posting_names() -> None:
    first, second = (kbuild.patched_files(p) for p in SERIES)
    assert first == ["arch/arm/include/asm/assembler.h", "arch/arm/kernel/asm-offsets.c",
                     "arch/arm/vfp/entry.S", "arch/arm/vfp/vfphw.S", "arch/arm/vfp/vfpmodule.c"]
    assert second == ["arch/arm/include/asm/simd.h", "arch/arm/vfp/vfpmodule.c"]


def _tree(tmp_path: Path) -> Path:
    tree = tmp_path / "tree"
    (tree / "dir").mkdir(parents=True)
    (tree / "dir" / "f.c").write_text("one\ntwo\nthree\n")
    return tree


def _patch(tmp_path: Path, name: str, old: str, new: str) -> Path:
    p = tmp_path / name
    p.write_text(f"--- a/dir/f.c\n+++ b/dir/f.c\n@@ -1,3 +1,3 @@\n one\n-{old}\n+{new}\n three\n")
    return p


@needs_patch
def test_a_series_applies_in_order_on_copies_and_leaves_the_tree(tmp_path: Path) -> None:
    tree = _tree(tmp_path)
    series = [_patch(tmp_path, "1.patch", "two", "2"), _patch(tmp_path, "2.patch", "2", "II")]
    kbuild.check_series(tree, series)
    assert (tree / "dir" / "f.c").read_text() == "one\ntwo\nthree\n"
    with pytest.raises(BadInput, match=r"patch 2.patch does not apply to tree"):
        kbuild.check_series(tree, list(reversed(series)))
    assert (tree / "dir" / "f.c").read_text() == "one\ntwo\nthree\n"


@needs_patch
def test_a_patch_needing_fuzz_is_refused(tmp_path: Path) -> None:
    tree = _tree(tmp_path)
    (tree / "dir" / "f.c").write_text("uno\ntwo\nthree\n")  # the leading context differs
    with pytest.raises(BadInput, match=r"1.patch does not apply"):
        kbuild.check_series(tree, [_patch(tmp_path, "1.patch", "two", "2")])


def test_a_missing_patch_file_is_one_line(tmp_path: Path) -> None:
    with pytest.raises(BadInput, match=r"patch .*nope.patch: no such file"):
        kbuild.apply_patch(_tree(tmp_path), tmp_path / "nope.patch")


def test_a_source_name_that_is_not_a_source_package_is_refused() -> None:
    with pytest.raises(BadInput, match=r"give a Debian kernel source package name"):
        kbuild.source_tree("linux-image-6.1.0-47-amd64", fetch=False)


def test_a_source_not_fetched_is_said_without_fetching(tmp_path: Path,
                                                       monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("ABTUI_KERNEL_CACHE", str(tmp_path))
    with pytest.raises(BadInput, match=r"linux-source-6.1: not fetched yet"):
        kbuild.source_tree("linux-source-6.1", fetch=False)
    assert kbuild.cached_build(BuildSpec("linux-source-6.1", FRAGMENT)) is None


def _fake_tools(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, dot_config: str) -> Path:
    """A kernel cache with an unpacked "source" and fake `make`/compiler on PATH: `make
    allnoconfig` writes `dot_config` into O=, `make zImage` writes the image and counts."""
    cache = tmp_path / "cache"
    tree = cache / "sources" / "linux-source-6.1_6.1.192-3"
    (tree / "dir").mkdir(parents=True)
    (tree / "dir" / "f.c").write_text("one\ntwo\nthree\n")
    (cache / "sources" / "linux-source-6.1_6.1.192-3.ready").write_text(
        '{"deb": "x.deb", "sha256": "abc"}\n')
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    (tmp_path / "dot_config").write_text(dot_config)
    make = f"""#!/bin/sh
for a; do case $a in O=*) out=${{a#O=}};; esac; done
case " $* " in
*" allnoconfig "*) cp {tmp_path / 'dot_config'} "$out/.config" ;;
*" zImage "*) mkdir -p "$out/arch/arm/boot" && cat dir/f.c > "$out/arch/arm/boot/zImage"
  echo built >> {tmp_path / 'makes'} ;;
esac
"""
    tools = {"make": make, "arm-linux-gnueabihf-gcc": "#!/bin/sh\necho 12.2.0\n"}
    for name in ("flex", "bison", "bc"):
        tools[name] = "#!/bin/sh\n"
    for name, text in tools.items():
        (bin_dir / name).write_text(text)
        (bin_dir / name).chmod(0o755)
    monkeypatch.setenv("PATH", f"{bin_dir}:{os.environ['PATH']}")
    monkeypatch.setenv("ABTUI_KERNEL_CACHE", str(cache))
    return tmp_path


@needs_patch
def test_a_build_is_made_once_out_of_tree_patched_on_a_copy(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    frag = tmp_path / "f.config"
    frag.write_text("CONFIG_NET=y\n")
    root = _fake_tools(tmp_path, monkeypatch, "CONFIG_NET=y\n")
    patch = _patch(tmp_path, "1.patch", "two", "2")
    spec = BuildSpec("linux-source-6.1", frag, (patch,))
    built = kbuild.build(spec)
    assert built.image.read_text() == "one\n2\nthree\n"  # the patched copy was built
    tree = kbuild.cached_source("linux-source-6.1")
    assert tree is not None and (tree / "dir" / "f.c").read_text() == "one\ntwo\nthree\n"
    assert kbuild.build(spec).key == built.key  # cached: make not run again
    assert (root / "makes").read_text() == "built\n"
    assert kbuild.cached_build(spec) is not None
    plain = kbuild.build(BuildSpec("linux-source-6.1", frag))
    assert plain.key != built.key and plain.image.read_text() == "one\ntwo\nthree\n"


def test_an_option_kconfig_dropped_stops_the_build_naming_it(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    frag = tmp_path / "f.config"
    frag.write_text("CONFIG_NET=y\nCONFIG_INET_ESP=y\n")
    _fake_tools(tmp_path, monkeypatch, "CONFIG_NET=y\n# CONFIG_INET_ESP is not set\n")
    with pytest.raises(BadInput, match=r"Kconfig dropped CONFIG_INET_ESP=y"):
        kbuild.build(BuildSpec("linux-source-6.1", frag))
