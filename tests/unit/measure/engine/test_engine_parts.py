"""The engine's pure parts: commands, plan expansion, phases, error wording, the run command."""

from __future__ import annotations

import shlex
import socket
from types import SimpleNamespace

import pytest

from abtui.cli import main
from abtui.core.errors import BadInput
from abtui.core.events import Event, EventKind, IntervalMeasured, Ping, Progress, RunEnd
from abtui.core.model import Knob, KnobKind, Pair, Plan, Profile
from abtui.core.model import TestOptions as Options
from abtui.measure.headless import Measured, describe
from abtui.measure.phases import PairPhases
from abtui.measure.plan import expand
from abtui.measure.run.context import RunSpec
from abtui.measure.run.pair import classify_iperf_error
from abtui.remote.iperf_cmd import (
    ARMED_MARK,
    CONTINUOUS_CHUNK_S,
    armed,
    client_argv,
    options_for,
    parse_clock,
    parse_iperf_version,
    run_seconds,
    sample_command,
)
from tests import profiles

PAIR = profiles.pair(1)


def profile(**plan: object) -> Profile:
    return profiles.profile(
        profiles.sysctl("aim", "dev.ix.2.enable_aim", ("0", "1", "2")),
        Knob(name="gro", kind=KnobKind.ETHTOOL_FEATURE, key="gro", values=("on", "off")),
        pairs=[PAIR], plan=Plan(**plan))  # type: ignore[arg-type]


def test_client_command_carries_every_option_and_quotes_hostile_values():
    opts = Options(duration=5, interval=0.1, parallel=2, reverse=True, udp=True,
                   bitrate="100M", omit=1, congestion="bbr", bind="198.18.1.1",
                   extra_args=("--tos", "0x10"))
    argv = client_argv(opts, "198.18.1.2; rm -rf /", 5202, 5)
    assert argv[:9] == ["iperf3", "-c", "198.18.1.2; rm -rf /", "-p", "5202", "-t", "5", "-i",
                        "0.1"]
    for flags in (["--forceflush"], ["-P", "2"], ["-R"], ["-u", "-b", "100M"], ["-O", "1"],
                  ["-C", "bbr"], ["-B", "198.18.1.1"], ["--tos", "0x10"]):
        assert any(argv[i:i + len(flags)] == flags for i in range(len(argv))), flags
    cmd = armed(argv)
    # the hostile target is one quoted word: the shell sees exactly our argv
    assert shlex.split(cmd.split(" exec ", 1)[1]) == argv
    assert cmd.startswith(f"echo {ARMED_MARK} && read ")
    assert "--json-stream" in client_argv(Options(), "t", 1, 1, json_stream=True)
    bash = armed(["iperf3", "-c", "x'y"], bash=True)
    inner = shlex.split(bash)[-1]
    assert shlex.split(bash)[:5] == ["exec", "bash", "--norc", "--noprofile", "-c"]
    assert "EPOCHREALTIME" in inner and inner.endswith("exec iperf3 -c 'x'\"'\"'y'")


def test_what_a_host_has_is_asked_in_one_command_and_read_back():
    """The engine's question to each host (built in abtui.remote.iperf_cmd), run by this
    machine's sh as a host's would: its iperf3, bash and stdbuf, or a missing program."""
    import shutil
    import subprocess

    from abtui.remote.iperf_cmd import parse_tools, tools_command

    def ask(program: str) -> str:
        return subprocess.run(["sh", "-c", tools_command(program)], capture_output=True,
                              text=True, check=True).stdout

    missing = parse_tools(ask("/nonexistent/iperf3 'x"))
    assert missing.iperf_version is None
    assert (missing.bash, missing.stdbuf) == (bool(shutil.which("bash")),
                                              bool(shutil.which("stdbuf")))
    if shutil.which("iperf3") is None:
        pytest.skip("iperf3 is not installed on this machine")
    found = parse_tools(ask("iperf3"))
    assert found.iperf_version is not None and found.iperf_version >= (3, 0)


def test_a_bash_without_its_clock_is_no_bash_to_the_engine(tmp_path):
    """A bash before 5 has no $EPOCHREALTIME: a gathered ping would never date (nor send)
    its lines, so such a host is taken as one without bash (each reply sent as it comes)."""
    import os
    import shutil
    import subprocess

    from abtui.remote.iperf_cmd import parse_tools, tools_command

    sh = shutil.which("sh")
    assert sh is not None
    old_bash = tmp_path / "bash"  # answers as sh: no EPOCHREALTIME
    old_bash.write_text(f"#!{sh}\nexec {sh} \"$@\"\n")
    old_bash.chmod(0o755)
    env = {**os.environ, "PATH": f"{tmp_path}:{os.environ.get('PATH', '')}"}
    out = subprocess.run([sh, "-c", tools_command("iperf3")], capture_output=True, text=True,
                         check=True, env=env).stdout
    assert parse_tools(out).bash is False


def test_durations_versions_clocks_and_watch_commands():
    assert run_seconds(Options(duration=0)) == CONTINUOUS_CHUNK_S
    assert run_seconds(Options(duration=1.2)) == 2
    assert parse_iperf_version("iperf 3.17.1 (cJSON 1.7.15)") == (3, 17)
    assert parse_iperf_version("sh: iperf3: not found") is None
    assert parse_clock("1796028898.635498520") == pytest.approx(1796028898.6354985)
    assert parse_clock("1796028898,6354") == pytest.approx(1796028898.6354)
    assert parse_clock("PING x") is None and parse_clock("nan") is None
    assert sample_command("net.core.rmem_max", None) == "sysctl -n net.core.rmem_max"
    assert sample_command(None, "cat /proc/x; id") == "sh -c 'cat /proc/x; id'"


def test_pair_overrides_and_bad_options_are_one_line_errors():
    pair = Pair(label="B", sender="s", receiver="r", target="t", overrides={"parallel": 4})
    assert options_for(Options(), pair).parallel == 4
    assert options_for(Options(), pair, {"parallel": 2}).parallel == 2
    with pytest.raises(BadInput, match="pair B: unknown test option"):
        options_for(Options(), Pair("B", "s", "r", "t", overrides={"paralel": 2}))
    with pytest.raises(BadInput, match=r"pair A: interval 0\.05 s is below 0\.1 s"):
        options_for(Options(interval=0.05), PAIR)
    with pytest.raises(BadInput, match="reverse and bidir"):
        options_for(Options(reverse=True, bidir=True), PAIR)


def test_plan_matrix_repetitions_and_seeded_shuffle():
    steps = expand(profile(matrix=("aim", "gro"), repetitions=2, shuffle=False))
    assert len(steps) == 12
    assert [s.config for s in steps[:3]] == [{"aim": "0", "gro": "on"}] * 2 + [
        {"aim": "0", "gro": "off"}]
    assert [s.repetition for s in steps[:2]] == [1, 2]
    a = expand(profile(matrix=("aim", "gro"), repetitions=2, seed=7))
    b = expand(profile(matrix=("aim", "gro"), repetitions=2, seed=7))
    assert [s.config for s in a] == [s.config for s in b] != [s.config for s in steps]
    assert sorted(map(str, (s.config for s in a))) == sorted(map(str, (s.config for s in steps)))
    configs = {str(s.config) for s in steps}  # shuffled: each repetition is a block of all
    for rep in (1, 2):
        assert {str(s.config) for s in a if s.repetition == rep} == configs
    assert [s.repetition for s in a] == [1] * 6 + [2] * 6
    assert [s.config for s in expand(profile(matrix=("aim",)), seed=3)] == \
        [s.config for s in expand(profile(matrix=("aim",)), seed=3)]
    assert expand(profile())[0].config == {}


def test_plan_directions_and_unknown_names():
    steps = expand(profile(matrix=("gro",), directions=("tx", "rx"), shuffle=False))
    assert [s.config for s in steps] == [
        {"gro": "on", "direction": "tx"}, {"gro": "on", "direction": "rx"},
        {"gro": "off", "direction": "tx"}, {"gro": "off", "direction": "rx"}]
    with pytest.raises(BadInput, match=r"plan\.matrix: 'nope' is neither a knob"):
        expand(profile(matrix=("nope",)))
    with pytest.raises(BadInput, match=r"plan\.repetitions"):
        expand(profile(repetitions=0))


def test_phases_straddling_intervals_count_in_neither():
    ph = PairPhases("A", start=100.0)
    # a change before anything was measured is part of the first phase
    assert ph.commit_change(99.0, 99.1, {"gro": "off"}) is None and ph.close(99.5) is None
    assert (ph.phase, ph.config) == (0, {"gro": "off"})
    ph.config, ph.measured = {}, True
    assert ph.classify(100.5, 0.5) == (0, False)
    ph.begin_change(101.0)
    # arrives while the knob is being applied: it straddles
    assert ph.classify(101.02, 0.5) == (0, True)
    closed = ph.commit_change(101.0, 101.01, {"aim": "1"})
    assert closed is not None and closed.kind is EventKind.PHASE
    assert closed.record() == {"phase": 0, "config": {}, "start": 100.0, "end": 101.0}
    assert ph.phase == 1 and ph.config == {"aim": "1"} and ph.start == 101.01
    # measured before the change but arrived after it: straddles, stamped with the new phase
    assert ph.classify(101.3, 0.5) == (1, True)
    # wholly after the change
    assert ph.classify(101.7, 0.5) == (1, False)
    # one that ended before the change and arrived late-ish is still the old phase
    assert ph.classify(100.99, 0.5) == (0, False)
    ph.begin_change(102.0)
    ph.abort_change()  # refused: nothing changes
    assert ph.classify(102.2, 0.1) == (1, False)
    ph.running(True)
    closed = ph.close(103.0)
    assert closed is not None and closed.record() == {"phase": 1, "config": {"aim": "1"},
                                                  "start": 101.01, "end": 103.0}
    assert (ph.phase, ph.start, ph.measured) == (2, 103.0, False)  # a later start: phase 2


def test_iperf3_errors_become_clear_messages():
    spec = RunSpec(run_id="A-1", pair=PAIR, options=Options(), target="198.18.1.2", seconds=1,
                   port=5201)
    msg, retry = classify_iperf_error("the server is busy running a test. try again later",
                                      spec, "r")
    assert retry and "198.18.1.2 port 5201 is busy" in msg
    msg, retry = classify_iperf_error("unable to connect to server: Connection refused", spec,
                                      "r")
    assert not retry and msg.startswith("connection refused by 198.18.1.2 port 5201")
    msg, _ = classify_iperf_error("unable to connect to server: No route to host", spec, "r")
    assert msg.startswith("cannot reach 198.18.1.2 port 5201")


def test_progress_lines():
    assert describe(Event.of(Progress(done=3, total=12, eta_s=40.2))) \
        == "plan: 3/12 steps done, about 40 s left"
    end = Event.of(RunEnd.from_data({
        "run": "A-1", "status": "ok", "summary": {"receiver_bits_per_second": 9.41e9},
        "message": ""}), pair="A")
    assert describe(end, Measured((("TX", 9.41e9),), 9.41e9)) == "A: run A-1 (TX) ok, 9.41 Gbit/s"
    # 3 significant digits in the unit the figure reads best in (not `20.400`, not `0.021`)
    assert describe(end, Measured((("TX", 20.4e9),), 20.4e9)) == "A: run A-1 (TX) ok, 20.4 Gbit/s"
    assert describe(end, Measured((("TX", 21.4e6),), 21.4e6)) == "A: run A-1 (TX) ok, 21.4 Mbit/s"
    assert describe(end) == "A: run A-1 ok"  # no intervals: no figure
    assert describe(Event.of(IntervalMeasured.from_data({}), pair="A")) is None


def test_run_command_bad_input_exits_2(tmp_path, capsys):
    assert main(["run", str(tmp_path / "missing.toml"), "--headless"]) == 2
    assert "missing.toml: no such profile file" in capsys.readouterr().err
    prof = tmp_path / "p.toml"
    prof.write_text("[profile]\nname = 'x'\n")
    assert main(["run", str(prof)]) == 2
    assert "needs --headless" in capsys.readouterr().err
    assert main(["run", str(prof), "--headless", "--duration", "0"]) == 2
    assert "--duration 0" in capsys.readouterr().err
    assert main(["run", str(prof), "--headless"]) == 2  # a profile with no pairs
    err = capsys.readouterr().err
    assert err.startswith("abtui: ") and "p.toml" in err and len(err.strip().splitlines()) == 1


class FakeKnobs:
    """A knob layer that refuses one value and records what it was asked."""

    def __init__(self) -> None:
        self.asked: list[tuple[str, str, list[str]]] = []
        self.left: list[str] = []  # what `restore` could not set back

    async def apply(self, knob, value, pairs):  # type: ignore[no-untyped-def]
        from abtui.core.errors import KnobRefused

        if value == "bad":
            raise KnobRefused(f"r: knob {knob.name}={value!r} refused: invalid value")
        self.asked.append((knob.name, value, [p.label for p in pairs]))
        return {}

    async def current(self, knob, pairs):  # type: ignore[no-untyped-def]
        return {}

    async def tunnel_intact(self, label: str, host: str) -> bool | None:
        return None

    async def restore(self) -> list[str]:
        return self.left


async def test_shutdown_reports_what_the_applier_could_not_restore_and_keeps_the_journal(
        tmp_path):
    """What `restore` could not set back is one ERROR each, and the undo journal is kept for
    `abtui recover`; all set back, the journal is finished (removed)."""
    from abtui.hosts.undo import UndoJournal
    from abtui.measure.engine.front import Engine

    for left in (["r: could not restore net.core.rmem_max: read-only"], []):
        journal = UndoJournal(tmp_path / f"undo-{len(left)}")
        engine = Engine(profile(), parser_factory=lambda _f: None,  # type: ignore[arg-type]
                        journal=journal)
        knobs = FakeKnobs()
        knobs.left = left
        engine.knobs.use(knobs)
        seen: list[Event] = []
        engine.subscribe(seen.append)
        await engine.shutdown("done")
        errors = [e.payload.message for e in seen if e.kind is EventKind.ERROR]
        assert errors == left
        assert seen[-1].kind is EventKind.SESSION_END
        assert journal.path.exists() == bool(left)


async def test_engine_knob_changes_phases_and_refusals_without_hosts():
    from abtui.core.errors import KnobRefused
    from abtui.measure.engine.front import Engine

    prof = profile()
    prof.pairs.append(profiles.pair(2))
    prof.knobs.append(Knob(name="streams", kind=KnobKind.IPERF3, key="parallel",
                           values=("1", "4")))
    engine = Engine(prof, parser_factory=lambda _f: None, ping_parser_factory=lambda: None,
                    use_journal=False)  # type: ignore[arg-type,return-value]
    engine.knobs.use(FakeKnobs())
    events: list[Event] = []
    engine.subscribe(events.append)
    await engine.set_knob("aim", "0", ["A"])  # before anything ran: the first phase's
    assert [e.kind for e in events] == [EventKind.KNOB]
    assert engine.book.phases["A"].phase == 0
    engine.book.phases["A"].running(True)  # as if a run had started
    events.clear()
    await engine.set_knob("aim", "1", ["A"])
    assert engine.knobs.applier.asked == [("aim", "0", ["A"]), ("aim", "1", ["A"])]
    assert [(e.kind, e.pair) for e in events] == [(EventKind.KNOB, None),
                                                   (EventKind.PHASE, "A")]
    assert events[1].payload.config == {"aim": "0"}
    assert engine.book.phases["A"].config == {"aim": "1"} and engine.book.phases["B"].config == {}
    events.clear()
    with pytest.raises(KnobRefused, match="invalid value"):
        await engine.set_knob("aim", "bad")
    assert [e.kind for e in events] == [EventKind.KNOB_ERROR]
    assert engine.book.phases["A"].phase == 1 and engine.book.phases["B"].phase == 0
    assert engine.book.phases["A"].pending is None  # the refused change left no window open
    with pytest.raises(KnobRefused, match="no knob named 'nope'"):
        await engine.set_knob("nope", "1")
    with pytest.raises(KnobRefused, match="no pair named C"):
        await engine.set_knob("aim", "1", ["C"])
    # an iperf3 knob changes the pair's test options, no host is asked
    await engine.set_knob("streams", "4", ["B"])
    assert engine.book.live_options["B"] == {"parallel": 4}
    assert engine.book.options(prof.pair("B")).parallel == 4
    assert engine.book.options(prof.pair("A")).parallel == 1
    assert len(engine.knobs.applier.asked) == 2


def test_the_engine_never_imports_the_ui():
    """The domain stays free of Textual (and of scipy, slow to import): checked in a fresh
    interpreter, as docs/architecture.md says."""
    import subprocess
    import sys

    code = ("import sys, abtui.measure.engine.front, abtui.measure.headless, abtui.commands.run; "
            "print(sorted(m for m in sys.modules if m.split('.')[0] in ('textual', 'scipy')))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         check=True).stdout.strip()
    assert out == "[]"


def test_continuous_progress_lines_say_each_pair_s_rate_since_the_last():
    from abtui.measure.headless import Tally, tick_seconds

    tally = Tally()
    for pair, bps, extra in (("A", 10e9, {}), ("A", 12e9, {}), ("A", 1e9, {"omitted": True}),
                             ("A", 3e9, {"direction": "rx"}), ("B", 0.0214e9, {})):
        tally(Event.of(IntervalMeasured.from_data({
            "bits_per_second": bps, "start": 0.0, "end": 1.0, **extra}), pair=pair))
    # an interval of unknown span (no start or end) counts in no rate
    tally(Event.of(IntervalMeasured.from_data({"bits_per_second": 1e9}), pair="B"))
    tally(Event.of(Ping.from_data({"rtt_ms": 0.1}), pair="B"))
    assert tally.line(20.2, 60, ["A", "B", "C"]) == \
        "+20/60 s: A 11.0 Gbit/s (2 intervals), B 21.4 Mbit/s (1 interval), C no intervals"
    assert tally.line(40, 60, ["A"]) == "+40/60 s: A no intervals"  # afresh after each line
    assert [tick_seconds(d) for d in (5, 16, 60, 600, 86400)] == [None, 5, 6, 60, 60]


class _Prepared:
    """A run prepared (armed) but not released: what Engine._release is handed."""

    def __init__(self, spec: RunSpec) -> None:
        self.spec, self.label = spec, spec.pair.label
        self.released = self.cleaned = False
        # RUN_START records its client's command line
        self.processes = SimpleNamespace(client_argv=["iperf3", "-c", spec.target])

    def release(self) -> None:
        self.released = True

    def release_sock(self) -> None:
        return None  # no connection to cork

    def release_ping(self) -> None:
        pass

    async def read_clock(self) -> None:
        return None

    async def cleanup(self) -> None:
        self.cleaned = True


async def test_a_run_prepared_before_a_restarting_flip_is_prepared_again():
    """Armed with the old options (or target), a run released after the flip would measure
    the old setting under the new phase: it is prepared again instead."""
    from abtui.measure.engine.front import Engine

    prof = profile()
    prof.knobs.append(Knob(name="streams", kind=KnobKind.IPERF3, key="parallel",
                           values=("1", "4")))
    engine = Engine(prof, use_journal=False)

    def prepared() -> _Prepared:
        opts = engine.book.options(PAIR)
        return _Prepared(RunSpec(run_id="A-x", pair=PAIR, options=opts, target=PAIR.target,
                                 seconds=10, port=5201, settings=engine.book.settings["A"]))

    async def prepare(labels, seconds, ports=None):  # type: ignore[no-untyped-def]
        return [prepared() for _ in labels]

    engine.runs.prepare = prepare  # type: ignore[method-assign]
    stale = prepared()
    await engine.set_knob("streams", "4", ["A"])
    (run,) = await engine.runs.release([stale])  # type: ignore[list-item]
    assert stale.cleaned and not stale.released
    assert run is not stale and run.released and run.spec.options.parallel == 4
    # nothing changed since: released as it is
    again = prepared()
    assert await engine.runs.release([again]) == [again]  # type: ignore[list-item]


class _PreparedOnTcp(_Prepared):
    """Armed, its release a newline written to a real loopback connection."""

    def __init__(self, spec: RunSpec, sock: socket.socket) -> None:
        super().__init__(spec)
        self.sock = sock

    def release(self) -> None:
        super().release()
        self.sock.sendall(b"\n")

    def release_sock(self) -> socket.socket:  # type: ignore[override]
        return self.sock

    async def stop(self) -> None:
        self.stopped = True


async def test_runs_are_released_together_and_the_ring_let_go_at_shutdown():
    """Both senders' newlines held until every run is released, then let go at once; the
    engine's shutdown closes what the release kept open on this machine."""
    from abtui.measure.engine.front import Engine

    prof = profile()
    prof.pairs.append(profiles.pair(2))
    engine = Engine(prof, use_journal=False)
    with socket.create_server(("127.0.0.1", 0)) as server:
        links = []
        for _ in range(2):
            client = socket.create_connection(server.getsockname())
            links.append((client, server.accept()[0]))
        try:
            runs = [_PreparedOnTcp(RunSpec(run_id=f"{p.label}-x", pair=p,
                                           options=engine.book.options(p), target=p.target,
                                           seconds=10, port=5201,
                                           settings=engine.book.settings[p.label]), client)
                    for p, (client, _) in zip(prof.pairs, links, strict=True)]
            assert await engine.runs.release(runs) == runs  # type: ignore[arg-type]
            for _, peer in links:
                peer.settimeout(1.0)
                assert peer.recv(16) == b"\n"
            assert all(c.getsockopt(socket.IPPROTO_TCP, socket.TCP_CORK) == 0
                       for c, _ in links)
            ring = engine.runs._uncorker
            assert ring is not None
            await engine.shutdown()
            assert all(run.stopped for run in runs)
            assert engine.runs._uncorker is None and not ring.available
        finally:
            for client, peer in links:
                client.close()
                peer.close()


async def test_a_build_switch_holds_its_pairs_hosts_and_reads_them_again_after():
    """A kernel or module flip: the pair's hosts are held in the gate before the knob layer
    is asked (no run starts there while they boot), and read again once it answered, also
    when it refused; the other pair is not held."""
    from abtui.core.builds import Build, Method
    from abtui.core.errors import KnobRefused
    from abtui.measure.engine.front import Engine

    prof = profile()
    prof.pairs.append(profiles.pair(2))
    prof.knobs.append(Knob(name="kernel", kind=KnobKind.KERNEL, values=("a", "b", "bad"),
                           pairs=("A",), builds={v: Build(Method.KEXEC, release=v, timeout=9)
                                                 for v in ("a", "b", "bad")}))
    engine = Engine(prof, parser_factory=lambda _f: None, ping_parser_factory=lambda: None,
                    use_journal=False)  # type: ignore[arg-type,return-value]
    held_when_asked: list[set[str]] = []
    knobs = FakeKnobs()
    asked = knobs.apply

    async def apply(knob, value, pairs):  # type: ignore[no-untyped-def]
        held_when_asked.append({h for h in ("s", "r", "s2", "r2") if h in engine.gate})
        await asked(knob, value, pairs)
        return {"A": "198.18.101.2"}  # the pair's tunnel made again after the switch

    knobs.apply = apply  # type: ignore[method-assign]
    engine.knobs.use(knobs)
    rechecked: list[list[str]] = []
    engine.verifier.recheck = rechecked.append  # type: ignore[method-assign]
    engine.book.phases["A"].config["tunnel"] = "wireguard"
    events: list[Event] = []
    engine.subscribe(events.append)
    await engine.set_knob("kernel", "b")
    assert held_when_asked == [{PAIR.sender, PAIR.receiver}] and rechecked == [
        [PAIR.sender, PAIR.receiver]]
    tunnels = [e.payload for e in events if e.kind is EventKind.TUNNEL]
    assert [(t.type, t.target) for t in tunnels] == [("wireguard", "198.18.101.2")]
    held = engine.gate.get(PAIR.sender)
    assert held is not None and held.until > 0  # runs wait for it, connected or not
    with pytest.raises(KnobRefused):
        await engine.set_knob("kernel", "bad")
    assert len(rechecked) == 2  # a refused switch is read again too


def test_runs_are_numbered_per_pair() -> None:
    """Pair B's first run is B-1, not B-2 (one count across pairs; issue 49)."""
    from abtui.measure.engine.runs import RunIds

    ids = RunIds()
    assert [ids.next(p) for p in ("A", "B", "A", "B", "B")] == ["A-1", "B-1", "A-2", "B-2",
                                                                 "B-3"]
