"""The icount lane's bench (tests/bench/bench_icount.py): what it reads from the guests and how
it turns boots into spreads and a power, without a guest (the lanes themselves run in
`make bench`)."""

from __future__ import annotations

import json
import math

import pytest

from tests.bench import bench_icount as bi
from tests.bench import judge as j


def _run(sent: float, received: float) -> str:
    return json.dumps({"end": {"sum_sent": {"bits_per_second": sent},
                               "sum_received": {"bits_per_second": received}}})


def test_the_sender_runs_a_warm_up_then_each_counted_run_followed_by_its_marker() -> None:
    cmd = bi.readings_command("198.19.1.2", 3, 3, 1)
    assert cmd.count("iperf3 -c 198.19.1.2") == 4
    assert cmd.count("; echo @@@") == 3
    assert "-t 1 >/dev/null" in cmd  # the warm-up is not read
    assert "-O 1" in cmd


def test_readings_keep_each_runs_two_figures_and_name_a_failed_run() -> None:
    out = "@@@\n".join([_run(2e8, 1.9e8), _run(2.1e8, 2e8), "not json at all",
                        json.dumps({"error": "control socket has closed unexpectedly"})])
    sent, received, errors = bi.parse_readings(out + "@@@\n")
    assert sent == [2e8, 2.1e8]
    assert received == [1.9e8, 2e8]
    assert len(errors) == 2 and "control socket" in errors[1]


def test_spreads_are_the_boots_module_s_within_and_between() -> None:
    steady = [bi.Boot("cold", 1, [100.0, 100.0]), bi.Boot("power", 1, [110.0, 110.0])]
    within, between = bi.spreads(steady)
    assert within == pytest.approx(0.0)
    assert between == pytest.approx(100 * abs(math.log(110) - math.log(100)) / math.sqrt(2),
                                    rel=1e-3)
    noisy = [bi.Boot("cold", 1, [90.0, 110.0]), bi.Boot("kexec", 1, [95.0, 105.0])]
    within, between = bi.spreads(noisy)
    assert within is not None and within > 5
    assert between == pytest.approx(0.0, abs=0.5)


def test_power_falls_with_the_boot_to_boot_spread() -> None:
    quiet, _ = bi.power(1.0, runs=200)
    loud, _ = bi.power(30.0, runs=200)
    assert quiet > 0.9 > 0.3 > loud


def test_every_record_of_both_lanes_has_a_budget_entry_and_the_icount_lane_is_budgeted(
) -> None:
    for lane in bi.LANES:
        for name in bi.names(lane):
            assert name in j.BUDGETS, name
    assert all(j.BUDGETS[n] for n in bi.names("icount")[1:])
    assert not any(j.BUDGETS[n] for n in bi.names("plain"))
