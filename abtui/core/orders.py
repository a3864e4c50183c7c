"""The six balanced orders of two values in a block of four stretches (0 the base, 1 the
other), each as likely: the alternation's schedule draws them and the sequential rule weighs
each block under every one of them. Here, below both, so the schedule needs no numpy."""

from __future__ import annotations

BALANCED = ((0, 0, 1, 1), (0, 1, 0, 1), (0, 1, 1, 0), (1, 0, 0, 1), (1, 0, 1, 0), (1, 1, 0, 0))
