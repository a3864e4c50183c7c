"""Auto-alternation: one knob flipped between its values on a continuous run (or one plan-mode
run per stretch), in blocks whose order is drawn at random, each stretch a run-level sample,
and the live verdict of the sequential rule (abtui.reports.sequential).

The schedule: blocks drawn from a seeded generator. Two values: a block is four stretches,
each value twice, in one of the six balanced orders (AABB ABAB ABBA BAAB BABA BBAA); three
or more: a block is one permutation. Either way a block can place a compared value against
the base in six equally likely ways, so the randomisation allows a claim after three blocks
(twelve stretches) where blocks of AB or BA needed seven. A strict ABAB… schedule aliases
with anything periodic on the hosts (a timer loading the CPU every other stretch made an A/A
alternation "significant" 93 % of the time); with the order drawn per block, interference of
any period falls on each value by the draw. The seed is said, recorded in the session (a mark)
and given back with `abtui run --seed N` to replay the same order.

A stretch is what was measured between two boundaries of the schedule, timed the same way at
every boundary whatever the order (drive): its counted intervals (in the pair's direction,
not omitted, begun after it opened) make its value, bits ÷ seconds, as every segment
(abtui.reports.throughput). A stretch that moved nothing counts against its value
(Stretches); one cut short by a stop, or whose pair lost a host's link, is left out.

The design (`--design`): `blocks` sets one value on every pair at once, each pair judged on
its own (Holm over the pairs); `crossover` takes exactly two pairs and two values: the first
pair runs the drawn order and the second its mirror (the other value in every stretch), so at
every boundary both pairs switch together, each to another value (one call to the engine,
`set_values`: a kernel switch boots both pairs' hosts in parallel). One verdict is judged on
the mean of the two pairs' block log ratios (sequential.crossed): neither a pair's hardware
nor a disturbance shared in time (on one value of one pair and the other of the other at once)
is taken for the value.

`Stretches` and `Verdicts` are plain subscribers (the console uses them too); `drive` is the
headless loop that flips on a clock and stops by the rule, a time limit or the maximum.

The wing's modules: `design` (pure, no numpy: a command checks its options without loading the
statistics), `stretches`, `verdicts`, `drive` (the headless loop) and `live` (the console's
alternation). This package's own module imports nothing.
"""
