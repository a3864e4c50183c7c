"""A phase's configuration and its label: the one rule the console, exports and compare share.

A configuration is what the hosts had while a phase was measured, one value per knob of the
profile: read from the hosts on connect (abtui.measure.engine.knobs), then changed only by
flips that were applied and read back. Two phases with the same values are the same
configuration, however they got there (flipping back to the host's own value returns to it).

Its label names only what differs from the session's *initial* configuration (the base pair's,
as read on connect): `initial` for that one, `rmem=4096 16384 16384, cc=reno` for others. Two
different configurations never share a label (each differs from the baseline somewhere the
other does not, or with another value).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

INITIAL = "initial"
UNKNOWN = "?"  # a knob whose hosts could not say
MIXED_SEP = "/"  # sender/receiver when a pair's hosts have different values


def config_id(config: Mapping[str, Any]) -> str:
    """A configuration as one stable key: `knob=value, knob=value`, sorted by knob name."""
    if not config:
        return "(defaults)"
    return ", ".join(f"{k}={config[k]}" for k in sorted(config))


def config_changes(config: Mapping[str, Any], baseline: Mapping[str, Any] | None
                   ) -> list[tuple[str, str]]:
    """What a configuration changes against the baseline, `(knob, value)` sorted by knob
    (every knob when there is no baseline)."""
    return [(k, str(config[k])) for k in sorted(config)
            if baseline is None or str(baseline.get(k, UNKNOWN)) != str(config[k])]


def config_label(config: Mapping[str, Any], baseline: Mapping[str, Any] | None) -> str:
    """What a configuration changes against the baseline, or `initial` when nothing."""
    return ", ".join(f"{k}={v}" for k, v in config_changes(config, baseline)) or INITIAL


def pair_value(by_role: Mapping[str, str]) -> str:
    """One knob's value on a pair from what each host of its scope said (sender first)."""
    values = [by_role[r] for r in ("sender", "receiver") if r in by_role]
    if not values:
        return UNKNOWN
    if all(v == values[0] for v in values):
        return values[0]
    return MIXED_SEP.join(values)


def role_value(value: str, role: str, roles: list[str]) -> str:
    """One host's part of a pair's value (`pair_value` undone): the sender's or the
    receiver's side of a mixed `a/b`, else the value itself. `roles`: the knob's scope."""
    parts = value.split(MIXED_SEP)
    ordered = [r for r in ("sender", "receiver") if r in roles]
    if len(ordered) > 1 and len(parts) == len(ordered) and role in ordered:
        return parts[ordered.index(role)]
    return value


def cycle(values: tuple[str, ...] | list[str], current: str | None,
          original: str | None) -> str:
    """The value after `current` in a knob's cycle: its profile values, then the host's own
    original value when the profile does not list it (so a flip can always return to it)."""
    order = list(values)
    if original is not None and original != UNKNOWN and original not in order:
        order.append(original)
    if not order:
        raise ValueError("a knob without values")
    idx = order.index(current) if current in order else -1
    return order[(idx + 1) % len(order)]
