"""`abtui check` with a profile that cannot be loaded: one line, exit 2 (no hosts needed)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[3]


def _check(profile: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "abtui", "check", str(profile)], cwd=ROOT,
                          capture_output=True, text=True, timeout=60)


def test_bad_profile_exits_2(tmp_path):
    profile = tmp_path / "bad.toml"
    profile.write_text("[profile\nname = ")
    result = _check(profile)
    assert result.returncode == 2
    assert profile.name in result.stderr and "Traceback" not in result.stderr
    assert len(result.stderr.strip().splitlines()) == 1
    missing = _check(tmp_path / "missing.toml")
    assert missing.returncode == 2 and "Traceback" not in missing.stderr


def test_check_names_a_bad_min_effect(tmp_path):
    example = (ROOT / "profiles" / "example.toml").read_text()
    profile = tmp_path / "effect.toml"
    profile.write_text(example.replace('min_effect = "1%"', 'min_effect = "150%"'))
    result = _check(profile)
    assert result.returncode == 2 and "Traceback" not in result.stderr
    assert "report.min_effect: 150% is out of range" in result.stderr


async def test_check_agrees_with_the_loader_on_iperf3_knobs() -> None:
    """profiles/example.toml's `key = "parallel"` knob loads and runs: check says so too."""
    from abtui.commands.check import _check_knobs
    from abtui.hosts.connect import Hosts
    from abtui.profile import load_profile

    example = Path(__file__).resolve().parents[3] / "profiles" / "example.toml"
    profile = load_profile(example)
    lines: list[tuple[bool, str]] = []
    await _check_knobs(lambda ok, line: lines.append((ok, line)), profile, Hosts())
    streams = [x for x in lines if x[1].startswith("knob streams")]
    assert streams == [(True, "knob streams: a change restarts the runs (an iperf3 knob always "
                              "does)"),
                       (True, "knob streams: iperf3 option parallel, no host change")]


async def test_a_knob_line_names_its_key_and_shows_the_value_as_sysctl_prints_it() -> None:
    """`knob enable_aim: = '4096\\t131072…'` (issue 49): the key was missing and the tabs
    escaped; every line of a knob says `KEY = 'VALUE'`, its whitespace as spaces."""
    from types import SimpleNamespace

    from abtui.commands.check import _check_setting
    from abtui.core.errors import BadInput
    from abtui.core.model import Knob, KnobKind

    class Dialect:
        def normalize(self, setting: object, value: str) -> str:
            if value == "bad":
                raise BadInput("bad: not three numbers")
            return value

    class Manager:
        def __init__(self) -> None:
            self.dialects = {"h": Dialect()}

        def setting(self, knob: object, target: object) -> object:
            if getattr(knob, "kind", None) is KnobKind.MTU:  # a keyless kind
                return SimpleNamespace(key="", kind=KnobKind.MTU)
            return SimpleNamespace(key="net.ipv4.tcp_rmem", kind=KnobKind.SYSCTL)

        async def read(self, host: str, setting: object) -> str:
            return "4096\t131072\t6291456"

        async def write(self, host: str, setting: object, value: str) -> None:
            return None

    target = SimpleNamespace(host="h", device=None)
    knob = Knob("enable_aim", KnobKind.SYSCTL, ("4096 131072 6291456", "bad"),
                key="net.ipv4.tcp_rmem")
    ok, line = await _check_setting(Manager(), knob, target)  # type: ignore[arg-type]
    assert not ok
    assert line == ("net.ipv4.tcp_rmem = '4096 131072 6291456', writable, but bad: not three "
                    "numbers")
    mtu = Knob("mtu", KnobKind.MTU, ("1500", "9000"))
    ok, line = await _check_setting(Manager(), mtu, target)  # type: ignore[arg-type]
    assert ok and line.startswith("mtu = '4096 131072 6291456'"), line  # `knob mtu:  = …`
