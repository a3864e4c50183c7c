"""The latency alternation's measured rates hold on a smaller run of the same simulation
(tests/bench/latency_alt_sim.py, docs/sequential.md "Latency in the alternation"): no more
false claims than the throughput rule's budget allows, and sockperf's p99 finds an RTT +10 %."""

from __future__ import annotations

import pytest

from tests.bench import latency_alt_sim as sim
from tests.bench.seqsim import Scenario

# a fuzzer or a simulation: seconds of CPU, run by `make test`, not by `make check`
pytestmark = pytest.mark.sim


def test_false_claims_within_the_budget_and_power_on_sockperf_s_tail() -> None:
    for sc in (sim.NULLS[0], sim.NULLS[3]):  # independent 3 %, periodic 3 stretches
        for stat, n in (("p50", 50), ("p99", 7500)):
            claimed, _ = sim.rates(sc, stat, n, 800, seed=7)
            assert claimed < 0.075, (sc.name, stat, n, claimed)
    found, stretches = sim.rates(Scenario("noise", sd=0.03), "p99", 7500, 300,
                                 rtt_change=0.10, seed=7)
    assert found > 0.95 and stretches <= 16
    weak, _ = sim.rates(Scenario("noise", sd=0.03), "p99", 100, 300, rtt_change=0.10, seed=7)
    assert weak < 0.4  # a p99 of 100 pings: as docs/sequential.md says, too few to judge
