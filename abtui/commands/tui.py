"""`abtui` / `abtui tui [PROFILE]`: open the console.

On real hosts the console drives the engine; with `--replay` it drives a ReplayController
(a synthetic session, or a saved events file), labelled as a replay in the title.
"""

from __future__ import annotations

import argparse
import importlib.util
import math
import os
from pathlib import Path
from typing import Any


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("profile", nargs="?", help="profile TOML (with --replay: its pairs and "
                        "knobs drive a synthetic session)")
    parser.add_argument("--replay", nargs="?", const="synthetic", metavar="FILE",
                        help="replay instead of driving hosts: a synthetic session (no FILE) "
                        "or a saved events file (JSON lines)")
    parser.add_argument("--pairs", type=int, default=2,
                        help="synthetic replay without a profile: pairs (1 to 8, default 2)")
    parser.add_argument("--interval", type=float, default=1.0,
                        help="synthetic replay: seconds between intervals (default 1)")
    parser.add_argument("--speed", type=float, default=1.0,
                        help="replay speed: 1 real time, 10 ten times faster, 0 all at once")
    parser.add_argument("--seed", type=int, default=0, help="synthetic replay seed")
    parser.add_argument("--refuse", action="append", default=[], metavar="KNOB[=VALUE]",
                        help="replay: refuse this knob change (to see how errors show)")


def load_profile(path: str | Path) -> Any:
    """A profile from TOML, via abtui.profile when it exists.

    PLACEHOLDER for the integrator: until abtui.profile lands, a minimal reader of the lab's
    profile format (pairs, knobs, test.interval, base_pair, tunnels) with one-line errors.
    """
    if importlib.util.find_spec("abtui.profile") is not None:  # pragma: no cover - integrator
        import abtui.profile as prof

        loader = getattr(prof, "load_profile", None) or prof.load
        return loader(path)
    import tomllib

    from abtui.errors import BadInput
    from abtui.model import Knob, KnobKind, Pair, Profile, Scope, TestOptions

    p = Path(path)
    try:
        text = p.read_text()
        doc = tomllib.loads(text)
    except OSError as exc:
        raise BadInput(f"{p}: cannot read ({exc.strerror})") from exc
    except tomllib.TOMLDecodeError as exc:
        raise BadInput(f"{p}: not valid TOML ({exc})") from exc
    try:
        meta = doc.get("profile", {})
        pairs = [Pair(label=str(x["label"]), sender=str(x["sender"]),
                      receiver=str(x["receiver"]), target=str(x.get("target", "")),
                      sender_device=x.get("sender_device"),
                      receiver_device=x.get("receiver_device")) for x in doc.get("pairs", [])]
        knobs = [Knob(name=str(k["name"]), kind=KnobKind(k["kind"]),
                      values=tuple(str(v) for v in k["values"]), key=str(k.get("key", "")),
                      scope=Scope(k.get("scope", "both")), binding=k.get("binding"),
                      pairs=tuple(k.get("pairs", ()))) for k in doc.get("knobs", [])]
        tunnel = next((k for k in knobs if k.kind is KnobKind.TUNNEL), None)
        test = doc.get("test", {})
        profile = Profile(
            name=str(meta.get("name", p.stem)), pairs=pairs, knobs=knobs,
            test=TestOptions(duration=float(test.get("duration", 10)),
                             interval=float(test.get("interval", 1.0))),
            tunnels=tuple(meta.get("tunnels", tunnel.values if tunnel else ("none",))),
            base_pair=meta.get("base_pair"), ssh_config=meta.get("ssh_config"),
            known_hosts=meta.get("known_hosts"), source_path=str(p), source_text=text)
    except (KeyError, ValueError, TypeError) as exc:
        raise BadInput(f"{p}: bad profile ({type(exc).__name__}: {exc})") from exc
    if not pairs:
        raise BadInput(f"{p}: no [[pairs]] in this profile")
    return profile


def replay_controller(args: argparse.Namespace, profile: Any | None) -> tuple[Any, str]:
    """The controller for --replay, and what the title calls it."""
    from abtui.replay import ReplayController, load_events, profile_from_events, synthetic_profile

    speed = math.inf if args.speed <= 0 else args.speed
    if args.replay and args.replay != "synthetic":
        events = load_events(args.replay)
        profile = profile or profile_from_events(events, name=Path(args.replay).stem)
        return (ReplayController(profile, events, speed=speed, refuse=args.refuse),
                f"REPLAY of {Path(args.replay).name}")
    profile = profile or synthetic_profile(args.pairs, args.interval)
    return (ReplayController(profile, speed=speed, seed=args.seed, refuse=args.refuse),
            "REPLAY (synthetic)")


def open_console(controller: Any, title: str, subtitle: str = "") -> int:
    # Textual repaints at most TEXTUAL_FPS times a second, so its period is a floor on how
    # late an interval shows (DESIGN.md §5: 50 ms p99). The console bounds its own refreshes
    # (20 flushes a second at most), so a shorter period costs no CPU when nothing changes.
    os.environ.setdefault("TEXTUAL_FPS", "120")
    from abtui.ui.app import AbtuiApp

    app = AbtuiApp(controller, title=title, subtitle=subtitle)
    app.run()
    return int(app.return_code or 0)


def run(args: argparse.Namespace) -> int:
    from abtui.errors import MissingPrerequisite

    profile = load_profile(args.profile) if args.profile else None
    if args.replay is None and profile is not None:
        if importlib.util.find_spec("abtui.engine") is None:
            raise MissingPrerequisite(
                f"{args.profile}: driving real hosts needs the engine, which is not built yet; "
                "add --replay to open this profile on a synthetic replay")
        # INTEGRATOR: build the engine's controller here (abtui.engine), then open_console.
        raise MissingPrerequisite("the engine exists but the console is not wired to it yet")
    controller, label = replay_controller(args, profile)
    return open_console(controller, f"abtui — {controller.profile.name} — {label}")
