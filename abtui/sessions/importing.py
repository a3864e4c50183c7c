"""Sessions made of saved logs, so results published elsewhere compare with new ones.

Input: the parse results of `abtui import --json` (docs/contracts.md: `{"source", "kind":
"iperf3"|"ping", "summary", "intervals"|"replies", "error"?}`), each given a pair label and a
configuration on the command line. Each file becomes one run and one phase, so repeated runs
of one configuration stay separate samples for the significance test (statistics group phases
by configuration). A --bidir log gives two pairs: PAIR (tx) and PAIR-rx. Imported logs carry
no wall clock, so times are laid out back to back from `t0`, per pair.

CLI (for `abtui import`: call add_arguments(parser), and run(args, parse_file) when
`args.session` is set):
    abtui import --session OUT --pair before:a.txt --pair after@tunnel=wireguard:b.txt \\
                 [--config mtu=1420 ...] [--profile-name NAME]
`--pair LABEL[@k=v,k=v]:FILE` (repeatable), `--config K=V` (repeatable, applies to all files;
a file's own `@k=v` wins). OUT is a path, or a bare name put in the sessions folder.
"""

from __future__ import annotations

import argparse
import os
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from abtui.core import events
from abtui.core.errors import BadInput
from abtui.core.events import AnyEvent, Event
from abtui.sessions.paths import LIVE_SUFFIX, sessions_dir
from abtui.sessions.writer import SessionWriter


@dataclass(slots=True)
class ImportItem:
    """One parsed file (an `abtui import --json` result) with where it belongs."""

    pair: str
    result: dict[str, Any]
    config: dict[str, str] = field(default_factory=dict)


def parse_config(spec: str, where: str = "--config") -> dict[str, str]:
    """`k=v,k=v` → {k: v}; BadInput naming the option when malformed."""
    out: dict[str, str] = {}
    for part in filter(None, (p.strip() for p in spec.split(","))):
        key, sep, value = part.partition("=")
        if not sep or not key.strip():
            raise BadInput(f"{where} {spec!r}: expected KNOB=VALUE[,KNOB=VALUE...]")
        out[key.strip()] = value.strip()
    return out


def parse_pair_spec(spec: str) -> tuple[str, dict[str, str], str]:
    """`LABEL[@k=v,...]:FILE` → (label, config, file); the file part may contain ':'."""
    head, sep, path = spec.partition(":")
    label, _, cfg = head.partition("@")
    if not sep or not label.strip() or not path:
        raise BadInput(f"--pair {spec!r}: expected LABEL[@KNOB=VALUE,...]:FILE")
    return label.strip(), parse_config(cfg, f"--pair {spec!r}") if cfg else {}, path


def write_session(path: str | os.PathLike[str], items: Sequence[ImportItem],
                  profile: str = "imported", t0: float | None = None) -> Path:
    """Write (and compact) a session holding the imported results; returns its file."""
    if not items:
        raise BadInput("nothing to import: give at least one --pair LABEL:FILE")
    pairs = list(dict.fromkeys(it.pair for it in _split_bidir(items)))
    start = time.time() if t0 is None else t0
    with SessionWriter(path, profile=profile, pairs=pairs) as writer:
        writer.write(Event.of(events.SessionStart(
            profile_text="", profile_path="", abtui_version=_version(),
            imported=[{"pair": it.pair, "config": it.config,
                       "source": it.result.get("source")} for it in items]), start))
        recorded = _events(items, start)
        for event in recorded:
            writer.write(event)
        writer.write(Event.of(events.SessionEnd(reason="imported"),
                              recorded[-1].t if recorded else start))
    return writer.final_path or Path(path)


def _version() -> str:
    from abtui import __version__

    return __version__


def _split_bidir(items: Sequence[ImportItem]) -> list[ImportItem]:
    """A --bidir log becomes two: its tx intervals on the pair, its rx ones on `PAIR-rx`
    (TX and RX differ, and mixing them in one phase would average two different things)."""
    out = []
    for it in items:
        raw = it.result.get("intervals")
        ivs = [iv for iv in raw if isinstance(iv, dict)] if isinstance(raw, list) else []
        if not any(iv.get("direction") == "rx" for iv in ivs):
            out.append(it)
            continue
        for direction, label, summary in (("tx", it.pair, "summary"),
                                          ("rx", f"{it.pair}-rx", "reverse_summary")):
            part = {**it.result, "summary": it.result.get(summary),
                    "intervals": [iv for iv in ivs if iv.get("direction") == direction]}
            out.append(ImportItem(label, part, it.config))
    return out


def _events(items: Sequence[ImportItem], t0: float) -> list[AnyEvent]:
    items = _split_bidir(items)
    clock = dict.fromkeys((it.pair for it in items), t0)
    out: list[AnyEvent] = []
    for run, it in enumerate(items, start=1):
        pair, config, r = it.pair, dict(it.config), it.result
        begin = clock[pair]
        out.append(Event.of(events.RunStart(
            run=run, config=config, host_clock=None, skew_ms=None,
            options={"source": r.get("source")}), begin, pair=pair))
        if r.get("kind") == "ping":
            end, summary, ping = _pings(out, r, pair, run, begin), None, _obj(r.get("summary"))
        else:
            end, summary, ping = _intervals(out, r, pair, run, begin), _obj(r.get("summary")), None
        out.append(Event.of(events.Phase(phase=run, config=config, start=begin, end=end), end,
                            pair=pair))
        error = r.get("error")
        out.append(Event.of(events.RunEnd(
            run=run, status="error" if error else "ok", summary=summary,
            ping=ping, message=f"{r.get('source')}: {error}" if error else ""), end, pair=pair))
        clock[pair] = end + 1.0
    out.sort(key=lambda e: e.t)  # stable: pairs interleave in time, each pair's order kept
    return out


def _obj(value: Any) -> dict[str, Any] | None:
    return value if isinstance(value, dict) else None


_INTERVAL_KEYS = ("start", "end", "bytes", "bits_per_second", "retransmits", "cwnd_bytes",
                  "omitted")


def _intervals(out: list[AnyEvent], r: dict[str, Any], pair: str, run: int, begin: float
               ) -> float:
    end = begin
    for iv in r.get("intervals") or []:
        if not isinstance(iv, dict) or not isinstance(iv.get("end"), int | float):
            continue
        end = begin + float(iv["end"])
        # the values as the import parsed them (None where the log has none)
        out.append(Event.of(events.IntervalMeasured.from_data(
            {"run": run, "phase": run, **{k: iv.get(k) for k in _INTERVAL_KEYS},
             "straddles": False}), end, pair=pair))
    return end


def _pings(out: list[AnyEvent], r: dict[str, Any], pair: str, run: int, begin: float) -> float:
    """Replies are spread at 1 s (ping's default) from the run's start."""
    end = begin
    for i, rep in enumerate(r.get("replies") or []):
        if not isinstance(rep, dict):
            continue
        end = begin + i + 1.0
        out.append(Event.of(events.Ping(run=run, phase=run, seq=rep.get("seq"),
                                        rtt_ms=rep.get("rtt_ms")), end, pair=pair))
    return end


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """The session-writing options of `abtui import`."""
    parser.add_argument("--session", metavar="OUT",
                        help="write a session of the given files (a path, or a name in the "
                             "sessions folder); needs --pair")
    parser.add_argument("--pair", action="append", default=[], metavar="LABEL[@K=V,...]:FILE",
                        help="a saved log, the pair it belongs to and (optionally) its "
                             "configuration; repeatable")
    parser.add_argument("--config", action="append", default=[], metavar="K=V",
                        help="a knob value for every --pair file (their own @K=V wins)")
    parser.add_argument("--profile-name", default="imported", metavar="NAME",
                        help="the profile name recorded in the session (default: imported)")


def session_path(out: str, directory: str | os.PathLike[str] | None = None) -> Path:
    """OUT as given when it has a folder part, else OUT.abtui.jsonl in the sessions folder."""
    p = Path(out).expanduser()
    if p.parent != Path("."):
        return p if p.name.endswith(LIVE_SUFFIX) else p.with_name(p.name + LIVE_SUFFIX)
    name = out.removesuffix(LIVE_SUFFIX).removesuffix(".abtui.jsonl.gz")
    return sessions_dir(directory) / f"{name}{LIVE_SUFFIX}"


def items_from_args(args: argparse.Namespace, parse_file: Callable[[Path], dict[str, Any]]
                    ) -> list[ImportItem]:
    """--pair/--config into ImportItems; `parse_file(path)` gives one `--json` result."""
    common: dict[str, str] = {}
    for spec in args.config:
        common.update(parse_config(spec))
    items = []
    for spec in args.pair:
        label, config, file = parse_pair_spec(spec)
        path = Path(file)
        if not path.is_file():
            raise BadInput(f"--pair {spec!r}: no such file {file}")
        items.append(ImportItem(label, parse_file(path), {**common, **config}))
    return items


def run(args: argparse.Namespace, parse_file: Callable[[Path], dict[str, Any]]) -> int:
    """`abtui import --session OUT --pair ...`: write the session, print where."""
    out = session_path(args.session, getattr(args, "sessions_dir", None))
    if out.exists() or out.with_name(out.name + ".gz").exists():
        raise BadInput(f"--session {args.session}: {out} exists already")
    final = write_session(out, items_from_args(args, parse_file), profile=args.profile_name)
    print(final)
    return 0
