"""The instruction-counted lane (abtui.core.clock): `--clock icount[=SHIFT]` and [lab] clock
parsed or refused in one line, the guests' qemu given `-icount shift=N,sleep=on` and their
kernel command line the clock word the facts script reads back, the report naming the clock,
and `abtui compare` refusing figures on different clocks."""

from __future__ import annotations

import gzip
from pathlib import Path

import pytest

from abtui import cli
from abtui.core import clock
from abtui.core.errors import BadInput
from abtui.lab import kernels
from abtui.lab.netns import Lab
from abtui.lab.vm import guest as lab_vm
from abtui.profile import load_profile
from abtui.remote.facts import facts_command, parse_facts
from abtui.reports.report import _clock_lines
from abtui.sessions.session import Session

GOLDEN = Path(__file__).resolve().parents[2] / "golden"
PROFILES = Path(__file__).resolve().parents[3] / "profiles"


@pytest.mark.parametrize(("text", "want"), [("host", ""), ("", ""), ("icount", "icount:6"),
                                            ("icount=7", "icount:7"), ("ICOUNT=0", "icount:0")])
def test_a_clock_parses(text: str, want: str) -> None:
    assert clock.parse_clock(text) == want


@pytest.mark.parametrize(("text", "why"), [("icount=11", "the shift must be 0 to 10"),
                                           ("tsc", "give `host` or `icount"),
                                           ("icount=-1", "give `host`")])
def test_a_bad_clock_is_one_line(text: str, why: str) -> None:
    with pytest.raises(BadInput, match=why) as exc:
        clock.parse_clock(text)
    assert "\n" not in str(exc.value) and str(exc.value).startswith(f"--clock {text}:")


def test_the_labels_a_report_prints() -> None:
    assert clock.clock_label("icount:6") == "guest instructions, shift 6"
    assert clock.clock_label("") == "wall clock"
    assert clock.shift_of("icount:3") == 3 and clock.shift_of("") is None


def _guest(tmp_path: Path, the_clock: str) -> lab_vm.Guest:
    lab = Lab(name="unit", octet=19, ifprefix="abu", state_dir=tmp_path, mgmt=230)
    h = lab.hosts(1, {"A": "k"})[1]
    k = kernels.Kernel("k", "/k/vmlinuz-6.1", "6.1", "/k/lib/modules/6.1", "image")
    g = lab.vms.guest(h, k)
    return lab_vm.Guest(**{**{f: getattr(g, f) for f in g.__slots__}, "clock": the_clock})


def test_an_icount_guest_runs_counted_and_says_so_on_its_command_line(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(lab_vm, "vng_path", lambda: "/v/vng")
    counted = lab_vm.vng_command(_guest(tmp_path, "icount:6"), "tcg")
    assert counted[counted.index("--append") + 1] == "abtui.clock=icount:6"
    assert counted[-1].endswith(" -icount shift=6,sleep=on")
    plain = lab_vm.vng_command(_guest(tmp_path, ""), "tcg")
    assert "--append" not in plain and "-icount" not in plain[-1]


def test_the_lab_record_gives_a_guest_its_clock(tmp_path: Path) -> None:
    lab = Lab(name="unit", octet=19, ifprefix="abu", state_dir=tmp_path, mgmt=230)
    tmp_path.mkdir(exist_ok=True)
    lab.meta_path.write_text('{"pairs": 1, "clock": "icount:5"}')
    h = lab.hosts(1, {"A": "k"})[0]
    k = kernels.Kernel("k", "/k/vmlinuz-6.1", "6.1", "", "image")
    assert lab.vms.guest(h, k).clock == "icount:5"


def test_a_clock_without_vm_hosts_is_refused_before_anything_is_made(tmp_path: Path) -> None:
    lab = Lab(name="unit", octet=19, ifprefix="abu", state_dir=tmp_path / "s", mgmt=230)
    with pytest.raises(BadInput, match="only VM hosts run on an instruction-counted clock"):
        lab.up(pairs=1, clock="icount:6")
    assert not (tmp_path / "s").exists()


def test_the_facts_script_reads_the_clock_word_and_the_parser_keeps_it() -> None:
    assert 'abtui.clock=*) echo "clock=${w#*=}"' in facts_command()
    assert parse_facts("h", "os=Linux\nclock=icount:6\n").clock == "icount:6"
    assert parse_facts("h", "os=Linux\nclock=bogus\n").clock == ""
    assert parse_facts("h", "os=Linux\n").clock == ""


def test_the_report_names_an_instruction_counted_clock_and_not_the_wall_clock() -> None:
    s = Session()
    s.facts = {"a": {"clock": "icount:6"}, "b": {"clock": "icount:6"}}
    (line, _) = _clock_lines(s)
    assert line.startswith("Clock: guest instructions, shift 6.")
    s.facts = {"a": {"kernel_release": "6.1"}, "b": {"clock": ""}}
    assert _clock_lines(s) == []


def test_a_lab_clock_in_a_profile_is_checked_where_it_is(tmp_path: Path) -> None:
    base = (PROFILES / "softirq-crypto.toml").read_text()
    good = tmp_path / "good.toml"
    good.write_text(base + '\n[lab]\nclock = "icount=6"\n')
    load_profile(good)
    bad = tmp_path / "bad.toml"
    bad.write_text(base + '\n[lab]\nclock = "icount=12"\n')
    with pytest.raises(BadInput,
                       match=r"bad.toml:\d+: lab.clock: icount=12: the shift must be 0 to 10"):
        load_profile(bad)


def test_compare_refuses_figures_on_different_clocks(tmp_path: Path,
                                                     capsys: pytest.CaptureFixture[str]) -> None:
    plain = GOLDEN / "softirq-crypto-vm.abtui.jsonl.gz"
    counted = tmp_path / "counted.abtui.jsonl.gz"
    text = gzip.decompress(plain.read_bytes()).decode()
    assert '"kernel_release"' in text
    counted.write_bytes(gzip.compress(
        text.replace('"kernel_release"', '"clock": "icount:6", "kernel_release"').encode()))
    assert cli.main(["compare", str(plain), str(counted)]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1
    assert "on wall clock" in err and "on guest instructions, shift 6" in err
    assert cli.main(["compare", str(counted), str(counted)]) == 0
