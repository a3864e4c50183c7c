"""Ranking the ARM guest's crypto implementations before any SA exists.

On the seed's 6.1 ARM kernels `ghash-ce` (priority 300: NEON where `may_use_simd()` allows,
cryptd otherwise) registers, on its first use, a `cryptd(ghash-ce-sync)` instance named `ghash`
ranked 349; from then on every `gcm(aes)` is built on that instance and every GHASH is queued
to cryptd's worker whatever the kernel allows in softirq: the NEON-in-softirq patch is never
asked. `lab up --arm-crypto-priority DRIVER=N` sets such a priority on the guest at each boot,
through the kernel's crypto_user netlink interface (CONFIG_CRYPTO_USER; the helper is
crypto_priority.c, cross-built here), before dropbear starts; the guest's console says what it
was and what it became. It lives only for that boot: a lab up without it boots unranked.
"""

from __future__ import annotations

import hashlib
import re
import shlex
import subprocess
from collections.abc import Iterable, Sequence
from pathlib import Path

from abtui.core.errors import BadInput, MissingPrerequisite

HELPER = "/usr/sbin/abtui-crypto-priority"
CROSS_CC = "arm-linux-gnueabihf-gcc"
RANK_LINE = "abtui crypto priority: "  # the console line each ranking writes
_DRIVER = re.compile(r"[A-Za-z0-9_.,()-]{1,63}")
MAX_PRIORITY = 2**31 - 1


def parse_priorities(texts: Sequence[str]) -> tuple[tuple[str, int], ...]:
    """`DRIVER=N` options as (driver, priority), in order; BadInput with one line otherwise."""
    out: dict[str, int] = {}
    for text in texts:
        driver, sep, value = text.rpartition("=")
        if not sep or not _DRIVER.fullmatch(driver) or not value.isdigit() \
                or int(value) > MAX_PRIORITY:
            raise BadInput(f"--arm-crypto-priority {text}: write DRIVER=N (a crypto driver "
                           "name as /proc/crypto lists it, N a priority from 0)")
        if driver in out:
            raise BadInput(f"--arm-crypto-priority {text}: {driver} is named twice")
        out[driver] = int(value)
    return tuple(out.items())


def rank_lines(priorities: Iterable[tuple[str, int]], *, helper: str = HELPER,
               proc_crypto: str = "/proc/crypto") -> list[str]:
    """The guest script's lines: each driver's priority read from /proc/crypto, set, and
    said on the console (`RANK_LINE DRIVER WAS -> N ok|failed`)."""
    lines = []
    for driver, prio in priorities:
        d = shlex.quote(driver)
        lines += [
            f"was=$(awk -v d={d} '$1==\"driver\"{{x=($3==d)}} "
            f"x&&$1==\"priority\"{{print $3; exit}}' {shlex.quote(proc_crypto)})",
            f"if {shlex.quote(helper)} {d} {prio}; then r=ok; else r=failed; fi",
            f'echo "{RANK_LINE}"{d}" ${{was:-absent}} -> {prio} $r"',
        ]
    return lines


def helper_binary(state_dir: Path) -> Path:
    """The helper built for armhf (freestanding: no armhf libc is needed), once per source."""
    source = Path(__file__).with_name("crypto_priority.c")
    digest = hashlib.sha256(source.read_bytes()).hexdigest()[:12]
    out = state_dir / f"abtui-crypto-priority-{digest}"
    if out.exists():
        return out
    try:
        subprocess.run([CROSS_CC, "-Os", "-static", "-nostdlib", "-ffreestanding",
                        "-fno-stack-protector", "-fno-pic", "-no-pie", "-marm", "-o",
                        str(out), str(source)], check=True, capture_output=True, text=True)
    except FileNotFoundError:
        raise MissingPrerequisite(f"`{CROSS_CC}` is missing (Debian: gcc-arm-linux-gnueabihf):"
                                  " --arm-crypto-priority builds its helper with it") from None
    except subprocess.CalledProcessError as exc:
        tail = (exc.stderr or "").strip().splitlines()[-1:] or ["no output"]
        raise MissingPrerequisite(f"{source.name} did not build: {tail[0]}") from None
    return out
