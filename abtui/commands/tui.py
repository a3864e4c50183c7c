"""`abtui` / `abtui tui [PROFILE]`: open the console.

On real hosts the console drives the engine; with `--replay` it drives a ReplayController
(a synthetic session, or a saved events file), labelled as a replay in the title.
"""

from __future__ import annotations

import argparse
import contextlib
import gc
import math
import os
from collections.abc import Iterator
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    import asyncio

    from abtui.core.controller import Controller
    from abtui.core.events import Event
    from abtui.core.model import Profile
    from abtui.measure.bisect.run import BisectPlan
    from abtui.measure.engine.front import Engine
    from abtui.measure.replay.controller import ReplayController
    from abtui.measure.session import ControllerSession


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("profile", nargs="?", help="profile TOML (with --replay: its pairs and "
                        "knobs drive a synthetic session)")
    parser.add_argument("--replay", nargs="?", const="synthetic", metavar="SESSION",
                        help="replay instead of driving hosts: a synthetic session (no FILE) "
                        "or a saved session (file or name)")
    parser.add_argument("--pairs", type=int, default=2,
                        help="synthetic replay without a profile: pairs (1 to 8, default 2)")
    parser.add_argument("--interval", type=float, default=1.0,
                        help="synthetic replay: seconds between intervals (default 1)")
    parser.add_argument("--speed", type=float, default=1.0,
                        help="replay speed: 1 real time, 10 ten times faster, 0 all at once")
    parser.add_argument("--seed", type=int, default=0, help="synthetic replay seed")
    parser.add_argument("--refuse", action="append", default=[], metavar="KNOB[=VALUE]",
                        help="replay: refuse this knob change (to see how errors show)")
    from abtui.commands.run import add_profile_argument

    add_profile_argument(parser)


def replay_controller(args: argparse.Namespace,
                      profile: Profile | None) -> tuple[ReplayController, str]:
    """The controller for --replay, and what the title calls it."""
    from abtui.measure.replay.controller import ReplayController
    from abtui.measure.replay.synthetic import synthetic_profile

    speed = math.inf if args.speed <= 0 else args.speed
    if args.replay and args.replay != "synthetic":
        from abtui.sessions import paths, reader

        path = paths.find_session(args.replay)
        events = reader.load_events(path)
        profile = profile or recorded_profile(events, path)
        return (ReplayController(profile, events, speed=speed, refuse=args.refuse),
                f"REPLAY of {path.name}")
    profile = profile or synthetic_profile(args.pairs, args.interval)
    return (ReplayController(profile, speed=speed, seed=args.seed, refuse=args.refuse),
            "REPLAY (synthetic)")


def recorded_profile(events: list[Event], path: Path) -> Profile:
    """The profile a session recorded (its SESSION_START), else one inferred from its events."""
    from abtui.core.errors import BadInput
    from abtui.core.events import EventKind, SessionStart
    from abtui.measure.replay.controller import profile_from_events
    from abtui.profile import parse_profile

    start = next((e.payload for e in events if e.kind is EventKind.SESSION_START), None)
    text = start.profile_text if isinstance(start, SessionStart) else None
    if text:
        try:
            return parse_profile(str(text), f"{path} (its profile)")
        except BadInput:
            pass  # a profile this abtui no longer accepts: show what the events say
    return profile_from_events(events, name=path.name.split(".")[0])


def open_console(controller: Controller | ControllerSession[Any], title: str,
                 subtitle: str = "", *, on_hosts: bool = False,
                 bisection: BisectPlan | None = None) -> int:
    """The console until it ends; however it ends, the hosts are restored (abtui.ui.guard),
    and on hosts a line says when `abtui recover` has something left to do. `controller`: a
    session's lifecycle (abtui.measure.session), journalled; or a controller, given a session
    of the console's own with no journal (a replay)."""
    # Textual repaints at most TEXTUAL_FPS times a second, so its period is a floor on how
    # late an interval shows (the budget: 50 ms p99, docs/performance.md). The console bounds
    # its own refreshes (abtui.ui.app: FLUSH_HZ), so a shorter period costs no CPU when
    # nothing changes.
    os.environ.setdefault("TEXTUAL_FPS", "120")
    import asyncio

    from abtui.ui.app import AbtuiApp
    from abtui.ui.guard import run_console

    app = AbtuiApp(controller, title=title, subtitle=subtitle, bisection=bisection)
    return asyncio.run(run_console(app, recover_hint=on_hosts, linger=True))


@contextlib.contextmanager
def collector_paused() -> Iterator[None]:
    """The garbage collector off while the console is imported and built: start-up makes
    hundreds of thousands of objects, all kept, and the collector's passes over them were 4 %
    of the work to the first frame (instructions counted). The console turns it back on once
    its first frame is shown (abtui.ui.app, after freezing what start-up built); this puts
    back what it was when the console ends, or never opened."""
    was = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if was:
            gc.enable()


def run(args: argparse.Namespace) -> int:
    with collector_paused():
        from abtui.profile import load_profile

        profile = load_profile(args.profile) if args.profile else None
        if profile is not None and getattr(args, "profile_hz", None):
            from abtui.commands.run import with_profile_rate

            profile = with_profile_rate(profile, args.profile_hz)
        if args.replay is None and profile is not None:
            return open_on_hosts(profile, f"abtui — {profile.name}")
        controller, label = replay_controller(args, profile)
        return open_console(controller, f"abtui — {controller.profile.name} — {label}")


def session_subtitle(path: Path, recover: bool = False) -> str:
    """The header's second part: the session's name (its folder and suffixes are said on
    exit), after a reminder to recover when earlier changes are still on hosts, which a
    narrow header must not cut off first."""
    from abtui.sessions.paths import name_of

    return ("⚠ run `abtui recover` — " if recover else "") + f"session {name_of(path)}"


def open_on_hosts(profile: Profile, title: str, bisection: BisectPlan | None = None) -> int:
    """The console driving the engine on the profile's hosts, journalling the session;
    `bisection` (abtui.measure.bisect.run.BisectPlan): run it (`abtui bisect`)."""
    with collector_paused():
        return _open_on_hosts(profile, title, bisection)


def _open_on_hosts(profile: Profile, title: str, bisection: BisectPlan | None = None) -> int:
    import sys

    from abtui.hosts.journals import recovery_notice
    from abtui.lab import lease
    from abtui.measure.ports import open_session_writer
    from abtui.measure.session import ControllerSession, Deferred
    from abtui.sessions.paths import new_session_path
    from abtui.ui.flow.keymap import load_keymap

    load_keymap()  # a bad keymap file is said before a session file is started
    notice = recovery_notice()
    if notice:  # said before the console takes the screen, and kept in its subtitle
        print(f"abtui: {notice}", file=sys.stderr, flush=True)
    path = new_session_path(profile.name)
    writer = open_session_writer(path, profile, compact=True)

    def build() -> Engine:
        """The engine, imported and built when the console first calls it (connecting, after
        its first frame): its modules are 0.02 s of CPU the first frame does not need."""
        from abtui.measure.engine.front import Engine

        return Engine(profile, session_path=path)

    # the same lifecycle as `abtui run`'s: the journal subscribed first (on disk before it
    # is shown), connect and shutdown through it, and closed here whatever ends the console;
    # the session builds the engine on first use (a console left before it connected still
    # shuts it down, so the session is closed as always)
    session: ControllerSession[Engine] = ControllerSession(
        Deferred(build, profile, path), writer,
        on_write_error=lambda line: stop_measuring(session.controller, line))
    session.open()
    try:
        subtitle = session_subtitle(path, bool(notice))
        with lease.hold(lease.labs_of(profile)):  # no other command takes its lab down
            return open_console(session, title, subtitle=subtitle, on_hosts=True,
                                bisection=bisection)
    finally:
        closed = session.close()
        print(f"abtui: {session.write_error}" if session.write_error is not None else
              f"abtui: session written to {closed}", file=sys.stderr)


_STOPPING: set[asyncio.Task[None]] = set()  # the stops under way (asyncio keeps weak refs)


def stop_measuring(engine: Engine, line: str) -> None:
    """The session file cannot be written (the disk full): measuring stops and the console's
    log says why (the hosts are set back when the console is left, as always). Called by the
    writer inside the engine's fan-out, so the stop runs on its own task."""
    import asyncio

    from abtui.core import events
    from abtui.core.events import Event

    try:
        loop = asyncio.get_running_loop()
    except RuntimeError:  # the console has ended (its journal closing): its last line says it
        return
    engine.emit(Event.of(events.Error(
        message=f"{line}; measuring stopped (quit to set the hosts back)")))
    task = loop.create_task(engine.stop())
    _STOPPING.add(task)
    task.add_done_callback(_STOPPING.discard)
