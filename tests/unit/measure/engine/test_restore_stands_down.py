"""While the session sets its hosts back (a build knob's hosts boot their first build again),
the host verifier stands down: a link lost and back is not a reset to read again and undo, or
its re-apply would boot the host back into the last build the session set."""

from __future__ import annotations

from types import SimpleNamespace

from abtui.core.model import LinkState
from abtui.measure.engine.front import Engine
from tests.unit.measure.engine.test_engine_parts import FakeKnobs, profile


async def test_a_reboot_while_setting_back_is_not_read_again() -> None:
    engine = Engine(profile(), parser_factory=lambda _f: None,  # type: ignore[arg-type,return-value]
                    ping_parser_factory=lambda: None, use_journal=False)  # type: ignore[arg-type,return-value]
    engine.knobs.use(FakeKnobs())
    link = SimpleNamespace(alias="s", boot_id="boot-1")
    engine.verifier.link_changed(link, LinkState.LOST)  # type: ignore[arg-type]
    assert "s" in engine.gate  # in a session: held until read again
    engine.gate.release("s", engine.gate.get("s"))  # type: ignore[arg-type]
    await engine.shutdown("done")
    engine.verifier.link_changed(link, LinkState.LOST)  # type: ignore[arg-type]
    assert "s" not in engine.gate
