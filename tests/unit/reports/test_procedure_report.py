"""The procedure report layouts on synthetic sessions, and the lab mapping's translations
(pure: fake lab hosts and facts; the lab tests run the real thing)."""

from __future__ import annotations

import dataclasses
from pathlib import Path

import pytest

from abtui.core.errors import BadInput
from abtui.core.events import (
    Config,
    Event,
    Facts,
    IntervalMeasured,
    Ping,
    RunEnd,
    RunStart,
    SessionStart,
    WatchSampled,
)
from abtui.core.model import KnobKind, Scope
from abtui.lab.mapping import STANDIN_KEY, LabFacts, map_profile, quick
from abtui.lab.netns import Lab
from abtui.lab.prepare import ensure_lab
from abtui.profile import load_profile
from abtui.reports.exports import to_json
from abtui.reports.procedure.sections import sections
from abtui.reports.report import markdown
from abtui.sessions.session import Session

PROFILES = Path(__file__).resolve().parents[3] / "profiles"
T0 = 1_780_000_000.0


def _session(profile: str, runs: list[tuple[str, dict[str, str], float]],
             watches: bool = False, translations: list[dict[str, str]] | None = None,
             before: list[Event] = (), summary: dict[str, float] | None = None) -> Session:
    """One run per (pair, config, receiver bits/s), with 3 pings and a watch sample each;
    `before`: events recorded ahead of the runs (facts, CONFIG)."""
    text = (PROFILES / f"{profile}.toml").read_text()
    events = [Event.of(SessionStart.from_data({
        "profile_text": text, "translations": translations or []}), T0), *before]
    t = T0
    for i, (pair, config, bps) in enumerate(runs, 1):
        events.append(Event.of(RunStart.from_data({"run": i, "config": config}), t, pair=pair))
        for seq in range(3):
            events.append(Event.of(Ping(run=i, phase=i, seq=seq, rtt_ms=0.1 * (seq + 1)), t + 0.1,
                                   pair=pair))
        if watches:
            events.append(Event.of(WatchSampled(
                run=i, name="interrupt_rate:dev.ix.2.queue0.interrupt_rate", value=bps / 1e6),
                t + 0.5, pair=pair, host="h"))
        events.append(Event.of(IntervalMeasured.from_data({
            "run": i, "phase": i, "start": 0, "end": 1, "bytes": 1, "bits_per_second": bps}),
            t + 1, pair=pair))
        events.append(Event.of(RunEnd.from_data({
            "run": i, "status": "ok", "summary": {"receiver_bits_per_second": bps,
                                                  **(summary or {})}}), t + 1, pair=pair))
        t += 2
    return Session.from_events(events)


def _rows(lines: list[str], heading: str) -> list[list[str]]:
    md = "\n".join(lines)
    part = md.split(f"## {heading}\n", 1)[1].split("\n## ", 1)[0]
    return [[c.strip() for c in line.strip("|").split("|")]
            for line in part.splitlines() if line.startswith("|") and "---" not in line]


def _releases(hosts: dict[str, str]) -> list[Event]:
    """Facts events: each host's kernel release."""
    return [Event.of(Facts(facts={"os": "Linux",
                                                              "kernel_release": r}), T0, host=h)
            for h, r in hosts.items()]


FEW = "? (n=1+1: too few runs)"  # one run each: no interval, no verdict possible


def test_sweep_grouped_by_kernel_in_the_profile_s_order():
    # run order 1, 0 (shuffled): the table still reads 0, 1
    runs = [(p, {"enable_aim": v}, rate) for v, base in (("1", 8e9), ("0", 9e9))
            for p, rate in (("stock", base), ("patched", base * 1.062))]
    session = _session("ix-enable-aim", runs, watches=True)
    lines = sections(session, None)
    rows = _rows(lines, "Throughput per kernel and enable_aim")
    assert rows[0] == ["kernel", "enable_aim", "Gbit/s", "Δ vs stock at the same enable_aim"]
    assert rows[1:] == [["stock", "0", "9.00", "base0"],
                        ["", "1", "8.00", "base1"],
                        ["patched", "0", "9.56", f"+6.2% {FEW}"],
                        ["", "1", "8.50", f"+6.2% {FEW}"],
                        # the reference never ran: its rows, empty, never compared
                        ["linux-ref", "0", "—", "-"],
                        ["", "1", "—", "-"]]
    assert "- A Δ without [low, high]: fewer than 2 runs" in markdown(session, chart=False)
    lat = _rows(lines, "Latency per kernel and enable_aim (ping RTT)")
    assert lat[0] == ["kernel", "enable_aim", "min/avg/max ms", "stddev", "Δ avg"]
    assert lat[1] == ["stock", "0", "0.100/0.200/0.300", "0.100", "base0"]
    assert lat[3] == ["patched", "0", "0.100/0.200/0.300", "0.100", f"+0.0% {FEW}"]
    queues = _rows(lines, "Watches per pair and enable_aim")
    assert queues[1] == ["stock", "0", "interrupt_rate", "dev.ix.2.queue0.interrupt_rate",
                         "9000", "9000", "9000", "1"]
    assert [r[1] for r in queues[1:]] == ["0", "1", "0", "1"]


def test_sweep_marks_the_default_and_shows_the_reference_once():
    """The hosts' own value is `(default)`; the Linux reference, whose values 1 and 2 are the
    same setting there (adaptive-rx on), is one row at its own setting, pooled, with `-`."""
    before = [Event.of(Facts(facts={
                  "os": os_name, "kernel_release": release}), T0, host=h)
              for h, os_name, release in (("stock-snd", "FreeBSD", "14.1-RELEASE"),
                                          ("patched-snd", "FreeBSD", "15.0-CURRENT"),
                                          ("linux-snd", "Linux", "6.1.0"))]
    before.append(Event.of(SessionStart.from_data({
        "profile_text": (PROFILES / "ix-enable-aim.toml").read_text(),
        "pairs": [{"label": p, "sender": f"{h}-snd"} for p, h in
                  (("stock", "stock"), ("patched", "patched"), ("linux-ref", "linux"))]}), T0))
    before += [Event.of(Config(config={"enable_aim": v}), T0, pair=p)
               for p, v in (("stock", "1"), ("patched", "1"), ("linux-ref", "on"))]
    runs = [(p, {"enable_aim": v}, rate * (1.0 + 0.1 * int(v)))
            for v in "210" for p, rate in (("stock", 9e9), ("patched", 9.6e9),
                                            ("linux-ref", 8e9))]
    rows = _rows(sections(_session("ix-enable-aim", runs, before=before), None),
                 "Throughput per kernel and enable_aim")
    assert rows[1:4] == [["stock (14.1-RELEASE)", "0", "9.00", "base0"],
                         ["", "1 (default)", "9.90", "base1"],
                         ["", "2", "10.8", "base2"]]
    assert rows[4][:3] == ["patched (15.0-CURRENT)", "0", "9.60"]
    assert rows[4][3].startswith("+6.7% ")
    assert rows[7:] == [["linux-ref (6.1.0)", "default", "9.20", "-"]]  # (8.8 + 9.6) / 2


def test_before_after_speedup_per_tunnel_and_direction():
    runs = [(p, {"tunnel": t, "direction": d}, rate)
            for t in ("wireguard", "vxlan") for d in ("rx", "tx")
            for p, rate in (("BEFORE", 0.21e9 if t == "wireguard" else 1e9),
                            ("AFTER", (1.44 if d == "tx" else 1.0)
                             * (0.21e9 if t == "wireguard" else 1e9)))]
    translation = {"subject": "knob tunnel", "original": "ipsec", "lab": "vxlan", "why": "x"}
    session = _session("softirq-crypto", runs, translations=[translation],
                       before=_releases({"vm-before": "6.1.0-47-amd64"}))
    assert to_json(session)["translations"] == [translation]
    lines = sections(session, None)
    rows = _rows(lines, "Throughput per tunnel and direction")
    # in MB/s, as the crypto posts quote them, each pair with its kernel release where its
    # hosts' facts gave one; the profile's order (ipsec first)
    assert rows[0] == ["tunnel", "direction", "BEFORE (6.1.0-47-amd64) (MB/s)", "AFTER (MB/s)",
                       "speedup AFTER vs BEFORE"]
    assert rows[1:] == [["ipsec (lab: vxlan)", "TX", "125", "180", f"+44.0% {FEW}"],
                        ["ipsec (lab: vxlan)", "RX (-R)", "125", "125", f"+0.0% {FEW}"],
                        ["wireguard", "TX", "26.2", "37.8", f"+44.0% {FEW}"],
                        ["wireguard", "RX (-R)", "26.2", "26.2", f"+0.0% {FEW}"]]
    assert _rows(lines, "Lab translations")[1] == ["knob tunnel", "ipsec", "vxlan", "x"]
    # asked for bits: 0.21 Gbit/s would read 0.21, Mbit/s keep three digits
    bits = _rows(sections(session, None, units="bits"), "Throughput per tunnel and direction")
    assert bits[0][2] == "BEFORE (6.1.0-47-amd64) (Mbit/s)" and bits[3][2:4] == ["210", "302"]
    md = markdown(session, chart=False)
    assert "| ipsec (lab: vxlan) | TX | 125 | 180 |" in md and "AFTER (MB/s)" in md
    # the generic tables stay in iperf3's bits unless asked
    assert "| AFTER | 8 | direction=tx, tunnel=ipsec (lab: vxlan) | 1440 |" in md
    assert "Every run: status ok, duration 0:00:01." in md  # said once, not a column
    # the generic tables name the profile's tunnel, and never compare tunnels or directions
    assert "| direction=tx, tunnel=ipsec (lab: vxlan) |" in markdown(session, chart=False)
    assert "## Δ vs configuration" not in md


def test_builds_delta_vs_the_first_with_repetitions():
    runs = [("gro-v2", {}, 1.2e9), ("baseline", {}, 1.0e9), ("gro-v1", {}, 0.9e9),
            ("baseline", {}, 1.0e9), ("gro-v2", {}, 1.2e9), ("gro-v1", {}, 0.9e9)]
    session = _session("wireguard-gro", runs, summary={
        "sender_bits_per_second": 1.01e9, "retransmits": 162}, before=_releases({
            "wg-base-snd": "6.1.0-47-amd64", "wg-v1-snd": "6.1.0-52-amd64"}))
    rows = _rows(sections(session, None), "Throughput per build")
    assert rows[0] == ["build", "Mbit/s", "[SUM] sender (Mbit/s)", "retransmits",
                       "[SUM] receiver (Mbit/s)", "Δ vs baseline"]
    # runs that never vary at the printed digit: the interval is as wide as that digit
    # allows (never of zero width, never p<0.001 from resolution alone)
    # each build with its kernel release where its hosts' facts gave one
    assert rows[1:] == [["baseline (6.1.0-47-amd64)", "1000", "1010", "162", "1000", "-"],
                        ["gro-v1 (6.1.0-52-amd64)", "900", "1010", "162", "900",
                         "-10.0% [-15.3, -4.4] (p=0.028 n=2+2)"],
                        ["gro-v2", "1200", "1010", "162", "1200",
                         "+20.0% [+16.6, +23.5] (p=0.002 n=2+2)"]]


def test_no_layout_no_sections():
    s = Session.from_events([Event.of(SessionStart.from_data({
        "profile_text": "[profile]\nname = 'x'\n"}), T0)])
    assert sections(s, None) == []


def test_lab_mapping_translates_what_the_lab_lacks(tmp_path):
    hosts = Lab(name="unit", octet=19, ifprefix="abu", state_dir=tmp_path).hosts(3)
    facts = LabFacts(frozenset({"net.ipv4.tcp_rmem"}), ("none", "vxlan"), "6.1.0")
    ix = map_profile(load_profile(PROFILES / "ix-enable-aim.toml"), hosts, ssh_config="c",
                     known_hosts="k", facts=facts)
    aim = ix.profile.knob("enable_aim")
    assert (aim.kind, aim.key, aim.scope, aim.restarts) == (KnobKind.SYSCTL, STANDIN_KEY,
                                                            Scope.RECEIVER, True)
    assert load_profile(PROFILES / "ix-enable-aim.toml").knob("enable_aim").live  # on ix
    assert aim.values == ("0", "1", "2") and aim.value_for_os("linux", "0").endswith("65536")
    # the last value is the lab hosts' own receive buffer: the report marks it (default)
    own = dataclasses.replace(facts, rmem="4096 131072 33554432")
    mapped = map_profile(load_profile(PROFILES / "ix-enable-aim.toml"), hosts, ssh_config="c",
                         known_hosts="k", facts=own).profile.knob("enable_aim")
    assert mapped.value_for_os("linux", "2") == "4096 131072 33554432"
    assert mapped.value_for_os("linux", "1") == aim.value_for_os("linux", "1")
    assert [p.sender for p in ix.profile.pairs] == ["unit-a-snd", "unit-b-snd", "unit-c-snd"]
    assert all(w.command and w.name.endswith(":data0.rx_pps") for w in ix.profile.watches)
    lines = [t.line() for t in ix.translations]
    assert sum(line.startswith("lab: watch ") for line in lines) == 2
    crypto = map_profile(load_profile(PROFILES / "softirq-crypto.toml"), hosts,
                         ssh_config="c", known_hosts="k", facts=facts)
    assert crypto.profile.knob("tunnel").values == ("vxlan",)  # no wireguard-go: vxlan too
    assert "lab: knob tunnel: ipsec → vxlan (this kernel has no ESP/xfrm crypto)" in [
        t.line() for t in crypto.translations]
    assert crypto.start_data()["pairs"][0]["sender"] == "unit-a-snd"
    short, note = quick(load_profile(PROFILES / "softirq-crypto.toml"))
    assert (short.test.duration, short.test.interval, short.test.omit) == (2.0, 0.5, 0)
    assert short.plan.repetitions == 1 and note is not None and "-O 2" in note.original


def test_lab_mapping_refuses_more_pairs_than_the_lab_has(tmp_path):
    lab = Lab(name="unit", octet=19, ifprefix="abu", state_dir=tmp_path)
    with pytest.raises(BadInput, match="has 3 pairs; the lab has 2"):
        map_profile(load_profile(PROFILES / "wireguard-gro.toml"), lab.hosts(2),
                    ssh_config="c", known_hosts="k", facts=LabFacts())
    with pytest.raises(BadInput, match="the lab has at most 8"):
        ensure_lab(lab, 9, print)  # refused before the lab is touched


def test_lab_mapping_runs_the_lab_s_own_iperf3(tmp_path):
    import dataclasses

    hosts = Lab(name="unit", octet=19, ifprefix="abu", state_dir=tmp_path).hosts(3)
    profile = load_profile(PROFILES / "wireguard-gro.toml")
    profile.test.iperf3 = "/usr/local/bin/iperf3"
    profile.pairs[2] = dataclasses.replace(
        profile.pairs[2], overrides={**profile.pairs[2].overrides, "iperf3": "/opt/x/iperf3"})
    mapped = map_profile(profile, hosts, ssh_config="c", known_hosts="k", facts=LabFacts())
    assert mapped.profile.test.iperf3 == "iperf3"
    assert all("iperf3" not in p.overrides for p in mapped.profile.pairs)
    assert ("lab: iperf3 program: /opt/x/iperf3, /usr/local/bin/iperf3 → iperf3 (a build on "
            "the profile's hosts: the lab runs this machine's)") in [
        t.line() for t in mapped.translations]
