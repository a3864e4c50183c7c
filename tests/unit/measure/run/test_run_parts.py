"""A run's parts through their public methods: the owner it reports to (every process group
started and ended written down; one left on a lost link handed over as an orphan) and the
typed parser seam."""

from __future__ import annotations

from abtui.core.model import IperfSummary, LinkState
from abtui.measure.ports import iperf_error_of, iperf_summary_of
from abtui.measure.run.context import OwnerOf, RunContext
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


def _owner(book: _Book, orphans: list[tuple[str, int]]) -> OwnerOf:
    return OwnerOf(lambda e: None, lambda *_: (0, False), book=book,
                   orphan=lambda link, pgid: orphans.append((link.alias, pgid)))


def _context(owner: OwnerOf) -> RunContext:
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


def test_an_owner_given_nothing_optional_takes_every_call() -> None:
    seen: list[object] = []
    owner = OwnerOf(seen.append, lambda label, t, d: (7, label == "A"))
    owner.raw_line("A-1", "x")
    owner.started("s", 1, "iperf3 client")
    owner.ended("s", 1)
    owner.orphaned(_Link("s"), 1)  # type: ignore[arg-type]
    assert owner.phase_for("A", 0.0, 1.0) == (7, True) and seen == []


def test_the_parser_seam_reads_a_parsed_result_without_guessing() -> None:
    empty = Iperf3Result()  # nothing printed: no summary, no error
    assert iperf_summary_of(empty) is None and iperf_error_of(empty) is None
    done = Iperf3Result(summary=IperfSummary(sender_bits_per_second=1e9), error="boom")
    summary = iperf_summary_of(done)
    assert summary is not None and summary.sender_bits_per_second == 1e9
    assert iperf_summary_of(done, reverse=True) is None and iperf_error_of(done) == "boom"
