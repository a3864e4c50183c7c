"""The control shell's framing: one long-lived shell per host fed commands over stdin, each
followed by a random end mark with its exit status (abtui.remote.link.HostLink runs its short
commands here: about a millisecond each instead of a new SSH channel's ~120 ms). In bash 5
the shell runs a loop that reads each command whole and answers in one write (`bulk_loop`);
a dialect's command sent again is the call of the function its first sending defined.
"""

from __future__ import annotations

import re
import secrets
from dataclasses import dataclass

from abtui.core.text import visible
from abtui.remote.cork import corkable, corked, release
from abtui.remote.lease import FD as LEASE_FD
from abtui.remote.os.dialect import FUNCTION
from abtui.remote.sshlib import asyncssh

# A folder of a bulk shell's own for its output files (ControlShell.bulk_loop): in /dev/shm
# where it can be made there.
MAKE_FOLDER = ('mktemp -d /dev/shm/abtui.XXXXXX 2>/dev/null || '
               'mktemp -d "${TMPDIR:-/tmp}/abtui.XXXXXX"')
# Bash 5 (its `read -N` reads a block in one read(2), and takes LC_ALL for that read alone),
# able to make the folder; its two files are created empty here. The loop removes the folder
# as soon as it has opened them; the EXIT trap (SIGHUP and SIGTERM exit through it) covers a
# shell that ends before that.
BULK_PROBE = ('case "${BASH_VERSION:-}" in [5-9].*|[1-9][0-9]*) '
              f'__abtui_t=$({MAKE_FOLDER}) && '
              ': >"$__abtui_t/o" && : >"$__abtui_t/e" && '
              'trap \'rm -rf -- "$__abtui_t"\' EXIT && trap \'exit 129\' HUP && '
              'trap \'exit 143\' TERM && echo bulk ;; esac')
BULK_HEADER = 8  # digits of a command's length before it (one `read -N 8`)

# A dialect's command (abtui.remote.os.dialect.as_function): a function defined and called
# at once.
_DEF_HEAD, _DEF_TAIL = f"{FUNCTION}() {{\n", f"\n}}; {FUNCTION}"
MAX_FUNCTIONS = 256  # dialect commands a bulk shell keeps defined (a flip's are a handful)
STATUS_DIGITS = 12  # room for the exit status in the framing's end mark (see ControlShell)


BRIEF = 60  # characters of a command an error line quotes


def command_brief(command: str) -> str:
    """A command as one line of an error message: its first line that says something (not a
    dialect function's head), its runs of blanks as one space, cut at BRIEF characters, and
    nothing a terminal would act on (a timed-out watch quoted its whole awk script)."""
    lines = (ln.strip() for ln in command.splitlines())
    said = [ln for ln in lines if ln and not ln.endswith("{") and not ln.startswith("}")]
    text = visible(" ".join(said[0].split())) if said else ""
    return text[:BRIEF] + ("…" if len(text) > BRIEF or len(said) > 1 else "")


@dataclass(slots=True)
class CommandResult:
    exit_status: int
    stdout: str
    stderr: str

    @property
    def ok(self) -> bool:
        return self.exit_status == 0


class ControlShell:
    """A control shell and its framing: each command is followed by an end mark on stdout
    (with the exit status) and one on stderr; in a bulk shell (bash 5, `bulk_loop`) the
    reply is one write on stdout: the output, a mark, stderr, the end mark. The mark is
    drawn once per shell, so its patterns are compiled once (asyncssh compiles a string
    separator on every read: a mark drawn per command cost a regex compile per read,
    ~0.1 ms each, on the knob flip's path); a shell whose framing broke is dropped, so no
    late output from an earlier command is ever read under the same mark."""

    def __init__(self, process: asyncssh.SSHClientProcess[str],
                 conn: asyncssh.SSHClientConnection) -> None:
        self.process = process
        self.mark = f"__ABTUI_{secrets.token_hex(8)}__"
        self.out_end = re.compile(re.escape(f"\n{self.mark} ") + r"(-?\d+)\n")
        self.err_end = re.compile(re.escape(f"\n{self.mark}\n"))
        self.err_mark = f"\n{self.mark}\n"  # in a bulk reply: where stderr begins
        self.out_len = len(self.mark) + 3 + STATUS_DIGITS
        self.err_len = len(self.mark) + 2
        # what follows a command read by the shell itself: the end marks, status first
        self._ends = f"printf '\\n{self.mark} %d\\n' \"$?\"; printf '\\n{self.mark}\\n' >&2\n"
        self.bulk = False  # commands read whole by bash's `read -N` (bulk_loop)
        # a dialect command's text -> the name of the function it stays defined as
        self.functions: dict[str, str] = {}
        self._defining: tuple[str, str] | None = None
        # asyncssh sends an SSH_MSG_IGNORE packet before each data packet, in a write of its
        # own; corked, the two leave in one segment (one wake-up of the host's sshd per
        # command instead of two)
        self.sock = corkable(conn.get_extra_info("socket"))

    def send(self, command: str, opening: str, closing: str) -> None:
        """Write `command`, framed, to the shell's stdin (one TCP segment where it can)."""
        if self.bulk:  # the loop of `bulk_loop` frames it: the block's length, then the block
            block = f"{opening} {self._named(command)}\n{closing}"
            framed = f"{len(block.encode()):0{BULK_HEADER}d}{block}"
        else:
            framed = f"{opening} {command}\n{closing} </dev/null {LEASE_FD}>&-; {self._ends}"
        joined = release()
        if joined is not None and self.sock is not None and joined.hold(self.sock):
            try:  # let go with the other hosts' commands (abtui.remote.cork.together)
                self.process.stdin.write(framed)
            finally:
                joined.wrote()
            return
        with corked([self.sock] if self.sock is not None else []) as held:
            if not held:  # no cork here (or it failed): never tried again
                self.sock = None
            self.process.stdin.write(framed)

    def send_bare(self, command: str) -> None:
        """Write `command` to a shell reading its stdin itself (before `start_bulk`), with
        the end marks but no redirection around it: what it opens stays open in the shell
        (the lease's descriptor). It must not read stdin."""
        assert not self.bulk
        self.process.stdin.write(f"{command}\n{self._ends}")

    def _named(self, command: str) -> str:
        """A dialect's command, sent again, as the call of the function its first sending
        defined: bash parses the ~650 characters of a knob flip's command once per shell, not
        per flip (0.05 ms of the host's CPU a command). Defined once its command ran with a
        status other than 2 (a definition bash could not parse is sent whole again)."""
        self._defining = None
        if not (command.startswith(_DEF_HEAD) and command.endswith(_DEF_TAIL)):
            return command
        name = self.functions.get(command)
        if name is not None:
            return name
        if len(self.functions) >= MAX_FUNCTIONS:
            return command
        name = f"abtui_f{len(self.functions)}"
        self._defining = (command, name)
        return f"{name}() {{\n{command[len(_DEF_HEAD):-len(_DEF_TAIL)]}\n}}; {name}"

    def bulk_loop(self) -> str:
        """The loop bash runs to read each command whole: bash reads a script from a pipe one
        byte a read(2) (so that a child could read what follows), ~0.3 ms of the host's CPU
        for a knob flip's command; `read -N` takes the block in one read, its length (in
        bytes, LC_ALL=C for that read only) in a fixed-width header before it.

        The reply is one write: bash's stdout is line-buffered, so a command printing on its
        own and then the marks were 5 to 7 writes on two pipes, each a wake-up of sshd and
        often an SSH packet of its own. The loop's stdout and stderr are files of the shell's
        folder (BULK_PROBE made it), opened once for appending, and read from where the last
        reply stopped through descriptors also opened once (no open or redirection per
        command); the loop reads the commands from descriptor 3 (the shell's stdin, moved),
        and they run with /dev/null as stdin; the reply -- output, mark, stderr, end mark
        with the status -- is one `printf %s` on descriptor 4 (the pipe stdout was), one
        write(2) for a string that ends with a newline. The folder is removed as soon as
        the files are open (they live on as long as the shell holds them), so a shell killed
        outright leaves nothing on the host. Past 64 KiB the loop moves to two fresh files
        the same way (a new folder, opened, removed); where none can be made it goes on
        with the old ones. A command that does not parse: bash's message in stderr, status
        2, the loop goes on. NUL bytes of an output are left out."""
        t = '"$__abtui_t"'
        def take(fd: int, var: str) -> str:  # the file from where the last reply stopped
            return (f"{var}=; while IFS= read -r -d '' -u {fd} __abtui_x; do "
                    f'{var}+=$__abtui_x; done; {var}+=$__abtui_x; ')
        def files(d: str) -> str:  # the loop's output files opened, their folder removed
            return f"exec 1>>{d}/o 2>>{d}/e 5<{d}/o 6<{d}/e; rm -rf -- {d}"
        return ("__abtui_fresh() { local d; d=$( { " + MAKE_FOLDER + "; } 2>/dev/null) || "
                f"return; {files(chr(34) + '$d' + chr(34))}; }}; "
                f"exec 3<&0 4>&1 0</dev/null; {files(t)}; "
                f"__abtui_z=0; while IFS= read -r -u 3 -N {BULK_HEADER} __abtui_n && "
                'LC_ALL=C IFS= read -r -u 3 -N "$__abtui_n" __abtui_c; do '
                f'eval "$__abtui_c" {LEASE_FD}>&-; __abtui_s=$?; '
                + take(5, "__abtui_o") + take(6, "__abtui_e") +
                f'printf %s "$__abtui_o\n{self.mark}\n$__abtui_e\n{self.mark} $__abtui_s\n" '
                ">&4; if (( (__abtui_z += ${#__abtui_o} + ${#__abtui_e}) > 65536 )); then "
                "__abtui_fresh && __abtui_z=0; fi; "
                "done\n")

    async def start_bulk(self) -> None:
        """Where the shell is bash 5 or later, switch it to `bulk_loop` (else it stays the
        shell reading stdin itself, as sh does)."""
        self.send(BULK_PROBE, "{", "}")
        probe = await self.result()
        if probe.stdout.strip() == "bulk":
            self.process.stdin.write(self.bulk_loop())
            self.bulk = True

    async def result(self) -> CommandResult:
        """The command's stdout, stderr and exit status, once both end marks are read (in a
        bulk shell's reply, both are on stdout)."""
        out = await self.process.stdout.readuntil(self.out_end, self.out_len)
        end = self.out_end.search(out, max(0, len(out) - self.out_len))
        assert end is not None  # readuntil returns what ends with the mark
        if self.bulk:  # one reply: output, mark, stderr, end mark
            stdout, _mark, stderr = out[: end.start()].partition(self.err_mark)
        else:
            err = await self.process.stderr.readuntil(self.err_end, self.err_len)
            stdout = out[: end.start()]
            stderr = err[: -(len(self.mark) + 2)]
        status = int(end.group(1))
        if self._defining is not None and status != 2:
            self.functions[self._defining[0]] = self._defining[1]
        self._defining = None
        return CommandResult(status, stdout.removesuffix("\n") if
                             stdout.endswith("\n") else stdout, stderr)

    def close(self) -> None:
        self.process.close()
