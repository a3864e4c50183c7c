"""The engine's book of pairs: each pair's phases, its iperf3 target, its live test options,
and how often a setting only new connections see changed on it.

Every part of the engine that labels, targets or arms a pair's run reads it here; the knob
changer and the host verifier write it.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from abtui.core.model import Pair, Profile, TestOptions
from abtui.measure.phases import PairPhases
from abtui.remote.iperf_cmd import options_for


class PhaseBook:
    """Per pair: phases, target, live options and settings generation."""

    def __init__(self, profile: Profile) -> None:
        self.profile = profile
        self.phases = {p.label: PairPhases(p.label) for p in profile.pairs}
        self.targets = {p.label: p.target for p in profile.pairs}
        self.live_options: dict[str, dict[str, Any]] = {p.label: {} for p in profile.pairs}
        # per pair, how many times a setting only new connections see began or ended
        # changing: a run prepared before the last such moment is stale
        self.settings: dict[str, int] = {p.label: 0 for p in profile.pairs}

    def options(self, pair: Pair) -> TestOptions:
        """The pair's test options now: the profile's with the live changes."""
        return options_for(self.profile.test, pair, self.live_options.get(pair.label))

    def settings_changed(self, labels: Sequence[str]) -> None:
        for label in labels:
            self.settings[label] += 1

    def labels_of(self, alias: str) -> list[str]:
        """The pairs that `alias` is a host of."""
        return [p.label for p in self.profile.pairs if alias in (p.sender, p.receiver)]

    def classify(self, label: str, received: float, duration: float) -> tuple[int, bool]:
        """An interval's phase and whether it straddles a change (PairPhases.classify)."""
        return self.phases[label].classify(received, duration)

    def phase_for(self, label: str, received: float, duration: float,
                  settings: int) -> tuple[int, bool]:
        """`classify` for a run prepared at the pair's settings count `settings`: once a
        setting only new connections see began changing on its pair since, whatever it
        measures straddles (counted in no phase), however the run was told or not told: a
        phase never carries intervals of a connection opened under another value. What a
        run asks its owner (abtui.measure.run.context.RunOwner.phase_for)."""
        phase, straddles = self.phases[label].classify(received, duration)
        return phase, straddles or self.settings[label] != settings
