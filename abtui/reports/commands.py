"""The iperf3 command lines a session's runs ran, as a reader would type them: the report's
"Test options" (not the options' Python names). One line per pair and distinct command (a
plan with directions runs `-R` for its RX runs: a line each). The line is the one RUN_START
recorded (`argv`); a session from before abtui recorded it gets a rebuild, marked as such."""

from __future__ import annotations

import dataclasses
import shlex
from typing import Any

from abtui.core.dimensions import DIRECTION
from abtui.core.model import TestOptions
from abtui.remote.iperf_cmd import (
    JSON_STREAM_SINCE,
    client_argv,
    parse_iperf_version,
    run_seconds,
)
from abtui.sessions.records import Run
from abtui.sessions.session import Session

# after a command line the session did not record (older sessions): today's client_argv on
# the recorded options, so a flag in it may be one that run never had
REBUILT = "(rebuilt from the recorded options)"


def options_of(recorded: dict[str, Any]) -> TestOptions:
    """A run's recorded options (RUN_START `options`) as TestOptions; unknown keys (a newer
    abtui's) are left out, a list back to the tuple it was."""
    names = {f.name for f in dataclasses.fields(TestOptions)}
    kept = {k: v for k, v in recorded.items() if k in names}
    if isinstance(kept.get("extra_args"), list):
        kept["extra_args"] = tuple(str(a) for a in kept["extra_args"])
    return dataclasses.replace(TestOptions(), **kept)


def iperf3_argv(session: Session, run: Run) -> tuple[list[str], bool] | None:
    """The client command the run started and whether it is the one recorded: RUN_START's
    `argv` when the session has it (exactly what ran), else rebuilt from the recorded options
    with today's abtui.remote.iperf_cmd.client_argv (sessions recorded before abtui kept the
    command line: today's flags, which that run may not have had); None when the run recorded
    neither."""
    if run.argv:
        return list(run.argv), True
    if not run.options or not _started(run.options):
        return None
    try:
        opts = options_of(run.options)
    except (TypeError, ValueError):
        return None
    hosts = session.hosts_of(run.pair)
    target = hosts.get("target") or "TARGET"
    version = session.facts.get(hosts.get("sender", ""), {}).get("iperf3_version") or ""
    found = parse_iperf_version(str(version))
    json_stream = found is not None and found >= JSON_STREAM_SINCE
    argv = client_argv(opts, target, opts.port, run_seconds(opts), json_stream=json_stream,
                       program=opts.iperf3)
    return argv, False


def _started(recorded: dict[str, Any]) -> bool:
    """The options are those of a run abtui started (not an imported log's source)."""
    return bool(set(recorded) & {f.name for f in dataclasses.fields(TestOptions)})


def ping_line(recorded: dict[str, Any]) -> str:
    """How the run pinged: `-c N` on the idle link before iperf3, or alongside it; and its
    request/response load (sockperf) alongside, if any."""
    opts = options_of(recorded)
    parts = []
    if opts.ping:
        parts.append(f"ping -c {opts.ping_count} (before each run)" if opts.ping_count > 0
                     else f"ping -i {opts.ping_interval:g} (alongside)")
    if opts.sockperf:
        parts.append(f"sockperf {opts.sockperf} --mps {opts.sockperf_mps}"
                     f"{' --tcp' if opts.sockperf_tcp else ''} (alongside)")
    return "; ".join(parts) or "—"


_PORT_FLAGS = ("-p", "--port")


def _port_free(argv: list[str]) -> tuple[tuple[str, ...], str | None]:
    """The command with its server port left out, and that port: a run whose server moved
    to another port (the last one still busy) ran the same command."""
    kept: list[str] = []
    port = None
    skip = False
    for i, arg in enumerate(argv):
        if skip:
            skip = False
            continue
        if arg in _PORT_FLAGS and i + 1 < len(argv):
            port, skip = argv[i + 1], True
            continue
        kept.append(arg)
    return tuple(kept), port


def command_lines(session: Session) -> list[tuple[str, str, str, str]]:
    """(pair, direction, iperf3 command in Markdown code, ping) per pair and distinct
    command line, in the order first run, the server's port aside (the first run's shown,
    the others named after it); a command rebuilt from the options (iperf3_argv) says so
    after it. Direction as the plan names it (`tx`, `rx`), else read from the command (`-R`,
    `--bidir`)."""
    out: list[tuple[str, str, str, str]] = []
    seen: set[tuple[str, str]] = set()
    ports: dict[tuple[str, tuple[str, ...]], tuple[int, list[str]]] = {}
    for pair in session.pairs:
        for run in session.runs_of(pair):
            source = (run.options or {}).get("source")
            if source is not None and not run.argv and not _started(run.options or {}):
                imported = f"imported from {source}"
                if (pair, imported) not in seen:
                    seen.add((pair, imported))
                    out.append((pair, "—", imported, "—"))
                continue
            found = iperf3_argv(session, run)
            if found is None:
                continue
            argv, recorded = found
            key, port = _port_free(argv)
            if (pair, key) in ports:  # the same command, perhaps on another port
                row, seen_ports = ports[(pair, key)]
                if port is not None and port not in seen_ports:
                    seen_ports.append(port)
                continue
            ports[(pair, key)] = (len(out), [port] if port is not None else [])
            cell = f"`{shlex.join(argv)}`" + ("" if recorded else f" {REBUILT}")
            direction = str(run.config.get(DIRECTION) or "")
            if not direction:
                direction = ("bidir" if "--bidir" in argv else
                             "rx (-R)" if "-R" in argv or "--reverse" in argv else "tx")
            out.append((pair, direction, cell, ping_line(run.options or {})))
    for row, seen_ports in ports.values():
        if len(seen_ports) > 1:  # the server moved: one line, its ports said
            pair, direction, cell, ping = out[row]
            out[row] = (pair, direction, f"{cell} (also on port{'s' * (len(seen_ports) > 2)} "
                        f"{', '.join(seen_ports[1:])})", ping)
    return out
