"""The live console driven as its users drive it, on the lab: a seeded random walk over its keys
with the real engine, checked after every key against the hosts (read over SSH on the side)
and against what the session computes; then ctrl+q, and the hosts as they were.

ABTUI_WALK_SEED picks the walk (a random one otherwise, printed in the failure with the
command that replays it), ABTUI_WALK_STEPS its length (40 here; `make soak` runs a long one),
ABTUI_WALK_SKIP leaves actions out (e.g. `plan,space`, to look past a known defect).
The driver and its checks: tests/lab/console_walk.py.
"""

from __future__ import annotations

import contextlib
import os
import random
import traceback
from collections import Counter
from pathlib import Path

import pytest

from abtui.core.events import EventKind
from abtui.lab.netns import Lab
from abtui.measure.engine.front import Engine
from abtui.measure.ports import open_session_writer
from abtui.profile import load_profile
from abtui.sessions.paths import new_session_path
from abtui.ui.app import AbtuiApp
from tests.lab.console_walk import (
    BIG,
    Failures,
    Journal,
    Walker,
    check_export,
    export_json,
    plan_walk,
)
from tests.lab.hostview import HostReader, differences, force_restore, norm, wait_no_leftovers

pytestmark = pytest.mark.lab

STEPS = int(os.environ.get("ABTUI_WALK_STEPS", "40"))
SKIP = [a for a in os.environ.get("ABTUI_WALK_SKIP", "").split(",") if a]
# a short plan step (the lab profile's runs would take 10 s each in plan mode)
PLAN_STEP_S = 3.0
# `make test` walks this seed, so CI is repeatable; `make soak` walks a random one
# (ABTUI_WALK_SEED=random) and prints it for replay.
DEFAULT_SEED = "707"


@pytest.mark.timeout(240 + 8 * STEPS)
async def test_a_seeded_random_walk_over_the_console(lab: Lab, tmp_path: Path,
                                                     monkeypatch: pytest.MonkeyPatch) -> None:
    raw = os.environ.get("ABTUI_WALK_SEED") or DEFAULT_SEED
    seed = random.SystemRandom().randrange(10**6) if raw == "random" else int(raw)
    print(f"console walk: seed {seed}, {STEPS} steps")
    # as `abtui tui` on the lab's profile, with every file of its own under tmp_path
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("ABTUI_SESSIONS_DIR", str(tmp_path / "sessions"))
    monkeypatch.setenv("XDG_STATE_HOME", str(tmp_path / "state"))
    monkeypatch.setattr("abtui.measure.engine.front.PLAN_DEFAULT_DURATION", PLAN_STEP_S)
    profile = load_profile(lab.profile_path)
    reader = HostReader(profile, str(lab.ssh_config))
    originals = await reader.read()
    failures = Failures()
    journal = Journal()
    session_path = new_session_path(profile.name)
    engine = Engine(profile, session_path=session_path)
    writer = open_session_writer(session_path, profile, compact=True)
    engine.subscribe(journal)
    engine.subscribe(writer.write)
    app = AbtuiApp(engine, title=f"abtui — {profile.name}",
                   subtitle=f"session {session_path.name}")
    steps = plan_walk(seed, STEPS, app.knob_keys, profile, SKIP)
    walker: Walker | None = None
    shown = None
    test = "tests/lab/test_console_walk.py"
    aliases = list(originals.hosts)
    try:
        try:
            async with app.run_test(size=BIG) as pilot:
                walker = Walker(app, pilot, engine, journal, reader, profile, originals,
                                tmp_path, failures)
                await walker.run(steps)
                shown = await walker.finish()
        except Exception as exc:
            step = walker.step if walker else -1
            if exc is app._exception:
                if "alive" not in failures.first:
                    failures.add("alive", step, f"the app died: {type(exc).__name__}: {exc}")
            else:
                failures.add("driver", step, "".join(traceback.format_exception(exc))[-1500:])
        step = len(steps)
        quit_cleanly = app._exception is None and app.return_code == 0
        if quit_cleanly:
            # after ctrl+q: every knob as it was, no tunnel, no process, no undo journal
            left = differences(await reader.read(), originals)
            if left:
                failures.add("restored-after-quit", step, "; ".join(left))
            await reader.close()
            strays = wait_no_leftovers(lab, aliases)
            if strays:
                failures.add("nothing-left-after-quit", step, str(strays))
            journals = list((tmp_path / "state").rglob("undo/*.jsonl"))
            if journals:
                failures.add("undo-journal-finished", step, f"left: {journals}")
        for e in journal:  # the originals the session recorded are the hosts' own
            if e.kind is EventKind.ORIGINAL and e.host in originals.hosts:
                want = originals.hosts[e.host].values.get(str(e.record().get("knob")))
                if want is not None and norm(str(e.record().get("value"))) != want:
                    failures.add("original-recorded", step, f"{e.host}: ORIGINAL "
                                 f"{e.record().get('knob')}={e.record().get('value')!r}, the host "
                                 f"had {want!r}")
    finally:
        if not (app._exception is None and app.return_code == 0):
            # the console did not leave by ctrl+q: take the engine down here (an in-process
            # app that died cannot be judged on restoring: the `abtui tui` process around it
            # does that; see tests/e2e/test_e2e_tmux.py)
            with contextlib.suppress(Exception):
                await engine.shutdown()
        path = writer.close()
        await reader.close()
        cleaned = force_restore(lab, profile, originals)
    if cleaned and quit_cleanly:
        failures.add("clean-lab", len(steps), f"the test had to clean up: {cleaned}")
    errors = Counter(str(e.record().get("message")) for e in journal if e.kind is EventKind.ERROR)
    failures.notes += [f"engine error ×{n}: {m}" for m, n in errors.most_common()]
    readings = walker.readings if walker else []
    check_export(export_json(path), shown, journal, readings, originals, profile, failures,
                 len(steps), walker.shown_div if walker else 1e9,
                 walker.shown_baseline if walker else None)
    report = failures.report(seed, STEPS, steps, test)
    print(report)
    if failures:
        pytest.fail(report, pytrace=False)
