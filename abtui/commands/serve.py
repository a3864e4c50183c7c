"""`abtui serve SESSION [--host ADDR] [--port N]`: the read-only console on a session
(`abtui view --follow SESSION`) served to web browsers with textual-serve: each browser that
opens the page gets its own `abtui view --follow` process, fed through a websocket. Loopback
by default; nothing the page loads comes from anywhere but this server: textual-serve's page
asks a font service for its font, so abtui serves a copy of that page whose font is the one
textual-serve ships (its static folder); no relay, no account (textual-web's are not used).

Example:
  abtui serve /tmp/base.abtui.jsonl --port 8049   # then open http://127.0.0.1:8049

To let a reviewer on another machine watch, bind an address they reach (`--host 0.0.0.0`),
or better forward the loopback port over ssh (`ssh -L 8049:127.0.0.1:8049 HOST`).

Exit codes: 0 stopped (ctrl+c, SIGTERM); 2 bad input (no such session, a port in use).
"""

from __future__ import annotations

import argparse
import re
import shlex
import sys
import tempfile
from pathlib import Path

from abtui.commands.sessions import add_sessions_dir

DEFAULT_PORT = 8049
# the page's link to a font service, and what replaces it: the font from the static folder
FONT_LINK = re.compile(r"<link[^>]*fonts\.googleapis\.com[^>]*/>", re.S)
LOCAL_FONT = """<style>
      @font-face {
        font-family: "Roboto Mono";
        src: url("{{ config.static.url }}fonts/RobotoMono-VariableFont_wght.ttf");
      }
    </style>"""
EXTERNAL = re.compile(r"""(?:href|src)\s*=\s*["']?(?:https?:)?//""", re.I)


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("session", metavar="SESSION",
                        help="a session file (live journal or finished), or a session name")
    parser.add_argument("--host", default="127.0.0.1", metavar="ADDR",
                        help="the address to listen on (default 127.0.0.1: this machine only)")
    parser.add_argument("--port", type=int, default=DEFAULT_PORT, metavar="N",
                        help=f"the port to listen on (default {DEFAULT_PORT})")
    parser.add_argument("--url", metavar="URL",
                        help="the address browsers reach the server by, when it is not "
                             "http://ADDR:N (needed with a wildcard --host such as 0.0.0.0)")
    add_sessions_dir(parser)


def local_page(into: Path) -> Path:
    """A templates folder holding textual-serve's page with its font served locally; BadInput
    when the page (a newer textual-serve) still names another server."""
    import textual_serve

    from abtui.core.errors import BadInput

    page = Path(textual_serve.__file__).parent / "templates" / "app_index.html"
    text = FONT_LINK.sub(LOCAL_FONT, page.read_text(encoding="utf-8"))
    if EXTERNAL.search(text):
        raise BadInput(f"{page}: this textual-serve's page loads from another server; "
                       "abtui serve keeps everything local (pyproject.toml bounds the version)")
    (into / "app_index.html").write_text(text, encoding="utf-8")
    return into


def public_url(host: str, port: int, url: str | None) -> str:
    """Where the page's links point (textual-serve writes them whole): `url`, else
    http://HOST:PORT; a wildcard address names no server a browser can reach."""
    from abtui.core.errors import BadInput

    if url is not None:
        if not re.fullmatch(r"https?://[^\s/]+/?", url):
            raise BadInput(f"--url {url}: expected http://NAME:PORT (the address browsers use)")
        return url.rstrip("/")
    if host in ("0.0.0.0", "::", ""):
        raise BadInput(f"--host {host or '(empty)'}: browsers cannot reach a wildcard address; "
                       f"give --url http://NAME:{port} (the name they reach this machine by)")
    return f"http://[{host}]:{port}" if ":" in host else f"http://{host}:{port}"


def view_command(path: Path) -> str:
    """The shell command each browser's console runs (textual-serve runs it with a shell)."""
    return shlex.join([sys.executable, "-m", "abtui", "view", "--follow", str(path)])


def run(args: argparse.Namespace) -> int:
    import socket

    from abtui.core.errors import BadInput
    from abtui.sessions import paths
    from abtui.sessions.follow import SessionTail

    path = paths.find_session(args.session, args.sessions_dir).resolve()
    SessionTail(path)  # one line now, not in every browser, when it is no session
    if not 0 < args.port < 65536:
        raise BadInput(f"--port {args.port}: expected 1 to 65535")
    url = public_url(args.host, args.port, args.url)
    try:
        with socket.create_server((args.host, args.port)):
            pass
    except OSError as exc:
        raise BadInput(f"--host {args.host} --port {args.port}: cannot listen there "
                       f"({exc.strerror or exc})") from None
    from textual_serve.server import Server

    with tempfile.TemporaryDirectory(prefix="abtui-serve-") as tmp:
        server = Server(view_command(path), host=args.host, port=args.port,
                        title=f"abtui — {path.name} (read-only)", public_url=url,
                        templates_path=local_page(Path(tmp)))
        server.serve()
    return 0
