"""A host whose iperf3 prints terminal control sequences, on the lab: its version line and its
`iperf3: error - …` carry a window title (OSC 0), a cleared screen (CSI), a clipboard write
(OSC 52), BEL, a C1 CSI (U+009B) and a carriage return. No output of `abtui check`, of the
headless run (its lines and its session file), of any export format, of compare or of import
holds any of them: each shows what the host said spelled out (ESC as \\x1b), as the console
does. Real sshd and iperf3 in namespaces; the profile's `[test] iperf3` names the hostile one.
"""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from abtui.lab.netns import Lab
from abtui.profile import load_profile

pytestmark = [pytest.mark.lab, pytest.mark.usefixtures("no_strays")]
ROOT = Path(__file__).resolve().parents[2]

# {real}: the real iperf3; {target}: pair B's address, whose client fails with the error
FAKE = r"""#!/bin/sh
# an iperf3 whose version line and errors carry terminal control sequences (a lab test's)
E=$(printf '\033'); B=$(printf '\007'); C=$(printf '\302\233')
SAY="${E}]0;pwned${B}${E}[2J${E}]52;c;cHduZWQ=${B}${C}31m"
case " $* " in
*" --version "*|*" -v "*) printf 'iperf 3.12 %s\r\n' "$SAY"; exit 0 ;;
*" {target} "*) printf 'iperf3: error - unable to connect %s\r%s2J\n' "$SAY" "$C" >&2; exit 1 ;;
esac
exec {real} "$@"
"""
SPELLED = "\\x1b]0;pwned\\x07\\x1b[2J\\x1b]52;c;cHduZWQ=\\x07\\x9b31m"


def _abtui(*args: str) -> subprocess.CompletedProcess[bytes]:
    return subprocess.run([sys.executable, "-m", "abtui", *args], cwd=ROOT,
                          capture_output=True, timeout=120)


def _raw_controls(data: bytes) -> list[str]:
    """The controls in an output a terminal would act on: ESC, BEL, CR, any other C0 but a
    line break, C1 (U+0080–U+009F, as UTF-8 decodes them)."""
    text = data.decode()
    return sorted({f"U+{ord(c):04X}" for c in text
                   if (ord(c) < 0x20 and c != "\n") or 0x7f <= ord(c) < 0xa0})


@pytest.mark.reliability(
    "10", "a host's iperf3 prints terminal control sequences (its version line, "
    "`iperf3: error - …`: OSC title and clipboard, CSI, BEL, C1 CSI, CR)",
    "no ESC, BEL, CR or C1 in any output of check, the headless run (stdout, stderr, session "
    "file), export md/csv/json/plot (stdout, .txt, .html, .svg), compare md/json/junit and "
    "import text/json; what the host said is shown spelled out (\\x1b)")
def test_no_control_from_a_host_reaches_any_output(lab: Lab, tmp_path: Path,
                                                  reliability) -> None:  # type: ignore[no-untyped-def]
    real = shutil.which("iperf3")
    assert real is not None, "iperf3 is not installed"
    target = load_profile(lab.profile_path).pairs[1].target
    fake = tmp_path / "iperf3"
    fake.write_text(FAKE.replace("{real}", real).replace("{target}", target))
    fake.chmod(0o755)
    profile = tmp_path / "hostile.toml"
    profile.write_text(lab.profile_path.read_text()
                       .replace("[test]\n", f'[test]\niperf3 = "{fake}"\n', 1)
                       .replace("duration = 0 ", "duration = 2 ", 1)
                       .replace('matrix = ["tcp_rmem"]', "matrix = []", 1))
    outputs: dict[str, bytes] = {}

    def keep(name: str, done: subprocess.CompletedProcess[bytes], codes: tuple[int, ...]
             ) -> str:
        assert done.returncode in codes, (name, done.returncode, done.stderr.decode())
        outputs[f"{name} stdout"], outputs[f"{name} stderr"] = done.stdout, done.stderr
        return (done.stdout + done.stderr).decode()

    said = keep("check", _abtui("check", str(profile)), (0,))
    assert f"iperf 3.12 {SPELLED}" in said  # shown, spelled out
    session = tmp_path / "s.abtui.jsonl"
    said = keep("run --headless", _abtui("run", str(profile), "--headless", "--out",
                                         str(session)), (1,))
    assert f"B: error: iperf3: unable to connect {SPELLED}\\x0d\\x9b2J" in said, said
    assert " ok, " in said  # pair A measured through the same iperf3
    outputs["session file"] = session.read_bytes()
    errors = [json.loads(line)["data"]["message"] for line in session.read_text().splitlines()
              if '"kind":"error"' in line]
    assert any("unable to connect \x1b]0;pwned" in e for e in errors)  # kept exactly
    for fmt in ("md", "csv", "json", "plot"):
        said = keep(f"export {fmt}", _abtui("export", str(session), "--format", fmt), (0,))
        if fmt == "md":
            assert f"unable to connect {SPELLED}" in said
    for suffix in ("txt", "html", "svg"):  # a PNG's text is pixels: its labels are the SVG's
        chart = tmp_path / f"chart.{suffix}"
        keep(f"plot .{suffix}", _abtui("export", str(session), "--format", "plot", "--out",
                                       str(chart)), (0,))
        outputs[f"plot .{suffix} file"] = chart.read_bytes()
    keep("compare md", _abtui("compare", str(session), str(session)), (0,))
    for fmt in ("json", "junit"):
        out = tmp_path / f"compare.{fmt}"
        keep(f"compare {fmt}", _abtui("compare", str(session), str(session), "--format", fmt,
                                      "--out", str(out)), (0,))
        outputs[f"compare {fmt} file"] = out.read_bytes()
    log = tmp_path / "client.txt"  # the error as a user saves it from the hostile iperf3
    client = subprocess.run([str(fake), "-c", target], capture_output=True, timeout=30)
    log.write_bytes(client.stdout + client.stderr)
    assert b"\x1b]0;pwned" in log.read_bytes()
    said = keep("import", _abtui("import", str(log)), (1,))
    assert f"unable to connect {SPELLED}" in said
    keep("import --json", _abtui("import", "--json", str(log)), (1,))

    raw = {name: bad for name, data in outputs.items() if (bad := _raw_controls(data))}
    assert not raw, f"controls reached these outputs raw: {raw}"
    reliability.row(outputs_checked=len(outputs),
                    bytes_checked=sum(len(d) for d in outputs.values()),
                    raw_controls_found=0)
