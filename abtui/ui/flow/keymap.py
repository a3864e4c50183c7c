"""The console's keys: every knob a key of its own (its profile binding when free), each key a
Textual binding with an id, and the user's keymap file (docs/console.md) given to
`App.set_keymap` so any binding can be moved to another key.

The keymap file is `$XDG_CONFIG_HOME/abtui/keymap.toml` (`~/.config/abtui/keymap.toml`), or the
file $ABTUI_KEYMAP names: binding ids to keys, e.g. `mark = "ctrl+k"`, `"knob.tcp_wmem" = "f5"`.
"""

from __future__ import annotations

import os
import string
import tomllib
from collections.abc import Callable, Iterable
from pathlib import Path

from textual.app import SystemCommand
from textual.binding import Binding, BindingType

from abtui.core.errors import BadInput
from abtui.core.model import Profile
from abtui.profile import RESERVED_KEYS

AUTO_KEYS = "1234567890" + string.ascii_lowercase  # free ones, in this order

# The console's keys. Quit is the app's (it acts on any screen); the others act on the main
# screen only and are its bindings (abtui.ui.flow.main_screen), the knob keys after them.
APP_BINDINGS: list[BindingType] = [
    Binding("ctrl+q", "quit", "Quit", id="quit", priority=True),
]
SCOPE_BINDINGS: list[Binding] = [
    Binding("tab", "cycle_scope", "Scope", id="scope", priority=True),
    Binding("a", "set_scope('A')", "Scope A", id="scope_a", show=False),
    Binding("b", "set_scope('B')", "Scope B", id="scope_b", show=False),
]
SCREEN_BINDINGS: list[Binding] = [
    # first, so an 80-column footer has them: the keys panel, and closing an ended
    # alternation's verdicts (shown only then)
    Binding("question_mark", "help", "Keys", id="help", key_display="?"),
    Binding("escape", "close_verdicts", "Close verdicts", id="close_verdicts"),
    Binding("space", "start_stop", "Start/stop", id="start_stop"),
    Binding("ctrl+r", "restart", "Restart", id="restart"),
    Binding("p", "plan", "Plan", id="plan"),
    Binding("m", "mark", "Mark", id="mark"),
    Binding("s", "save", "Save", id="save"),
    Binding("S", "save_setup", "Save setup", id="save_setup",
            tooltip="save the setup to the profile (Enter confirms)"),
    Binding("e", "export", "Export", id="export"),
    Binding("ctrl+o", "compare", "Compare", id="compare"),
    Binding("ctrl+t", "tunnel", "Tunnel", id="tunnel"),
    Binding("ctrl+l", "toggle_log", "Log", id="log"),
    Binding("ctrl+a", "alternate", "Alternate", id="alternate", show=False),
    Binding("ctrl+e", "min_effect", "Min effect", id="min_effect", show=False),
    Binding("ctrl+y", "why", "Why: the profiles' movers", id="why", show=False),
]
# the palette's, each action run on the main screen (quit is the app's)
CONSOLE_BINDINGS: list[BindingType] = [
    Binding("ctrl+q", "app.quit", "Quit", id="quit"), SCOPE_BINDINGS[0], *SCREEN_BINDINGS]
# the palette's name of an action whose footer name is short (binding id -> name)
PALETTE_NAMES = {"save": "Save session", "save_setup": "Save setup to profile"}
# Plain keys the console keeps for itself (profiles may not bind these: abtui.profile);
# every other action is on a ctrl key, so knobs may take any other letter.
RESERVED: frozenset[str] = frozenset(
    {"question_mark" if k == "?" else k for k in RESERVED_KEYS})
def assign_keys(profile: Profile, reserved: frozenset[str]) -> dict[str, str]:
    """Every knob a key (key -> knob name): its profile binding when free, else the next free
    one; more knobs than keys leaves the last without one (the palette still lists them)."""
    taken = set(reserved)
    out: dict[str, str] = {}
    pool = iter(k for k in AUTO_KEYS if k not in taken)
    for knob in profile.knobs:
        key = knob.binding
        if not key or key in taken or len(key) != 1 or key not in string.printable:
            key = next((k for k in pool if k not in taken), None)
        if key is None:
            continue
        taken.add(key)
        out[key] = knob.name
    return out


def knob_binding_id(knob: str) -> str:
    return f"knob.{knob}"


def keymap_path() -> Path:
    explicit = os.environ.get("ABTUI_KEYMAP")
    if explicit:
        return Path(explicit)
    config = os.environ.get("XDG_CONFIG_HOME") or str(Path.home() / ".config")
    return Path(config) / "abtui" / "keymap.toml"


def load_keymap(path: Path | None = None) -> dict[str, str]:
    """Binding id -> keys from the keymap file ({} when there is none); BadInput naming the
    file and the entry when it is not a table of strings."""
    path = path or keymap_path()
    try:
        text = path.read_text()
    except FileNotFoundError:
        return {}
    except OSError as exc:
        raise BadInput(f"{path}: {exc.strerror or exc}") from exc
    try:
        doc = tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        raise BadInput(f"{path}: not TOML: {exc}") from exc
    for key, value in doc.items():
        if not isinstance(value, str) or not value.strip():
            raise BadInput(f"{path}: {key}: expected keys such as \"ctrl+k\" (a string), "
                           f"got {value!r}")
    return dict(doc)


def system_commands(actions: list[tuple[str, str, str]],
                    run: Callable[[str], object]) -> Iterable[SystemCommand]:
    """The palette's entries for `actions` (palette_actions'); `run` runs an action."""
    for name, action, help_text in actions:
        yield SystemCommand(name, help_text, lambda a=action: run(a))


def palette_actions(knob_keys: dict[str, str], scopes: list[str]) -> list[tuple[str, str, str]]:
    """(name, action, help) of every console action the palette offers, knobs included."""
    acts = [(PALETTE_NAMES.get(b.id or "", b.description), b.action,
             f"key {b.key_display or b.key}")
            for b in CONSOLE_BINDINGS if isinstance(b, Binding)]
    acts.append(("Stop measuring", "stop", "stop all pairs"))
    acts.append(("Start measuring", "start", "start all pairs together"))
    acts.append(("Compare with a saved session…", "compare_saved", "abtui compare's table"))
    for key, knob in knob_keys.items():
        acts.append((f"Knob: cycle {knob}", f"knob('{knob}')", f"key {key}"))
    for scope in scopes:
        acts.append((f"Scope: {scope}", f"set_scope('{scope}')", "where knobs apply"))
    return acts
