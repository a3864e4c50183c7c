"""A profile's plan, expanded: every configuration of the matrix, repeated, in run order.

The matrix names knobs (each contributes its values), `direction` (the plan's directions: tx,
rx = iperf3 -R, bidir) and `tunnel` (the profile's tunnel types, when no knob of that name
exists). Unless the plan says not to shuffle (then each configuration's repetitions run together,
as listed), each repetition is a block of every configuration
once, in an order drawn from a seeded generator: every configuration is measured once before any
is measured again (drift falls on all alike), no order repeats by design, so nothing periodic on
the hosts can line up with one configuration, and a session can be replayed in the same order
from its seed.
"""

from __future__ import annotations

import itertools
import random
from collections.abc import Sequence
from dataclasses import dataclass

from abtui.core.dimensions import DEFAULT_DIRECTIONS, DIRECTION, TUNNEL
from abtui.core.errors import BadInput
from abtui.core.model import Profile

# what each direction sets in the test options
DIRECTION_OPTIONS = {"tx": {"reverse": False, "bidir": False},
                     "rx": {"reverse": True, "bidir": False},
                     "bidir": {"reverse": False, "bidir": True}}


@dataclass(frozen=True, slots=True)
class PlanStep:
    """One run of every pair together under `config` (matrix entry name → value)."""

    index: int
    config: dict[str, str]
    repetition: int
    # an alternation's step after the first: a new stretch, set again even when its value is
    # unchanged (the hosts clear what the last runs left; a build's hosts boot it again: the
    # stretch is one boot)
    again: bool = False


def dimensions(profile: Profile) -> list[tuple[str, tuple[str, ...]]]:
    dims: list[tuple[str, tuple[str, ...]]] = []
    knob_names = {k.name for k in profile.knobs}
    matrix = list(profile.plan.matrix)
    if profile.plan.directions and DIRECTION not in matrix:
        matrix.append(DIRECTION)
    for name in matrix:
        if name in knob_names:
            values = profile.knob(name).values
        elif name == DIRECTION:
            values = tuple(profile.plan.directions) or DEFAULT_DIRECTIONS
            bad = [v for v in values if v not in DIRECTION_OPTIONS]
            if bad:
                raise BadInput(f"plan.directions: {bad[0]!r} is not one of "
                               f"{', '.join(DIRECTION_OPTIONS)}")
        elif name == TUNNEL:
            values = tuple(profile.tunnels)
        else:
            raise BadInput(f"plan.matrix: {name!r} is neither a knob of the profile nor "
                           f"{DIRECTION!r} or {TUNNEL!r}")
        if not values:
            raise BadInput(f"plan.matrix: {name!r} has no values")
        dims.append((name, tuple(values)))
    return dims


def expand(profile: Profile, seed: int | None = None) -> list[PlanStep]:
    """Every step of the plan, in the order it runs; `seed` when the plan gives none."""
    plan = profile.plan
    if plan.repetitions < 1:
        raise BadInput("plan.repetitions must be at least 1")
    dims = dimensions(profile)
    names = [n for n, _ in dims]
    configs = [dict(zip(names, combo, strict=True))
               for combo in itertools.product(*(v for _, v in dims))]
    if not plan.shuffle:  # as listed: each configuration's repetitions together
        items = [(config, rep) for config in configs for rep in range(1, plan.repetitions + 1)]
        return [PlanStep(i, config, rep) for i, (config, rep) in enumerate(items)]
    rng = random.Random(plan.seed if plan.seed is not None else seed)
    items = []
    for rep in range(1, plan.repetitions + 1):
        block = list(configs)
        rng.shuffle(block)
        items += [(config, rep) for config in block]
    return [PlanStep(i, config, rep) for i, (config, rep) in enumerate(items)]


def plan_steps(knob: str, order: Sequence[str], block: int) -> list[PlanStep]:
    """Per run in plan mode: one run per entry of the schedule (`block` values a block);
    every stretch after the first is set again, changed or not (`again`: its hosts clear
    what the last run left; a build knob's boot its build)."""
    return [PlanStep(i, {knob: value}, i // block + 1, again=i > 0)
            for i, value in enumerate(order)]
