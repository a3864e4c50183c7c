"""The alternation's design, pure (no numpy: commands import it to check their options):
what to alternate (`Alternation`), the designs (`blocks`, `crossover`), the schedule of
blocks drawn from a seed, each pair's order, the stretches a block compares, and the
plan-mode runs of a schedule."""

from __future__ import annotations

import random
from collections.abc import Sequence
from dataclasses import dataclass

from abtui.core.errors import BadInput
from abtui.core.model import DEFAULT_MAX_RUNS, Profile
from abtui.core.orders import BALANCED


@dataclass(frozen=True, slots=True)
class Alternation:
    """What to alternate and when to stop."""

    knob: str
    values: tuple[str, ...]  # the first is the base
    every: float | None  # seconds a value is held; None: one plan-mode run per stretch
    max_runs: int = DEFAULT_MAX_RUNS  # stretches per value at most
    until_verdict: bool = False  # stop when every comparison is significant
    seed: int | None = None  # the schedule's seed; None: one is drawn
    # seconds dropped at every boundary after the host confirmed the value (changed or not),
    # before the next stretch's clock starts: a restarted run's set-up and ramp fall in it
    window: float = 0.0
    design: str = "blocks"  # DESIGNS: one value on every pair, or crossed over two pairs
    # what a stretch measures: throughput, or latency (abtui.measure.latency_stretch.METRICS)
    metric: str = "throughput"


# `--design`: every pair the same value at once (each judged alone), or two pairs crossed over
DESIGNS = ("blocks", "crossover")


CROSSOVER = "crossover"


def check_design(design: str, values: Sequence[str], pairs: Sequence[str]) -> None:
    """BadInput unless `design` can run these values on these pairs: a crossover takes two
    values on exactly two pairs."""
    if design not in DESIGNS:
        raise BadInput(f"--design {design}: not a design; expected one of {', '.join(DESIGNS)}")
    if design != CROSSOVER:
        return
    if len(values) != 2:
        raise BadInput(f"--design crossover: two values are crossed over two pairs, "
                       f"not {len(values)} ({', '.join(values)})")
    if len(pairs) != 2:
        raise BadInput(f"--design crossover: the knob's pairs must be exactly two, not "
                       f"{len(pairs)} ({', '.join(pairs) or 'none'})")


def parse_alternate(text: str, profile: Profile) -> tuple[str, tuple[str, ...]]:
    """`KNOB=V1,V2[,…]`, or `KNOB` alone for the profile's values of it."""
    name, sep, listed = text.partition("=")
    knobs = [k.name for k in profile.knobs]
    if name not in knobs:
        raise BadInput(f"--alternate {text}: the profile has no knob {name!r} "
                       f"(it has: {', '.join(knobs) or 'none'})")
    values = tuple(v.strip() for v in listed.split(",")) if sep else profile.knob(name).values
    if len(values) < 2 or any(not v for v in values) or len(set(values)) < len(values):
        raise BadInput(f"--alternate {text}: give two or more different values, "
                       f"KNOB=V1,V2 (the first is the base)")
    return name, tuple(values)


def per_value(values: Sequence[object]) -> int:
    """Stretches of each value in one block: two for two values, else one."""
    return 2 if len(values) == 2 else 1


def block_length(values: Sequence[object]) -> int:
    return per_value(values) * len(values)


def arrangements(values: Sequence[object]) -> int:
    """Equally likely ways a block can place one compared value against the base, whatever
    the other values do: six for two values (the balanced orders); two in a permutation (the
    two swapped or not, the others' places given: a third value may differ). The
    randomisation floor of a look (sequential.attainable)."""
    m = len(values)
    return len(BALANCED) if m == 2 else 2


def max_blocks(values: Sequence[object], max_runs: int) -> int:
    """The blocks `max_runs` stretches of each value make (at least two: the first look)."""
    return max(2, max_runs // per_value(values))


def schedule(values: Sequence[str], blocks: int, seed: int) -> tuple[str, ...]:
    """`blocks` blocks, each block's order drawn from `seed`: for two values one of the six
    balanced orders of four stretches, for more a permutation."""
    rng = random.Random(seed)
    out: list[str] = []
    for _ in range(blocks):
        if len(values) == 2:
            out += [values[k] for k in BALANCED[rng.randrange(len(BALANCED))]]
        else:
            block = list(values)
            rng.shuffle(block)
            out += block
    return tuple(out)


def mirror(order: Sequence[str], values: Sequence[str]) -> tuple[str, ...]:
    """Two values' order with the other value in every stretch (a crossover's second pair):
    a balanced order's mirror is another balanced order (AABB ↔ BBAA, ABAB ↔ BABA, ABBA ↔
    BAAB)."""
    a, b = values
    return tuple(b if v == a else a for v in order)


def pair_orders(design: str, order: Sequence[str], values: Sequence[str],
                pairs: Sequence[str]) -> dict[str, tuple[str, ...]]:
    """Each pair's schedule: the drawn `order` on every pair (blocks); a crossover's first
    pair the order, the second its mirror."""
    if design == CROSSOVER:
        first, second = pairs
        return {first: tuple(order), second: mirror(order, values)}
    return {p: tuple(order) for p in pairs}


def positions(order: Sequence[str], values: Sequence[str]) -> list[list[tuple[int, ...]]]:
    """Per complete block of the schedule, the indices of each value's stretches (in
    `values`' order): the stretches a block's log ratio compares."""
    size = block_length(values)
    out = []
    for b in range(len(order) // size):
        at: dict[str, list[int]] = {v: [] for v in values}
        for i in range(b * size, (b + 1) * size):
            at[order[i]].append(i)
        out.append([tuple(at[v]) for v in values])
    return out


def new_seed() -> int:
    return random.SystemRandom().randrange(2**31)


def order_line(knob: str, seed: int, values: Sequence[str], design: str = "blocks",
               pairs: Sequence[str] = ()) -> str:
    """The line (and session mark) that records the schedule's seed (and a crossover's
    pairs: which one ran the mirror)."""
    kind = "four stretches in one of the six balanced orders of two values" \
        if len(values) == 2 else "a random permutation"
    if design == CROSSOVER:
        first, second = pairs
        return f"alternation order: {knob} crossed over {first} and {second}: {first} in " \
               f"blocks of {kind}, {second} the mirror (the other value in every stretch), " \
               f"seed {seed} (replay: --seed {seed} --design crossover)"
    return f"alternation order: {knob} in blocks of {kind}, seed {seed} (replay: --seed {seed})"


def change_window(profile: Profile, every: float) -> float:
    """The seconds an alternation drops at every boundary: the intervals iperf3 omits at a
    (re)start and two intervals more (a restarted run's set-up), at least one second, at
    most half of `every`."""
    test = profile.test
    return min(max(1.0, test.omit + 2 * test.interval), every / 2)


# how long a stop waits for a flip under way before it says the alternation ended anyway
# (each remote command of a flip is bounded, 10 s, but a flip chains several: a stop key must
# not wait on them unseen); the flip still completes, in the background, and nothing follows it
STOP_WAIT_S = 8.0
