"""A lost link is not a refusal: pair A's sender loses its management link for 8 s (the root end
of its management veth set down, so its packets are lost, as a switch port or a cable would
lose them) while a flip of tcp_wmem is in flight, and while the session sets the hosts back.
The flip waits for the reconnect and completes on every sender; the session goes on (both
pairs measure again under the new value); the restore waits too, and every host reads its
original again (out of band: sysctl in the namespaces), with no undo journal left. Real sshd,
iperf3 and sysctls in namespaces."""

from __future__ import annotations

import asyncio
import subprocess
import time
from collections.abc import Callable
from pathlib import Path

import pytest

from abtui.core.events import EventKind
from abtui.lab.netns import Lab
from abtui.remote.link import LINK_WAIT_S
from tests.lab.engine_kit import WMEM, Recorder, lab_profile, make_engine, until
from tests.lab.namespaces import ns_exec
from tests.reliability import Reliability

pytestmark = [pytest.mark.lab, pytest.mark.usefixtures("no_strays")]  # nothing left behind

DROP_S = 8.0


def _wmem(lab: Lab) -> dict[str, str]:
    return {h.alias: " ".join(ns_exec(lab, h.alias, "sysctl", "-n", "net.ipv4.tcp_wmem").split())
            for h in lab.hosts(2) if h.role == "sender"}


def _mgmt(lab: Lab, state: str) -> None:
    """Pair A's sender's management link down or up (the root end of its veth)."""
    subprocess.run(["ip", "link", "set", lab.hosts(2)[0].root_link, state], check=True)


async def _dropped_for(lab: Lab, seconds: float) -> None:
    await asyncio.sleep(seconds)
    _mgmt(lab, "up")


async def _during_drop(lab: Lab, what: Callable[[], object]) -> float:
    """Drop the link, run `what` (a coroutine function) at once, bring the link up after
    DROP_S; how long `what` took."""
    _mgmt(lab, "down")
    up = asyncio.create_task(_dropped_for(lab, DROP_S))
    began = time.monotonic()
    try:
        await what()  # type: ignore[misc]
        return time.monotonic() - began
    finally:
        await up


def _journals(engine: object) -> list[Path]:
    journal = engine.hosts.journal  # type: ignore[attr-defined]
    return list(Path(journal.path).parent.glob("*.jsonl"))


@pytest.mark.reliability(
    "32", "an 8-s management-link drop of one sender while a flip is in flight, and while "
    "the session sets the hosts back",
    "the flip waits for the reconnect and completes on both senders (no refusal), both pairs "
    "measure again under the new value; the restore waits too: every sender reads its "
    "original tcp_wmem again, no undo journal left, nothing said not restored")
async def test_an_8_s_management_drop_during_a_flip_and_during_the_restore(
        lab: Lab, reliability: Reliability):
    before = _wmem(lab)
    new = WMEM[1] if set(before.values()) != {WMEM[1]} else WMEM[0]
    profile = lab_profile(lab, interval=0.5)
    rec = Recorder()
    engine = make_engine(profile, rec)
    figures: dict[str, float] = {}
    try:
        await engine.connect()
        await engine.start("continuous")
        await until(lambda: len(rec.of(EventKind.INTERVAL, "A")) >= 2
                    and len(rec.of(EventKind.INTERVAL, "B")) >= 2)
        figures["flip_s"] = await _during_drop(
            lab, lambda: engine.set_knob("tcp_wmem", new))
        assert set(_wmem(lab).values()) == {new}
        assert not rec.of(EventKind.KNOB_ERROR)
        flipped = rec.of(EventKind.KNOB)[-1].t
        for pair in ("A", "B"):  # the session went on: each pair measures under the value
            await until(lambda p=pair: any(  # type: ignore[misc]
                e.t > flipped and e.payload.bytes > 0 for e in rec.of(EventKind.INTERVAL, p)),
                timeout=LINK_WAIT_S)
        figures["restore_s"] = await _during_drop(lab, engine.shutdown)
    finally:
        _mgmt(lab, "up")
        await engine.shutdown()
    assert figures["flip_s"] >= DROP_S - 1  # it was in flight through the drop
    assert figures["restore_s"] >= DROP_S - 1  # so was the restore: it waited, not gave up
    assert engine.not_restored == []
    assert _wmem(lab) == before
    assert not _journals(engine)
    reliability.row(drop_s=DROP_S, flip_took_s=figures["flip_s"],
                    restore_took_s=figures["restore_s"])


def _rmem(lab: Lab) -> dict[str, str]:
    return {h.alias: " ".join(ns_exec(lab, h.alias, "sysctl", "-n", "net.ipv4.tcp_rmem").split())
            for h in lab.hosts(2) if h.role == "receiver"}


# a whole alternation through a drop: a minute (the flip and restore drops stay in the default
# tier)
@pytest.mark.slow
def test_an_8_s_drop_does_not_end_a_headless_alternation(lab: Lab, tmp_path: Path):
    """`abtui run --alternate` flipping the receivers' tcp_rmem every 2 s while pair A's
    receiver loses its management link for 8 s (several flips fall in it): no flip is
    refused, the alternation runs to its maximum and says it ended, every receiver reads its
    tcp_rmem again and no undo journal is left. It stopped at the first flip in the drop."""
    import os
    import sys

    from tests.lab.engine_kit import session_intervals, wait_for
    from tests.lab.test_alternate_lab import _profile

    before = _rmem(lab)
    (big,) = set(before.values())
    state, out = tmp_path / "state", tmp_path / "s.jsonl"
    root = Path(__file__).resolve().parents[2]
    env = {**os.environ, "XDG_STATE_HOME": str(state), "PYTHONPATH": str(root)}
    proc = subprocess.Popen([sys.executable, "-m", "abtui", "run", str(_profile(lab, tmp_path)),
                             "--headless", "--alternate", f"tcp_rmem=4096 8192 16384,{big}",
                             "--every", "2", "--max-runs", "4", "--out", str(out)],
                            cwd=root, env=env, stderr=subprocess.PIPE, text=True)
    receiver = lab.hosts(2)[1].root_link
    try:
        wait_for(lambda: session_intervals(out) >= 3 and '"knob"' in out.read_text(), 60)
        subprocess.run(["ip", "link", "set", receiver, "down"], check=True)
        time.sleep(DROP_S)
        subprocess.run(["ip", "link", "set", receiver, "up"], check=True)
        err = proc.communicate(timeout=180)[1]
    finally:
        subprocess.run(["ip", "link", "set", receiver, "up"], check=False)
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    assert "refused" not in err and "; stopped" not in err, err
    assert "alternation ended" in err and "session written to" in err, err
    assert proc.returncode in (0, 1), err  # 1: the run the drop cut is a failed run, said
    assert _rmem(lab) == before
    assert not list((state / "abtui" / "undo").glob("*.jsonl"))
