"""`abtui lab up --user NAME`: the hosts' sshd admits a user who is not root, with the lab's
key, and `sudo -n` works for it there (a sudo setup, as users have one); abtui itself drives
a host as that user through sudo; `lab down` removes the account it made, its key and its
sudo rights."""

from __future__ import annotations

import asyncio
import os
import pwd
import subprocess
import sys
from pathlib import Path

import pytest

from abtui.core.errors import LeaseHeld
from abtui.lab import users
from abtui.lab.netns import Lab
from abtui.remote.link import HostLink
from tests.lab.guests import ssh_argv
from tests.lab.namespaces import make_test_lab
from tests.reliability import Reliability

pytestmark = pytest.mark.lab

USER = "abtuilabuser"


def _exists(name: str) -> bool:
    try:
        pwd.getpwnam(name)
    except KeyError:
        return False
    return True


@pytest.mark.skipif(_exists(USER), reason=f"a local account {USER} exists already: the test "
                                          "would not be the one to make and remove it")
@pytest.mark.reliability(
    "46u", "two controllers on one host, one logged in as root, the other as a user with "
    "`sudo = true`",
    "both lock the same lease file (in /run); while root's holds it the sudo login's is "
    "refused naming it (its PID); once it let go, the sudo login takes it")
def test_lab_up_user_logs_in_with_sudo_and_down_removes_it(tmp_path: Path,
                                                           reliability: Reliability) -> None:
    lab = make_test_lab(tmp_path, suffix="u")
    lab.down()
    try:
        hosts = lab.up(pairs=1, user=USER)
        assert _exists(USER)
        sudoers = users.SUDOERS_DIR / f"abtui-lab-{lab.name}-{USER}"
        assert sudoers.read_text() == f"{USER} ALL=(ALL:ALL) NOPASSWD: ALL\n"
        for h in hosts:
            out = subprocess.run([*ssh_argv(lab, "-l", USER), h.alias,
                                  "id -un; hostname; sudo -n id -u"],
                                 capture_output=True, text=True, timeout=30)
            assert out.returncode == 0, out.stderr
            assert out.stdout.split() == [USER, h.alias, "0"], out
        # abtui itself on the host as that user, root's work through sudo -n
        profile = tmp_path / "sudo.toml"
        snd, rcv = hosts[0], hosts[1]
        profile.write_text(f'''[profile]
name = "sudo-lab"
ssh_config = "{lab.ssh_config}"
sudo = true

[[pairs]]
label = "A"
sender = "{USER}@{snd.alias}"
receiver = "{USER}@{rcv.alias}"
target = "{rcv.data_address}"

[[knobs]]
name = "tcp_rmem"
kind = "sysctl"
key = "net.ipv4.tcp_rmem"
values = ["4096 131072 6291456", "4096 16384 16384"]
scope = "receiver"
''')
        check = subprocess.run([sys.executable, "-m", "abtui", "check", str(profile)],
                               capture_output=True, text=True, timeout=120)
        assert check.returncode == 0, check.stdout + check.stderr
        assert "knob tcp_rmem" in check.stdout
        # the lease is one file whoever logs in: root's controller holds it, the sudo
        # login's is refused naming it (they locked different folders' files, both drove)
        root_path, sudo_path, held = asyncio.run(_leases(lab, snd.alias))
        assert sudo_path == root_path and root_path.startswith("/run/"), (root_path, sudo_path)
        assert f"PID {os.getpid()}" in held or f"pid {os.getpid()}" in held, held
        reliability.row(lease_file=f"`{root_path}`", same_for_sudo=sudo_path == root_path)
        # root still logs in as before
        root = subprocess.run([*ssh_argv(lab), snd.alias, "id -u"], capture_output=True,
                              text=True, timeout=30)
        assert root.stdout.strip() == "0"
    finally:
        lab.down()
    assert not _exists(USER)
    assert not (users.SUDOERS_DIR / f"abtui-lab-{lab.name}-{USER}").exists()
    assert not users.keys_dir(lab.layout).exists()


async def _leases(lab: Lab, alias: str) -> tuple[str, str, str]:
    """The lease file root's link locks on `alias`; the one a sudo login's link locks there;
    and what the sudo login was refused with while root's link held it."""
    config = str(lab.ssh_config)
    root = HostLink(alias, ssh_config=config, lease=True, reconnect=False)
    await root.connect()
    try:
        assert root.lease_path is not None, root.lease_note
        second = HostLink(f"{USER}@{alias}", ssh_config=config, sudo=True, lease=True,
                          reconnect=False)
        try:
            with pytest.raises(LeaseHeld) as held:
                await second.connect()
        finally:
            await second.close()
    finally:
        await root.close()
    sudo = HostLink(f"{USER}@{alias}", ssh_config=config, sudo=True, lease=True,
                    reconnect=False)
    await sudo.connect()
    try:
        assert sudo.lease_path is not None, sudo.lease_note
        return root.lease_path, sudo.lease_path, str(held.value)
    finally:
        await sudo.close()


def test_bad_user_name_is_one_line_before_anything(tmp_path: Path) -> None:
    from abtui.core.errors import BadInput

    lab = make_test_lab(tmp_path, suffix="u")
    with pytest.raises(BadInput, match="not root"):
        lab.up(pairs=1, user="root")
    with pytest.raises(BadInput, match="login name"):
        lab.up(pairs=1, user="a b;rm")
    assert not lab.state_dir.exists()
