"""`lab status` on the real lab: a host whose sshd answers but does not let the lab's key in
is DOWN, saying why (before, its banner alone made it "ok")."""

from __future__ import annotations

import pytest

from abtui.lab.netns import Lab

pytestmark = pytest.mark.lab


def test_status_logs_in_with_the_labs_keys_and_says_why_not(lab: Lab) -> None:
    keys = lab.state_dir / "authorized_keys"
    saved = keys.read_text()
    keys.write_text("")
    try:
        refused = lab.status(login=True)
        banner_only = lab.status()
    finally:
        keys.write_text(saved)
    assert banner_only["ok"]  # every sshd answers
    assert not refused["ok"]
    for h in refused["hosts"]:  # type: ignore[attr-defined]
        assert not h["ok"] and h["why"].startswith("ssh with the lab's keys failed: ")
        assert "Permission denied" in h["why"], h["why"]
    again = lab.status(login=True)
    assert again["ok"] and all(h["why"] == "" for h in again["hosts"])  # type: ignore[attr-defined]
