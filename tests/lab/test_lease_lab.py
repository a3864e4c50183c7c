"""A lease nobody else can plant, forge or read, on the lab's real hosts (abtui.remote.lease).

Another local user of a host (`nobody`, inside the host's namespace) cannot create anything
at the lease's name (its folder is root's); whatever root (or a mistake) leaves there -- a
symbolic link to a file of root's, a FIFO, a file of nobody's locked by nobody with a forged
holder line -- is refused in one line naming the file and its owner, never written, blocked
on or believed. Two `abtui run` started together 20 times: exactly one drives the hosts each
time, the other names it. A holder frozen by SIGSTOP loses its lease within the stated time
(its heartbeat stops: STALE_S, then the next controller's takeover).
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from abtui.core.errors import LeaseHeld, RemoteError
from abtui.lab.netns import Lab
from abtui.remote.lease import STALE_S, TAKEOVER_WAIT_S, WAIT_S
from abtui.remote.link import HostLink
from tests.lab.engine_kit import stray_pids
from tests.lab.namespaces import ns_exec
from tests.reliability import Reliability

pytestmark = [pytest.mark.lab, pytest.mark.usefixtures("no_strays")]

ROOT = Path(__file__).resolve().parents[2]
AS_NOBODY = ("setpriv", "--reuid=65534", "--regid=65534", "--clear-groups", "--")
# a frozen holder's lease is taken by a controller asking every 2 s within this
FROZEN_BOUND_S = STALE_S + WAIT_S + TAKEOVER_WAIT_S + 4


async def _lease_file(lab: Lab, alias: str) -> Path:
    """The host's lease file, as its shell names it (taken, then let go)."""
    link = HostLink(alias, ssh_config=str(lab.ssh_config), lease=True, reconnect=False)
    await link.connect()
    try:
        assert link.lease_path is not None, link.lease_note
        return Path(link.lease_path)
    finally:
        await link.close()


async def _refusal(lab: Lab, alias: str) -> tuple[str, float]:
    """The line a controller's link to `alias` is refused with, and how long it took."""
    link = HostLink(alias, ssh_config=str(lab.ssh_config), lease=True, reconnect=False)
    t0 = time.monotonic()
    try:
        with pytest.raises(RemoteError) as refused:
            await asyncio.wait_for(link.connect(), 20)
    finally:
        await link.close()
    assert not isinstance(refused.value, LeaseHeld), refused.value
    return str(refused.value), time.monotonic() - t0


def _abtui(state: Path, *args: str) -> subprocess.Popen[str]:
    env = {**os.environ, "XDG_STATE_HOME": str(state), "PYTHONPATH": str(ROOT)}
    return subprocess.Popen([sys.executable, "-m", "abtui", *args], cwd=ROOT, env=env,
                            text=True, stdout=subprocess.PIPE, stderr=subprocess.PIPE)


@pytest.mark.reliability(
    "46s", "another local user plants something at a host's lease name",
    "`nobody` inside the host's namespace cannot create at the lease's name (its folder is "
    "root's); a symbolic link to a root file, a FIFO and a file of nobody's locked by nobody "
    "with a forged holder line are each refused in one line naming the file and its owner "
    "(`abtui check`: a FAIL line, exit 1), the link's target unchanged, no hang, no forged "
    "holder named")
async def test_nothing_planted_at_the_lease_is_followed_blocked_on_or_believed(
        lab: Lab, tmp_path: Path, reliability: Reliability):
    alias = lab.hosts(2)[0].alias
    path = await _lease_file(lab, alias)
    assert (path.stat().st_mode & 0o777) == 0o600 and path.stat().st_uid == 0
    path.unlink()
    # nobody cannot plant anything there
    tried = subprocess.run(["ip", "netns", "exec", f"abtui-{alias}", *AS_NOBODY,
                            "ln", "-s", "/etc/hostname", str(path)],
                           capture_output=True, text=True)
    assert tried.returncode != 0 and "Permission denied" in tried.stderr, tried
    assert not path.exists() and not path.is_symlink()
    target = tmp_path / "roots-file"
    target.write_text("root's own\n")
    sleeper = None
    times = {}
    try:
        path.symlink_to(target)
        os.chown(path, 65534, 65534, follow_symlinks=False)
        said, times["symlink"] = await _refusal(lab, alias)
        assert f"refused: {path} is a symbolic link owned by nobody" in said, said
        assert target.read_text() == "root's own\n"
        check = _abtui(tmp_path / "state", "check", str(lab.profile_path))
        out, err = check.communicate(timeout=90)
        assert check.returncode == 1 and "Traceback" not in out + err
        lines = [ln for ln in (out + err).splitlines() if str(path) in ln]
        assert len(lines) == 1 and "symbolic link owned by nobody" in lines[0], out + err
        path.unlink()

        os.mkfifo(path)
        os.chown(path, 65534, 65534)
        said, times["fifo"] = await _refusal(lab, alias)
        assert f"refused: {path} is a FIFO owned by nobody" in said, said
        assert times["fifo"] < 5
        path.unlink()

        path.write_text("abtui-lease user=root machine=ctl-forged pid=1 start=0 shell=1\n")
        path.chmod(0o600)
        os.chown(path, 65534, 65534)
        sleeper = subprocess.Popen(["ip", "netns", "exec", f"abtui-{alias}", *AS_NOBODY,
                                    "flock", str(path), "sleep", "120"])
        time.sleep(0.5)
        assert sleeper.poll() is None  # nobody holds its lock on its own file
        said, times["forged"] = await _refusal(lab, alias)
        assert f"refused: {path} is a file owned by nobody" in said, said
        assert "ctl-forged" not in said and "driven by" not in said
        assert path.read_text().startswith("abtui-lease user=root machine=ctl-forged")
    finally:
        if sleeper is not None:
            sleeper.kill()
            sleeper.wait()
            with contextlib.suppress(ProcessLookupError):
                ns_exec(lab, alias, "pkill", "-KILL", "-u", "nobody", "-x", "sleep")
        with contextlib.suppress(FileNotFoundError):
            path.unlink()
    await _lease_file(lab, alias)  # once it is gone, the host is leased again
    reliability.row(symlink_refused_s=times["symlink"], fifo_refused_s=times["fifo"],
                    forged_refused_s=times["forged"])


RACER = """
import asyncio, sys, time
from abtui.hosts.connect import held_line, open_hosts
from abtui.profile import load_profile

async def main(path, start_at):
    await asyncio.sleep(max(0.0, float(start_at) - time.time()))  # imports done: together
    hosts = await open_hosts(load_profile(path), reconnect=False)
    try:
        if hosts.held:
            print("LOST", held_line(hosts.held), flush=True)
            return 1
        if hosts.errors:
            print("ERRORS", hosts.errors, flush=True)
            return 2
        print("WON", flush=True)
        await asyncio.sleep(3)
        return 0
    finally:
        await hosts.close()

sys.exit(asyncio.run(main(sys.argv[1], sys.argv[2])))
"""


def _racer(lab: Lab, start_at: float) -> subprocess.Popen[str]:
    """A controller as `abtui run` opens its hosts (every host's lease, in the one order),
    its imports done, at `start_at` (the epoch's seconds); holding them 3 s when it got them
    all."""
    return subprocess.Popen([sys.executable, "-c", RACER, str(lab.profile_path),
                             str(start_at)], cwd=ROOT,
                            env={**os.environ, "PYTHONPATH": str(ROOT)}, text=True,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE)


@pytest.mark.timeout(900)
@pytest.mark.reliability(
    "46r", "two controllers started at the same instant",
    "two controllers opening the lab's 4 hosts as `abtui run` does, started together 20 "
    "times: exactly one takes every host, the other is refused naming it (its PID) and "
    "takes none; then twice two `abtui run --headless`: one runs (exit 0), the other exits 1 "
    "in one line naming it, no traceback, the hosts at their originals")
# 20 starts of two controllers: over 2 minutes (tests/unit/remote/test_lease_safety.py keeps the
# order in the default tier)
@pytest.mark.slow
def test_two_controllers_started_together_exactly_one_wins(lab: Lab, tmp_path: Path,
                                                          reliability: Reliability):
    outcomes, odd = [], []
    t0 = time.monotonic()
    for _ in range(20):
        start_at = time.time() + 3
        procs = [_racer(lab, start_at), _racer(lab, start_at)]
        said = [p.communicate(timeout=60) for p in procs]
        codes = [p.returncode for p in procs]
        outcomes.append(codes)
        for _out, err in said:
            assert "Traceback" not in err, err
        if sorted(codes) != [0, 1]:
            odd.append((codes, said))
            continue
        winner, loser = (0, 1) if codes[0] == 0 else (1, 0)
        assert f"pid {procs[winner].pid}," in said[loser][0], said
    assert not odd, (outcomes, odd)
    race_s = (time.monotonic() - t0) / 20
    before = {h.alias: ns_exec(lab, h.alias, "sysctl", "-n", "net.ipv4.tcp_wmem")
              for h in lab.hosts(2)}
    for i in range(2):
        procs = [_abtui(tmp_path / f"s{i}{k}", "run", str(lab.profile_path), "--headless",
                        "--duration", "2", "--out", str(tmp_path / f"{i}{k}.jsonl"))
                 for k in "ab"]
        said = [p.communicate(timeout=120) for p in procs]
        codes = [p.returncode for p in procs]
        assert sorted(codes) == [0, 1], (codes, said)
        winner, loser = (0, 1) if codes[0] == 0 else (1, 0)
        assert "Traceback" not in said[0][1] + said[1][1]
        held = [ln for ln in said[loser][1].splitlines() if "driven by" in ln]
        assert len(held) == 1 and f"pid {procs[winner].pid}," in held[0], said[loser][1]
    after = {h.alias: ns_exec(lab, h.alias, "sysctl", "-n", "net.ipv4.tcp_wmem")
             for h in lab.hosts(2)}
    assert after == before
    assert stray_pids(lab) == {}
    reliability.row(tries=20, exactly_one_won=sum(sorted(c) == [0, 1] for c in outcomes),
                    runs_tried=2, s_per_try=race_s)


HOLDER = """
import asyncio, sys
from abtui.remote.link import HostLink

async def main(config, aliases):
    links = [HostLink(a, ssh_config=config, lease=True, reconnect=False) for a in aliases]
    for link in links:
        await link.connect()
    print("READY", flush=True)
    await asyncio.sleep(600)

asyncio.run(main(sys.argv[1], sys.argv[2:]))
"""


@pytest.mark.reliability(
    "46f", "a controller frozen (SIGSTOP) while it holds hosts' leases",
    f"its heartbeat stops; another controller asking every 2 s takes each lease over within "
    f"{FROZEN_BOUND_S} s ({STALE_S} s of silence, then the takeover); refused before, naming "
    "the frozen holder as silent")
async def test_a_frozen_holder_loses_its_lease_within_the_stated_time(
        lab: Lab, reliability: Reliability):
    aliases = [h.alias for h in lab.hosts(2)][:2]
    frozen = subprocess.Popen([sys.executable, "-c", HOLDER, str(lab.ssh_config), *aliases],
                              cwd=ROOT, env={**os.environ, "PYTHONPATH": str(ROOT)},
                              stdout=subprocess.PIPE, text=True)
    taken: dict[str, float] = {}
    links: list[HostLink] = []
    try:
        assert frozen.stdout is not None
        assert frozen.stdout.readline().strip() == "READY"
        await asyncio.sleep(7)  # a heartbeat or more went out
        os.kill(frozen.pid, signal.SIGSTOP)
        t0 = time.monotonic()
        refusals = []
        while len(taken) < len(aliases) and time.monotonic() - t0 < FROZEN_BOUND_S + 20:
            for alias in aliases:
                if alias in taken:
                    continue
                link = HostLink(alias, ssh_config=str(lab.ssh_config), lease=True,
                                reconnect=False)
                try:
                    await link.connect()
                except LeaseHeld as exc:
                    refusals.append(str(exc))
                    await link.close()
                    continue
                links.append(link)
                taken[alias] = time.monotonic() - t0
            await asyncio.sleep(2)
        assert set(taken) == set(aliases), refusals[-2:]
        assert max(taken.values()) <= FROZEN_BOUND_S, taken
        assert refusals and all(f"pid {frozen.pid}," in r for r in refusals)
        assert any("silent for" in r for r in refusals), refusals
    finally:
        frozen.kill()  # (SIGKILL ends a stopped process)
        frozen.wait()
        for link in links:
            await link.close()
    reliability.row(taken_over_after_s=max(taken.values()), bound_s=FROZEN_BOUND_S)
