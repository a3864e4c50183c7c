"""A request/response load's observations as RR events: one per interval of the run and
phase, dated when the interval ended, nothing after the run was retired; and sockperf's
commands as the run starts them."""

from __future__ import annotations

import shlex

import pytest

from abtui.core.model import TestOptions as Options
from abtui.measure.run.rr import interval_events
from abtui.parse.sockperf import SockperfResult
from abtui.remote.iperf_cmd import (
    SOCKPERF_MAX_S,
    parse_tools,
    sockperf_client_argv,
    sockperf_server_argv,
)

T0 = 1_000_000.0


class _Run:
    """A run whose phase changes at T0 + 4.5 (phase 1 → 2), retired at `retired`."""

    def __init__(self, retired: float | None = None) -> None:
        self.retired_at = retired

    def phase(self, received: float, duration: float) -> tuple[int, bool]:
        return (1 if received < T0 + 4.5 else 2), False


def _result() -> SockperfResult:
    # 10 observations a second from 2.5 s to 6.4 s on sockperf's clock, 0.1 ms + 0.01 ms * i
    obs = [(2.5 + 0.1 * i, 0.1 + 0.01 * i) for i in range(40)]
    return SockperfResult(observations=obs, complete=True)


def test_one_event_per_interval_and_phase_dated_at_its_end() -> None:
    out = interval_events(_result(), "A-1", T0, 1.0, _Run())
    keys = [(p.start, p.end, p.phase) for p, _ in out]
    assert keys == [(2.0, 3.0, 1), (3.0, 4.0, 1), (4.0, 5.0, 1), (4.0, 5.0, 2),
                    (5.0, 6.0, 2), (6.0, 7.0, 2)]
    assert [t for _, t in out] == [T0 + 3, T0 + 4, T0 + 5, T0 + 5, T0 + 6, T0 + 7]
    assert sum(p.n for p, _ in out) == 40
    first = out[0][0]
    assert first.n == 5 and first.p50_ms == pytest.approx(0.12)  # 0.10 … 0.14
    assert first.p90_ms is None  # 5 observations make no p90 (needs 10)
    assert sum(c for _, c in first.bins) == 5 and first.max_ms == pytest.approx(0.14)
    full = out[1][0]
    assert full.n == 10 and full.p90_ms == pytest.approx(0.23)


def test_nothing_after_the_run_was_retired() -> None:
    out = interval_events(_result(), "A-1", T0, 1.0, _Run(retired=T0 + 4.0))
    assert sum(p.n for p, _ in out) == 15 and max(p.end for p, _ in out) == 4.0


def test_the_commands_a_run_starts() -> None:
    opts = Options(sockperf="under-load", sockperf_mps=500, sockperf_tcp=False,
                       bind="198.18.0.1")
    argv = sockperf_client_argv(opts, "198.19.1.2", 11201, 10)
    assert argv[:7] == ["sockperf", "under-load", "-i", "198.19.1.2", "-p", "11201", "-t"]
    assert argv[7] == "40"  # its own bound past the run: it is interrupted at the run's end
    assert "--reply-every" in argv and "--tcp" not in argv
    assert argv[argv.index("--mps") + 1] == "500" and "--full-rtt" in argv
    assert argv[argv.index("--full-log") + 1] == "/dev/fd/3"
    assert argv[argv.index("--client_ip") + 1] == "198.18.0.1"
    pp = sockperf_client_argv(Options(sockperf="ping-pong"), "t", 1, 0)
    assert pp[1] == "ping-pong" and "--tcp" in pp and "--reply-every" not in pp
    assert pp[pp.index("-t") + 1] == str(SOCKPERF_MAX_S)  # continuous: until interrupted
    assert shlex.join(sockperf_server_argv(11201, True)) == "sockperf server -p 11201 --tcp"


def test_the_tools_question_says_whether_sockperf_is_there() -> None:
    assert parse_tools("iperf 3.12\n__abtui_sockperf\n").sockperf
    assert not parse_tools("iperf 3.12\n__abtui_perf\n").sockperf


def test_check_s_line_on_a_host_s_sockperf() -> None:
    from abtui.remote.iperf_cmd import sockperf_finding

    assert sockperf_finding("h", "sockperf, version 3.7-no.git\n") == (
        True, "h: sockperf present (3.7-no.git)")
    ok, line = sockperf_finding("h", "")
    assert not ok and line.startswith("h: sockperf is missing: install it (the sockperf "
                                      "package)") and "\n" not in line


def test_a_later_chunk_is_placed_on_the_run_s_intervals() -> None:
    """A chunk started 10.3 s after the release: its observations' times count from its own
    start, their intervals from the run's release."""
    out = interval_events(_result(), "A-1", T0, 1.0, _Run(), anchor=T0 + 10.3)
    # sent at 12.8 … 16.7 s into the run (all in phase 2)
    assert [(p.start, p.phase) for p, _ in out] == [(12.0, 2), (13.0, 2), (14.0, 2),
                                                   (15.0, 2), (16.0, 2)]
    assert sum(p.n for p, _ in out) == 40 and out[0][1] == T0 + 13
