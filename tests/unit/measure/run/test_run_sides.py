"""Which side's intervals a run reports, on recorded iperf3 3.12 output replayed through a real
PairRun (fake SSH links play back the client's and the server's logs of one test).

UDP: the receiving side's lines (what arrived), never the sender's offered rate; TCP: the
client's. A stopped run's summary leaves the side iperf3 never heard from unknown (None).
What is asserted is read from the logs independently of abtui's parser.
"""

from __future__ import annotations

import asyncio
import json
import re
from collections.abc import AsyncIterator
from pathlib import Path

import pytest

from abtui.core.events import Event, EventKind
from abtui.core.model import LinkState, Pair
from abtui.core.model import TestOptions as Options
from abtui.core.numbers import sig
from abtui.measure.ports import default_parser_factory
from abtui.measure.run.context import RunParsers, RunSpec
from abtui.measure.run.pair import PairRun
from abtui.remote.iperf_cmd import ARMED_MARK
from tests.fixtures import FIXTURES
from tests.unit.measure.run.fake_feed import FeedsLines
from tests.unit.measure.run.owner import Owner

V312 = FIXTURES / "iperf3-3.12"
# a single-stream interval line as iperf3 prints it: start, end, rate, and UDP's receiver
# columns (jitter, lost/total) when the line has them
LINE = re.compile(r"\[\s*\d+\]\s+([\d.]+)-\s*([\d.]+)\s+sec\s+\S+ \w?Bytes\s+([\d.]+) (\w?)bits/sec"
                  r"(?:\s+([\d.]+) ms\s+(\d+)/(\d+))?")
UNIT = {"": 1.0, "K": 1e3, "M": 1e6, "G": 1e9}


def printed(path: Path) -> list[dict[str, float]]:
    """The interval lines of a log (not its summary), de-duplicated as iperf3 repeats the
    last one when a test is cut short."""
    out: list[dict[str, float]] = []
    for line in path.read_text().splitlines():
        m = LINE.match(line)
        if m is None or line.rstrip().endswith(("sender", "receiver")):
            continue
        d = {"start": float(m[1]), "end": float(m[2]), "bps": float(m[3]) * UNIT[m[4]]}
        if m[5] is not None:
            d.update(jitter=float(m[5]), lost=int(m[6]), packets=int(m[7]))
        if not out or out[-1] != d:
            out.append(d)
    return out


class FakeProcess(FeedsLines):
    """A streamed command that plays back recorded lines."""

    def __init__(self, link: ScriptedLink, lines: list[str], rc: int, armed: bool,
                 hold_at: str | None = None) -> None:
        self.link = link
        self.pgid = None
        self.stderr = ""
        self._lines = lines
        self._rc = rc
        self._armed = armed
        self._hold_at = hold_at  # play up to this line, then wait to be terminated
        self._released = asyncio.Event()
        self._terminated = asyncio.Event()
        self._done = asyncio.Event()

    async def lines(self) -> AsyncIterator[str]:
        try:
            if self._armed:
                yield ARMED_MARK
                await self._released.wait()
                yield "1700000000.000000"
            for line in self._lines:
                if self._hold_at is not None and line.startswith(self._hold_at):
                    await self._terminated.wait()
                await asyncio.sleep(0.001)
                yield line
        finally:
            self._done.set()

    def write(self, data: str) -> None:
        self._released.set()

    async def wait(self, timeout: float | None = None) -> int | None:
        await asyncio.wait_for(self._done.wait(), timeout)
        return self._rc

    async def terminate(self, grace: float = 2.0) -> None:
        self._terminated.set()


class ScriptedLink:
    """A link whose streams are the recorded server's and client's processes."""

    def __init__(self, alias: str, script: dict[str, FakeProcess]) -> None:
        self.alias = alias
        self.state = LinkState.CONNECTED
        self.script = script

    async def stream(self, command: str) -> FakeProcess:
        return self.script["server" if " -s " in command else "client"]


async def replay(case: str, stop: bool = False, **options: object) -> list[Event]:
    """Run one recorded test through a PairRun; its events. `stop`: the user stops it (the
    client's log plays up to its interrupt message, which comes once it is terminated)."""
    events: list[Event] = []
    opts = Options(duration=0 if stop else 2, interval=1.0, ping=False, **options)  # type: ignore[arg-type]
    spec = RunSpec(run_id="A-1", pair=Pair("A", "snd", "rcv", "10.0.0.2"), options=opts,
                   target="10.0.0.2", seconds=2, port=5201)
    owner = Owner(events.append, lambda label, t, span: (0, False))
    sender = ScriptedLink("snd", {})
    receiver = ScriptedLink("rcv", {})
    rc = int((V312 / f"{case}.rc").read_text())
    sender.script["client"] = FakeProcess(sender, (V312 / f"{case}.client.txt").read_text()
                                          .splitlines(), rc, armed=True,
                                          hold_at="iperf3: interrupt" if stop else None)
    receiver.script["server"] = FakeProcess(receiver, (V312 / f"{case}.server.txt").read_text()
                                            .splitlines(), 0, armed=False)
    run = PairRun(spec, sender, receiver, owner,  # type: ignore[arg-type]
                  RunParsers(default_parser_factory()))
    await run.prepare()
    run.release()
    await run.read_clock()
    streaming = asyncio.get_running_loop().create_task(run.stream())
    if stop:
        await asyncio.sleep(0.2)
        await run.stop()
    await asyncio.wait_for(streaming, 10)
    return events


def intervals(events: list[Event]) -> list[dict[str, float]]:
    out = []
    for e in events:
        if e.kind is EventKind.INTERVAL:
            d = {"start": e.payload.start, "end": e.payload.end, "bps": e.payload.bits_per_second}
            if e.recorded("jitter_ms"):
                d.update(jitter=e.payload.jitter_ms, lost=e.payload.lost_packets,
                         packets=e.payload.packets)
            out.append(d)
    return out


def run_end(events: list[Event]) -> dict:
    (end,) = [e.record() for e in events if e.kind is EventKind.RUN_END]
    return end


def test_udp_forward_reports_what_arrived_the_server_s_lines() -> None:
    """20 Gbit/s offered on loopback, 18 % lost: the intervals are the server's (what
    arrived, with loss and jitter), not the client's 20.0/18.0 Gbit/s; the server's end stub
    (`2.00-2.00 sec`) is no interval of its own."""
    events = asyncio.run(replay("udp-fast", udp=True, bitrate="20G"))
    server = [d for d in printed(V312 / "udp-fast.server.txt") if d["end"] - d["start"] >= 0.1]
    sent = printed(V312 / "udp-fast.client.txt")
    assert len(server) == 2 and all("jitter" in d for d in server)
    assert intervals(events) == server
    assert [d["bps"] for d in intervals(events)] != [d["bps"] for d in sent]
    assert any(d["lost"] > 0 for d in intervals(events))
    end = run_end(events)
    assert end["status"] == "ok"
    assert end["summary"]["receiver_bits_per_second"] == 15.5e9
    assert end["summary"]["lost_percent"] == pytest.approx(100 * 25887 / 144317)


def test_udp_reverse_reports_the_client_s_own_lines() -> None:
    """With -R the client receives: its lines carry what arrived; the server's are the
    offered rate and are not read."""
    events = asyncio.run(replay("udp-reverse", udp=True, bitrate="10M", reverse=True))
    got = intervals(events)
    assert got == printed(V312 / "udp-reverse.client.txt")
    assert got and all("jitter" in d for d in got)


def test_tcp_keeps_the_client_s_lines() -> None:
    events = asyncio.run(replay("tcp"))
    assert intervals(events) == printed(V312 / "tcp.client.txt")


@pytest.mark.parametrize(("case", "options", "unheard", "heard"), [
    ("stopped-tcp", {}, "receiver", "sender"),
    ("stopped-reverse", {"reverse": True}, "sender", "receiver"),
    ("stopped-udp", {"udp": True, "bitrate": "10M"}, "receiver", "sender"),
    ("stopped-udp-reverse", {"udp": True, "bitrate": "10M", "reverse": True}, "sender",
     "receiver"),
])
def test_a_stopped_run_leaves_the_unheard_side_unknown(case: str, options: dict, unheard: str,
                                                       heard: str) -> None:
    """Stopped, iperf3 prints its summary before the other side's figures come: that line
    says 0, which is unknown, not 0."""
    events = asyncio.run(replay(case, stop=True, **options))
    end = run_end(events)
    assert end["status"] == "stopped"
    summary = end["summary"]
    assert summary[f"{unheard}_bits_per_second"] is None
    assert summary[f"{unheard}_bytes"] is None
    assert summary[f"{heard}_bits_per_second"] > 0
    if unheard == "receiver":
        assert summary["lost_percent"] is None and summary["jitter_ms"] is None
    assert intervals(events)  # what was measured is kept


def test_a_stopped_run_is_null_in_the_journal_and_a_dash_in_the_report() -> None:
    from abtui.reports.report import markdown
    from abtui.sessions.session import Session

    events = asyncio.run(replay("stopped-tcp", stop=True))
    end = next(e for e in events if e.kind is EventKind.RUN_END)
    assert '"receiver_bits_per_second": null' in json.dumps(end.to_json())
    report = markdown(Session.from_events(events), chart=False)
    runs = report.split("## Runs", 1)[1].split("\n## ", 1)[0]
    header, _, row = [line for line in runs.splitlines() if line.startswith("|")]
    cells = dict(zip(header.split("|"), row.split("|"), strict=True))
    (receiver,) = [v for k, v in cells.items() if k.strip().startswith("receiver (")]
    (sender,) = [v for k, v in cells.items() if k.strip().startswith("sender (")]
    assert receiver.strip() == "—"
    assert float(sender) > 0


def test_udp_loss_and_jitter_reach_the_console_the_exports_and_the_report() -> None:
    import csv
    import io

    from abtui.core.model import Profile
    from abtui.reports.exports import render, to_json
    from abtui.reports.report import markdown
    from abtui.sessions.session import Session
    from abtui.ui.model.state import ConsoleState

    events = asyncio.run(replay("udp-fast", udp=True, bitrate="20G"))
    server = [d for d in printed(V312 / "udp-fast.server.txt") if d["end"] - d["start"] >= 0.1]
    lost = sum(d["lost"] for d in server)
    due = sum(d["packets"] for d in server)
    # the console pane: the latest interval's loss and jitter
    state = ConsoleState(Profile(name="t", pairs=[Pair("A", "snd", "rcv", "10.0.0.2")]))
    for e in events:
        state.apply(e)
    ps = state.pairs["A"]
    assert ps.loss_pct == pytest.approx(100 * server[-1]["lost"] / server[-1]["packets"])
    assert ps.jitter_ms == server[-1]["jitter"]
    assert list(ps.bps) == [d["bps"] for d in server]
    session = Session.from_events(events, name="s")
    # CSV and JSON: a row per interval with its own loss and jitter
    rows = list(csv.DictReader(io.StringIO(render(session, "csv"))))
    assert [(float(r["jitter_ms"]), int(r["lost_packets"]), int(r["packets"])) for r in rows] \
        == [(d["jitter"], d["lost"], d["packets"]) for d in server]
    assert float(rows[1]["lost_percent"]) == pytest.approx(100 * server[1]["lost"]
                                                           / server[1]["packets"])
    (phase,) = to_json(session)["phases"]
    assert [i["lost_packets"] for i in phase["intervals"]] == [d["lost"] for d in server]
    assert phase["summary"]["udp"]["lost_percent"] == pytest.approx(100 * lost / due)
    # the report: loss over the configuration's intervals, and iperf3's own in the runs table
    report = markdown(session, chart=False)
    udp = report.split("## UDP loss and jitter", 1)[1].split("\n## ", 1)[0]
    assert f"| {sig(100 * lost / due)} | {lost}/{due} |" in udp  # 3 significant digits
    runs = report.split("## Runs", 1)[1].split("\n## ", 1)[0]
    assert f"| {sig(100 * 25887 / 144317)} | 0.122 |" in runs



def test_udp_bidir_takes_each_direction_from_its_receiver() -> None:
    """--bidir UDP: the pair's own direction arrives at the server ([RX-S] lines), the way back
    at the client ([RX-C] lines); neither sender's lines are read as throughput."""
    events = asyncio.run(replay("udp-bidir", udp=True, bitrate="10M", bidir=True))
    got = [(e.payload.direction, e.payload.start, e.payload.jitter_ms) for e in events
           if e.kind is EventKind.INTERVAL]
    expected = []
    for side, role, direction in (("server", "RX-S", "tx"), ("client", "RX-C", "rx")):
        for line in (V312 / f"udp-bidir.{side}.txt").read_text().splitlines():
            m = re.match(rf"\[\s*\d+\]\[{role}\]\s+([\d.]+)-.* ([\d.]+) ms\s+\d+/\d+ \(", line)
            if m and not line.rstrip().endswith(("sender", "receiver")):
                expected.append((direction, float(m[1]), float(m[2])))
    assert len(expected) == 4 and sorted(got) == sorted(expected)


@pytest.mark.parametrize("path", sorted(p for p in FIXTURES.glob("iperf3-*/*udp*")
                                        if p.suffix != ".rc"), ids=lambda p: p.name)
def test_measured_takes_the_receiving_side_of_every_recorded_udp_log(path: Path) -> None:
    """In every recorded UDP log (3.1.3 and 3.12 text, -J, 3.18 --json-stream), the intervals
    `measured` takes are those of the receiving side: a receiver's lines print jitter and
    lost/total datagrams, a sender's only what it sent."""
    from abtui.parse import parse_iperf3_json, parse_iperf3_text
    from abtui.parse.iperf3.sides import measured

    text = path.read_text()
    r = parse_iperf3_json(text) if "json" in path.name else parse_iperf3_text(text)
    assert r.intervals
    opts = Options(udp=True, interval=1.0)
    for iv in r.intervals:
        # the receiving side of this interval's direction: the client with -R and for
        # --bidir's way back, else the server
        client_receives = "reverse" in path.name or iv.direction == "rx"
        receiver = (r.role == "client") == client_receives
        stub = iv.end - iv.start < 0.1
        assert measured(iv, opts) == (receiver and not stub), (path.name, iv)


def test_reverse_text_takes_the_sender_cpu_from_the_server_and_intervals_from_the_client(
        ) -> None:
    """iperf3 3.12 prints `CPU Utilization:` only where it sends: with -R the server's log
    (run with -V) has the sender's figures; the client's lines stay the only intervals."""
    events = asyncio.run(replay("verbose-reverse", reverse=True))
    assert intervals(events) == printed(V312 / "verbose-reverse.client.txt")
    m = re.search(r"local/sender ([\d.]+)% \(([\d.]+)%u/([\d.]+)%s\)",
                  (V312 / "verbose-reverse.server.txt").read_text())
    assert m is not None
    summary = run_end(events)["summary"]
    assert summary["sender_cpu"] == {"total": float(m[1]), "user": float(m[2]),
                                     "system": float(m[3])}
    assert summary["receiver_cpu"] is None


def test_forward_text_has_both_sides_cpu_from_the_client() -> None:
    events = asyncio.run(replay("verbose"))
    summary = run_end(events)["summary"]
    assert summary["sender_cpu"]["total"] == 25.4 and summary["receiver_cpu"]["total"] == 71.9
