"""The alternation's live verdicts: each value against the base on each pair, from complete
blocks of stretches (abtui.reports.sequential), and how they are made for a profile."""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass, field

from abtui.core.model import BUILD_KINDS, DEFAULT_MIN_EFFECT, Profile
from abtui.measure.alternate.design import (
    CROSSOVER,
    Alternation,
    arrangements,
    block_length,
    check_design,
    max_blocks,
    new_seed,
    pair_orders,
    positions,
    schedule,
)
from abtui.measure.alternate.stretches import Stretches
from abtui.measure.boots import boot_spread
from abtui.measure.latency_stretch import measure as latency_measure
from abtui.measure.latency_stretch import percentile_of, ping_readings
from abtui.reports import deaths, stats
from abtui.reports.sequential import (
    DELTA_LABEL,
    FIRST_LOOK,
    Assessment,
    Contrasts,
    Family,
    assess,
    before_looks,
    contrasts,
    crossed,
)
from abtui.reports.throughput import counted


@dataclass(slots=True)
class Verdicts:
    """The live verdict of each value against the base on each pair (a crossover: on its two
    pairs as one, `A+B`, each pair in its own order: `orders`), from complete blocks
    (abtui.reports.sequential: the paired rule, Holm over the family); a comparison that
    turned significant keeps that verdict (the rule stopped for it there)."""

    stretches: Stretches
    order: tuple[str, ...]  # the schedule: max_blocks blocks of block_length stretches
    seed: int
    family: Family
    min_effect: float = DEFAULT_MIN_EFFECT
    design: str = "blocks"  # DESIGNS
    builds: bool = False  # a build knob: a boot per run of one value (the table says boots)
    decided: dict[tuple[str, str], Assessment] = field(default_factory=dict)
    _said: dict[tuple[str, str], int] = field(default_factory=dict)
    orders: dict[str, tuple[str, ...]] = field(default_factory=dict)  # pair -> its schedule

    def __post_init__(self) -> None:
        self.orders = pair_orders(self.design, self.order, self.stretches.values,
                                  self.stretches.pairs)

    def values_at(self, index: int) -> dict[str, str]:
        """Each pair's value in stretch `index` of the schedule."""
        return {p: order[index] for p, order in self.orders.items()}

    @property
    def units(self) -> list[tuple[str, tuple[str, ...]]]:
        """What is judged, with its pairs: each pair alone; a crossover's two pairs as one
        (named `A+B`)."""
        pairs = self.stretches.pairs
        if self.design == CROSSOVER:
            return [("+".join(pairs), tuple(pairs))]
        return [(p, (p,)) for p in pairs]

    def _pairs(self, unit: str) -> tuple[str, ...]:
        return dict(self.units)[unit]

    @property
    def keys(self) -> list[tuple[str, str]]:
        return [(u, v) for u, _ in self.units for v in self.stretches.values[1:]]

    @property
    def block(self) -> int:
        return block_length(self.stretches.values)

    def blocks(self) -> int:
        """Complete blocks so far."""
        return self.stretches.closed // self.block

    def _complete(self, pairs: Sequence[str]) -> list[int]:
        """The complete blocks whose every stretch has a sample on each of `pairs`."""
        size = self.block
        return [b for b in range(self.blocks())
                if all(i in self.stretches.taken[p] for p in pairs
                       for i in range(b * size, (b + 1) * size))]

    def ratios(self, unit: str, value: str) -> list[float]:
        """Per complete block with every stretch on the unit's pairs: the mean ln rate of
        `value`'s stretches less the base's (nan for a block with a stretch that moved
        nothing: deaths are judged apart, abtui.reports.deaths); a crossover's, the mean of
        its two pairs'."""
        got = self._contrast(unit, value)
        return [] if got is None else [float(x) for x in got.d]

    def _contrast(self, unit: str, value: str) -> Contrasts | None:
        """The complete blocks' log ratios of `value` against the base on the unit (None
        before any): a pair's own, or a crossover's from its two pairs' (crossed)."""
        pairs = self._pairs(unit)
        blocks = self._complete(pairs)
        if not blocks:
            return None
        k = self.stretches.values.index(value)
        rates, pos = [], []
        for pair in pairs:
            taken = self.stretches.taken[pair]
            rates.append([taken.get(i, math.nan) for i in range(self.stretches.closed)])
            at = positions(self.orders[pair], self.stretches.values)
            pos.append([[at[b][0], at[b][k]] for b in blocks])
        got = crossed(rates[0], rates[1], pos[0], pos[1]) if len(pairs) == 2 \
            else contrasts(rates[0], pos[0])
        return Contrasts(got.d[0], float(got.floor[0]), got.options[0],
                         None if got.tss is None else got.tss[0],
                         tuple(x[0] for x in got.dead), got.carry)

    def dead(self, unit: str, value: str) -> tuple[int, int]:
        """Stretches of `value` on the unit's pairs that moved nothing, and all its
        stretches."""
        got = [r for p in self._pairs(unit) for i, r in self.stretches.taken[p].items()
               if self.orders[p][i] == value]
        return sum(r <= 0 for r in got), len(got)

    def assess(self, key: tuple[str, str], rejected: int) -> Assessment:
        unit, value = key
        got = self._contrast(unit, value)
        dead = self.dead(unit, value)[0] + self.dead(unit, self.stretches.values[0])[0]
        early = before_looks([] if got is None else got.d, self.family.max_runs,
                             self.min_effect, dead)  # (no design made before the first look)
        if early is not None:
            return early
        assert got is not None  # (no blocks: before the first look)
        return assess(got.d, self.family.design(rejected), self.min_effect, got.floor, dead,
                      got.options, got.tss, got.dead, got.carry)

    def current(self) -> dict[tuple[str, str], Assessment]:
        """(pair, value) -> where it stands now; Holm: each significant comparison passes its
        α on to the others, which are judged again at the same look."""
        while True:
            out = {key: self.decided.get(key) or self.assess(key, len(self.decided))
                   for key in self.keys}
            new = {k: a for k, a in out.items() if a.significant and k not in self.decided}
            if not new:
                return out
            self.decided.update(new)

    @property
    def all_significant(self) -> bool:
        self.current()
        return all(k in self.decided for k in self.keys)

    @property
    def at_maximum(self) -> bool:
        return self.stretches.closed >= len(self.order)

    def new_lines(self) -> list[str]:
        """A line for each comparison with a new look (one more complete block); one that is
        decided keeps its look, so it is said once."""
        lines = []
        for key, got in self.current().items():
            if got.n >= FIRST_LOOK and self._said.get(key) != got.n:
                lines.append(self.line(key, got))
            self._said[key] = got.n
        return lines

    def line(self, key: tuple[str, str], got: Assessment) -> str:
        """One comparison's line; its blocks counted as the header counts them (a comparison
        on fewer says why), and the stretches of either value that moved nothing."""
        pair, value = key
        base = self.stretches.values[0]
        (k, n), (kb, _nb) = self.dead(pair, value), self.dead(pair, base)
        dead = [deaths.text(value, k, n, base, kb)] if k or kb else []
        pairs = self._pairs(pair)
        lost = sum(len(self.stretches.lost[p]) for p in pairs)
        empty = sum(len(self.stretches.empty[p]) for p in pairs)
        drifted = sum(len(self.stretches.drifted[p]) for p in pairs)
        # flagged, not left out: only those it counted (a sample taken) are what it stands on
        flagged = sum(len(self.stretches.competing[p] & set(self.stretches.taken[p]))
                      for p in pairs)
        counted = sum(len(self.stretches.taken[p]) for p in pairs)
        notes = [*dead, *([f"{lost} stretch{'es' if lost != 1 else ''} left out: a host's "
                           f"link was lost"] if lost else []),
                 *([f"{drifted} stretch{'es' if drifted != 1 else ''} left out: a setting "
                    "was changed out of band (drift)"] if drifted else []),
                 *([f"{empty} stretch{'es' if empty != 1 else ''} left out: no interval "
                    f"counted in {'them' if empty != 1 else 'it'}"] if empty else []),
                 *([f"⚠ competing traffic in {flagged} of {counted} stretches"] if flagged else [])]
        return f"{pair}: {self.stretches.knob}={value} vs {base}: " \
               f"{got.line(self.blocks(), (value, base))}" + \
               (f" [{'; '.join(notes)}]" if notes else "")

    def summary(self) -> list[str]:
        return [self.line(k, a) for k, a in self.current().items()]

    def table(self) -> list[dict[str, object]]:
        """The verdicts as rows (pair, values compared, Δgeo with its interval, verdict,
        blocks, seed, the design): for a report's table of the alternation. A build knob's
        rows add the boots of each value and the boot-to-boot spread beside the within-boot
        spread (abtui.measure.boots)."""
        rows: list[dict[str, object]] = []
        base = self.stretches.values[0]
        for (pair, value), got in self.current().items():
            d = got.delta
            verdict = "significant (deaths)" if got.by_deaths else "significant" \
                if got.significant else "no difference" if got.within else "undecided"
            row: dict[str, object] = {
                "pair": pair, "knob": self.stretches.knob, "value": value, "base": base,
                "delta": DELTA_LABEL, "pct": d.pct if d else None,
                "low": d.low if d else None, "high": d.high if d else None,
                "verdict": verdict, "blocks": got.n, "dead": self.dead(pair, value)[0],
                "seed": self.seed, "design": self.design}
            if self.builds:
                spread = boot_spread([(self.stretches.taken[p], self.orders[p],
                                       self.stretches.within.get(p, {}))
                                      for p in self._pairs(pair)], self.stretches.closed)
                row |= {"boots": spread.boots.get(value, 0),
                        "base_boots": spread.boots.get(base, 0),
                        "boot_sd": spread.between, "within_sd": spread.within}
            rows.append(row)
        return rows

    def family_line(self) -> str:
        """How the family's error is controlled (for the session's note)."""
        k = self.family.size
        return f"family-wise α {self.family.alpha:g} over {k} comparison" \
               f"{'s' if k != 1 else ''} (Holm: α/{k} each until one is significant)"


def verdicts_for(profile: Profile, alt: Alternation, stretch_s: float | None = None,
                 alpha: float | None = None, pairs: Sequence[str] | None = None,
                 metric: str | None = None, min_effect: float | None = None) -> Verdicts:
    """The verdicts of an alternation on the pairs its knob touches (`pairs`: only those of
    them); a stretch lasts `alt.every` seconds, or `stretch_s` (a plan run's length) when
    that is None. The order is drawn from `alt.seed` (a new seed when None). `alpha`: the
    family's α when it is a share of a larger one's (a bisection's step). `metric` (None:
    the alternation's): `throughput`, `rtt` (the stretches' inverse RTT from ping:
    `latency_stretch.ping_readings`) or `rtt p99` (a percentile: abtui.measure.latency_stretch).
    `min_effect`: the smallest Δ that matters (None: the profile's)."""
    knob = profile.knob(alt.knob)
    chosen = [p for p in profile.pairs if (not knob.pairs or p.label in knob.pairs)
              and (pairs is None or p.label in pairs)]
    labels = tuple(p.label for p in chosen)
    check_design(alt.design, alt.values, labels)
    metric = metric or alt.metric
    stretches = Stretches(alt.knob, alt.values, labels,
                          min_seconds=(alt.every or stretch_s or 0.0) / 2,
                          hosts={p.label: (p.sender, p.receiver) for p in chosen},
                          source=ping_readings(profile.test.ping_interval) if metric == "rtt"
                          else counted)
    if percentile_of(metric) is not None:
        stretches.source, stretches.stat = latency_measure(profile.test, metric)
    seed = alt.seed if alt.seed is not None else new_seed()
    blocks = max_blocks(alt.values, alt.max_runs)
    units = 1 if alt.design == CROSSOVER else len(labels)
    family = Family(units * (len(alt.values) - 1), blocks,
                    alpha=stats.ALPHA if alpha is None else alpha,
                    arrangements=arrangements(alt.values))
    return Verdicts(stretches, schedule(alt.values, blocks, seed), seed, family,
                    profile.min_effect if min_effect is None else min_effect, alt.design,
                    knob.kind in BUILD_KINDS)
