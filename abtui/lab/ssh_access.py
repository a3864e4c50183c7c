"""SSH into the lab's hosts: the lab's keys, each host's sshd (its config, started and waited
for), and the client files (ssh_config, known_hosts) that `abtui` and plain `ssh -F` use. A
namespace host's sshd is started here; a VM host's runs in its guest (abtui.lab.vm.pairs) from the
config written here.
"""

from __future__ import annotations

import time
from pathlib import Path

from abtui.core.errors import LabError
from abtui.core.pids import pid_alive
from abtui.lab.layout import LabHost, LabLayout
from abtui.lab.system import pidfile_pid, run, ssh_banner
from abtui.lab.users import keys_dir

SSHD = "/usr/sbin/sshd"
VM_CONNECT_TIMEOUT = 60


class LabSsh:
    """A lab's SSH side: keys, sshd configs and daemons, client files; named by its layout."""

    def __init__(self, layout: LabLayout) -> None:
        self.layout = layout

    def make_keys(self, hosts: list[LabHost]) -> None:
        """The lab's client key and each host's key (kept when they exist), the client key
        authorized."""
        if not self.layout.client_key.exists():
            run(["ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-C", f"abtui-{self.layout.name}",
                 "-f", str(self.layout.client_key)])
        for h in hosts:
            key = self.layout.state_dir / f"host_{h.alias}"
            if not key.exists():
                run(["ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-C", h.alias,
                     "-f", str(key)])
        (self.layout.state_dir / "authorized_keys").write_text(
            Path(f"{self.layout.client_key}.pub").read_text())

    def start_sshd(self, alias: str) -> None:
        """Start a host's sshd again if it is not running (after a crash, or a fault test
        that killed it) and wait until it answers."""
        h = self.layout.host(alias)
        if h is None:
            raise LabError(f"{alias}: no such host in lab {self.layout.name}")
        if h.vm:
            raise LabError(f"{alias} is a VM host: its sshd runs in the guest (`abtui lab up` "
                           "again boots a guest that stopped)")
        running = self.pid_of(h)
        if running is not None and not ssh_banner(h.mgmt_address)[0]:
            # just killed and not yet reaped by the kernel: wait for it to go, or the
            # "already running" check below would skip the start
            deadline = time.monotonic() + 5.0
            while pid_alive(running) and time.monotonic() < deadline:
                time.sleep(0.02)
            if pid_alive(running):
                raise LabError(f"sshd on {alias} (PID {running}) runs but does not answer "
                               f"on {h.mgmt_address}:22")
        self.start(h)
        self.wait(h)

    def sshd_pid(self, alias: str) -> int | None:
        """The PID of a host's sshd daemon (from its pidfile), None when it is not running."""
        h = self.layout.host(alias)
        return None if h is None else self.pid_of(h)

    def _pidfile(self, h: LabHost) -> Path:
        return self.layout.state_dir / f"sshd-{h.alias}.pid"

    def pid_of(self, h: LabHost) -> int | None:
        """The PID of a namespace host's sshd, None when it is not running."""
        pid = pidfile_pid(self._pidfile(h))
        # a killed sshd may linger as a zombie
        return pid if pid is not None and pid_alive(pid) else None

    def start(self, h: LabHost) -> None:
        """A namespace host's sshd started (unless it runs), in a UTS namespace of its own."""
        if self.pid_of(h) is not None:
            return
        cfg = self.write_config(h, self._pidfile(h))
        # The sshd daemon keeps the UTS namespace alive: every SSH session sees `hostname`.
        run(["ip", "netns", "exec", h.netns, "unshare", "--uts", "sh", "-c",
             'hostname "$0" && exec "$1" -f "$2"', h.alias, SSHD, str(cfg)])

    def write_config(self, h: LabHost, pidfile: Path | str,
                           extra: tuple[str, ...] = ()) -> Path:
        """A host's sshd_config: its address, its host key, the lab's client key only."""
        cfg = self.layout.state_dir / f"sshd_config-{h.alias}"
        cfg.write_text("\n".join([
            *extra,
            f"ListenAddress {h.mgmt_address}",
            "Port 22",
            f"HostKey {self.layout.state_dir / ('host_' + h.alias)}",
            f"PidFile {pidfile}",
            # root's keys in the lab's own folder; an admitted user's (abtui.lab.users), which
            # sshd reads as that user, where that user can read them
            f"AuthorizedKeysFile {self.layout.state_dir / 'authorized_keys'} "
            f"{keys_dir(self.layout)}/%u",
            "PermitRootLogin prohibit-password",
            "PasswordAuthentication no",
            "KbdInteractiveAuthentication no",
            "UsePAM no",
            "StrictModes no",
            "UseDNS no",
            "PrintMotd no",
            "MaxSessions 64",
            "MaxStartups 64:30:128",
            "ClientAliveInterval 5",
            "AcceptEnv LANG LC_*",
            # bash sources ~/.bashrc for sshd sessions only at shell level 1: keep the build
            # machine's root dotfiles (pyenv init and its rehash lock) out of lab sessions
            "SetEnv SHLVL=1",
            "LogLevel ERROR",
            "",
        ]))
        return cfg

    def wait(self, h: LabHost, timeout: float = 10.0) -> None:
        """Until the host's sshd answers; LabError after `timeout` s."""
        deadline = time.monotonic() + timeout
        last = ""
        while time.monotonic() < deadline:
            ok, last = ssh_banner(h.mgmt_address)
            if ok:
                return
            time.sleep(0.05)
        raise LabError(f"sshd on {h.alias} ({h.mgmt_address}) did not answer: {last}")

    def write_client_files(self, hosts: list[LabHost]) -> None:
        """known_hosts and ssh_config for these hosts (what `abtui` and `ssh -F` read)."""
        lines = []
        for h in hosts:
            pub = Path(self.layout.state_dir / f"host_{h.alias}.pub").read_text().split()
            lines.append(f"{h.alias},{h.mgmt_address} {pub[0]} {pub[1]}")
        self.layout.known_hosts.write_text("\n".join(lines) + "\n")
        blocks = [f"# abtui lab '{self.layout.name}': generated by `abtui lab up`; use with "
                  "ssh -F\n"]
        for h in hosts:
            blocks.append("\n".join([
                f"Host {h.alias}",
                f"    HostName {h.mgmt_address}",
                "    User root",
                "    Port 22",
                f"    IdentityFile {self.layout.client_key}",
                "    IdentitiesOnly yes",
                f"    UserKnownHostsFile {self.layout.known_hosts}",
                "    GlobalKnownHostsFile /dev/null",
                f"    HostKeyAlias {h.alias}",
                "    StrictHostKeyChecking yes",
                "    ServerAliveInterval 5",
                "    ServerAliveCountMax 3",
                # an emulated guest under load takes seconds per login (abtui's links read it)
                *([f"    ConnectTimeout {VM_CONNECT_TIMEOUT}"] if h.vm else []),
                "",
            ]))
        self.layout.ssh_config.write_text("\n".join(blocks))
