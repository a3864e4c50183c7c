"""The command palette's provider: every console action, knobs included."""

from __future__ import annotations

from functools import partial
from typing import TYPE_CHECKING

from textual.command import DiscoveryHit, Hit, Hits, Provider

if TYPE_CHECKING:
    from abtui.ui.app import AbtuiApp


class ConsoleCommands(Provider):
    """Lists each action the console's bindings offer (and a few with no key)."""

    def _commands(self) -> list[tuple[str, str, str]]:
        app: AbtuiApp = self.app  # type: ignore[assignment]
        return app.palette_actions()

    async def discover(self) -> Hits:
        app = self.app
        for name, action, help_text in self._commands():
            yield DiscoveryHit(name, partial(app.run_action, action), help=help_text)

    async def search(self, query: str) -> Hits:
        matcher = self.matcher(query)
        app = self.app
        for name, action, help_text in self._commands():
            score = matcher.match(name)
            if score > 0:
                yield Hit(score, matcher.highlight(name), partial(app.run_action, action),
                          help=help_text)
