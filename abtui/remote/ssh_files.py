"""What a link reads from the SSH client's files: the ConnectTimeout of its ssh_config block,
the known_hosts files it checks, and how it judges a host key they do not list. asyncssh
accepts a key known_hosts lists; for any other this tells an unknown key (refused unless the
profile accepts new keys, then recorded) from a changed one (always refused, naming the
known_hosts line that holds the old key).
"""

from __future__ import annotations

import os
import shlex
from pathlib import Path

from abtui.core.destination import Destination
from abtui.remote.sshlib import asyncssh


def known_hosts_entry(files: list[str], host: str, addr: str,
                      port: int) -> tuple[str, int] | None:
    """The first known_hosts file and line that lists `host` (under any key), or None."""
    for path in files:
        try:
            lines = Path(path).expanduser().read_text(errors="replace").splitlines()
        except OSError:
            continue
        for number, line in enumerate(lines, 1):
            if not line.strip() or line.lstrip().startswith("#"):
                continue
            try:
                entry = asyncssh.import_known_hosts(line + "\n")
            except (ValueError, asyncssh.Error):
                continue
            if any(entry.match(host, addr, port if port != 22 else None)[:2]):
                return str(Path(path).expanduser()), number
    return None


def configured_connect_timeout(ssh_config: str | None, host: str) -> float | None:
    """The ConnectTimeout of the host's block in the ssh_config (read by asyncssh's own config
    reader), None where it sets none or the file cannot be read (connecting says why)."""
    if not ssh_config:
        return None
    value = configured_option(ssh_config, host, "ConnectTimeout")
    try:
        return float(value) if isinstance(value, int | float | str) and value else None
    except ValueError:
        return None


def configured_option(ssh_config: str | None, host: str, name: str) -> object | None:
    """An option of the host's block, read by asyncssh's own config reader from the
    ssh_config given, else from ~/.ssh/config as asyncssh reads it by default; None where it
    is not set or the file cannot be read (connecting says why)."""
    if ssh_config:
        paths = [ssh_config]
    else:
        default = Path("~", ".ssh", "config").expanduser()
        paths = [str(default)] if os.access(default, os.R_OK) else []
    if not paths:
        return None
    try:
        import getpass

        from asyncssh.config import SSHClientConfig

        config = SSHClientConfig.load(None, paths, False, False, False,
                                      getpass.getuser(), (), host, ())
        value = config.get(name, None)
        return value if value not in (None, "", ()) else None
    except Exception:  # asyncssh's reader: any trouble means the default
        return None


class HostKeyChecks:
    """The host-key side of one link (abtui.remote.link.HostLink owns one): which known_hosts
    files it checks, what the last check found (`problem`, a one-line message) and whether it
    recorded a new key (`accepted_new_key`)."""

    def __init__(self, alias: str, destination: Destination, *, ssh_config: str | None,
                 known_hosts: str | None, accept_new_host_keys: bool) -> None:
        self.alias = alias
        self.destination = destination
        self.ssh_config = ssh_config
        self.known_hosts = known_hosts
        self.accept_new_host_keys = accept_new_host_keys
        self.problem = ""
        self.accepted_new_key = False

    def known_hosts_files(self) -> list[str]:
        """The known_hosts files this link checks (explicit, else from ssh_config, else ~)."""
        if self.known_hosts:
            return [self.known_hosts]
        host, extra = self.destination.connect_args()
        try:
            opts = asyncssh.SSHClientConnectionOptions(
                config=[self.ssh_config] if self.ssh_config else (), host=host, **extra)
            files = opts.known_hosts
        except (OSError, ValueError, asyncssh.Error):
            files = ()
        if isinstance(files, str):
            return [files]
        if isinstance(files, list | tuple) and files:
            return [str(f) for f in files if isinstance(f, str | Path)]
        return [str(Path("~/.ssh/known_hosts").expanduser())]

    def judge(self, host: str, addr: str, port: int, key: asyncssh.SSHKey) -> bool:
        """Refuse a changed key always; accept (and record) an unknown one only if allowed."""
        files = self.known_hosts_files()
        entry = known_hosts_entry(files, host, addr, port)
        name = host if port == 22 else f"[{host}]:{port}"  # as known_hosts lists it
        if entry is not None:
            self.problem = (
                f"host key of {self.alias} has CHANGED: {entry[0]} line {entry[1]} holds "
                f"another key for {name}. If the host was reinstalled, remove that line "
                f"(ssh-keygen -R {shlex.quote(name)} -f {entry[0]}) and connect again; "
                "otherwise someone may be intercepting the connection. Refused.")
            return False
        if not self.accept_new_host_keys:
            self.problem = (
                f"host key of {self.alias} is unknown (not in {', '.join(files)}): verify it, "
                f"add it (ssh-keyscan), or set accept_new_host_keys = true in the profile")
            return False
        target = Path(next((f for f in files if f != "/dev/null"),
                           "~/.ssh/known_hosts")).expanduser()
        target.parent.mkdir(parents=True, exist_ok=True)
        with target.open("a") as fh:
            fh.write(f"{name} {key.export_public_key().decode().strip()}\n")
        self.accepted_new_key = True
        return True
