"""Host CPU: the counters read (Linux /proc/stat through the dialect's own command, FreeBSD
kern.cp_times), turned into per-sample ticks, folded into a session, and the report's CPU
cost section: CPU % and efficiency per configuration with Δ and verdict like throughput's."""

from __future__ import annotations

import asyncio
import os
import subprocess
import time
from collections.abc import Callable, Iterator

import pytest

from abtui.core.cpu import FIELDS, busy_cores, sample_figures
from abtui.core.errors import RemoteError
from abtui.core.events import Cpu, Event, EventKind, Facts
from abtui.core.model import LinkState, Pair
from abtui.core.model import TestOptions as Options
from abtui.measure.run.context import RunContext, RunParsers, RunSpec
from abtui.measure.run.cpu import CpuSampler
from abtui.measure.run.sampling import RunSamplers
from abtui.parse.cputimes import CpuTimes, parse_cpu_times, since
from abtui.remote.iperf_cmd import CPU_END_MARK, cpu_loop_command
from abtui.remote.os.freebsd.knobs import FreeBSD
from abtui.remote.os.linux.knobs import Linux
from abtui.remote.streams import LineFeed
from abtui.reports.report import markdown
from abtui.sessions.session import Session
from tests import synth
from tests.unit.measure.run.owner import Owner

PROC_STAT = """cpu  100 5 50 1000 10 3 7 2 0 0
cpu0 60 5 30 500 5 2 4 1 0 0
cpu1 40 0 20 500 5 1 3 1 0 0
"""


def test_linux_command_reads_only_the_cpu_lines_of_this_machine() -> None:
    out = subprocess.run(["sh", "-c", Linux.cpu_times_command], capture_output=True,
                         text=True, check=True).stdout
    assert out.splitlines() and all(x.startswith("cpu") for x in out.splitlines())
    times = parse_cpu_times(out)
    assert times is not None and len(times.cpus) == len(out.splitlines()) - 1


def test_proc_stat_fields() -> None:
    t = parse_cpu_times(PROC_STAT)
    assert t is not None
    # user+nice, system, irq, softirq, idle+iowait, steal
    assert t.total == (105, 50, 3, 7, 1010, 2)
    assert t.cpus == ((65, 30, 2, 4, 505, 1), (40, 20, 1, 3, 505, 1))


def test_freebsd_cp_times() -> None:
    assert FreeBSD.cpu_times_command == "sysctl -n kern.cp_times"
    t = parse_cpu_times("10 1 20 3 100 5 0 6 1 50\n")
    assert t is not None
    assert t.cpus == ((11, 20, 3, 0, 100, 0), (5, 6, 1, 0, 50, 0))
    assert t.total == (16, 26, 4, 0, 150, 0)


@pytest.mark.parametrize("text", ["", "hello", "cpu0 1 2", "1 2 3", "cpu x y z w v"])
def test_not_cpu_times(text: str) -> None:
    assert parse_cpu_times(text) is None


def test_since_gives_what_each_state_gained_and_refuses_what_does_not_line_up() -> None:
    a = CpuTimes((1, 1, 0, 0, 10, 0), ((1, 1, 0, 0, 10, 0),))
    b = CpuTimes((3, 2, 0, 1, 14, 0), ((3, 2, 0, 1, 14, 0),))
    assert since(a, b) == ([2, 1, 0, 1, 4, 0], [[2, 1, 0, 1, 4, 0]])
    assert since(b, a) is None  # counters went back
    assert since(a, CpuTimes(a.total, ())) is None  # CPUs went away
    assert busy_cores([2, 1, 0, 1, 4, 0], 2) == pytest.approx(1.0)


# A: sender and receiver 1 core busy of 2; B: 1.5 cores. 4 runs per pair and configuration.
BUSY = {"A": [25, 15, 0, 10, 50, 0], "B": [40, 20, 5, 10, 25, 0]}


def cpu_session(facts: dict[str, object] | None = None) -> Session:
    def events() -> Iterator[Event]:
        configs = [{"tcp_wmem": "default"}, {"tcp_wmem": "64k"}]
        rates = {"A": [[10e9] * 4, [9e9] * 4], "B": [[11e9] * 4, [9e9] * 4]}
        hosts = {"A": ("lab-a-snd", "lab-a-rcv"), "B": ("lab-b-snd", "lab-b-rcv")}
        for ev in synth.plan(configs, rates):
            if ev.kind is EventKind.SESSION_START:
                yield ev
                for pair_hosts in hosts.values():
                    for h in pair_hosts:
                        yield Event.of(Facts(facts={"alias": h, "cpu_count": 2, **(facts or {})}),
                                       ev.t, host=h)
                continue
            if ev.kind is EventKind.RUN_END and ev.pair:
                ev.payload.summary["sender_cpu"] = {"total": 25.4, "user": 0.3, "system": 25.1}
                ev.payload.summary["receiver_cpu"] = None
            yield ev
            if ev.kind is EventKind.INTERVAL and ev.pair:
                for role, h in zip(("sender", "receiver"), hosts[ev.pair], strict=True):
                    row = BUSY[ev.pair]
                    yield Event.of(Cpu(run=ev.payload.run, role=role, phase=ev.payload.phase,
                                       straddles=False, total=[2 * x for x in row],
                                       cpus=[row, row]), ev.t, pair=ev.pair, host=h)
    return Session.from_events(events())


def test_session_keeps_each_hosts_samples() -> None:
    s = cpu_session()
    assert set(s.cpu) == {("A", "lab-a-snd"), ("A", "lab-a-rcv"), ("B", "lab-b-snd"),
                          ("B", "lab-b-rcv")}
    cols = s.cpu[("B", "lab-b-snd")]
    assert len(cols) == 2 * 4 * 5 and cols["cpus"][0] == 2
    assert cols["peak"][0] == pytest.approx(0.75)
    assert sample_figures(Cpu.from_data({"total": [2 * x for x in BUSY["B"]], "cpus": [1, 2]})) == (
        pytest.approx(150.0), pytest.approx(10.0))


def section(report: str, title: str) -> list[list[str]]:
    body = report.split(title, 1)[1].split("\n\n", 2)[1]
    return [[c.strip() for c in line.strip("|").split("|")] for line in body.splitlines()[2:]]


def test_report_cpu_and_efficiency_per_configuration_with_delta_and_verdict() -> None:
    report = markdown(cpu_session(), chart=False)
    rows = section(report, "### Sender CPU (% of one core; the host's CPU samples)")
    assert rows[0][:3] == ["tcp_wmem=default", "100 ± 0 (n=4)", "150 ± 0 (n=4)"]
    # runs equal to the printed digit: the interval is as wide as that digit allows, never 0
    assert rows[0][3].startswith("+50.0% [+47.7, +52.3] (p<0.001 n=4+4)")
    receiver = section(report, "### Receiver CPU (% of one core; the host's CPU samples)")
    assert receiver[0][3].startswith("+50.0%")
    eff = section(report, "### Sender efficiency: Gbit/s per busy core (more is better)")
    assert eff[0][1:3] == ["10.0 ± 0.0 (n=4)", "7.33 ± 0.00 (n=4)"]
    assert eff[0][3].startswith("-26.7%")
    soft = section(report, "Sender softirq share of all its CPU time (%):")
    assert soft[0][1:3] == ["10.0 ± 0.0 (n=4)", "10.0 ± 0.0 (n=4)"]
    runs = report.split("## Runs", 1)[1]
    # iperf3 gave no receiver figure in any run: that empty column is left out (the compact
    # runs table), the sender's stays
    assert "| sender CPU % |" in runs and "| receiver CPU % |" not in runs
    assert "| 25.4 (0.3u/25.1s) |" in runs
    assert "whole machine's CPU" not in report


def test_cycles_per_byte_with_the_frequency() -> None:
    report = markdown(cpu_session({"cpu_mhz": 2000.0}), chart=False)
    eff = section(report, "### Sender efficiency: CPU cycles per byte (fewer is better)")
    # 1 core at 2 GHz moving 10 Gbit/s: 2e9 / 1.25e9 = 1.6 cycles per byte
    assert eff[0][1] == "1.60 ± 0.00 (n=4)"


def test_a_lab_whose_hosts_all_share_the_machine_has_a_one_line_cpu_section() -> None:
    """Namespace hosts: every figure is the whole machine's (196-200 % on the lab, +0.0 %
    between pairs), so no cell prints one and no Δ compares them; with every host shared,
    tables of `shared` cells (six of them) would say nothing more: the section is one line
    (issue 33)."""
    report = markdown(cpu_session({"cpu_mhz": 2000.0, "cpu_scope": "shared"}), chart=False)
    cpu = report.split("## CPU cost per configuration", 1)[1].split("\n## ", 1)[0]
    lines = [ln for ln in cpu.splitlines() if ln.strip()]
    assert len(lines) == 1, lines
    assert lines[0].startswith("No CPU figure per pair: the hosts (lab-a-rcv, lab-a-snd, "
                               "lab-b-rcv, lab-b-snd) all share one machine"), lines
    assert "###" not in cpu and "shared |" not in cpu


def test_without_samples_the_report_uses_iperf3s_own_figures() -> None:
    s = cpu_session()
    s.cpu.clear()
    report = markdown(s, chart=False)
    rows = section(report, "### Sender CPU (% of one core; iperf3's own figure)")
    assert rows[0][1:3] == ["25.4 ± 0.0 (n=4)", "25.4 ± 0.0 (n=4)"]
    assert "### Receiver CPU (% of one core; nothing recorded)" in report


def test_fields_order_is_the_events() -> None:
    assert FIELDS == ("user", "system", "irq", "softirq", "idle", "steal")


def test_json_export_carries_cpu_cells_series_and_iperf3s_figures() -> None:
    from abtui.reports.exports import to_json

    doc = to_json(cpu_session({"cpu_scope": "shared"}))
    cells = {(c["pair"], c["config"]): c["cpu"] for c in doc["configurations"]}
    b = cells[("B", "tcp_wmem=default")]
    assert b["sender"]["source"] == "host" and b["sender"]["run_samples"] == [150.0] * 4
    assert b["sender"]["efficiency"]["unit"] == "bits/s per core"
    series = {(x["pair"], x["host"]): x for x in doc["host_cpu"]}
    snd = series[("B", "lab-b-snd")]
    assert snd["shared"] is True and snd["busy_percent"][0] == pytest.approx(150.0)
    assert len(snd["t"]) == 40
    assert doc["runs"][0]["summary"]["sender_cpu"]["total"] == 25.4
    assert doc["phases"][0]["summary"]["sender_cpu"] == {"total": 25.4, "user": 0.3,
                                                         "system": 25.1}
    assert doc["phases"][0]["summary"]["receiver_cpu"] is None


class _CpuLoop:
    """The CPU loop a fake host streams: each line written to it answered, from the loop's
    script, as its channel would (a packet, handed to the feed on a later loop turn); the
    script run out, the loop ends (its link lost)."""

    pgid = None
    stderr = ""

    def __init__(self, link: _CpuLink) -> None:
        self.link = link
        self.feeds: list[LineFeed] = []
        self.stdin_closed = False

    def feed(self, handle: Callable[[list[str]], None]) -> LineFeed:
        self.feeds.append(LineFeed(handle))
        return self.feeds[-1]

    def write(self, data: str) -> None:
        assert data == "\n"
        self.link.asked.append(time.monotonic())
        loop = asyncio.get_running_loop()
        if not self.link.outputs:
            loop.call_soon(self.feeds[-1].write_eof)
            return
        answer = self.link.outputs.pop(0) + CPU_END_MARK + "\n"
        loop.call_soon(self.feeds[-1].write, answer)

    def close_stdin(self) -> None:
        self.stdin_closed = True

    async def wait(self, timeout: float | None = None) -> int | None:
        return 0

    async def terminate(self, grace: float = 2.0) -> None:
        self.link.ended += 1


class _CpuLink:
    """A host whose CPU loop answers from a script of outputs; once it ran out, the link is
    lost (the loop ends, and it cannot be started again)."""

    state = LinkState.CONNECTED

    def __init__(self, alias: str, outputs: list[str]) -> None:
        self.alias = alias
        self.outputs = outputs
        self.commands: list[str] = []
        self.loops: list[_CpuLoop] = []
        self.asked: list[float] = []
        self.ended = 0

    async def stream(self, command: str) -> _CpuLoop:
        self.commands.append(command)
        if not self.outputs:
            raise RemoteError(self.alias, "link lost")
        self.loops.append(_CpuLoop(self))
        return self.loops[-1]


def _context(snd: _CpuLink, events: list[Event]) -> RunContext:
    spec = RunSpec(run_id="A-1", pair=Pair("A", "snd", "rcv", "10.0.0.2"),
                   options=Options(), target="10.0.0.2", seconds=2, port=5201,
                   cpu_commands={"snd": Linux.cpu_times_command})
    owner = Owner(events.append, lambda label, t, span: (3, False))
    return RunContext(spec, snd, _CpuLink("rcv", []), owner,  # type: ignore[arg-type]
                      RunParsers(lambda fmt: None))  # type: ignore[arg-type,return-value]


async def _sample_until(snd: _CpuLink, events: list[Event], period: float,
                        done: Callable[[], bool]) -> None:
    """snd's CPU sampled every `period` s until `done`, then the sampler cancelled (as a
    run's cleanup does) and awaited."""
    task = asyncio.create_task(CpuSampler(_context(snd, events), snd,  # type: ignore[arg-type]
                                          Linux.cpu_times_command, period).run())
    while not done():
        await asyncio.sleep(0.005)
    task.cancel()
    await asyncio.gather(task, return_exceptions=True)


def test_sampler_one_loop_per_host_and_ticks_since_the_previous() -> None:
    """The ticks each state gained, sample by sample (the figures the round-trip sampler
    gave on these counters); the link lost afterwards: said once, not once per sample."""
    first = "cpu  100 0 50 1000 0 0 10 0\ncpu0 100 0 50 1000 0 0 10 0\n"
    second = "cpu  160 0 70 1010 0 5 15 0\ncpu0 160 0 70 1010 0 5 15 0\n"
    third = "cpu  170 0 75 1100 0 5 15 0\ncpu0 170 0 75 1100 0 5 15 0\n"
    events: list[Event] = []
    snd = _CpuLink("snd", [first, second, third])
    # the loop, then two restarts the lost link refused
    asyncio.run(_sample_until(snd, events, 0.02, lambda: len(snd.commands) >= 3))
    cpu = [e for e in events if e.kind is EventKind.CPU]
    assert [e.payload.total for e in cpu] == [[60, 20, 5, 5, 10, 0], [10, 5, 0, 0, 90, 0]]
    assert cpu[0].host == "snd" and cpu[0].payload.role == "sender"
    assert cpu[0].payload.phase == 3 and cpu[0].payload.cpus == [[60, 20, 5, 5, 10, 0]]
    # (HostLink.stream runs it in the group it reports: streams.own_group)
    assert snd.commands == [cpu_loop_command(Linux.cpu_times_command)] * len(snd.commands)
    assert len(snd.loops) == 1 and len(snd.asked) == 4  # one loop; 3 answers, then it ended
    assert snd.loops[0].stdin_closed and snd.ended == 1  # and was ended
    errors = [e for e in events if e.kind is EventKind.ERROR]
    assert len(errors) == 1 and "host CPU: link lost" in errors[0].payload.message


def test_a_stopped_run_ends_its_cpu_loops_before_its_cleanup_is_done() -> None:
    events: list[Event] = []
    snd = _CpuLink("snd", ["cpu  1 0 0 1 0 0 0 0\n"] * 100)
    samplers = RunSamplers(_context(snd, events), CpuSampler)

    async def sample() -> None:
        samplers.start(None, [])
        while len(snd.asked) < 2:  # the base and the first sample (half a second on)
            await asyncio.sleep(0.01)
        await samplers.stop_samples()

    asyncio.run(sample())
    assert len(snd.loops) == 1 and snd.loops[0].stdin_closed and snd.ended == 1
    assert not [e for e in events if e.kind is EventKind.ERROR]


def test_the_cpu_loop_answers_each_line_on_this_machine() -> None:
    """The loop the host runs, run by this machine's sh: one answer per line read, each the
    dialect's CPU lines and the end mark; it ends at end of file."""
    out = subprocess.run(["sh", "-c", cpu_loop_command(Linux.cpu_times_command)],
                         input="\n\n\n", capture_output=True, text=True, timeout=10,
                         check=True).stdout
    answers = out.split(CPU_END_MARK + "\n")
    assert answers[-1] == "" and len(answers) == 4
    for text in answers[:3]:
        times = parse_cpu_times(text)
        assert times is not None and len(times.cpus) == (os.cpu_count() or 0)


def test_a_procedures_first_table_shows_cpu_when_the_session_has_it() -> None:
    from pathlib import Path

    from abtui.sessions import reader

    golden = Path(__file__).resolve().parents[3] / "golden" / "wireguard-gro.abtui.jsonl.gz"
    plain = markdown(Session.load(golden), chart=False)
    assert "sender CPU %" not in plain.split("## Hosts")[0]  # none recorded: no columns

    def with_cpu() -> Iterator[Event]:
        for ev in reader.iter_events(golden):
            if ev.kind is EventKind.RUN_END and ev.payload.summary:
                ev.payload.summary["sender_cpu"] = {"total": 40.0, "user": 1.0, "system": 39.0}
                ev.payload.summary["receiver_cpu"] = {"total": 80.0, "user": 2.0,
                                                      "system": 78.0}
            yield ev

    first = markdown(Session.from_events(with_cpu()), chart=False).split("## Hosts")[0]
    header = next(x for x in first.splitlines() if x.startswith("| build"))
    assert "| sender CPU % | receiver CPU % |" in header
    row = next(x for x in first.splitlines() if x.startswith("| ") and "40.0" in x)
    assert "| 40.0 | 80.0 |" in row


def test_sampler_samples_half_a_period_off_the_intervals_beat() -> None:
    """The base at the release (when iperf3's interval beat starts), each sample after it
    half a period off that beat: the samples never come with the intervals."""
    sample = "cpu  100 0 50 1000 0 0 10 0\ncpu0 100 0 50 1000 0 0 10 0\n"
    period = 0.2
    snd = _CpuLink("snd", [sample] * 100)
    start = time.monotonic()
    asyncio.run(_sample_until(snd, [], period, lambda: len(snd.asked) >= 4))
    offsets = [(t - start) / period for t in snd.asked]
    assert offsets[0] < 0.25  # the base, at once
    for k, off in enumerate(offsets[1:4]):  # 0.5, 1.5, 2.5 periods (late on a busy machine,
        assert k + 0.5 <= off < k + 0.5 + 0.4  # never early, never on the beat)


def test_an_unreadable_answer_is_said_once_and_the_sampler_goes_on() -> None:
    ok = "cpu  100 0 50 1000 0 0 10 0\ncpu0 100 0 50 1000 0 0 10 0\n"
    later = "cpu  110 0 50 1090 0 0 10 0\ncpu0 110 0 50 1090 0 0 10 0\n"
    bad = "sysctl: unknown oid 'kern.cp_times'\n"
    events: list[Event] = []
    snd = _CpuLink("snd", [ok, bad, bad, ok, later, later])
    asyncio.run(_sample_until(snd, events, 0.02, lambda: len(snd.loops) > 1 or
                              len(snd.asked) >= 6))
    errors = [e.payload.message for e in events if e.kind is EventKind.ERROR]
    assert errors == ["host CPU: its CPU time counters were not readable: sysctl: unknown oid "
                      "'kern.cp_times'"]
    # an unreadable answer is no base: the next readable one is, and the one after it counts
    cpu = [e.payload.total for e in events if e.kind is EventKind.CPU]
    assert cpu == [[10, 0, 0, 0, 90, 0], [0, 0, 0, 0, 0, 0]]
