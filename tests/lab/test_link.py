"""HostLink on real lab hosts: control-shell commands and streamed processes that end cleanly."""

from __future__ import annotations

import asyncio
import shutil

import pytest

from abtui.core.errors import RemoteError
from abtui.core.model import LinkState
from abtui.lab.netns import Lab
from abtui.remote.link import HostLink, connect_all
from tests.lab.namespaces import kill_sshd, netns_processes, ns_exec

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
                       f"ps -eo pgid=,stat= | awk '$1=={proc.pgid} && $2 !~ /^Z/' | wc -l"
                       ).strip()  # a zombie has ended: it only waits for init to reap it
        assert left == "0"
        assert _pids_running(lab, snd.alias, "ping -i 0.2 198.19.1.2") == []
    finally:
        for link in links:
            await link.close()


async def test_unknown_host_key_is_refused_with_a_clear_message(lab: Lab, tmp_path):
    empty = tmp_path / "known_hosts"
    empty.write_text("")
    link = HostLink(lab.hosts(1)[0].alias, ssh_config=str(lab.ssh_config),
                    known_hosts=str(empty), reconnect=False)
    with pytest.raises(RemoteError, match=r"host key of .* is unknown \(not in .*known_hosts\)"):
        await link.connect()
    assert link.state is LinkState.FAILED  # never connected: not "lost"
    # accepted explicitly: recorded, and then known without the option
    accepting = HostLink(link.alias, ssh_config=str(lab.ssh_config), known_hosts=str(empty),
                         reconnect=False, accept_new_host_keys=True)
    await accepting.connect()
    assert accepting.accepted_new_key
    await accepting.close()
    recorded = empty.read_text().split()
    assert recorded[0] == link.alias and recorded[1] == "ssh-ed25519"
    again = HostLink(link.alias, ssh_config=str(lab.ssh_config), known_hosts=str(empty),
                     reconnect=False)
    await again.connect()
    assert not again.accepted_new_key and (await again.check("hostname")).strip() == link.alias
    await again.close()


async def test_reconnects_after_sshd_restart_and_refuses_a_changed_host_key(lab: Lab):
    """sshd killed: lost -> reconnecting -> connected. Its host key regenerated: refused,
    naming the host and the known_hosts line, until known_hosts is updated."""
    import subprocess

    host = lab.hosts(2)[3]
    states: list[tuple[LinkState, str]] = []
    link = HostLink(host.alias, ssh_config=str(lab.ssh_config),
                    on_state=lambda _l, s, m: states.append((s, m)))
    await link.connect()

    try:
        kill_sshd(lab, host.alias)
        for _ in range(50):
            if any(s is LinkState.RECONNECTING for s, _m in states):
                break
            await asyncio.sleep(0.1)
        lab.start_sshd(host.alias)
        assert await link.wait_connected(timeout=15)
        kinds = [s for s, _m in states]
        assert kinds[:2] == [LinkState.CONNECTING, LinkState.CONNECTED]
        assert kinds[2] is LinkState.LOST and LinkState.RECONNECTING in kinds[3:]
        assert kinds[-1] is LinkState.CONNECTED
        assert (await link.check("hostname")).strip() == host.alias

        # a new host key: the running link is refused on reconnect, a new one on connect
        states.clear()
        key = lab.state_dir / f"host_{host.alias}"
        key.unlink()
        key.with_suffix(".pub").unlink()
        subprocess.run(["ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-f", str(key)],
                       check=True)
        kill_sshd(lab, host.alias)
        lab.start_sshd(host.alias)
        fresh = HostLink(host.alias, ssh_config=str(lab.ssh_config), reconnect=False,
                         accept_new_host_keys=True)  # never applies to a CHANGED key
        with pytest.raises(RemoteError, match=rf"^{host.alias}: host key of {host.alias} has "
                           rf"CHANGED: {lab.known_hosts} line 4 holds another key"):
            await fresh.connect()
        for _ in range(100):
            if any("CHANGED" in m for _s, m in states):
                break
            await asyncio.sleep(0.1)
        assert link.state is not LinkState.CONNECTED
        assert any(s is LinkState.LOST and "CHANGED" in m for s, m in states), states
    finally:
        lab.ssh.write_client_files(lab.hosts(2))  # trust the new key: the lab works again
        lab.start_sshd(host.alias)
    assert await link.wait_connected(timeout=15)
    await link.close()


async def test_sudo_refusal_is_reported_as_such(lab: Lab, tmp_path):
    """sudo = true on a host where `sudo -n` refuses: without sudo at all, or (when sudo is
    installed) behind a second sshd of that host whose mount namespace has a sudoers that
    lets nobody in. Refused with one line, the link lost, nothing run."""
    import os
    import shutil
    import signal
    import subprocess

    from abtui.lab.ssh_access import SSHD
    from abtui.lab.system import ssh_banner

    host = lab.hosts(1)[0]
    alias, config, sshd = host.alias, lab.ssh_config, None
    why = r"sudo.*not found"
    if shutil.which("sudo") is not None:
        nobody = tmp_path / "sudoers"
        nobody.write_text("Defaults env_reset\n")  # no rule: root may not use sudo either
        nobody.chmod(0o440)
        cfg = tmp_path / "sshd_config"
        cfg.write_text((lab.state_dir / f"sshd_config-{alias}").read_text()
                       .replace("Port 22\n", "Port 2222\n")
                       .replace(f"PidFile {lab.state_dir}", f"PidFile {tmp_path}"))
        sshd = subprocess.Popen(
            ["ip", "netns", "exec", host.netns, "unshare", "--mount", "--uts", "sh", "-c",
             'mount --bind "$0" /etc/sudoers && hostname "$1" && exec "$2" -D -f "$3"',
             str(nobody), alias, SSHD, str(cfg)])
        for _ in range(100):
            if ssh_banner(host.mgmt_address, 2222)[0]:
                break
            await asyncio.sleep(0.05)
        config = tmp_path / "ssh_config"
        config.write_text(lab.ssh_config.read_text().replace(
            f"Host {alias}\n", f"Host {alias}-nosudo\n", 1).replace(
            "Port 22\n", "Port 2222\n", 1))
        alias, why = f"{alias}-nosudo", r"root is not in the sudoers file"
    try:
        states = []
        link = HostLink(alias, ssh_config=str(config), sudo=True, reconnect=False,
                        on_state=lambda _l, s, m: states.append((s, m)))
        with pytest.raises(RemoteError, match=rf"^{alias}: sudo -n refused \(it wants a "
                                              rf"password, or this user may not use sudo\): "
                                              rf".*{why}"):
            await link.connect()
        assert states[-1][0] is LinkState.FAILED and "sudo -n refused" in states[-1][1]
    finally:
        if sshd is not None:
            os.kill(sshd.pid, signal.SIGTERM)
            sshd.wait(timeout=10)


async def test_ssh_config_proxyjump_and_port_are_honoured(lab: Lab, tmp_path):
    """A host reached only through another (ProxyJump in ssh_config, as to a lab behind a
    bastion): the link opens through the jump host, and its commands run on the target."""
    snd, _, _, rcv = lab.hosts(2)
    config = tmp_path / "ssh_config"
    config.write_text(lab.ssh_config.read_text() + "\n".join([
        "", "Host behind-bastion",
        f"    HostName {rcv.mgmt_address}",
        "    Port 22",
        "    User root",
        f"    IdentityFile {lab.client_key}",
        "    IdentitiesOnly yes",
        f"    UserKnownHostsFile {lab.known_hosts}",
        f"    HostKeyAlias {rcv.alias}",
        f"    ProxyJump {snd.alias}", ""]))
    link = HostLink("behind-bastion", ssh_config=str(config))
    await link.connect()
    try:
        assert (await link.check("hostname")).strip() == rcv.alias
        # sshd on the target saw the jump host as its client, not the controller
        client_ip = (await link.check("echo $SSH_CONNECTION")).split()[0]
        assert client_ip == snd.mgmt_address, client_ip
    finally:
        await link.close()


async def test_a_key_held_only_by_ssh_agent_logs_in(lab: Lab, tmp_path, monkeypatch):
    """No IdentityFile, no key on disk where asyncssh looks: the agent (SSH_AUTH_SOCK) has it."""
    import os
    import signal
    import subprocess

    host = lab.hosts(1)[1]
    sock = tmp_path / "agent.sock"
    agent = subprocess.Popen(["ssh-agent", "-D", "-a", str(sock)], stdout=subprocess.DEVNULL,
                             stderr=subprocess.DEVNULL)
    try:
        for _ in range(100):
            if sock.exists():
                break
            await asyncio.sleep(0.05)
        monkeypatch.setenv("SSH_AUTH_SOCK", str(sock))
        monkeypatch.setenv("HOME", str(tmp_path))  # no ~/.ssh keys to fall back on
        config = tmp_path / "ssh_config"
        config.write_text("\n".join([
            "Host agent-only",
            f"    HostName {host.mgmt_address}",
            "    User root",
            f"    UserKnownHostsFile {lab.known_hosts}",
            f"    HostKeyAlias {host.alias}", ""]))
        # the agent still empty: refused, so the login below is the agent's doing
        with pytest.raises(RemoteError, match="agent-only"):
            await HostLink("agent-only", ssh_config=str(config)).connect()
        subprocess.run(["ssh-add", "-q", str(lab.client_key)], check=True, capture_output=True)
        link = HostLink("agent-only", ssh_config=str(config))
        await link.connect()
        try:
            assert (await link.check("hostname")).strip() == host.alias
        finally:
            await link.close()
    finally:
        os.kill(agent.pid, signal.SIGTERM)
        agent.wait(timeout=5)


def _pids_running(lab: Lab, alias: str, cmdline: str) -> list[int]:
    """PIDs in a lab host's network namespace whose command line is exactly `cmdline`
    (zombies left out: they have ended)."""
    return [pid for pid, _comm, cmd, state in netns_processes(f"abtui-{alias}")
            if cmd == cmdline and state != "Z"]


@pytest.mark.skipif(shutil.which("sudo") is None, reason="sudo is not installed")
async def test_sudo_runs_commands_and_streams_and_ends_them(lab: Lab):
    """`sudo -n` for real (Debian's sudoers: env_reset, secure_path, use_pty): the control
    shell and streamed commands run under sudo, and ending a stream leaves nothing, even
    though use_pty puts the command in a session of its own."""
    host = lab.hosts(1)[0]
    link = HostLink(host.alias, ssh_config=str(lab.ssh_config), sudo=True)
    await link.connect()
    try:
        assert (await link.check("echo $SUDO_USER $(id -u)")).split() == ["root", "0"]
        assert (await link.check("sysctl -n net.ipv4.ip_forward")).strip() in ("0", "1")
        proc = await link.stream("echo $SUDO_COMMAND; sleep 307.25 | cat")
        first = await anext(aiter(proc.lines()))
        # the command in the group the stream reports (streams.own_group), then the command
        assert " -c " in first and first.endswith("; echo $SUDO_COMMAND; sleep 307.25 | cat")
        for _ in range(50):
            if _pids_running(lab, host.alias, "sleep 307.25"):
                break
            await asyncio.sleep(0.05)
        assert _pids_running(lab, host.alias, "sleep 307.25")
        await proc.terminate()
        for _ in range(60):
            if not _pids_running(lab, host.alias, "sleep 307.25"):
                break
            await asyncio.sleep(0.05)
        assert _pids_running(lab, host.alias, "sleep 307.25") == []
    finally:
        await link.close()


def test_user_at_host_and_host_port_destinations_run_a_session(lab: Lab, tmp_path):
    """Pairs written `root@<alias>`, `root@<alias>:22` and `<alias>:22` (docs/profiles.md):
    each connects (the alias's ssh_config Host block applies, known_hosts is checked), runs,
    takes a knob and sets it back; events, originals and restores name each host as written."""
    import subprocess
    import sys
    from pathlib import Path

    from abtui.core.events import EventKind
    from abtui.sessions.reader import load_events

    a_snd, a_rcv, b_snd, b_rcv = (h.alias for h in lab.hosts(2))
    written = {a_snd: f"root@{a_snd}", a_rcv: f"root@{a_rcv}:22", b_snd: f"{b_snd}:22",
               b_rcv: b_rcv}
    text = lab.profile_path.read_text()
    for alias, dest in written.items():
        text = text.replace(f'= "{alias}"\n', f'= "{dest}"\n')
    profile = tmp_path / "p.toml"
    profile.write_text(text)
    out = tmp_path / "s.jsonl"
    root = Path(__file__).resolve().parents[2]
    run = subprocess.run([sys.executable, "-m", "abtui", "run", str(profile), "--headless",
                          "--duration", "3", "--out", str(out), "--set",
                          "tcp_wmem=4096 16384 65536"], cwd=root, capture_output=True,
                         text=True, timeout=120)
    assert run.returncode == 0, run.stderr
    events = load_events(out)
    hosts = set(written.values())
    assert {e.host for e in events if e.kind is EventKind.LINK
            and e.payload.state == "connected"} == hosts
    facts = {e.host: e.payload.facts["hostname"] for e in events if e.kind is EventKind.FACTS}
    assert facts == {dest: alias for alias, dest in written.items()}  # the right hosts
    for pair in ("A", "B"):
        assert sum(e.kind is EventKind.INTERVAL and e.pair == pair for e in events) >= 2
    senders = {written[a_snd], written[b_snd]}
    assert {e.host for e in events if e.kind is EventKind.ORIGINAL} == senders
    assert {e.host for e in events if e.kind is EventKind.RESTORE and e.payload.ok} == senders
    assert "error" not in run.stderr


async def test_another_port_is_checked_against_its_own_known_hosts_entry(lab: Lab, tmp_path):
    """`root@<alias>:2222`, a second sshd of that host (same host key): the port goes to
    asyncssh, so known_hosts is matched on `[alias]:2222` first (then, asyncssh's rule, on the
    host's own entry: the lab's known_hosts vouches for the same key); a key accepted is
    recorded as `[alias]:2222`, and another key on that entry is refused as CHANGED, naming
    `[alias]:2222`."""
    import os
    import signal
    import subprocess

    from abtui.lab.ssh_access import SSHD
    from abtui.lab.system import ssh_banner

    host = lab.hosts(1)[0]
    cfg = tmp_path / "sshd_config"
    cfg.write_text((lab.state_dir / f"sshd_config-{host.alias}").read_text()
                   .replace("Port 22\n", "Port 2222\n")
                   .replace(f"PidFile {lab.state_dir}", f"PidFile {tmp_path}"))
    sshd = subprocess.Popen(["ip", "netns", "exec", host.netns, SSHD, "-D", "-f", str(cfg)])
    try:
        for _ in range(100):
            if ssh_banner(host.mgmt_address, 2222)[0]:
                break
            await asyncio.sleep(0.05)
        dest = f"root@{host.alias}:2222"
        lab_known = HostLink(dest, ssh_config=str(lab.ssh_config), reconnect=False)
        await lab_known.connect()
        assert (await lab_known.check("echo $SSH_CONNECTION")).split()[-1] == "2222"
        await lab_known.close()
        known = tmp_path / "known_hosts"
        known.write_text("")
        with pytest.raises(RemoteError, match=rf"host key of {dest} is unknown"):
            await HostLink(dest, ssh_config=str(lab.ssh_config), known_hosts=str(known),
                           reconnect=False).connect()
        accepting = HostLink(dest, ssh_config=str(lab.ssh_config), known_hosts=str(known),
                             reconnect=False, accept_new_host_keys=True)
        await accepting.connect()
        assert accepting.accepted_new_key
        assert (await accepting.check("echo $SSH_CONNECTION")).split()[-1] == "2222"
        await accepting.close()
        entry = known.read_text().split()
        assert entry[0] == f"[{host.alias}]:2222"
        again = HostLink(dest, ssh_config=str(lab.ssh_config), known_hosts=str(known),
                         reconnect=False)
        await again.connect()
        assert not again.accepted_new_key
        await again.close()
        other = (lab.state_dir / f"host_{lab.hosts(1)[1].alias}.pub").read_text().split()
        known.write_text(f"[{host.alias}]:2222 {other[0]} {other[1]}\n")
        with pytest.raises(RemoteError, match=rf"CHANGED: {known} line 1 holds another key "
                                              rf"for \[{host.alias}\]:2222"):
            await HostLink(dest, ssh_config=str(lab.ssh_config), known_hosts=str(known),
                           reconnect=False, accept_new_host_keys=True).connect()
    finally:
        os.kill(sshd.pid, signal.SIGTERM)
        sshd.wait(timeout=10)


async def test_a_command_cancelled_halfway_leaves_nothing_for_the_next(lab: Lab):
    """A caller cancelled while its command still runs (a worker ended at exit, a task
    stopped): the command's late output must not become the next command's stdout, which
    would read a knob's value or a restore's result from someone else's command."""
    links = await _links(lab)
    link = links[0]
    try:
        task = asyncio.ensure_future(link.run("sleep 0.5; echo late-output; echo late >&2"))
        await asyncio.sleep(0.2)
        task.cancel()
        with pytest.raises(asyncio.CancelledError):
            await task
        r = await link.run("echo fresh", timeout=10)
        assert (r.exit_status, r.stdout, r.stderr) == (0, "fresh", "")
        r = await link.run("echo again")
        assert r.stdout == "again"
    finally:
        for link in links:
            await link.close()
