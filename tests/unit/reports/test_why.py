"""Why: each frame's change of share between values with an interval over blocks (blocks as
fixed effects), what it calls moved, and the flame graph and report built on it."""

from __future__ import annotations

import random
import xml.dom.minidom

import pytest

from abtui.reports import flame, why
from abtui.reports.why import Block

BASE = {"t;main;work;copy": 500, "t;main;work;hash": 300, "t;main;idle": 200}


def _draw(weights: dict[str, int], n: int, rng: random.Random, jitter: float) -> dict[str, int]:
    """n samples from `weights`, each stack's weight moved by a stretch's own noise."""
    noisy = {k: max(1e-6, w * (1 + rng.gauss(0, jitter))) for k, w in weights.items()}
    keys = list(noisy)
    got = rng.choices(keys, weights=[noisy[k] for k in keys], k=n)
    out: dict[str, int] = {}
    for k in got:
        out[k] = out.get(k, 0) + 1
    return out


def _blocks(value: dict[str, int], rng: random.Random, n: int = 6) -> list[Block]:
    out: list[Block] = []
    for _ in range(n):
        order = rng.choice(["AABB", "ABAB", "ABBA", "BAAB", "BABA", "BBAA"])
        out.append([(c == "B", _draw(value if c == "B" else BASE, 2000, rng, 0.05))
                    for c in order])
    return out


def test_shares_count_self_children_and_thread() -> None:
    got = why.shares({"t;a;b": 3, "u;a": 1})
    assert got["self"] == {"b": 75.0, "a": 25.0}
    assert got["children"] == {"a": 100.0, "b": 75.0}
    assert got["thread"] == {"t": 75.0, "u": 25.0}


def test_a_real_shift_is_moved_with_its_sign_and_an_interval() -> None:
    shifted = {"t;main;work;copy": 400, "t;main;work;hash": 400, "t;main;idle": 200}
    rows = why.compare(_blocks(shifted, random.Random(1)))
    hash_self = next(m for m in rows if m.frame == "hash" and m.kind == "self")
    assert hash_self.moved and hash_self.low is not None and hash_self.low > 0
    assert 5 < hash_self.delta < 15  # 30 % -> 40 % of samples: +10 points
    copy_self = next(m for m in rows if m.frame == "copy" and m.kind == "self")
    assert copy_self.moved and copy_self.high is not None and copy_self.high < 0
    idle = next(m for m in rows if m.frame == "idle" and m.kind == "self")
    assert not idle.moved


@pytest.mark.sim  # a simulation of the rule, drawn many times (`make test` runs it)
def test_an_a_a_comparison_moves_nothing_in_most_seeds() -> None:
    claimed = sum(any(m.moved for m in why.compare(_blocks(BASE, random.Random(seed))))
                  for seed in range(40))
    assert claimed <= 4  # the family's 5 %, with room for 40 draws


def test_too_few_blocks_give_no_interval_and_move_nothing() -> None:
    shifted = {"t;main;work;copy": 100, "t;main;work;hash": 700, "t;main;idle": 200}
    rows = why.compare(_blocks(shifted, random.Random(2), n=2))
    assert rows and all(m.low is None and not m.moved for m in rows)
    assert "no interval" in why.interval_text(why.rows("A", "h", "B", "A", rows)[0])


def test_the_flame_graph_is_svg_coloured_only_where_moved() -> None:
    shifted = {"t;main;work;copy": 400, "t;main;work;hash": 400, "t;main;idle": 200}
    moved = why.compare(_blocks(shifted, random.Random(3)))
    rows = why.rows("A", "h", "B", "A", moved)
    svg = flame.svg({"t;main;work;hash": 40, "t;main;idle": 20, "t;main;<b>&x": 1}, rows,
                    "A h: B vs A <x>")
    doc = xml.dom.minidom.parseString(svg)  # well-formed: hostile names escaped
    fills = {r.getAttribute("fill") for r in doc.getElementsByTagName("rect")}
    assert flame.GREY in fills and any(f.startswith("rgb(230") for f in fills)
    titles = [t.firstChild.data for t in doc.getElementsByTagName("title") if t.firstChild]
    assert any(t.startswith("hash:") and "moved" in t and "[" in t for t in titles)


def test_a_counter_that_moves_is_named_with_its_change_in_percent() -> None:
    rng = random.Random(4)
    blocks = []
    for _ in range(5):
        order = rng.choice(["AABB", "ABAB", "ABBA", "BAAB", "BABA", "BBAA"])
        blocks.append([(c == "B", {"softnet.processed": (2000.0 if c == "B" else 1000.0)
                                   * (1 + rng.gauss(0, 0.05)),
                                   "nstat.TcpRetransSegs": 10 * (1 + rng.gauss(0, 0.3))})
                       for c in order])
    moved = {m.counter: m for m in why.compare_counters(blocks)}
    assert moved["softnet.processed"].moved and 80 < moved["softnet.processed"].pct < 120
    assert not moved["nstat.TcpRetransSegs"].moved


def test_the_receive_path_s_batching_is_a_ratio_of_two_rates() -> None:
    """GRO on a tunnel's receive path: the stack takes fewer, larger packets (IpInReceives
    counts a merged packet once, IpExtInNoECTPkts its segments), and each NET_RX round hands
    up what it holds; without GRO every segment is its own packet (1.0). A side that did not
    move gives no ratio."""
    merged = {"softnet.processed": 300.0, "softirq.NET_RX": 100.0,
              "nstat.IpInReceives": 250.0, "nstat.IpExtInNoECTPkts": 900.0,
              "nstat.IpExtInECT0Pkts": 100.0}
    assert why.ratios(merged) == {"per.packets_per_net_rx": 3.0,
                                  "per.segments_per_ip_packet": 4.0}
    plain = {"softnet.processed": 100.0, "softirq.NET_RX": 100.0,
             "nstat.IpInReceives": 1000.0, "nstat.IpExtInNoECTPkts": 1000.0}
    assert why.ratios(plain) == {"per.packets_per_net_rx": 1.0,
                                 "per.segments_per_ip_packet": 1.0}
    assert why.ratios({"softnet.processed": 5.0, "softirq.NET_RX": 0.0}) == {}


def test_the_profiles_own_thread_is_left_out_of_the_shares_and_told_apart() -> None:
    stacks = {"perf;perf_mmap__push": 50, "iperfN;tcp_sendmsg": 30, "kworker/N:N;gcm": 20}
    got = why.shares(stacks)
    assert got["thread"] == {"iperfN": 60.0, "kworker/N:N": 40.0}  # of the 50 others
    assert "perf_mmap__push" not in got["children"]
