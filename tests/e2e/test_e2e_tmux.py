"""End to end in a real terminal: the console under tmux, driven by keys, read by capture-pane:
on a synthetic replay (fast, no root), and `abtui demo` on a real lab (root): a knob flipped by
a key press on the hosts, the phase table changing, ctrl+q restoring every knob."""

from __future__ import annotations

import os
import re
import signal
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path

import pytest

from abtui.commands.demo import lab_named
from tests.e2e.term import TMUX, Term, console_pid, end_console, intervals_shown

pytestmark = [pytest.mark.ui,
              pytest.mark.skipif(TMUX is None, reason="tmux is not installed (apt tmux)")]
ROOT = Path(__file__).resolve().parents[2]


def test_console_in_a_real_terminal(term: Term, tmp_path: Path) -> None:
    rc = tmp_path / "rc"
    cmd = (f"cd {ROOT} && {sys.executable} -m abtui tui --replay --speed 10 --pairs 2; "
           f"echo $? > {rc}; sleep 60")
    term.tmux("new-session", "-d", "-s", "e2e", "-x", "100", "-y", "30", cmd)
    pid = console_pid(term)
    try:
        term.wait("three intervals in both panes", lambda s: intervals_shown(s) >= 3)
        screen = term.screen()
        assert "REPLAY (synthetic)" in screen
        assert "a-snd → a-rcv" in screen and "b-snd → b-rcv" in screen
        screen = term.wait("the initial phase row filled", lambda s: re.search(
            r"^ initial\s+\d+(?:\.\d+)? n\d+", s, re.M) is not None)
        assert not re.search(r"^ tcp_wmem=", screen, re.M)
        term.keys("w")
        term.wait("a phase row for the new tcp_wmem",
                  lambda s: re.search(r"^ tcp_wmem=4096 16384 65536\s+\d+(?:\.\d+)? n\d+", s,
                                      re.M) is not None)
        term.keys("C-q")
        deadline = time.monotonic() + 20
        while not rc.exists() and time.monotonic() < deadline:
            time.sleep(0.2)
        assert rc.exists(), term.screen()
        assert rc.read_text().strip() == "0"
    finally:
        end_console(pid)


def _ns(alias: str, *cmd: str) -> str:
    return subprocess.run(["ip", "netns", "exec", f"abtui-{alias}", *cmd], capture_output=True,
                          text=True, check=True).stdout.strip()


@pytest.mark.lab
def test_demo_on_the_lab_flips_a_knob_and_restores_it(term: Term, tmp_path: Path) -> None:
    from abtui.lab.netns import Lab
    from tests.lab.namespaces import lab_names

    name, ifprefix, mgmt = lab_names("d")
    lab = Lab(name=name, octet=19, ifprefix=ifprefix, mgmt=mgmt, state_dir=tmp_path / name)
    lab.down()  # leftovers of a killed run
    rc = tmp_path / "rc"
    env = (f"ABTUI_LAB={name},{ifprefix},{mgmt} ABTUI_LAB_DIR={tmp_path} "
           f"ABTUI_SESSIONS_DIR={tmp_path / 'sessions'}")
    cmd = (f"cd {ROOT} && {env} {sys.executable} -m abtui demo --keep-lab; echo $? > {rc}; "
           "sleep 120")
    receivers = [f"{name}-a-rcv", f"{name}-b-rcv"]
    pid = 0
    try:
        term.tmux("new-session", "-d", "-s", "e2e", "-x", "120", "-y", "36", cmd)
        pid = console_pid(term)
        term.wait("intervals from both lab pairs", lambda s: intervals_shown(s) >= 3, 90)
        from abtui.profile import load_profile

        small = load_profile(lab.profile_path).knob("tcp_rmem").values[1]  # the flipped value
        original = {h: _ns(h, "sysctl", "-n", "net.ipv4.tcp_rmem") for h in receivers}
        links_before = {h: _ns(h, "ip", "-o", "link", "show") for h in receivers}
        assert all(v.split() != small.split() for v in original.values())  # not yet flipped
        # r (the lab profile's key for tcp_rmem) walks the cycle from what the hosts have:
        # the profile's values, then back to the hosts' own; press until the small one is set
        from abtui.core.configuration import cycle

        values = load_profile(lab.profile_path).knob("tcp_rmem").values
        own = " ".join(next(iter(original.values())).split())
        own = next((v for v in values if v.split() == own.split()), own)
        value = own
        while value != small:
            value = cycle(values, value, own)
            term.keys("r")
            term.wait(f"tcp_rmem={value} in the knob bar",  # the chip: key, name=value
                      lambda s, v=value: f"r tcp_rmem={v}" in s, 30)
        row = re.compile(rf"^ tcp_rmem={re.escape(small)}\s+\d+(?:\.\d+)? n\d+", re.M)
        term.wait("a phase row for the flipped tcp_rmem", lambda s: row.search(s) is not None, 30)
        flipped = {h: _ns(h, "sysctl", "-n", "net.ipv4.tcp_rmem") for h in receivers}
        assert all(v.split() == small.split() for v in flipped.values()), flipped
        term.keys("C-q")
        deadline = time.monotonic() + 60
        while not rc.exists() and time.monotonic() < deadline:
            time.sleep(0.2)
        assert rc.exists(), term.screen()
        assert rc.read_text().strip() == "0"
        assert {h: _ns(h, "sysctl", "-n", "net.ipv4.tcp_rmem") for h in receivers} == original
        assert {h: _ns(h, "ip", "-o", "link", "show") for h in receivers} == links_before
        assert list((tmp_path / "sessions").glob("*.abtui.jsonl.gz"))  # the session, finished
    finally:
        end_console(pid)  # before its hosts go: it restores them
        term.close()
        lab.down()


DEMO_SIGTERM_S = 10.0  # SIGTERM to the demo's end: restoring a namespace lab takes ~1 s


def _until(what: str, cond: Callable[[], bool], timeout: float,
           shown: Callable[[], str] = lambda: "") -> None:
    deadline = time.monotonic() + timeout
    while not cond():
        assert time.monotonic() < deadline, f"timed out waiting for {what}\n{shown()}"
        time.sleep(0.2)


@pytest.mark.lab
@pytest.mark.timeout(240)
@pytest.mark.parametrize("sig", [signal.SIGTERM, signal.SIGHUP], ids=["SIGTERM", "SIGHUP"])
def test_demo_ends_promptly_on_sigterm_without_asking(term: Term, tmp_path: Path,
                                                      sig: signal.Signals) -> None:
    """`abtui demo` (neither --keep-lab nor --down) in a real terminal, a knob flipped, then
    SIGTERM (or SIGHUP: the terminal went away): the hosts restored, the session written,
    and it ends within seconds with 128 + the signal (143 for SIGTERM, as `abtui tui`),
    never asking whether to take the lab down (nobody is there to answer); after SIGTERM
    one line says the lab is left up and how to take it down (after SIGHUP there is no
    terminal to say it to)."""
    from abtui.lab.netns import Lab
    from tests.lab.namespaces import lab_names

    name, ifprefix, mgmt = lab_names("d")
    lab = Lab(name=name, octet=19, ifprefix=ifprefix, mgmt=mgmt, state_dir=tmp_path / name)
    lab.down()  # leftovers of a killed run
    rc = tmp_path / "rc"
    sessions = tmp_path / "sessions"
    env = (f"ABTUI_LAB={name},{ifprefix},{mgmt} ABTUI_LAB_DIR={tmp_path} "
           f"ABTUI_SESSIONS_DIR={sessions}")
    cmd = f"cd {ROOT} && {env} {sys.executable} -m abtui demo; echo $? > {rc}; sleep 120"
    receivers = [f"{name}-a-rcv", f"{name}-b-rcv"]

    def rmem() -> dict[str, list[str]]:
        return {h: _ns(h, "sysctl", "-n", "net.ipv4.tcp_rmem").split() for h in receivers}

    pid = 0
    try:
        term.tmux("new-session", "-d", "-s", "e2e", "-x", "120", "-y", "36", cmd)
        pid = console_pid(term)
        term.wait("intervals from both lab pairs", lambda s: intervals_shown(s) >= 2, 90)
        original = rmem()
        term.keys("r")  # tcp_rmem to the next value of its cycle: a change to restore
        _until("tcp_rmem flipped on the hosts", lambda: rmem() != original, 30)
        def history() -> str:
            return term.tmux("capture-pane", "-p", "-J", "-S", "-300", "-t", "e2e")

        sent = time.monotonic()
        os.kill(pid, sig)
        _until("the demo's end", rc.exists, 60, history)
        took = time.monotonic() - sent
        shown = history()
        assert "Take the lab down" not in shown, shown
        assert rc.read_text().strip() == str(128 + sig), shown
        assert took < DEMO_SIGTERM_S, f"{took:.1f} s from {sig.name} to the end\n{shown}"
        if sig == signal.SIGTERM:
            assert re.search(rf"{re.escape(lab_named(name))} left up .*`abtui lab down`", shown), \
                shown  # the lab named once: `rplabd left up`, `lab x left up`
        assert rmem() == original  # restored before it ended
        assert list(sessions.glob("*.abtui.jsonl.gz")), shown  # the session, finished
        print(f"{sig.name} to the demo's end: {took:.2f} s")
    finally:
        end_console(pid)  # before its hosts go: it restores them
        term.close()
        lab.down()


# ---- the console on the shared lab, in a real terminal: every key, and crashes -------------

def readme_keys() -> list[str]:
    """The keys of the README's console key table, in its order (knob keys as listed for the
    lab, and `ctrl+p` from the `?` row)."""
    text = (ROOT / "README.md").read_text()
    table = text.split("| key | action |", 1)[1].split("\n\n", 1)[0]
    keys: list[str] = []
    for row in table.splitlines()[2:]:
        first, action = row.strip("|").split("|", 1)
        keys += re.findall(r"`([^`]+)`", first)
        keys += re.findall(r"`(ctrl\+\w)`:", action)
    return keys


TMUX_KEYS = {"tab": "Tab", "space": "Space", "?": "?"}


def tmux_key(key: str) -> str:
    return TMUX_KEYS.get(key) or (f"C-{key[5:]}" if key.startswith("ctrl+") else key)


class Console:
    """`abtui tui` on the lab's profile in a tmux window of its own, with its own state,
    data and sessions folders; `launcher` replaces `-m abtui` (to inject a fault)."""

    def __init__(self, term: Term, tmp: Path, profile: Path, launcher: str | None = None,
                 size: tuple[int, int] = (160, 48)) -> None:
        self.term, self.tmp = term, tmp
        self.rc = tmp / "rc"
        self.sessions = tmp / "sessions"
        env = (f"XDG_STATE_HOME={tmp / 'state'} XDG_DATA_HOME={tmp / 'data'} "
               f"ABTUI_SESSIONS_DIR={self.sessions}")
        run = launcher or f"{sys.executable} -m abtui"
        # run from tmp: whatever the console writes beside itself stays out of the checkout
        cmd = (f"cd {tmp} && {env} {run} tui {profile}; echo $? > {self.rc}; sleep 120")
        term.tmux("new-session", "-d", "-s", "e2e", "-x", str(size[0]), "-y", str(size[1]), cmd)
        self.pid = console_pid(term)

    def ended(self) -> bool:
        return self.rc.exists()

    def end(self) -> None:
        """However the test went: the console it started is not left running."""
        end_console(self.pid)

    def wait_end(self, timeout: float) -> int | None:
        deadline = time.monotonic() + timeout
        while not self.rc.exists() and time.monotonic() < deadline:
            time.sleep(0.2)
        return int(self.rc.read_text().strip()) if self.rc.exists() else None

    def history(self) -> str:
        """The window's text with its scrollback (what the console printed on leaving)."""
        return self.term.tmux("capture-pane", "-p", "-J", "-S", "-300", "-t", "e2e")

    def journal_events(self) -> list:  # type: ignore[type-arg]
        """The live session journal's events so far (the session file being written)."""
        from abtui.sessions.reader import load_events

        files = list(self.sessions.glob("*.abtui.jsonl*"))  # the live one is written last
        return load_events(max(files, key=lambda f: f.stat().st_mtime)) if files else []

    def alive(self) -> bool:
        return not self.rc.exists() and "Traceback" not in self.history()


def _lab_profile(lab):  # type: ignore[no-untyped-def]
    from abtui.profile import load_profile

    return load_profile(lab.profile_path)


def _wait_hosts(profile, ssh_config: str, cond, timeout: float):  # type: ignore[no-untyped-def]
    from tests.lab.hostview import read_once

    deadline = time.monotonic() + timeout
    reading = read_once(profile, ssh_config)
    while not cond(reading) and time.monotonic() < deadline:
        time.sleep(0.3)
        reading = read_once(profile, ssh_config)
    return reading


def _restored_or_said(lab, profile, originals, con: Console, what: str,  # type: ignore[no-untyped-def]
                      tmp: Path) -> list[str]:
    """After the console ended: the hosts as they were, nothing left, or else a one-line
    pointer to `abtui recover` (and recover then restores everything). Returns problems."""
    from tests.lab.hostview import differences, wait_no_leftovers

    aliases = list(originals.hosts)
    reading = _wait_hosts(profile, str(lab.ssh_config),
                          lambda r: not differences(r, originals), 15)
    changed = differences(reading, originals)
    left = wait_no_leftovers(lab, aliases, 10)
    if not changed and not left:
        return []
    problems = [f"{what}: the console left the hosts changed: {changed or '-'}; "
                f"processes/links: {left or '-'}"]
    if "abtui recover" not in con.history():
        problems.append(f"{what}: and it did not say that `abtui recover` would restore them")
    env = {**os.environ, "XDG_STATE_HOME": str(tmp / "state")}
    out = subprocess.run([sys.executable, "-m", "abtui", "recover"], capture_output=True,
                         text=True, env=env, cwd=ROOT, timeout=120)
    after = differences(_wait_hosts(profile, str(lab.ssh_config), lambda r: True, 0),
                        originals)
    left = wait_no_leftovers(lab, aliases, 10)
    if out.returncode != 0 or after or left:
        problems.append(f"{what}: `abtui recover` (rc {out.returncode}: "
                        f"{(out.stdout + out.stderr).strip()[-300:]}) left {after or '-'}, "
                        f"{left or '-'}")
    return problems


def _flip_some(term: Term, lab, profile, originals) -> None:  # type: ignore[no-untyped-def]
    """r (tcp_rmem), t (tso) and ctrl+t → vxlan, each seen on the hosts."""
    from tests.lab.hostview import norm

    ssh = str(lab.ssh_config)
    before = originals.pair_values(profile)
    for key, knob in (("r", "tcp_rmem"), ("t", "tso")):
        term.keys(key)
        _wait_hosts(profile, ssh, lambda r, k=knob: r.pair_values(profile)["A"][k]
                    != before["A"][k], 15)
    term.keys("C-t")
    term.wait("the tunnel switcher", lambda s: "vxlan" in s and "Tunnel for " in s, 20)
    term.keys("Home", "Down", "Down", "Enter")  # none, wireguard, vxlan
    reading = _wait_hosts(profile, ssh, lambda r: r.pair_values(profile)["A"]["tunnel"]
                          != "none", 30)
    changed = [k for k in ("tcp_rmem", "tso", "tunnel")
               if norm(reading.pair_values(profile)["A"][k]) != before["A"][k]]
    assert changed, "no knob changed on the hosts: nothing to restore"


@pytest.fixture
def lab_clean(lab):  # type: ignore[no-untyped-def]
    """The shared lab's hosts as read before the test; set back by hand after it (a test
    that fails must not leave the next one a changed lab)."""
    from tests.lab.hostview import force_restore, read_once

    profile = _lab_profile(lab)
    originals = read_once(profile, str(lab.ssh_config))
    yield profile, originals
    force_restore(lab, profile, originals)


@pytest.mark.lab
@pytest.mark.timeout(420)
def test_every_key_of_the_readme_in_turn_on_the_lab(term: Term, tmp_path: Path, lab,  # type: ignore[no-untyped-def]
                                                    lab_clean) -> None:
    """`abtui tui` on the lab, 160×48: each key of the README's table pressed in turn (dialogs
    answered), the console alive and measuring after each; `p` runs the plan to its end; a
    knob key cycles back to the host's own value; ctrl+q leaves the hosts as they were."""
    from tests.lab.hostview import differences, norm, read_once, wait_no_leftovers

    profile, originals = lab_clean
    keys = readme_keys()
    knob_keys = {k.binding: k.name for k in profile.knobs if k.binding}
    handled = {*knob_keys, "tab", "a", "b", "ctrl+t", "space", "ctrl+r", "p", "m", "s", "e",
               "ctrl+o", "ctrl+l", "ctrl+a", "ctrl+e", "?", "ctrl+p", "ctrl+q", "S", "ctrl+y"}
    assert set(keys) <= handled, f"README keys this test does not press: {set(keys) - handled}"
    ssh = str(lab.ssh_config)
    con = Console(term, tmp_path, lab.profile_path)
    problems: list[str] = []
    try:
        term.wait("intervals from both lab pairs", lambda s: intervals_shown(s) >= 2, 60)
        measuring = True
        for key in keys:
            if key == "ctrl+q":
                break
            shown = intervals_shown(term.screen())
            if key in knob_keys:  # the hosts read before the key: a flip takes a millisecond
                knob = knob_keys[key]
                before = read_once(profile, ssh).pair_values(profile)["A"][knob]
            term.keys(tmux_key(key))
            if key in knob_keys:
                got = _wait_hosts(profile, ssh, lambda r, k=knob, b=before:
                                  r.pair_values(profile)["A"][k] != b, 30)
                if got.pair_values(profile)["A"][knob] == before:
                    problems.append(f"{key}: {knob} stayed {before!r} on pair A's hosts")
            elif key == "ctrl+t":  # the switcher (its title, not the footer's "Tunnel")
                if not term_wait_quiet(term, lambda s: "Tunnel for " in s, 20):
                    problems.append("ctrl+t: no tunnel switcher")
                term.keys("Home", "Enter")  # back to none
                if not term_wait_quiet(term, lambda s: "Tunnel for " not in s, 20):
                    problems.append("ctrl+t: the switcher still shown after Enter")
            elif key in ASKS:  # a dialog: answered once it shows, gone before going on
                problems += _answered(term, key)
            elif key == "S":  # the save-setup question, cancelled: the lab's profile kept
                if not term_wait_quiet(term, lambda s: "Save the setup to " in s, 20):
                    problems.append("S: no save-setup question")
                term.keys("Escape")
                if not term_wait_quiet(term, lambda s: "Save the setup to " not in s, 20):
                    problems.append("S: the question still shown after Escape")
            elif key == "ctrl+a":  # alternation of the knob last flipped, its verdict panel
                if not term_wait_quiet(term, lambda s: "alternating " in s, 20):
                    problems.append("ctrl+a: no alternation panel")
            elif key == "ctrl+e":  # min_effect steps on; ctrl+a again stops the alternation
                if not term_wait_quiet(term, lambda s: "min effect" in s, 10):
                    problems.append("ctrl+e: min effect not shown")
                # not ended by its rule already (the header may wrap before "running"); its
                # state waited for, not read off one capture (under load the panel can still
                # say "starting", or not be drawn yet, when min effect shows in the toast)
                term_wait_quiet(term, lambda s: re.search(r"\),\s+running", s) is not None
                                or "ended:" in s, 20)
                pressed = re.search(r"\),\s+running", term.screen()) is not None
                if pressed:
                    term.keys(tmux_key("ctrl+a"))
                if not term_wait_quiet(term, lambda s: "ended:" in s, 30):
                    how = "pressed" if pressed else "not pressed: the panel never said running"
                    problems.append(f"ctrl+a again ({how}): the alternation did not end; "
                                    "screen:\n" + term.screen())
            elif key in SHOWN_BY:  # a screen or panel: seen, then closed, before going on
                problems += _shown_then_closed(term, key)
            elif key == "p":
                deadline = time.monotonic() + 90  # the lab plan: 2 runs of 10 s
                done = None
                while time.monotonic() < deadline and con.alive():
                    progress = [e.record() for e in con.journal_events() if e.kind == "progress"]
                    done = progress[-1] if progress else None
                    if done and done.get("done") == done.get("total"):
                        break
                    time.sleep(1.0)
                if not (done and done.get("done") == done.get("total")):
                    problems.append(f"p: the plan did not run to its end (progress {done})")
            time.sleep(0.7)
            if not con.alive():
                problems.append(f"{key}: the console ended: "
                                f"{con.history().strip().splitlines()[-6:]}")
                break
            # measuring stops with space and at the end of the plan; ctrl+r starts it again
            measuring = {"space": False, "p": False, "ctrl+r": True}.get(key, measuring)
            if measuring and not term_wait_quiet(
                    term, lambda s, n=shown: intervals_shown(s) > n, 15):
                problems.append(f"{key}: the panes' counts stopped at {shown}")
        if con.alive():
            # a knob key cycles through its values and back to the host's own (scope A)
            term.keys("a")
            want = originals.pair_values(profile)["A"]["tcp_rmem"]
            seen = []
            for _ in range(len(profile.knob("tcp_rmem").values) + 1):
                before = read_once(profile, ssh).pair_values(profile)["A"]["tcp_rmem"]
                term.keys("r")
                got = _wait_hosts(profile, ssh, lambda r, b=before:
                                  r.pair_values(profile)["A"]["tcp_rmem"] != b, 20)
                seen.append(norm(got.pair_values(profile)["A"]["tcp_rmem"]))
            if want not in seen:
                problems.append(f"r pressed {len(seen)}×: tcp_rmem went {seen}, never back "
                                f"to the host's own {want!r}; screen:\n{term.screen()}")
            term.keys("C-q")
            rc = con.wait_end(90)
            if rc != 0:
                problems.append(f"ctrl+q: exit status {rc}; {con.history().splitlines()[-6:]}")
            changed = differences(read_once(profile, ssh), originals)
            left = wait_no_leftovers(lab, list(originals.hosts))
            if changed or left:
                problems.append(f"after ctrl+q: hosts changed {changed or '-'}, left "
                                f"{left or '-'}")
        else:
            problems += _restored_or_said(lab, profile, originals, con, "after the crash",
                                          tmp_path)
    finally:
        con.end()
        term.close()
    assert not problems, "\n".join(problems)


# what each key's screen or panel shows while it is open, and the key that closes it (the
# keys panel is beside the screen: `?` again hides it)
SHOWN_BY = {"ctrl+o": ("Compare:", "Escape"), "ctrl+p": ("Search for commands", "Escape"),
            "ctrl+y": ("why: ", "C-y"),  # no profile here: the line says how to ask for one
            "?": ("shift+tab Focus", "?")}  # the keys panel; its text may wrap after "Focus"


# the dialogs some keys open: what each shows, and what the test answers
ASKS = {"m": ("Mark the timeline", ("-l", "a mark from the key test")),
        "s": ("Save the session", ()), "e": ("Export the session", ())}


def _answered(term: Term, key: str) -> list[str]:
    """Type into `key`'s dialog only once it shows (under load it opens late, and what was
    typed before it went to the screen behind), then Enter; the dialog must go."""
    marker, typed = ASKS[key]
    if not term_wait_quiet(term, lambda s: marker in s, 20):
        return [f"{key}: {marker!r} never shown"]
    if typed:
        term.keys(*typed)
    term.keys("Enter")
    if not term_wait_quiet(term, lambda s: marker not in s, 20):
        return [f"{key}: {marker!r} still shown after Enter"]
    return []


def _shown_then_closed(term: Term, key: str) -> list[str]:
    """Wait for `key`'s screen to show before closing it, and for it to go: under load a
    screen can take seconds to open, and a close key sent before it would leave it open to
    swallow every later key."""
    marker, close = SHOWN_BY[key]
    if not term_wait_quiet(term, lambda s: marker in s, 20):
        return [f"{key}: {marker!r} never shown"]
    term.keys(close)
    if not term_wait_quiet(term, lambda s: marker not in s, 20):
        return [f"{key}: still shown after {close}"]
    return []


def term_wait_quiet(term: Term, cond: Callable[[str], bool], timeout: float) -> bool:
    try:
        term.wait("", cond, timeout)
    except AssertionError:
        return False
    return True


INJECT = {
    # a key's handler raises (ctrl+l: show or hide the log)
    "key handler": ("from abtui.ui.flow.main_screen import MainScreen\n"
                    "def boom(self):\n"
                    "    raise RuntimeError('injected by the test into a key handler')\n"
                    "MainScreen.action_toggle_log = boom\n"),
    # folding an event into the screen raises (a mark whose text is 'boom')
    "event flush": ("from abtui.ui.model import state\n"
                    "apply = state.ConsoleState.apply\n"
                    "def boom(self, event):\n"
                    "    if event.kind == 'mark' and event.payload.text == 'boom':\n"
                    "        raise RuntimeError('injected by the test into the event flush')\n"
                    "    return apply(self, event)\n"
                    "state.ConsoleState.apply = boom\n"),
}


@pytest.mark.lab
@pytest.mark.timeout(300)
@pytest.mark.parametrize("where", ["sigterm", *INJECT])
def test_a_console_that_dies_leaves_the_hosts_as_they_were(term: Term, tmp_path: Path, lab,  # type: ignore[no-untyped-def]
                                                           lab_clean, where: str) -> None:
    """`abtui tui` on the lab with knobs flipped and a tunnel up, then SIGTERM, or an
    exception in a key handler or in the event flush: the hosts get their original values
    back and nothing is left — or the console says in one line that `abtui recover` will
    (and recover does)."""
    profile, originals = lab_clean
    launcher = None
    if where in INJECT:
        script = tmp_path / "inject.py"
        script.write_text(INJECT[where] + "import sys\nfrom abtui.cli import main\n"
                          "sys.argv[0] = 'abtui'\nraise SystemExit(main())\n")
        launcher = f"{sys.executable} {script}"
    con = Console(term, tmp_path, lab.profile_path, launcher)
    try:
        term.wait("intervals from both lab pairs", lambda s: intervals_shown(s) >= 2, 60)
        _flip_some(term, lab, profile, originals)
        if where == "sigterm":
            os.kill(con.pid, signal.SIGTERM)
        elif where == "key handler":
            term.keys("C-l")
        else:
            term.keys("m")
            term.wait("the mark prompt", lambda s: "Mark the timeline" in s, 20)
            term.keys("-l", "boom")
            term.keys("Enter")
        rc = con.wait_end(90)
        assert rc is not None, f"{where}: the console is still running 90 s later"
        problems = _restored_or_said(lab, profile, originals, con, where, tmp_path)
    finally:
        con.end()
        term.close()
    assert not problems, "\n".join(problems)
