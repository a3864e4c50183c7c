"""The console walk's own parts (tests/lab/console_walk.py, tests/lab/hostview.py), without a
lab: walks drawn from a seed, host readings parsed, tables compared, straddlers found. A
checker that accepted everything would make the walk on the lab prove nothing."""

from __future__ import annotations

from abtui.core.events import Event, IntervalMeasured, KnobChanged, RunStart
from abtui.core.model import Knob, KnobKind, Pair, Profile, Scope
from tests.lab.console_walk import (
    ACTIONS,
    BIG,
    SMALL,
    Cell,
    Failures,
    check_restarts,
    check_straddles,
    console_table,
    export_table,
    plan_walk,
    table_differences,
)
from tests.lab.hostview import MARK, Reading, host_settings, parse_read, read_command

PROFILE = Profile(
    name="walk", pairs=[Pair("A", "a-snd", "a-rcv", "198.18.1.2", "data0", "data0"),
                        Pair("B", "b-snd", "b-rcv", "198.18.2.2", "data0", "data0")],
    knobs=[Knob("tcp_rmem", KnobKind.SYSCTL, ("4096 131072 6291456", "4096 8192 16384"),
                key="net.ipv4.tcp_rmem", scope=Scope.RECEIVER, binding="r"),
           Knob("tso", KnobKind.ETHTOOL_FEATURE, ("on", "off"), key="tso",
                scope=Scope.SENDER, binding="t"),
           Knob("tunnel", KnobKind.TUNNEL, ("none", "wireguard", "vxlan"), binding="u")])
KEYS = {"r": "tcp_rmem", "t": "tso", "u": "tunnel"}


def test_a_seed_gives_one_walk_and_every_action_comes_up() -> None:
    walk = plan_walk(7, 3000, KEYS, PROFILE)
    assert [str(s) for s in walk] == [str(s) for s in plan_walk(7, 3000, KEYS, PROFILE)]
    assert [str(s) for s in walk[:30]] != [str(s) for s in plan_walk(8, 30, KEYS, PROFILE)]
    assert {s.action for s in walk} == {a for a, _ in ACTIONS}
    assert {s.arg for s in walk if s.action == "knob"} == {"r", "t"}  # u is the tunnel key
    sizes = [s.arg for s in walk if s.action == "resize"]
    assert sizes[:4] == [SMALL, BIG, SMALL, BIG]
    assert "plan" not in {s.action for s in plan_walk(7, 3000, KEYS, PROFILE, ["plan"])}


def test_a_hosts_answer_is_read_knob_by_knob_with_its_tunnels() -> None:
    settings = host_settings(PROFILE)
    assert [s.knob for s in settings["a-rcv"]] == ["tcp_rmem"]
    assert [s.knob for s in settings["a-snd"]] == ["tso"]
    assert "ethtool -k data0" in read_command(settings["a-snd"])
    out = (f"{MARK}tcp_rmem\n4096\t131072\t33554432\n{MARK}#links\n1: lo: <LOOPBACK>\n"
           "3: data0@if2: <UP>\n9: abv1rab12: <UP>\n")
    rcv = parse_read(out)
    assert rcv.values == {"tcp_rmem": "4096 131072 33554432"}
    assert rcv.tunnel == "vxlan" and rcv.tunnel_ifs == ["abv1rab12"]
    snd = parse_read(f"{MARK}tso\noff [fixed]\n{MARK}#links\n3: data0@if2: <UP>\n")
    assert snd.values == {"tso": "off"} and snd.tunnel == "none"
    reading = Reading(0.0, {"a-snd": snd, "a-rcv": rcv, "b-snd": snd, "b-rcv": rcv})
    assert reading.pair_values(PROFILE)["A"] == {
        "tcp_rmem": "4096 131072 33554432", "tso": "off", "tunnel": "none/vxlan"}


def test_tables_differ_by_label_count_or_pooling() -> None:
    console = console_table([("initial", ["9.50 n2", "9.00 n2 -5.3%"]),
                             ("tso=off", ["5.00 n1", "—"])], ["A", "B"],
                            [{"A": 10, "B": 10}, {"A": 4}])
    assert console["initial"]["B"] == Cell(9.0, 2, 10) and console["tso=off"]["B"] is None
    configurations = [
        {"config": "tso=on", "pair": "A", "throughput": {"n": 2, "mean": 9.501e9},
         "intervals": {"n": 10}},
        {"config": "tso=on", "pair": "B", "throughput": {"n": 2, "mean": 9.0e9},
         "intervals": {"n": 10}},
        {"config": "tso=off", "pair": "A", "throughput": {"n": 1, "mean": 5.0e9},
         "intervals": {"n": 4}}]
    labels = {"tso=on": "initial", "tso=off": "tso=off"}
    assert table_differences(console, export_table(configurations, labels), ["A", "B"]) == {}
    assert set(table_differences(console, export_table(configurations, {}), ["A", "B"])) \
        == {"labels"}
    split = [*configurations[1:],
             {"config": "tso=on", "pair": "A", "throughput": {"n": 1, "mean": 9.5e9},
              "intervals": {"n": 6}},
             {"config": "cc=bbr", "pair": "A", "throughput": {"n": 1, "mean": 9.5e9},
              "intervals": {"n": 4}}]
    assert set(table_differences(console, export_table(split, labels), ["A", "B"])) == {
        "labels", "numbers", "pooling"}


def interval(t: float, straddles: bool, pair: str = "A") -> Event:
    return Event.of(IntervalMeasured.from_data({
        "run": "A-1", "start": t - 100.0, "end": t - 99.0, "bits_per_second": 1e9,
        "straddles": straddles}), t=t, pair=pair)


def test_an_interval_across_a_knob_change_must_be_marked_straddling() -> None:
    knob = Event.of(KnobChanged.from_data({"knob": "tso", "value": "off", "pairs": ["A"]}), t=10.5)
    failures = Failures()
    check_straddles([interval(10.0, False), knob, interval(11.0, True), interval(12.0, False)],
                    failures, 0)
    assert not failures
    check_straddles([knob, interval(11.0, False, "B"), interval(11.0, False)], failures, 3)
    assert list(failures.first) == ["straddlers-marked"] and failures.steps[
        "straddlers-marked"] == [3]
    report = failures.report(42, 5, plan_walk(42, 5, KEYS, PROFILE), "tests/x.py")
    assert report.startswith("console walk: seed 42, 5 steps; replay with "
                             "ABTUI_WALK_SEED=42 ABTUI_WALK_STEPS=5")


def test_what_a_run_measures_after_a_restarting_knob_changed_counts_nowhere() -> None:
    profile = Profile(name="walk", pairs=PROFILE.pairs, knobs=[
        Knob("cc", KnobKind.SYSCTL, ("reno", "bbr"), key="net.ipv4.tcp_congestion_control",
             scope=Scope.SENDER, restart=True), PROFILE.knobs[1]])

    def iv(t: float, run: str, straddles: bool = False) -> Event:
        return Event.of(IntervalMeasured.from_data({
            "run": run, "phase": 1, "start": 3.0, "end": 3.1, "bits_per_second": 1e9,
            "straddles": straddles}), t=t, pair="A")

    start = [Event.of(RunStart.from_data({"run": "A-1"}), t=0.0, pair="A")]
    tso = Event.of(KnobChanged.from_data({"knob": "tso", "value": "off", "pairs": ["A"]}), t=5.0)
    cc = Event.of(KnobChanged.from_data({"knob": "cc", "value": "bbr", "pairs": ["A"]}), t=5.0)
    new_run = Event.of(RunStart.from_data({"run": "A-2"}), t=5.5, pair="A")
    failures = Failures()
    check_restarts([*start, tso, iv(5.2, "A-1")], profile, failures, 0)  # tso: live
    check_restarts([*start, cc, iv(5.2, "A-1", True), new_run, iv(6.5, "A-2")], profile,
                   failures, 0)
    assert not failures
    check_restarts([*start, cc, iv(5.2, "A-1")], profile, failures, 4)
    assert failures.steps == {"old-run-not-in-new-phase": [4]}
