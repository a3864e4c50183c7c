"""The wireguard-gro seed on its own change, on one VM pair (slow tier: two TCG guests, two
module builds, up to MAX_RUNS 10 s runs of each).

`abtui run profiles/wireguard-gro-same-hosts.toml --lab` brings up one VM pair on the
profile's [lab] kernel (Debian's 6.1.0-57, 6.1.192) and builds its [lab] modules: WireGuard's
`wireguard.ko` out of tree from Debian's linux-source-6.1 (the same 6.1.192 source) against
the kernel's linux-headers, as 6.1 ships it (`gro`: napi_gro_receive, the same srcversion as
Debian's own module) and with profiles/patches/wireguard-plain-call (`plain`:
netif_receive_skb, the seed's before). `--alternate wg=plain,gro --until-verdict` loads them
in turn by insmod on both guests (the modules each depends on first), the WireGuard tunnel
made again after every load, `iperf3 -P 2 -R` through it, to a verdict or a stated undecided,
and leaves the hosts on the build they ran before it (Debian's own module: `gro`'s
srcversion). Skipped, with the reason, where qemu or
virtme-ng, the kernel package, or the builds' inputs (the source and headers packages, gcc)
cannot be had. Set ABTUI_WG_SESSIONS=FOLDER to keep the session (the golden
tests/golden/wireguard-gro-same-hosts-vm was recorded so).
"""

from __future__ import annotations

import functools
import json
import os
import re
import shutil
import tomllib
from collections.abc import Iterator
from pathlib import Path

import pytest

from abtui.core.builds import derived_release
from abtui.core.errors import AbtuiError
from abtui.lab import modbuild
from abtui.lab.kernels import resolve
from abtui.lab.netns import Lab
from abtui.lab.vm import guest as lab_vm
from tests.lab.guests import abtui_on, guest_ssh
from tests.lab.namespaces import make_test_lab

pytestmark = [pytest.mark.lab, pytest.mark.slow, pytest.mark.timeout(3600)]
ROOT = Path(__file__).resolve().parents[2]
PROFILE = ROOT / "profiles" / "wireguard-gro-same-hosts.toml"
SEED = 47  # the alternation's order, replayable
MAX_RUNS = int(os.environ.get("ABTUI_WG_MAX_RUNS", "10"))  # stretches of each build at most
VERDICT_RE = re.compile(r"apu2: wg=gro vs plain: Δgeo ([+-]?[\d.]+)% (\[[^\]]*\]|\([^)]*\)) "
                        r"(\S+)")


def _builds() -> dict[str, modbuild.BuiltModule]:
    """The profile's two module builds (made here when the cache has not got them: about a
    minute each), by value."""
    raw = tomllib.loads(PROFILE.read_text())
    release = derived_release(raw["lab"]["kernel"])
    return {value: modbuild.build(modbuild.ModuleSpec(
        "wireguard", release, tuple(PROFILE.parent / p for p in patches)))
        for value, patches in raw["lab"]["modules"].items()}


# abtui's command line against the lab, 3000 s at most unless told
_abtui = functools.partial(abtui_on, timeout=3000)


@pytest.fixture(scope="module")
def wg_lab(tmp_path_factory: pytest.TempPathFactory
           ) -> Iterator[tuple[Lab, dict[str, modbuild.BuiltModule]]]:
    """The lab the run brings up (one VM pair), taken down after, guests and taps included,
    even on failure; the two builds."""
    why = lab_vm.missing_reason()
    if why:
        pytest.skip(why)
    try:
        resolve(tomllib.loads(PROFILE.read_text())["lab"]["kernel"])
        builds = _builds()
    except AbtuiError as exc:
        pytest.skip(f"the guests' kernel or the module builds cannot be had: {exc}")
    lab = make_test_lab(tmp_path_factory.mktemp("wglab"), "w")
    lab.down()
    try:
        yield lab, builds
    finally:
        lab.down()


def test_the_two_builds_differ_by_the_receive_call_alone(wg_lab):
    """Both builds are for the guests' kernel (vermagic), `gro` is Debian's own module (the
    same srcversion: the same source), `plain` another."""
    _, builds = wg_lab
    plain, gro = builds["plain"], builds["gro"]
    assert plain.vermagic == gro.vermagic and plain.vermagic.startswith("6.1.0-57-amd64 ")
    shipped = next(Path(modbuild.cache_root() / "linux-image-6.1.0-57-amd64").rglob(
        "wireguard.ko"))
    assert gro.srcversion == modbuild.modinfo(shipped, "srcversion") != plain.srcversion
    assert "netif_receive_skb(skb);" in (plain.file.parent / "receive.c").read_text()
    assert "napi_gro_receive(&peer->napi, skb);" in (gro.file.parent / "receive.c").read_text()


def test_the_seed_alternates_plain_and_gro_to_a_verdict(wg_lab, tmp_path):
    lab, builds = wg_lab
    out = tmp_path / "wireguard-gro-same-hosts-vm.abtui.jsonl"
    proc = _abtui(lab, tmp_path, "run", str(PROFILE), "--lab", "--headless", "--alternate",
                  "wg=plain,gro", "--until-verdict", "--max-runs", str(MAX_RUNS), "--seed",
                  str(SEED), "--out", str(out))
    keep = os.environ.get("ABTUI_WG_SESSIONS")
    if keep and out.is_file():
        shutil.copy(out, Path(keep) / out.name)
    # 0; or 1 where runs failed, each of them a stream stalled by the stall watch, which
    # counts the wall clock's seconds while the guests report on their instruction-counted
    # clock (a loaded machine's guest second can run longer): those runs are left out of the
    # stretches, and said so
    assert proc.returncode in (0, 1), proc.stderr[-3000:]
    failed = [ln for ln in proc.stderr.splitlines() if re.search(r"run apu2-\d+ .*\) error", ln)]
    assert bool(failed) == (proc.returncode == 1), proc.stderr[-3000:]
    assert all("the stream stalled" in ln for ln in failed), failed
    assert "reloading plain (insmod)" in proc.stderr and "reloading gro (insmod)" in proc.stderr
    for value in ("plain", "gro"):
        assert f"{value} = wireguard.ko srcversion {builds[value].srcversion}" in proc.stderr
    said = list(VERDICT_RE.finditer(proc.stderr))  # each look, then the last word
    assert said, proc.stderr[-2000:]
    doc = json.loads(_abtui(lab, tmp_path, "export", str(out), "--format", "json").stdout)
    (alt,) = doc["alternation"]
    assert alt["verdict"] in ("significant", "no difference", "undecided"), alt
    assert said[-1].group(3) == alt["verdict"].split()[0], (said[-1].group(0), alt)
    assert alt["boots"] >= 2 and alt["base_boots"] >= 2, alt
    measured = [p["config"] for p in doc["phases"] if p["intervals"]]
    assert {c["wg"] for c in measured} == {"plain", "gro"}, measured
    assert all(c["tunnel"] == "wireguard" for c in measured), measured
    # the hosts end on the build they ran before the session: the guests boot with Debian's
    # own wireguard.ko, which abtui recognised as `gro` (the same srcversion: the same
    # source), and set back there, as the session and the module itself say
    session = [json.loads(line) for line in out.read_text().splitlines()]
    first = {e["host"]: e["data"]["value"] for e in session if e.get("kind") == "original"
             and e["data"]["knob"] == "wg"}
    hosts = [h.alias for h in lab.hosts(1)]
    assert first == dict.fromkeys(hosts, "gro"), first
    assert {(e["host"], e["data"]["value"], e["data"]["ok"]) for e in session
            if e.get("kind") == "restore"} == {(h, "gro", True) for h in hosts}
    for alias in hosts:
        said_by_host = guest_ssh(lab, alias, "cat /sys/module/wireguard/srcversion").strip()
        assert said_by_host == builds[first[alias]].srcversion, (alias, said_by_host)
    md = _abtui(lab, tmp_path, "export", str(out)).stdout
    assert "## Alternation verdict" in md and "insmod of plain = wireguard.ko" in md
    print(f"gro vs plain: Δ {alt['pct']:+.1f}% [{alt['low']}, {alt['high']}] {alt['verdict']} "
          f"after {alt['blocks']} blocks ({alt['boots']}/{alt['base_boots']} loads), "
          f"load-to-load sd {alt['boot_sd']:.1f}%, within-load sd {alt['within_sd']:.1f}%, "
          f"machine load {os.getloadavg()[0]:.1f}")
