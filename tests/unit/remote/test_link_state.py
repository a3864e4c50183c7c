"""A host that never connected says it could not connect, with the reason; "lost" is kept
for a link that was up and dropped (a real asyncssh connect to a closed loopback port)."""

from __future__ import annotations

import pytest

from abtui.core.errors import RemoteError
from abtui.core.events import Event, Link
from abtui.core.model import LinkState
from abtui.profile.load import parse_profile
from abtui.remote.link import HostLink
from abtui.ui.model.state import ConsoleState

PROFILE = """
[[pairs]]
label = "A"
sender = "gone-snd"
receiver = "a-rcv"
target = "198.19.1.2"
"""


async def test_a_first_connect_that_fails_is_failed_not_lost(tmp_path):
    config = tmp_path / "ssh_config"
    config.write_text("Host gone-snd\n  HostName 127.0.0.1\n  Port 1\n")
    states: list[tuple[LinkState, str]] = []
    link = HostLink("gone-snd", ssh_config=str(config), reconnect=False,
                    on_state=lambda _l, s, m: states.append((s, m)))
    with pytest.raises(RemoteError, match=r"^gone-snd: cannot reach gone-snd: "):
        await link.connect()
    assert [s for s, _m in states] == [LinkState.CONNECTING, LinkState.FAILED]
    assert states[-1][1].startswith("cannot reach gone-snd: ")  # the reason goes with it
    assert link.state is LinkState.FAILED


def test_the_pane_of_a_host_that_never_connected_says_so():
    from abtui.ui.render.widgets import LINK_TEXT

    state = ConsoleState(parse_profile(PROFILE, "p.toml"))
    state.apply(Event.of(Link.from_data({"state": "connected"}), host="a-rcv"))
    state.apply(Event.of(Link(state=str(LinkState.FAILED),
                              message="cannot reach gone-snd: refused"), host="gone-snd"))
    assert state.pairs["A"].link == LinkState.FAILED
    assert "could not connect" in LINK_TEXT[LinkState.FAILED]
    assert "LOST" not in LINK_TEXT[LinkState.FAILED]


async def test_a_missing_ssh_config_is_named(tmp_path):
    """The ssh_config of a lab taken down: the file is named, not "cannot reach: No such
    file or directory"."""
    gone = tmp_path / "lab" / "ssh_config"
    link = HostLink("gone-snd", ssh_config=str(gone), reconnect=False)
    with pytest.raises(RemoteError, match=rf"^gone-snd: cannot read {gone}: No such file"):
        await link.connect()
