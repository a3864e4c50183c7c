"""`abtui serve`: the page it serves names no other server (its font made local), the
command each browser's console runs is quoted, and bad input is one line, exit 2 (the page in
a browser: tests/ui/test_serve_chromium.py)."""

from __future__ import annotations

import shlex
import socket
from pathlib import Path

import pytest

from abtui.cli import main
from abtui.commands.serve import EXTERNAL, local_page, view_command
from abtui.measure.replay.synthetic import synthetic_events, synthetic_profile
from abtui.sessions.writer import SessionWriter


def test_the_page_loads_nothing_from_elsewhere(tmp_path: Path) -> None:
    page = (local_page(tmp_path) / "app_index.html").read_text()
    assert "googleapis" not in page and not EXTERNAL.search(page)
    assert "{{ config.static.url }}fonts/RobotoMono-VariableFont_wght.ttf" in page
    assert EXTERNAL.search('<link href="https://fonts.example/x.css" />')


def test_view_command_is_quoted(tmp_path: Path) -> None:
    odd = tmp_path / "a b;$(x).abtui.jsonl"
    argv = shlex.split(view_command(odd))
    assert argv[-4:] == ["abtui", "view", "--follow", str(odd)]


def test_bad_input_one_line(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["serve", str(tmp_path / "none.abtui.jsonl")]) == 2
    profile = synthetic_profile(1)
    path = tmp_path / "s.abtui.jsonl"
    with SessionWriter(path, profile=profile.name, compact=False) as w:
        for e in synthetic_events(profile, intervals=1, seed=1):
            w.write(e)
    with socket.create_server(("127.0.0.1", 0)) as busy:
        port = busy.getsockname()[1]
        assert main(["serve", str(path), "--port", str(port)]) == 2
    assert main(["serve", str(path), "--port", "0"]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 3 and "cannot listen" in err[1] and "--port 0" in err[2]


def test_public_url() -> None:
    from abtui.commands.serve import public_url
    from abtui.core.errors import BadInput

    assert public_url("127.0.0.1", 8049, None) == "http://127.0.0.1:8049"
    assert public_url("::1", 8049, None) == "http://[::1]:8049"
    assert public_url("0.0.0.0", 8049, "http://lab.example:8049/") == "http://lab.example:8049"
    with pytest.raises(BadInput, match="--url http://NAME:8049"):
        public_url("0.0.0.0", 8049, None)
    with pytest.raises(BadInput, match="--url ftp://x"):
        public_url("127.0.0.1", 8049, "ftp://x")
