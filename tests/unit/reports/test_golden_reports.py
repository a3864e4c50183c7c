"""Golden reports: each shipped procedure's Markdown report, made from a session recorded on
the lab (tests/golden/*.abtui.jsonl.gz), equals the one read by eye and pinned next to it, so
a change to a pasted table is always deliberate. Regenerate after a meant change with
`ABTUI_UPDATE_GOLDEN=1 pytest tests/unit/reports/test_golden_reports.py`, then read `git diff`."""

from __future__ import annotations

import difflib
import os
import re
import tomllib
from pathlib import Path
from typing import Any

import pytest

from abtui.reports.exports import render
from abtui.sessions.session import Session

GOLDEN = Path(__file__).resolve().parents[2] / "golden"
PROCEDURES = ("ix-enable-aim", "softirq-crypto", "wireguard-gro")
# the same procedures recorded on VM hosts booting real Debian kernel builds (name-vm): the
# release each pair booted, as its first table shows it
VM_RELEASES = {"wireguard-gro-vm": {"baseline": "6.1.0-47-amd64", "gro-v1": "6.1.0-52-amd64",
                                    "gro-v2": "6.1.0-57-amd64"},
               "softirq-crypto-vm": {"BEFORE": "6.1.0-47-amd64", "AFTER": "6.1.0-57-amd64"},
               "ix-enable-aim-vm": {"stock": "6.1.0-47-amd64", "patched": "6.1.0-57-amd64"}}
# the same-hosts forms, recorded on one VM pair whose hosts switch between real Debian builds
# ([lab] builds): the build knob and the release each value's build reports
SAME_HOSTS = {
    "softirq-crypto-same-hosts-vm": ("kernel", {"before": "6.1.0-47-amd64",
                                                "after": "6.1.0-57-amd64"}),
    "ix-enable-aim-same-hosts-vm": ("ix", {"stock": "6.1.0-47-amd64",
                                           "D30155": "6.1.0-57-amd64"}),
}
# the softirq-crypto seed on its own patch: the lab's ARM guest power-cycled between the BEFORE
# and AFTER builds of linux-source-6.1, IPsec to an x86 VM guest, recorded by
# tests/lab/test_arm_softirq_crypto_lab.py on the lab's own profile: the reverse value each ran
ARM_SEED = {"softirq-crypto-arm-tx-vm": "off", "softirq-crypto-arm-rx-vm": "on"}
# the wireguard-gro seed on its own change: one VM pair alternating the plain-call and GRO-call
# wireguard.ko the lab built from linux-source-6.1, loaded by insmod (recorded by
# tests/lab/test_wireguard_gro_lab.py): the srcversion each value's build has
WG_SEED = {"wireguard-gro-same-hosts-vm": {"plain": "DB6416EBEE70509A3FCF608",
                                          "gro": "A54194B1D21918923AF110D"}}
GOLDENS = (*PROCEDURES, *VM_RELEASES, *SAME_HOSTS, *ARM_SEED, *WG_SEED)
UPDATE = os.environ.get("ABTUI_UPDATE_GOLDEN") == "1"


@pytest.mark.parametrize("name", GOLDENS)
def test_report_equals_the_pinned_one(name: str) -> None:
    session = Session.load(GOLDEN / f"{name}.abtui.jsonl.gz")
    md = render(session, "md")
    pinned = GOLDEN / f"{name}.md"
    if UPDATE:
        pinned.write_text(md)
    want = pinned.read_text()
    if md != want:
        diff = "".join(difflib.unified_diff(want.splitlines(True), md.splitlines(True),
                                            f"{pinned.name} (pinned)", "now"))
        pytest.fail(f"{name}'s report changed (ABTUI_UPDATE_GOLDEN=1 regenerates):\n{diff}")


def test_the_golden_sessions_are_the_shipped_procedures() -> None:
    """Each golden session ran its profile as shipped: the same pairs, knobs, plan and report
    layout as the file in profiles/ (a profile changed there wants its session recorded anew)."""
    profiles = GOLDEN.parents[1] / "profiles"
    for name in (g for g in GOLDENS if g not in ARM_SEED):  # those: the test below
        session = Session.load(GOLDEN / f"{name}.abtui.jsonl.gz")
        recorded = tomllib.loads(session.profile_text)
        shipped = tomllib.loads((profiles / f"{name.removesuffix('-vm')}.toml").read_text())
        assert "lab" in recorded or name not in SAME_HOSTS, name  # the builds the lab booted
        for part in ("pairs", "plan", "report"):
            assert recorded.get(part) == shipped.get(part), (name, part)
        assert _declared(recorded) == _declared(shipped), name
        assert _ran_live(recorded) == _acts_live(profiles / f"{name.removesuffix('-vm')}.toml"), \
            name  # the knobs acted live then as the shipped ones do now
        assert session.translations, name  # recorded on the lab: its translations listed


def _declared(doc: dict[str, Any]) -> list[dict[str, Any]]:
    """The knobs as declared, less how a change reaches open connections (compared as the
    behaviour it names: _ran_live, _acts_live)."""
    return [{k: v for k, v in knob.items() if k not in ("live", "restart")}
            for knob in doc.get("knobs", [])]


def _ran_live(doc: dict[str, Any]) -> dict[str, bool]:
    """Which recorded knobs' changes kept the runs going. The goldens were recorded before
    2026-12-07, when a change restarted the runs only with `restart = true` or for a tunnel,
    an iperf3 option or a build (`live` did not exist yet)."""
    always = {"tunnel", "iperf3", "kernel", "module"}
    return {k["name"]: not (k.get("restart", False) or k["kind"] in always)
            for k in doc.get("knobs", [])}


def _acts_live(path: Path) -> dict[str, bool]:
    from abtui.profile import load_profile

    return {k.name: not k.restarts for k in load_profile(path).knobs}


def test_the_vm_golden_ran_enable_aim_on_e1000e_with_real_interrupt_rates() -> None:
    """ix-enable-aim on two real kernel builds: the first table's groups name two different
    releases, enable_aim was e1000e's interrupt throttling (no stand-in), and the watch table
    has interrupt rates per data0 vector of each FreeBSD-side pair and value."""
    session = Session.load(GOLDEN / "ix-enable-aim-vm.abtui.jsonl.gz")
    md = render(session, "md")
    table = md.split("## Throughput per kernel and enable_aim", 1)[1].split("## ", 1)[0]
    releases = set(re.findall(r"\| (?:stock|patched) \((6\.1\.0-\d+-amd64)\) \|", table))
    assert len(releases) == 2, table
    knob = next(t for t in session.translations if t["subject"] == "knob enable_aim")
    assert knob["lab"].startswith("ethtool -C data0 rx-usecs on stock, patched: 0 = 0 (off)")
    watches = md.split("## Watches per pair and enable_aim", 1)[1].split("## ", 1)[0]
    for pair in ("stock", "patched"):
        for value in ("0", "1", "2"):
            assert f"| {pair} | {value} | interrupt_rate | data0-rx-0 |" in watches, watches


@pytest.mark.parametrize("name", list(VM_RELEASES))
def test_vm_goldens_ran_on_real_builds(name: str) -> None:
    """Each pair's hosts booted the build its [lab] names, and the first table says which."""
    session = Session.load(GOLDEN / f"{name}.abtui.jsonl.gz")
    for pair, release in VM_RELEASES[name].items():
        for role in ("sender", "receiver"):
            host = session.hosts_of(pair)[role]
            assert session.facts[host]["kernel_release"] == release, (pair, host)
    first = render(session, "md").split("\n## ", 2)[1]
    for pair, release in VM_RELEASES[name].items():
        assert f"{pair} ({release})" in first, (pair, first)


def test_a_shared_machine_s_cpu_is_not_printed_as_a_pair_s() -> None:
    """linux-ref ran on namespace hosts (this machine's CPUs): the first table's CPU cells
    read `shared` (not the whole machine's 200 %), with the caveat right under the table."""
    md = render(Session.load(GOLDEN / "ix-enable-aim-vm.abtui.jsonl.gz"), "md")
    first = md.split("## Throughput per kernel and enable_aim", 1)[1].split("## ", 1)[0]
    row = next(ln for ln in first.splitlines() if ln.startswith("| linux-ref"))
    assert row.split(" | ")[3:5] == ["shared", "shared"], row
    after = first.split(row, 1)[1].lstrip("\n")
    assert after.startswith("⚠ `shared`: the host CPU of nclab-c-rcv, nclab-c-snd"), after


@pytest.mark.parametrize("name", GOLDENS)
def test_every_generic_row_names_its_configuration(name: str) -> None:
    """A pair none of the profile's knobs applies to (linux-ref on ix-enable-aim) ran under a
    configuration of no knob: its rows read `(defaults)`, never an empty first cell."""
    md = render(Session.load(GOLDEN / f"{name}.abtui.jsonl.gz"), "md")
    for section in ("## Throughput per configuration", "## CPU cost per configuration"):
        body = md.split(section, 1)[1].split("\n## ", 1)[0] if section in md else ""
        assert not [ln for ln in body.splitlines() if ln.startswith("|  |")], (name, section)


@pytest.mark.parametrize("name", list(SAME_HOSTS))
def test_same_hosts_goldens_alternated_real_builds_on_one_pair(name: str) -> None:
    """A same-hosts procedure as its authors ran it: its builds alternated across boots of one
    VM pair. Every measured phase ran under the build its label names (the last verified
    switch of each switching host before the phase reported that build's release), each build
    has at least two measured phases, and the report leads with the alternation's verdict
    naming the builds, the design and each build's boots."""
    import json

    from abtui.core import events
    from abtui.sessions.reader import iter_events

    knob, releases = SAME_HOSTS[name]
    path = GOLDEN / f"{name}.abtui.jsonl.gz"
    session = Session.load(path)
    ups = [(e.t, e.host, e.payload.build) for e in iter_events(path)
           if isinstance(e.payload, events.BuildSwitch) and e.payload.stage == "up"]
    assert ups and {b for *_, b in ups} == set(releases.values()), ups
    switching = {h for _, h, _ in ups}
    doc = json.loads(render(session, "json"))
    measured: dict[str, int] = {}
    for phase in doc["phases"]:
        if not phase["intervals"]:
            continue
        value = phase["config"][knob]
        measured[value] = measured.get(value, 0) + 1
        for host in switching:
            before = [b for t, h, b in ups if h == host and t <= phase["start"]]
            if before:  # a host's first phase ran on the build it was booted with
                assert before[-1] == releases[value], (phase["config"], host, before)
    assert set(measured) == set(releases) and min(measured.values()) >= 2, measured
    rows = doc["alternation"]
    assert len(rows) == len(releases) - 1, rows  # each build against the first
    for row in rows:
        assert row["design"] == "blocks" and row["boots"] >= 2 and row["base_boots"] >= 2, row
    md = render(session, "md")
    first = md.split("\n## ", 2)[1]
    assert first.startswith("Alternation verdict"), first[:200]
    assert all(f"{knob}={value} vs" in first for value in list(releases)[1:]), first


@pytest.mark.parametrize("name", list(ARM_SEED))
def test_the_arm_seed_goldens_alternated_the_seeds_own_builds(name: str) -> None:
    """The lab's profile an ARM lab writes is the shipped softirq-crypto-arm procedure (its
    test options, plan and knobs; its hosts and builds the lab's): the kernel knob's two
    builds share a release and are told apart by `uname -v`; every measured phase ran IPsec
    in the direction the golden is named for, each build at least twice; the report leads
    with the alternation's verdict and names the instruction-counted clock."""
    import json

    session = Session.load(GOLDEN / f"{name}.abtui.jsonl.gz")
    recorded = tomllib.loads(session.profile_text)
    shipped = tomllib.loads((GOLDEN.parents[1] / "profiles" / "softirq-crypto-arm.toml")
                            .read_text())
    for part in ("test", "plan"):
        assert recorded[part] == shipped[part], part

    def knobs(doc: dict[str, Any]) -> list[tuple[str, str, list[str]]]:
        return [(k["name"], k["kind"], k["values"]) for k in doc["knobs"]]

    assert knobs(recorded) == knobs(shipped)
    kernel = next(k for k in recorded["knobs"] if k["name"] == "kernel")
    builds = [kernel["builds"][v] for v in kernel["values"]]
    assert {b["release"] for b in builds} == {"6.1.192"} and len({b["version"] for b in
                                                                  builds}) == 2, builds
    assert kernel["build"]["method"] == "command" and "boot" in kernel["build"]["command"]
    doc = json.loads(render(session, "json"))
    measured: dict[str, int] = {}
    for phase in doc["phases"]:
        if phase["intervals"]:
            assert phase["config"]["tunnel"] == "ipsec", phase["config"]
            assert phase["config"]["reverse"] == ARM_SEED[name], phase["config"]
            measured[phase["config"]["kernel"]] = measured.get(phase["config"]["kernel"], 0) + 1
    assert set(measured) == {"before", "after"} and min(measured.values()) >= 2, measured
    (row,) = doc["alternation"]
    assert (row["knob"], row["value"], row["base"]) == ("kernel", "after", "before"), row
    assert row["verdict"] in ("significant", "no difference", "undecided"), row
    md = render(session, "md")
    assert md.split("\n## ", 2)[1].startswith("Alternation verdict")
    assert "Clock: guest instructions, shift 6." in md


@pytest.mark.parametrize("name", list(WG_SEED))
def test_the_wireguard_seed_golden_alternated_the_lab_built_modules(name: str) -> None:
    """The plain-call and GRO-call builds, made by the lab ([lab] modules) and loaded by insmod
    on both hosts of one VM pair: the translation names each build's srcversion and patch,
    every switch was an insmod of one of the two values, every measured phase ran through
    WireGuard with each value at least twice, and the report leads with the alternation's
    verdict (or its stated undecided) on the instruction-counted clock."""
    import json

    from abtui.core import events
    from abtui.sessions.reader import iter_events

    path = GOLDEN / f"{name}.abtui.jsonl.gz"
    session = Session.load(path)
    knob = next(t for t in session.translations if t["subject"] == "knob wg")
    for value, srcversion in WG_SEED[name].items():
        assert f"{value} = wireguard.ko srcversion {srcversion}" in knob["lab"], knob
    assert "linux-headers-6.1.0-57-amd64" in knob["why"], knob
    ups = [e.payload for e in iter_events(path)
           if isinstance(e.payload, events.BuildSwitch) and e.payload.stage == "up"]
    assert ups and {(u.method, u.value) for u in ups} == {("insmod", "plain"),
                                                          ("insmod", "gro")}, ups
    doc = json.loads(render(session, "json"))
    measured: dict[str, int] = {}
    for phase in doc["phases"]:
        if phase["intervals"]:
            assert phase["config"]["tunnel"] == "wireguard", phase["config"]
            measured[phase["config"]["wg"]] = measured.get(phase["config"]["wg"], 0) + 1
    assert set(measured) == {"plain", "gro"} and min(measured.values()) >= 2, measured
    (row,) = doc["alternation"]
    assert (row["value"], row["base"], row["design"]) == ("gro", "plain", "blocks"), row
    assert row["verdict"] in ("significant", "no difference", "undecided"), row
    md = render(session, "md")
    first = md.split("\n## ", 2)[1]
    assert first.startswith("Alternation verdict") and "wg=gro vs plain" in first, first[:300]
    assert "guest instructions, shift 6" in md
