"""One host a knob applies to (its data device and pair): what the knob layer and the build
switcher are both given."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True, slots=True)
class Target:
    """One host (and its data device) a knob applies to, and the pair it belongs to."""

    host: str
    device: str | None
    pair: str
