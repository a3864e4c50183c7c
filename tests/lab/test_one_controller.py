"""One controller per host, and a recover that cannot be tripped, on the lab's real hosts.

A second `abtui run` on hosts a first one drives is refused in one line naming the holder,
exits 1 and changes nothing (the first keeps measuring with its own value; both end with the
hosts at their originals); `abtui check` meanwhile says each host is driven by the other; once
the first has ended its leases are gone with its links. `abtui recover` on a damaged undo
journal (an entry of a kind it does not know first, groups it must never end, a setting of an
unknown kind) sets back the valid entry and says each other in one line. A link whose
connection dropped while the host kept its old shell (a hung sshd) takes its own lease back on
the reconnect.
"""

from __future__ import annotations

import contextlib
import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from abtui.core.errors import LeaseHeld
from abtui.core.model import LinkState
from abtui.core.pids import pid_alive
from abtui.lab.netns import Lab
from abtui.lab.profile import TCP_RMEM_VALUES, TCP_WMEM_VALUES
from abtui.remote.lease import parse_holder
from abtui.remote.link import HostLink
from abtui.sessions.reader import load_events
from tests.lab.engine_kit import stray_pids, until
from tests.lab.namespaces import ns_exec, sshd_sessions
from tests.reliability import Reliability

pytestmark = [pytest.mark.lab, pytest.mark.usefixtures("no_strays")]

ROOT = Path(__file__).resolve().parents[2]
WMEM = "4096 16384 65536"  # the first controller's value (one of the lab profile's)


def _abtui(state: Path, *args: str) -> subprocess.Popen[str]:
    """abtui as its own process, with the undo journal (and the rest of its state) in
    `state`: another user's controller has its own."""
    env = {**os.environ, "XDG_STATE_HOME": str(state), "PYTHONPATH": str(ROOT)}
    return subprocess.Popen([sys.executable, "-m", "abtui", *args], cwd=ROOT, env=env,
                            text=True, stdout=subprocess.PIPE, stderr=subprocess.PIPE)


def _sysctl(lab: Lab, key: str) -> dict[str, str]:
    return {h.alias: " ".join(ns_exec(lab, h.alias, "sysctl", "-n", key).split())
            for h in lab.hosts(2)}


def _intervals(path: Path) -> int:
    return sum(e.kind.value == "interval" for e in load_events(path)) if path.exists() else 0


@pytest.mark.reliability(
    "15", "a second controller on the same hosts",
    "while one `abtui run` drives the lab, a second (another user's state) refuses in one line "
    "naming the holder (user, machine, PID, start), exit 1, nothing changed (no knob, no undo "
    "journal); `abtui check` says each host is driven by the first; the first measures on with "
    "its value; all hosts end at their originals; once it ended, nothing blocks")
def test_a_second_controller_is_refused_and_changes_nothing(lab: Lab, tmp_path: Path,
                                                             reliability: Reliability):
    wmem, rmem = _sysctl(lab, "net.ipv4.tcp_wmem"), _sysctl(lab, "net.ipv4.tcp_rmem")
    senders = [h.alias for h in lab.hosts(2) if h.role == "sender"]
    assert all(wmem[s] != WMEM for s in senders)
    out = tmp_path / "first.jsonl"
    first = _abtui(tmp_path / "state1", "run", str(lab.profile_path), "--headless",
                   "--duration", "20", "--out", str(out), "--set", f"tcp_wmem={WMEM}")
    try:
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline and _intervals(out) < 4 and first.poll() is None:
            time.sleep(0.2)
        assert _intervals(out) >= 4, first.communicate()[1] if first.poll() is not None else ""
        assert {s: _sysctl(lab, "net.ipv4.tcp_wmem")[s] for s in senders} == \
            dict.fromkeys(senders, WMEM)
        t0 = time.monotonic()
        second = _abtui(tmp_path / "state2", "run", str(lab.profile_path), "--headless",
                        "--duration", "5", "--out", str(tmp_path / "second.jsonl"),
                        "--set", f"tcp_wmem={TCP_WMEM_VALUES[0]}",
                        "--set", f"tcp_rmem={TCP_RMEM_VALUES[1]}")
        _, err = second.communicate(timeout=60)
        refused_s = time.monotonic() - t0
        during = _intervals(out)
        check = _abtui(tmp_path / "state2", "check", str(lab.profile_path))
        said, _ = check.communicate(timeout=60)
        assert first.poll() is None, "the first controller ended early"
    finally:
        if first.poll() is None:
            _, first_err = first.communicate(timeout=60)
        else:
            first_err = first.communicate()[1]
    assert second.returncode == 1, err
    assert "Traceback" not in err
    held = [line for line in err.splitlines() if "driven by" in line]
    assert len(held) == 1, err
    assert f"pid {first.pid}," in held[0] and "abtui of " in held[0], held[0]
    assert all(h.alias in held[0] for h in lab.hosts(2))
    assert "nothing was changed on any host" in held[0]
    assert not list((tmp_path / "state2").glob("abtui/undo/*.jsonl"))
    # the check refused every host, naming the first controller
    assert check.returncode == 1
    not_checked = [ln for ln in said.splitlines() if "not checked: " in ln and "driven by" in ln]
    assert len(not_checked) == 4 and all(f"pid {first.pid}," in ln for ln in not_checked), said
    # the first went on with its own value, and set every host back
    assert first.returncode == 0, first_err
    assert _intervals(out) > during
    config = {e.payload.config["tcp_wmem"] for e in load_events(out)
              if e.kind.value == "run_start"}
    assert config == {WMEM}
    assert _sysctl(lab, "net.ipv4.tcp_wmem") == wmem
    assert _sysctl(lab, "net.ipv4.tcp_rmem") == rmem
    assert stray_pids(lab) == {}
    # its links are gone, and with them its leases: nothing blocks a new controller
    again = _abtui(tmp_path / "state2", "check", str(lab.profile_path))
    said, _ = again.communicate(timeout=60)
    assert "driven by" not in said and f"{lab.hosts(2)[0].alias}: reachable" in said, said
    reliability.row(exit_code=second.returncode, refused_after_s=refused_s,
                    first_intervals=_intervals(out))


@pytest.mark.reliability(
    "16", "a damaged undo journal",
    "`abtui recover` on a dead writer's journal whose first entry is of a kind it does not "
    "know (a newer abtui's), then groups 1, 0 and -1, a setting of an unknown kind, then a "
    "valid original: the valid one is restored on the host, each other said in one line, "
    "no traceback, exit 1, the journal kept for the unknown kind until `--forget`")
def test_recover_takes_what_it_can_from_a_damaged_journal(lab: Lab, tmp_path: Path,
                                                          reliability: Reliability):
    host = next(h.alias for h in lab.hosts(2) if h.role == "sender")
    before = _sysctl(lab, "net.ipv4.tcp_wmem")[host]
    assert before != WMEM
    ns_exec(lab, host, "sysctl", "-q", "-w", f"net.ipv4.tcp_wmem={WMEM}")  # a dead abtui's
    undo = tmp_path / "state" / "abtui" / "undo"
    undo.mkdir(parents=True)
    ended = subprocess.Popen(["true"])
    ended.wait()
    records: list[object] = [
        {"op": "start", "pid": ended.pid, "t": time.time()},
        {"op": "host", "alias": host, "ssh_config": str(lab.ssh_config), "known_hosts": None,
         "sudo": False},
        {"op": "wormhole", "host": host, "to": "6.1.0-57-amd64"},
        *({"op": "pgid", "host": host, "pgid": g, "what": "iperf3"} for g in (1, 0, -1)),
        {"op": "original", "host": host, "kind": "warp-drive", "key": "x", "device": None,
         "value": "1"},
        {"op": "original", "host": host, "kind": "sysctl", "key": "net.ipv4.tcp_wmem",
         "device": None, "value": before, "knob": "tcp_wmem"}]
    journal = undo / "20261204T000000-1.jsonl"
    journal.write_text("".join(json.dumps(r) + "\n" for r in records))
    t0 = time.monotonic()
    rec = _abtui(tmp_path / "state", "recover")
    said, err = rec.communicate(timeout=60)
    recover_s = time.monotonic() - t0
    assert "Traceback" not in said + err, err
    assert rec.returncode == 1, said + err
    assert _sysctl(lab, "net.ipv4.tcp_wmem")[host] == before
    lines = said.splitlines()
    assert f"ok   {host}: restored net.ipv4.tcp_wmem = {before!r}" in lines, said
    fails = [ln for ln in lines if ln.startswith("FAIL ")]
    assert len(fails) == 5, said
    assert "line 3: unknown kind of entry 'wormhole'" in fails[0] and "kept" in fails[0]
    assert [f"process group {g} is never ended" in ln for ln, g in zip(fails[1:4], (1, 0, -1),
                                                                       strict=True)] == [True] * 3
    assert "unknown kind of setting 'warp-drive'" in fails[4]
    assert journal.exists()  # for an abtui that knows the `build` entry
    forget = _abtui(tmp_path / "state", "recover", "--forget", host)
    said, err = forget.communicate(timeout=60)
    assert forget.returncode == 0, said + err
    assert not journal.exists()
    reliability.row(entries_skipped=len(fails), restored=1, recover_s=recover_s)


def _holding(path: str) -> tuple[str, int]:
    """The lease file's holder line less the shell, and the shell's PID."""
    line = Path(path).read_text().strip()
    holder, shell = parse_holder(line)
    assert holder is not None and shell is not None, line
    return line.rsplit(" shell=", 1)[0], shell


async def test_a_reconnect_takes_its_own_lease_back(lab: Lab):
    """The host's sshd session hangs (SIGSTOP): the client gives up on its keepalives while
    the host keeps the old session and its shell, which holds the lock. The link reconnects
    and its new shell ends that old shell (it names this very link) and holds the lease, all
    while the old sshd is still stopped; another controller is refused meanwhile; closing
    the link frees the lease."""
    host = lab.hosts(2)[0]
    link = HostLink(host.alias, ssh_config=str(lab.ssh_config), lease=True)
    await link.connect()
    other = HostLink(host.alias, ssh_config=str(lab.ssh_config), lease=True, reconnect=False)
    stopped = sshd_sessions(lab, host.alias)
    try:
        assert link.lease_path is not None and stopped
        holder, old_shell = _holding(link.lease_path)
        for pid in stopped:
            os.kill(pid, signal.SIGSTOP)
        await until(lambda: link.state is not LinkState.CONNECTED, timeout=20)
        assert await link.wait_connected(40), link.state
        again, new_shell = _holding(link.lease_path)
        assert again == holder and new_shell != old_shell
        assert not pid_alive(old_shell)  # ended by the takeover: its sshd is still stopped
        assert (await link.run("echo ok")).stdout == "ok"
        with pytest.raises(LeaseHeld, match=f"pid {os.getpid()},"):
            await other.connect()
    finally:
        for pid in stopped:
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, signal.SIGKILL)
        await link.close()
    await other.connect()  # the link closed: its lease went with its shell
    await other.close()
