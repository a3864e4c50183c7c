"""The table each procedure's community posts, chosen by the profile's `[report] layout`, as
the report's first table (the shapes: docs/reports.md):

- `sweep` (ix enable_aim): kernels (pairs) as groups, the knob's values in the profile's order,
  the host's own value marked `(default)`; the base pair's rows name their base (`base0`), every
  other pair's Δ is vs the base pair at the same value; a `[report] reference` pair appears
  once, at its host's own setting (`default`), with `-`. Then latency (min/avg/max, stddev, Δ
  of the runs' mean RTT) in the same shape, and the watches (interrupt rate per queue).
- `before-after` (softirq crypto): per tunnel and direction (profile order), the base pair's and
  the other pairs' throughput and the speedup in percent.
- `builds` (WireGuard GRO): per build, throughput and Δ vs the first, then iperf3's own `[SUM]`
  sender (with retransmits) and receiver figures.

A cell is a pair's phases whose configuration has the cell's values; its figure, Δ, interval
and verdict are the generic table's (reports.stats.cell, reports.formatting): the mean of its
run-level values, never a second definition. Configurations are named as the profile names
them (`ipsec (lab: vxlan)` when `abtui run --lab` ran another), and the lab's translations are
listed after the tables.

Every first table is made by `table.first_table` from rows of *slots* (a pair's cell); the
column groups shown per slot are `table.MEASURES` (plus a layout's own): add a group there and
every layout's first table shows it.

The modules: `sections` (the entry: a session's layout, its sections, the lab's translations),
`table` (cells, slots and the first-table builder every layout shares), then one module per
layout: `sweep`, `before_after`, `builds`; the profile's order and names are abtui.reports.naming's.
"""
