"""What a plan's matrix names besides knobs, in one place for every layer: `direction` (the
runs' directions: tx, rx = iperf3 -R, bidir) and `tunnel` (the profile's tunnel types, when no
knob of that name exists)."""

from __future__ import annotations

DIRECTION = "direction"
TUNNEL = "tunnel"
DIRECTIONS = ("tx", "rx", "bidir")  # every direction a profile may list
DEFAULT_DIRECTIONS = ("tx", "rx")  # a matrix's `direction` when the plan lists none
# how tables and progress lines name each direction
DIRECTION_NAMES = {"tx": "TX", "rx": "RX (-R)", "bidir": "bidir"}
