"""The ARM guest's crypto ranking at boot (abtui.lab.vm.cryptorank): the option's parsing,
the guest script's lines run by a real shell against a /proc/crypto-shaped file and a helper
that records its arguments, and the helper's cross build."""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import pytest

from abtui.core.errors import BadInput
from abtui.lab.vm import cryptorank
from abtui.lab.vm.armhost import rank_comment

PROC_CRYPTO = """\
name         : ghash
driver       : cryptd(ghash-ce-sync)
module       : kernel
priority     : 349
refcnt       : 2

name         : ghash
driver       : ghash-ce
module       : kernel
priority     : 300
refcnt       : 1
"""


def test_priorities_parse_in_order() -> None:
    got = cryptorank.parse_priorities(["cryptd(ghash-ce-sync)=200", "ghash-ce=301"])
    assert got == (("cryptd(ghash-ce-sync)", 200), ("ghash-ce", 301))


@pytest.mark.parametrize("text", ["ghash-ce", "=3", "ghash-ce=-1", "ghash-ce=x",
                                  "a b=3", "g;rm=3", "ghash-ce=99999999999"])
def test_a_bad_priority_is_one_line(text: str) -> None:
    with pytest.raises(BadInput, match="--arm-crypto-priority") as exc:
        cryptorank.parse_priorities([text])
    assert "\n" not in str(exc.value)


def test_a_driver_named_twice_is_refused() -> None:
    with pytest.raises(BadInput, match="named twice"):
        cryptorank.parse_priorities(["ghash-ce=1", "ghash-ce=2"])


def test_the_lines_read_set_and_say(tmp_path: Path) -> None:
    crypto = tmp_path / "crypto"
    crypto.write_text(PROC_CRYPTO)
    calls = tmp_path / "calls"
    helper = tmp_path / "helper"
    helper.write_text(f'#!/bin/sh\necho "$@" >> {calls}\n[ "$1" != missing ]\n')
    helper.chmod(0o755)
    lines = cryptorank.rank_lines([("cryptd(ghash-ce-sync)", 200), ("missing", 5)],
                                  helper=str(helper), proc_crypto=str(crypto))
    out = subprocess.run(["sh", "-c", "\n".join(lines)], capture_output=True, text=True,
                         check=True).stdout.splitlines()
    assert out == ["abtui crypto priority: cryptd(ghash-ce-sync) 349 -> 200 ok",
                   "abtui crypto priority: missing absent -> 5 failed"]
    assert calls.read_text().splitlines() == ["cryptd(ghash-ce-sync) 200", "missing 5"]


def test_the_lab_profile_says_the_ranking() -> None:
    said = "\n".join(rank_comment([("cryptd(ghash-ce-sync)", 200)]))
    assert "cryptd(ghash-ce-sync) = 200" in said
    assert "no ranking" in "\n".join(rank_comment([]))


@pytest.mark.skipif(shutil.which(cryptorank.CROSS_CC) is None,
                    reason="no armhf cross compiler (gcc-arm-linux-gnueabihf) on this machine")
def test_the_helper_builds_for_armhf_once(tmp_path: Path) -> None:
    first = cryptorank.helper_binary(tmp_path)
    head = first.read_bytes()[:20]
    assert head[:4] == b"\x7fELF" and head[4] == 1  # 32-bit
    assert int.from_bytes(head[18:20], "little") == 40  # EM_ARM
    mtime = first.stat().st_mtime_ns
    assert cryptorank.helper_binary(tmp_path) == first
    assert first.stat().st_mtime_ns == mtime
