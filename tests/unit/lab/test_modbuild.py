"""Kernel modules built out of tree for the lab's guests (abtui.lab.modbuild): the cache key
moved by every input that changes the .ko (and by nothing else), Debian's headers packages
found and re-homed, and the seed's plain-call patch applying, exactly, to Debian's
linux-source-6.1 in the kernel cache (`make arm` fetches it; the test says so and skips
where it is not cached). The real build and its load on a guest are the slow tier's
(tests/lab/test_wireguard_gro_lab.py)."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from abtui.core.errors import BadInput
from abtui.lab import kbuild, modbuild
from abtui.lab.modbuild import ModuleSpec

ROOT = Path(__file__).resolve().parents[3]
PLAIN = ROOT / "profiles" / "patches" / "wireguard-plain-call" / \
    "0001-wireguard-receive-plain-call.patch"


def test_the_key_moves_with_every_input_and_nothing_else(tmp_path: Path) -> None:
    gro = ModuleSpec("wireguard", "6.1.0-57-amd64")
    plain = ModuleSpec("wireguard", "6.1.0-57-amd64", (PLAIN,))
    key = modbuild.module_key(gro, "src", "hdr", "12.2.0")
    assert modbuild.module_key(gro, "src", "hdr", "12.2.0") == key
    moved = {modbuild.module_key(plain, "src", "hdr", "12.2.0"),
             modbuild.module_key(gro, "src2", "hdr", "12.2.0"),
             modbuild.module_key(gro, "src", "hdr2", "12.2.0"),
             modbuild.module_key(gro, "src", "hdr", "13.1.0"),
             modbuild.module_key(ModuleSpec("wireguard", "6.1.0-47-amd64"), "src", "hdr",
                                 "12.2.0")}
    assert key not in moved and len(moved) == 5
    # the patch's bytes, not its name: a copy elsewhere is the same build
    copy = tmp_path / "renamed.patch"
    shutil.copy(PLAIN, copy)
    assert modbuild.module_key(ModuleSpec("wireguard", "6.1.0-57-amd64", (copy,)), "src",
                               "hdr", "12.2.0") == modbuild.module_key(plain, "src", "hdr",
                                                                       "12.2.0")


def test_the_source_is_the_release_s_own_and_only_known_drivers_build() -> None:
    assert ModuleSpec("wireguard", "6.1.0-57-amd64").source_package() == "linux-source-6.1"
    assert ModuleSpec("wireguard", "6.12.9-1-arm64").source_package() == "linux-source-6.12"
    with pytest.raises(BadInput, match=r"'6\.1-custom': not a Debian kernel release"):
        ModuleSpec("wireguard", "6.1-custom").source_package()
    with pytest.raises(BadInput, match=r"module build 'e1000e': abtui builds wireguard only"):
        ModuleSpec("e1000e", "6.1.0-57-amd64").driver()


def test_the_headers_depends_name_the_common_tree_and_kbuild_at_their_version() -> None:
    field = ("linux-headers-6.1.0-57-common (= 6.1.192-3), linux-kbuild-6.1 (>= 6.1.192-3), "
             "linux-compiler-gcc-12-x86")
    assert modbuild.parse_depends(field) == ["linux-headers-6.1.0-57-common=6.1.192-3",
                                             "linux-kbuild-6.1=6.1.192-3"]


def test_the_flavour_makefile_includes_the_cached_common_tree() -> None:
    text = ("include /usr/src/linux-headers-6.1.0-57-common/Makefile\n"
            "override ARCH = x86\n")
    assert modbuild.rehome_makefile(text, Path("/c/h")) == (
        "include /c/h/usr/src/linux-headers-6.1.0-57-common/Makefile\noverride ARCH = x86\n")


@pytest.mark.skipif(shutil.which("patch") is None, reason="GNU patch is missing (Debian: patch)")
def test_the_plain_call_patch_applies_to_the_cached_tree_and_changes_one_call() -> None:
    tree = kbuild.cached_source("linux-source-6.1")
    if tree is None:
        pytest.skip("linux-source-6.1 is not in the kernel cache (`make arm` fetches it)")
    receive = (tree / "drivers" / "net" / "wireguard" / "receive.c").read_text()
    assert receive.count("napi_gro_receive(&peer->napi, skb);") == 1  # what 6.1 ships
    kbuild.check_series(tree, [PLAIN])  # exactly: no fuzz
    changed = [ln for ln in PLAIN.read_text().splitlines()
               if ln.startswith(("+", "-")) and not ln.startswith(("+++", "---"))]
    assert changed == ["-\tnapi_gro_receive(&peer->napi, skb);", "+\tnetif_receive_skb(skb);"]
