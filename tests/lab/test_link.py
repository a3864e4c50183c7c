"""HostLink on real lab hosts: control-shell commands and streamed processes that end cleanly."""

from __future__ import annotations

import asyncio

import pytest

from abtui.errors import RemoteError
from abtui.lab import Lab
from abtui.model import LinkState
from abtui.remote.link import HostLink, connect_all
from tests.conftest import ns_exec

pytestmark = pytest.mark.lab


async def _links(lab: Lab) -> list[HostLink]:
    links = [HostLink(h.alias, ssh_config=str(lab.ssh_config)) for h in lab.hosts(2)]
    errors = await connect_all(links)
    assert errors == {h.alias: None for h in lab.hosts(2)}
    return links


async def test_control_shell_framing_and_status(lab: Lab):
    links = await _links(lab)
    try:
        r = await links[0].run("hostname; echo oops >&2; exit 3")
        assert (r.exit_status, r.stdout, r.stderr) == (3, links[0].alias, "oops\n")
        r = await links[0].run("printf 'no newline'")
        assert r.ok and r.stdout == "no newline"
        # output that looks like a sentinel does not confuse the framing
        r = await links[0].run("echo '__ABTUI_0000__ 0'; echo after")
        assert r.stdout == "__ABTUI_0000__ 0\nafter"
        # every host answers as itself, concurrently, on its own control shell
        names = await asyncio.gather(*(link.check("hostname") for link in links))
        assert [n.strip() for n in names] == [link.alias for link in links]
        with pytest.raises(RemoteError, match=links[1].alias):
            await links[1].check("sysctl -n net.ipv4.no_such_key")
    finally:
        for link in links:
            await link.close()
    assert all(link.state is LinkState.CLOSED for link in links)


async def test_streamed_process_is_ended_with_its_children(lab: Lab):
    links = await _links(lab)
    snd = links[0]
    try:
        # a pipeline: the shell, ping and cat must all go
        proc = await snd.stream("ping -i 0.2 198.19.1.2 | cat")
        assert proc.pgid is not None
        lines = []
        async for line in proc.lines():
            lines.append(line)
            if len(lines) == 3:
                break
        assert lines[0].startswith("PING 198.19.1.2")
        assert "bytes from 198.19.1.2" in lines[2]
        await proc.terminate()
        left = ns_exec(lab, snd.alias, "sh", "-c",
                       f"ps -eo pgid= | awk '$1=={proc.pgid}' | wc -l").strip()
        assert left == "0"
        assert "ping" not in ns_exec(lab, snd.alias, "ps", "-eo", "comm=")
    finally:
        for link in links:
            await link.close()


async def test_unknown_host_key_is_refused_with_a_clear_message(lab: Lab, tmp_path):
    empty = tmp_path / "known_hosts"
    empty.write_text("")
    link = HostLink(lab.hosts(1)[0].alias, ssh_config=str(lab.ssh_config),
                    known_hosts=str(empty), reconnect=False)
    with pytest.raises(RemoteError, match=r"host key of .* is not trusted"):
        await link.connect()
    assert link.state is LinkState.LOST
