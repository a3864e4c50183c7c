"""A run's parts through their public methods: the owner it reports to, the engine's run
scheduler (every process group started and ended written down; one left on a lost link
handed over as an orphan; no relay between a run and the parts that answer it) and the typed
parser seam."""

from __future__ import annotations

from types import SimpleNamespace

from abtui.core.model import IperfSummary, LinkState, Pair, Profile
from abtui.measure.engine.runs import RunScheduler
from abtui.measure.phase_book import PhaseBook
from abtui.measure.ports import iperf_error_of, iperf_summary_of
from abtui.measure.run.context import RunContext
from abtui.measure.tasks import Tasks
from abtui.parse import Iperf3Result


class _Book:
    def __init__(self) -> None:
        self.lines: list[tuple[str, ...]] = []

    def record_pgid(self, host: str, pgid: int, what: str = "") -> None:
        self.lines.append(("started", host, str(pgid), what))

    def forget_pgid(self, host: str, pgid: int) -> None:
        self.lines.append(("ended", host, str(pgid)))


class _Link:
    def __init__(self, alias: str, state: LinkState = LinkState.CONNECTED) -> None:
        self.alias = alias
        self.state = state


class _Proc:
    def __init__(self, link: _Link, pgid: int) -> None:
        self.link, self.pgid = link, pgid
        self.terminated = False

    async def terminate(self, grace: float = 2.0) -> None:
        self.terminated = True


PROFILE = Profile(name="p", pairs=[Pair("A", "s", "r", "198.18.1.2")])


def _owner(book: _Book | None, orphans: list[tuple[str, int]],
           emit: object = lambda e: None) -> RunScheduler:
    """The engine's run scheduler over a host pool of `book` (its undo journal) and its
    orphans."""
    pool = SimpleNamespace(journal=book, orphans=SimpleNamespace(
        add=lambda link, pgid: orphans.append((link.alias, pgid))))
    return RunScheduler(PROFILE, PhaseBook(PROFILE), pool, None, emit, Tasks(),  # type: ignore[arg-type]
                        parser_factory=None, ping_parser_factory=None,  # type: ignore[arg-type]
                        new_run=None)  # type: ignore[arg-type]


def _context(owner: RunScheduler) -> RunContext:
    """A run's context with only its owner: ending a process asks nothing else of it."""
    return RunContext(None, None, None, owner, None)  # type: ignore[arg-type]


async def test_a_process_ended_on_a_connected_host_is_forgotten_by_the_journal() -> None:
    book, orphans = _Book(), []  # type: ignore[var-annotated]
    link = _Link("s")
    proc = _Proc(link, 42)
    await _context(_owner(book, orphans)).end_process(proc)  # type: ignore[arg-type]
    assert proc.terminated and book.lines == [("ended", "s", "42")] and orphans == []


async def test_a_process_on_a_lost_link_is_handed_over_as_an_orphan_not_forgotten() -> None:
    book, orphans = _Book(), []  # type: ignore[var-annotated]
    link = _Link("s", LinkState.RECONNECTING)
    await _context(_owner(book, orphans)).end_process(_Proc(link, 42))  # type: ignore[arg-type]
    assert orphans == [("s", 42)] and book.lines == []  # still to be ended: not forgotten


def test_the_scheduler_answers_a_run_with_the_parts_that_know() -> None:
    """No journal yet (before connecting): nothing written, nothing raised; a run's events go
    straight to the engine's emit, its phase straight to the phase book's."""
    seen: list[object] = []
    owner = _owner(None, [], seen.append)
    owner.raw_line("A-1", "x")
    owner.started("s", 1, "iperf3 client")
    owner.ended("s", 1)
    assert owner.emit == seen.append  # (the engine's emit itself: no relay)
    book = owner.phase_for.__self__  # type: ignore[attr-defined]
    assert isinstance(book, PhaseBook)
    assert owner.phase_for("A", 0.0, 1.0, 0) == (0, False)
    book.settings_changed(["A"])  # a run prepared before a restarting change: straddles
    assert owner.phase_for("A", 0.0, 1.0, 0) == (0, True)
    assert owner.phase_for("A", 0.0, 1.0, 1) == (0, False)


def test_the_parser_seam_reads_a_parsed_result_without_guessing() -> None:
    empty = Iperf3Result()  # nothing printed: no summary, no error
    assert iperf_summary_of(empty) is None and iperf_error_of(empty) is None
    done = Iperf3Result(summary=IperfSummary(sender_bits_per_second=1e9), error="boom")
    summary = iperf_summary_of(done)
    assert summary is not None and summary.sender_bits_per_second == 1e9
    assert iperf_summary_of(done, reverse=True) is None and iperf_error_of(done) == "boom"
