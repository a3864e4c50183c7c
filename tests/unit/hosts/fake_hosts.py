"""Fake hosts for the knob layer's unit tests (the lab tests use real ones): a dialect whose
commands are words, and a link whose settings live in a dict."""

from __future__ import annotations

from abtui.remote.control_shell import CommandResult
from abtui.remote.os.dialect import SWAP_MARK, Dialect


class FakeDialect(Dialect):
    name = "linux"

    def read_command(self, s):  # type: ignore[no-untyped-def]
        return f"read {s.key}"

    def write_command(self, s, value):  # type: ignore[no-untyped-def]
        return f"write {s.key} {value}"

    def swap_command(self, s, value):  # type: ignore[no-untyped-def]
        return f"swap {s.key} {value}"

    def parse_value(self, s, out):  # type: ignore[no-untyped-def]
        return out.strip() or None


class FakeLink:
    """A host's settings in a dict (`net.x` = "1" to start, or `values`: shared by every
    link given it, as a host reached again); a setting not there cannot be read (exit 1).
    `log` gets (alias, command) of every command run. `refuse`: every write of another value
    fails; `refuse_back`: the new value is taken but going back to "1" fails. It takes
    HostLink's keywords, so it can stand in for HostLink where a module makes its links
    (`abtui recover`)."""

    def __init__(self, alias: str, log: list[tuple[str, str]] | None = None,
                 refuse: bool = False, values: dict[str, str] | None = None,
                 **_link_options: object) -> None:
        self.alias, self.refuse = alias, refuse
        self.log = [] if log is None else log
        self.refuse_back = False
        self.values = {"net.x": "1"} if values is None else values
        self.uid, self.ssh_config, self.known_hosts, self.sudo = 0, None, None, False

    async def connect(self) -> None:
        return None

    async def close(self) -> None:
        return None

    def writes(self) -> list[str]:
        """The values written, in order."""
        return [c.split()[2] for _alias, c in self.log if c.startswith("write ")]

    async def run(self, command: str, timeout: float = 10.0, isolate: bool = True,
                  again: bool = False) -> CommandResult:
        self.log.append((self.alias, command))
        return self._do(command)

    def _do(self, command: str) -> CommandResult:
        verb, key, *rest = command.split()
        if key not in self.values:
            return CommandResult(1, "", f"sysctl: cannot stat {key}\n")
        if verb == "swap":
            old = self.values[key]
            result = self._do(f"write {key} {rest[0]}")
            return CommandResult(result.exit_status, f"{old}\n{SWAP_MARK}\n{result.stdout}",
                                 result.stderr)
        if verb == "write":
            if (self.refuse and rest[0] != self.values[key]) or \
                    (self.refuse_back and rest[0] == "1" and self.values[key] != "1"):
                return CommandResult(1, "", "printf: write error: Invalid argument\n")
            self.values[key] = rest[0]
        return CommandResult(0, self.values[key] + "\n", "")
