"""Links connecting while asyncssh is still being imported wait for that import without
stopping the event loop (abtui.remote.sshlib.load): the console repaints meanwhile. Checked in
a fresh interpreter, where asyncssh is not yet imported."""

from __future__ import annotations

import json
import socket
import subprocess
import sys

PROBE = """
import asyncio, json, sys, time
from abtui.core.errors import RemoteError
from abtui.remote.link import HostLink

async def main():
    gaps = []
    async def beat():
        while True:
            t = time.perf_counter()
            await asyncio.sleep(0.002)
            gaps.append(time.perf_counter() - t)
    probe = asyncio.create_task(beat())
    links = [HostLink(f"127.0.0.1:{PORT}", ssh_config=CONFIG, reconnect=False,
                      connect_timeout=5) for _ in range(4)]
    async def connect(link):
        try:
            await link.connect()
        except RemoteError as exc:
            return str(exc)
        return "connected"
    first = asyncio.create_task(connect(links[0]))
    while "asyncssh" not in sys.modules:  # the first link's import has begun
        await asyncio.sleep(0)
    gaps.clear()
    others = await asyncio.gather(*(connect(link) for link in links[1:]))
    lag = max(gaps)
    probe.cancel()
    print(json.dumps({"lag": lag, "results": [await first, *others]}))

asyncio.run(main())
"""


def test_links_connecting_during_the_asyncssh_import_leave_the_loop_running(tmp_path) -> None:
    config = tmp_path / "ssh_config"
    config.write_text("")
    with socket.socket() as sock:  # a loopback port nothing listens on: connect is refused
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    code = PROBE.replace("PORT", str(port)).replace("CONFIG", repr(str(config)))
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         timeout=120)
    assert out.returncode == 0, out.stderr
    report = json.loads(out.stdout.strip().splitlines()[-1])
    assert all("cannot reach" in r for r in report["results"]), report["results"]
    assert report["lag"] < 0.05, f"the event loop stopped {report['lag'] * 1000:.0f} ms"
