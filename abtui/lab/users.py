"""A non-root user on the lab's hosts (`abtui lab up --user NAME`), for trying a sudo setup
as users have it (a login that is not root, `sudo -n` for what needs root).

The namespace hosts share this machine's users and files, so the user is a local account:
made (`useradd`, a home, a login shell, no password: keys only) when it does not exist, and
removed by `lab down` only if the lab made it. It logs in with the lab's client key: the
key is listed for it in KEYS_DIR/NAME (sshd reads a user's keys as that user, and the lab's
own state folder is root's alone), which every host's sshd_config names after the root's
file. Its sudo rights are a drop-in in /etc/sudoers.d (`NAME ALL=(ALL:ALL) NOPASSWD: ALL`),
removed by `lab down`: as the hosts share this machine's files, they hold on the machine
itself too. For a lab machine only.
"""

from __future__ import annotations

import contextlib
import json
import os
import pwd
import re
import shutil
from pathlib import Path

from abtui.core.errors import BadInput, LabError
from abtui.lab.layout import LabLayout
from abtui.lab.system import run

USER_NAME = re.compile(r"[a-z_][a-z0-9_-]{0,30}")
SUDOERS_DIR = Path("/etc/sudoers.d")


def keys_dir(layout: LabLayout) -> Path:
    """Where each admitted user's authorized key is (readable by that user)."""
    return Path("/run") / f"abtui-lab-{layout.name}-users"


def _record(layout: LabLayout) -> Path:
    return layout.state_dir / "users.json"


def _sudoers(layout: LabLayout, user: str) -> Path:
    return SUDOERS_DIR / f"abtui-lab-{layout.name}-{user}"


def check_name(user: str) -> str:
    if not USER_NAME.fullmatch(user) or user == "root":
        raise BadInput(f"--user {user!r}: a login name (lowercase letters, digits, _ and -, "
                       "starting with a letter or _; not root)")
    return user


def admit(layout: LabLayout, user: str) -> bool:
    """`user` may log in on every host with the lab's key and has sudo there; True when
    the account was made here (removed again by `remove`)."""
    check_name(user)
    made = False
    try:
        pwd.getpwnam(user)
    except KeyError:
        run(["useradd", "--create-home", "--shell", "/bin/bash", "--comment",
             f"abtui lab {layout.name}", user])
        made = True
    # a locked password ("!") stops a key login when sshd runs without PAM; "*": no password
    # can match, the account is not locked
    if made:
        run(["usermod", "-p", "*", user])
    where = keys_dir(layout)
    where.mkdir(mode=0o755, exist_ok=True)
    os.chmod(where, 0o755)
    key = (Path(f"{layout.client_key}.pub")).read_text()
    (where / user).write_text(key)
    os.chmod(where / user, 0o644)
    sudoers = _sudoers(layout, user)
    SUDOERS_DIR.mkdir(exist_ok=True)
    tmp = sudoers.with_name(f".{sudoers.name}.tmp")  # sudo skips names with a dot
    tmp.write_text(f"{user} ALL=(ALL:ALL) NOPASSWD: ALL\n")
    os.chmod(tmp, 0o440)
    if shutil.which("visudo"):
        run(["visudo", "-cqf", str(tmp)])
    os.replace(tmp, sudoers)
    users = admitted(layout)
    users[user] = users.get(user, False) or made
    _record(layout).write_text(json.dumps(users))
    return made


def admitted(layout: LabLayout) -> dict[str, bool]:
    """{user: made by the lab} of the users admitted to this lab."""
    try:
        raw = json.loads(_record(layout).read_text())
    except (OSError, ValueError):
        return {}
    return {str(k): bool(v) for k, v in raw.items()} if isinstance(raw, dict) else {}


def remove(layout: LabLayout) -> None:
    """Every admitted user's key and sudo rights gone, and the accounts the lab made."""
    for user, made in admitted(layout).items():
        if not USER_NAME.fullmatch(user):
            continue
        _sudoers(layout, user).unlink(missing_ok=True)
        if made:  # (already gone, or a process of it still running: the user's to end)
            with contextlib.suppress(LabError):
                run(["userdel", "--remove", user])
    shutil.rmtree(keys_dir(layout), ignore_errors=True)
