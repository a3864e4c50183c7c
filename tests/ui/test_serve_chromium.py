"""`abtui serve` in a real browser: headless Chromium (Debian's `chromium`) opens the served
page, driven over its DevTools protocol; the console (`abtui view --follow` behind
textual-serve) draws the panes, follows the session file as it grows, and shows a verdict
the recording journals. Every request the page makes goes to the loopback server: no font
service, no relay. Skipped, saying so, where Chromium is not installed (`make test` installs
it)."""

from __future__ import annotations

import asyncio
import base64
import contextlib
import json
import os
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any

import pytest

from abtui.core.events import Event, EventKind, Mark
from abtui.measure.replay.synthetic import synthetic_events, synthetic_profile
from abtui.sessions.writer import SessionWriter

CHROMIUM = shutil.which("chromium") or shutil.which("chromium-browser")
pytestmark = [pytest.mark.ui, pytest.mark.skipif(
    CHROMIUM is None, reason="chromium is not installed (Debian package chromium; make test "
                             "installs it)")]
FLAGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
         "--disable-background-networking", "--disable-component-update", "--disable-sync",
         "--disable-extensions", "--mute-audio"]


def _port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


class Page:
    """One page target over the DevTools protocol: commands, and what the page loaded and
    received on its websocket."""

    def __init__(self, ws: Any) -> None:
        self.ws = ws
        self.next_id = 0
        self.urls: list[str] = []
        self.screen = ""  # what the console sent, escape sequences and all
        self.waiting: dict[int, asyncio.Future[Any]] = {}
        self.reader = asyncio.create_task(self._read())

    async def _read(self) -> None:
        async for msg in self.ws:
            data = json.loads(msg.data)
            if "id" in data and data["id"] in self.waiting:
                self.waiting.pop(data["id"]).set_result(data)
            method = data.get("method")
            params = data.get("params", {})
            if method == "Network.requestWillBeSent":
                self.urls.append(params["request"]["url"])
            elif method == "Network.webSocketCreated":
                self.urls.append(params["url"])
            elif method == "Network.webSocketFrameReceived":
                frame = params["response"]
                raw = frame["payloadData"]
                text = base64.b64decode(raw).decode("utf-8", "replace") \
                    if frame.get("opcode") == 2 else raw
                self.screen += text

    async def call(self, method: str, **params: Any) -> Any:
        self.next_id += 1
        fut: asyncio.Future[Any] = asyncio.get_running_loop().create_future()
        self.waiting[self.next_id] = fut
        await self.ws.send_str(json.dumps({"id": self.next_id, "method": method,
                                           "params": params}))
        return await asyncio.wait_for(fut, 30)

    async def until(self, cond: Any, what: str, timeout: float = 60) -> None:
        for _ in range(int(timeout / 0.1)):
            if cond():
                return
            await asyncio.sleep(0.1)
        raise AssertionError(f"not seen in the browser within {timeout:g} s: {what}")


def _mark(blocks: int) -> Event:
    row = {"pair": "A", "knob": "tso", "value": "off", "base": "on", "delta": "Δgeo",
           "pct": -12.5, "low": -15.0, "high": -10.0, "verdict": "significant",
           "blocks": blocks, "dead": 0, "seed": 7, "design": "blocks"}
    return Event.of(Mark(text=f"alternation of tso ended after {blocks} blocks",
                         verdicts=[row]))


async def _watch(port: int, debug: int, writer: SessionWriter, rest: list[Event]) -> Page:
    import aiohttp

    async with aiohttp.ClientSession() as http:
        targets: list[dict[str, Any]] = []
        for _ in range(1200):  # Chromium's start, on a loaded machine
            with contextlib.suppress(aiohttp.ClientError):
                async with http.get(f"http://127.0.0.1:{debug}/json/list") as r:
                    targets = [t for t in await r.json() if t.get("type") == "page"]
                    if targets:
                        break
            await asyncio.sleep(0.1)
        assert targets, "Chromium's DevTools never listed a page"
        async with http.ws_connect(targets[0]["webSocketDebuggerUrl"], max_msg_size=0) as ws:
            page = Page(ws)
            await page.call("Network.enable")
            await page.call("Page.enable")
            for _ in range(300):  # the server is up once it answers
                with contextlib.suppress(aiohttp.ClientError):
                    async with http.get(f"http://127.0.0.1:{port}/") as r:
                        if r.status == 200:
                            break
                await asyncio.sleep(0.1)
            await page.call("Page.navigate", url=f"http://127.0.0.1:{port}/")
            # the panes: each pair's title, sender → receiver
            await page.until(lambda: "a-snd" in page.screen and "b-snd" in page.screen,
                             "the panes' titles")
            seen = len(page.screen)
            await page.until(lambda: len(page.screen) > seen + 100, "a repaint")
            # the recording goes on: a verdict journalled reaches the browser's console
            for e in rest:
                writer.write(e)
            writer.write(_mark(6))
            await page.until(lambda: "significant, 6 blocks" in page.screen,
                             "the verdict panel")
            writer.write(_mark(8))
            await page.until(lambda: "8 blocks" in page.screen, "the verdict panel's update")
            shot = await page.call("Page.captureScreenshot", format="png")
            assert len(base64.b64decode(shot["result"]["data"])) > 10_000  # drawn, not blank
            page.reader.cancel()
            return page


def test_a_browser_watches_a_live_session_through_serve(tmp_path: Path) -> None:
    profile = synthetic_profile(2)
    events = synthetic_events(profile, intervals=12, seed=5)
    cut = [i for i, e in enumerate(events) if e.kind is EventKind.INTERVAL][8]
    journal = tmp_path / "live.abtui.jsonl"
    writer = SessionWriter(journal, profile=profile.name)
    for e in events[:cut]:
        writer.write(e)
    port, debug = _port(), _port()
    env = {**os.environ, "XDG_STATE_HOME": str(tmp_path / "state")}
    serve = subprocess.Popen([sys.executable, "-m", "abtui", "serve", str(journal),
                              "--port", str(port)], env=env, stdout=subprocess.DEVNULL,
                             stderr=subprocess.PIPE, start_new_session=True)
    profile_dir = tempfile.mkdtemp(prefix="abtui-chromium-", dir=tmp_path)  # empty
    # its TMPDIR: short (its singleton socket's path must fit a socket address), removed below
    scratch = tempfile.mkdtemp(prefix="abtui-cr-")
    browser = subprocess.Popen([CHROMIUM or "chromium", *FLAGS, f"--user-data-dir={profile_dir}",
                                f"--remote-debugging-port={debug}", "about:blank"],
                               stdout=subprocess.DEVNULL,
                               stderr=open(tmp_path / "chromium.log", "wb"),  # noqa: SIM115
                               start_new_session=True, env={**env, "TMPDIR": scratch})
    try:
        page = asyncio.run(asyncio.wait_for(_watch(port, debug, writer, events[cut:]), 400))
    finally:
        for proc in (browser, serve):
            with contextlib.suppress(ProcessLookupError):
                os.killpg(proc.pid, signal.SIGTERM)
        for proc in (browser, serve):
            try:
                proc.wait(10)
            except subprocess.TimeoutExpired:
                os.killpg(proc.pid, signal.SIGKILL)
                proc.wait(5)
        writer.close()
        shutil.rmtree(scratch, ignore_errors=True)
    loaded = [u for u in page.urls if not u.startswith(("about:", "data:"))]
    assert loaded and all(u.startswith((f"http://127.0.0.1:{port}/", f"ws://127.0.0.1:{port}/"))
                          for u in loaded), loaded
    assert any(u.endswith("RobotoMono-VariableFont_wght.ttf") for u in loaded)
    # nothing left running: the server, its consoles, the browser
    left = subprocess.run(["pgrep", "-f", str(journal)], capture_output=True, text=True)
    assert not [p for p in left.stdout.split() if _alive(int(p))], left.stdout


def _alive(pid: int) -> bool:
    """A live process (a zombie the machine's PID 1 has yet to reap is not)."""
    try:
        return "Z" not in Path(f"/proc/{pid}/stat").read_text().split(")")[-1].split()[0]
    except OSError:
        return False
