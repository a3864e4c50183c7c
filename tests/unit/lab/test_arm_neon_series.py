"""The ARM series "allow kernel mode NEON in softirq context" (v2, two patches) as the
repository carries it (profiles/patches/arm-neon-softirq): every +/- line is the posting's
(the archived posting lost its whitespace, so lines compare with runs of blanks as one), and
the series applies, exactly and in order, to Debian's linux-source-6.1 in the kernel cache
(`make kernels` fetches it; the test says so and skips where it is not cached)."""

from __future__ import annotations

import os
import re
import shutil
from pathlib import Path

import pytest

from abtui.lab import kbuild

ROOT = Path(__file__).resolve().parents[3]
SERIES = sorted((ROOT / "profiles" / "patches" / "arm-neon-softirq").glob("*.patch"))
# the seeds users bring: read where they are kept, skipped (saying so) where absent
SEEDS = Path(os.environ.get("ABTUI_SEEDS", "/work/shared/seeds"))


def _changed_lines(diff: str) -> list[str]:
    """A diff's removed and added lines, blanks collapsed (what the archive kept of them)."""
    lines = []
    for raw in diff.splitlines():
        if raw.startswith(("+++", "---")) or not raw.startswith(("+", "-")):
            continue
        lines.append(raw[0] + " ".join(raw[1:].split()))
    return lines


def _posted_patches(text: str) -> dict[int, str]:
    """The posting's patches by number: the text from `diff --git` to the signature."""
    out: dict[int, str] = {}
    for m in re.finditer(r"Subject: \[PATCH v2 (\d)/2\]", text):
        body = text[m.end():]
        start = body.index("\ndiff --git")
        out[int(m.group(1))] = body[start:body.index("\n--\n", start)]
    return out


def _seed() -> str:
    for path in sorted(SEEDS.glob("*.txt")) if SEEDS.is_dir() else []:
        text = path.read_text(errors="replace")
        if "kernel mode NEON in softirq context" in text and "[PATCH v2 1/2]" in text:
            return text
    pytest.skip(f"the ARM NEON posting is not among the seeds here ({SEEDS}; ABTUI_SEEDS "
                "names another folder)")


def test_every_changed_line_is_the_postings_36_and_21() -> None:
    posted = _posted_patches(_seed())
    assert len(SERIES) == 2
    for number, patch in enumerate(SERIES, 1):
        text = patch.read_text()
        ours = _changed_lines(text[text.index("\ndiff --git"):])
        theirs = _changed_lines(posted[number])
        assert ours == theirs, f"{patch.name} differs from the posting's patch {number}/2"
    assert [len(_changed_lines(posted[n])) for n in (1, 2)] == [36, 21]


def test_the_series_applies_to_debians_linux_source_6_1() -> None:
    if shutil.which("patch") is None:
        pytest.skip("GNU patch is missing (Debian: patch)")
    tree = kbuild.cached_source("linux-source-6.1")
    if tree is None:
        pytest.skip("linux-source-6.1 is not in the kernel cache (`make kernels` fetches it: "
                    "138 MB)")
    kbuild.check_series(tree, SERIES)
    # and it is the pre-patch state: the first patch does not apply twice
    with pytest.raises(kbuild.BadInput, match="does not apply"):
        kbuild.check_series(tree, [*SERIES, SERIES[0]])
