"""Start-up imports only what the first frame needs (docs/performance.md: `first_frame_s`,
`demo_first_number_warm_s`): a subcommand imports its own module, not every command's (numpy
came in through `compare`), and the engine and the console import asyncssh only when a link
connects. Each checked in a fresh interpreter, since one test's imports would hide another's."""

from __future__ import annotations

import json
import os
import subprocess
import sys

HEAVY = ("numpy", "scipy", "asyncssh", "cryptography", "matplotlib", "plotext")


# the modules `abtui tui PROFILE` imports before its first frame, besides abtui.commands.tui
CONSOLE_START = ("import abtui.lab.lease, abtui.ui.flow.keymap\n"
                 "import abtui.measure.ports, abtui.sessions.paths, abtui.ui.app, "
                 "abtui.ui.guard\n")


def _last_line(code: str) -> str:
    """The last line `code` prints, run in a fresh Python."""
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         check=True, timeout=120).stdout.strip().splitlines()
    return out[-1] if out else ""


def _loaded_after(code: str) -> list[str]:
    probe = f"{code}\nprint(','.join(m for m in {HEAVY!r} if m in sys.modules))"
    out = subprocess.run([sys.executable, "-c", f"import sys\n{probe}"], capture_output=True,
                         text=True, check=True, timeout=120).stdout.strip().splitlines()
    return [m for m in out[-1].split(",") if m] if out else []


def test_a_subcommand_s_arguments_import_no_other_command() -> None:
    """`abtui demo` / `abtui tui` parse their arguments without importing `compare` (and
    with it numpy and abtui.reports.stats)."""
    for command in ("demo", "tui", "lab"):
        code = ("import contextlib, io\nfrom abtui.cli import main\n"
                f"with contextlib.redirect_stdout(io.StringIO()): main([{command!r}, '--help'])")
        assert _loaded_after(code) == [], command


def test_every_subcommand_is_still_listed_and_parses() -> None:
    from abtui.cli import COMMANDS, build_parser

    parser = build_parser()
    assert set(COMMANDS) <= set(parser.format_help().replace(",", " ").split())
    args = build_parser("compare").parse_args(["compare", "a", "b", "--format", "json"])
    assert args._module == "compare" and args.format == "json"


def test_the_console_and_the_engine_import_no_ssh_until_a_link_connects() -> None:
    code = ("import abtui.commands.demo, abtui.commands.tui, abtui.lab.netns, abtui.ui.app, "
            "abtui.ui.guard, abtui.measure.engine.front\n"
            "from abtui.remote.link import HostLink\n"
            "link = HostLink('lab-a-snd', ssh_config='/nonexistent')")
    assert _loaded_after(code) == []


def test_a_link_imports_asyncssh_when_it_needs_it() -> None:
    """The check above can fail: reading a link's ConnectTimeout (asyncssh's ssh_config
    reader) does import it, and the lazy module is the real one."""
    code = ("from abtui.remote.link import HostLink\n"
            "from abtui.remote.sshlib import asyncssh\n"
            "link = HostLink('lab-a-snd', ssh_config='/nonexistent')\n"
            "assert link.connect_timeout == 10.0\n"
            "import asyncssh as real\n"
            "assert asyncssh.Error is real.Error")
    assert "asyncssh" in _loaded_after(code)


def test_the_engine_is_built_after_the_console_opens_and_journals_first(tmp_path) -> None:  # type: ignore[no-untyped-def]
    """`abtui tui PROFILE` opens the console before the engine's modules are imported (the
    first frame does not need them); the engine, built on the console's first call, still
    has the session's journal as its first subscriber and closes the session on shutdown."""
    from tests.unit.commands.test_tui_command import lab_profile_text

    profile = tmp_path / "lab.toml"
    profile.write_text(lab_profile_text())
    code = f"""
import asyncio, json, os, sys
import abtui.commands.tui as tui
from abtui.profile import load_profile
seen = {{}}
def console(controller, title, subtitle="", *, on_hosts=False, **_kw):
    seen["engine_at_open"] = "abtui.measure.engine.front" in sys.modules
    on_disk = []
    def shown(event):
        on_disk.append(controller.session_path.read_text().count(event.kind.value))
    controller.subscribe(shown)
    asyncio.run(controller.shutdown())
    seen["engine_after"] = "abtui.measure.engine.front" in sys.modules
    seen["on_disk"] = on_disk
    return 0
tui.open_console = console
tui.open_on_hosts(load_profile({str(profile)!r}), "t")
print(json.dumps(seen))
"""
    env = {**os.environ, "XDG_STATE_HOME": str(tmp_path / "state"),
           "XDG_DATA_HOME": str(tmp_path / "data")}
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         check=True, timeout=120, env=env).stdout.strip().splitlines()
    seen = json.loads(out[-1])
    assert seen["engine_at_open"] is False and seen["engine_after"] is True
    # every event the console was handed was in the session's file already
    assert seen["on_disk"] and all(n >= 1 for n in seen["on_disk"]), seen


def test_the_console_s_modules_bring_no_ssh_layer_nor_dialogs_before_the_first_frame() -> None:
    """What `abtui tui PROFILE` imports before its first frame (abtui.commands.tui, the
    session's writer, the app) leaves the SSH layer (abtui.remote, imported when the engine
    is built) and the dialog screens (abtui.ui.render.screens, when one is opened) for later."""
    code = ("import sys\n"
            "import abtui.commands.tui, abtui.hosts.undo\n" + CONSOLE_START +
            "print('loaded:' + ','.join(sorted(m for m in sys.modules if m.startswith("
            "('abtui.remote', 'abtui.ui.render.screens')))))")
    assert _last_line(code) == "loaded:"


def test_no_undo_records_attrs_or_html_before_the_first_frame(tmp_path) -> None:  # type: ignore[no-untyped-def]
    """With no undo journal left (the usual start), `abtui tui PROFILE`'s modules and its
    recovery check import neither the journal's records (abtui.hosts.undo_records) nor attrs
    (through RichLog's rich.pretty) nor html: none of them is on the first frame (a journal
    left behind is still read: tests/unit/commands/test_run_set_and_notice.py), and attrs
    can still be imported afterwards."""
    journals = tmp_path / "undo"
    code = ("import sys\nfrom pathlib import Path\n"
            "import abtui.commands.tui\n" + CONSOLE_START +
            "from abtui.hosts.journals import recovery_notice\n"
            f"assert recovery_notice(Path({str(journals)!r})) is None\n"
            "print('loaded:' + ','.join(sorted(m for m in ('abtui.hosts.undo_records', "
            "'abtui.hosts.undo', 'attr', 'html') if m in sys.modules)))\n"
            "import attr\nassert attr.has")
    journals.mkdir()
    assert _last_line(code) == "loaded:"


def test_the_dataclasses_imported_before_the_first_frame_have_docstrings() -> None:
    """dataclass makes a docstring for a class without one from `inspect.signature` (0.3-1 ms
    each, before the console's first frame)."""
    code = ("import dataclasses, inspect, sys\n"
            "import abtui.commands.tui, abtui.profile\n" + CONSOLE_START +
            "print('bare:' + ','.join(sorted(f'{m}.{n}' for m, mod in list(sys.modules.items())"
            " if m.startswith('abtui') for n, c in vars(mod).items() if inspect.isclass(c) "
            "and c.__module__ == m and dataclasses.is_dataclass(c) and "
            "(c.__doc__ or '').startswith(n + '('))))")
    assert _last_line(code) == "bare:"
