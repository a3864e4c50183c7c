"""What a host says reaches no terminal and no report raw: every path that prints or writes
host text (check, the headless run's lines and its journal, lab status, compare, the md, csv,
json and plot exports, import, the error line) spells control characters out as the console
does (abtui.core.text.visible). tests/lab/test_host_text_lab.py does the same end to end with
an iperf3 on the lab's hosts that prints them."""

from __future__ import annotations

import gzip
import json
import types
from pathlib import Path
from typing import Any

import pytest

from abtui.cli import main
from abtui.core.text import SpelledOut, spelled_out, visible, visible_json
from tests.fixtures import FIXTURES

# A window title (OSC 0), a cleared screen (CSI), a clipboard write (OSC 52), BEL, a C1 CSI
# (U+009B), a carriage return, a backspace, NUL, DEL, a bidi override and isolate, a line
# separator: each would make a terminal act, or a report hide or reorder what was said.
HEAD = "\x1b]0;pwned\x07\x1b[2J\x1b]52;c;cHduZWQ=\x07\x9b31m"
HOSTILE = f"{HEAD}\rover\x08\x00\x7f\u202eevil\u2066\u2028"
SPELLED_HEAD = "\\x1b]0;pwned\\x07\\x1b[2J\\x1b]52;c;cHduZWQ=\\x07\\x9b31m"
SPELLED = f"{SPELLED_HEAD}\\x0dover"
SESSIONS = FIXTURES / "sessions"


def assert_clean(text: str, where: str) -> None:
    """No character a terminal acts on, on any line: only printable text and line breaks."""
    bad = sorted({f"U+{ord(c):04X}" for line in text.split("\n") for c in line
                  if not c.isprintable()})
    assert not bad, f"{where}: {bad} reached the output raw"


def assert_clean_file(path: Path) -> str:
    text = path.read_bytes().decode()  # strict UTF-8: a lone surrogate would not be
    if path.suffix == ".csv":  # a CSV file's byte order mark is abtui's own, for spreadsheets
        text = text.removeprefix("\ufeff")
    assert_clean(text, str(path))
    return text


# ---- the one function ------------------------------------------------------------------

@pytest.mark.parametrize(("said", "shown"), [
    ("\x1b]0;title\x07", "\\x1b]0;title\\x07"),                  # OSC window title, BEL
    ("\x1b]52;c;cHduZWQ=\x1b\\", "\\x1b]52;c;cHduZWQ=\\x1b\\"),   # OSC 52 clipboard, ST
    ("\x1b[2J\x1b[H", "\\x1b[2J\\x1b[H"),                         # CSI: clear, home
    ("\x9b31m", "\\x9b31m"), ("\x9d0;t\x9c", "\\x9d0;t\\x9c"),     # C1 CSI, OSC, ST
    ("ok\rFAIL", "ok\\x0dFAIL"), ("a\x08b\x00c\x7f", "a\\x08b\\x00c\\x7f"),
    ("\u202eevil\u202c", "\\u202eevil\\u202c"), ("\u2066x\u2069", "\\u2066x\\u2069"),
    ("a\u2028b", "a\\u2028b"), ("bad\udc9b", "bad\\udc9b"),      # a lone surrogate
    ("a\tb", "a b"), ("iperf 3.12 — ünïcödé ✓", "iperf 3.12 — ünïcödé ✓"),
])
def test_visible_spells_every_control(said: str, shown: str) -> None:
    assert visible(said) == shown
    assert visible(shown) == shown  # idempotent: spelled text is printable
    assert visible(f"{said}\n{said}", lines=True) == f"{shown}\n{shown}"
    assert visible(f"{said}\n") == f"{shown}\\x0a"  # one line unless asked


def test_visible_json_escapes_what_json_leaves_raw() -> None:
    """json.dumps without ensure_ascii escapes C0 but writes C1 controls, bidi overrides,
    separators and lone surrogates as they are: the journal escapes them too, and a reader
    gets the very same text."""
    said = {"m": f"{HOSTILE} \udc9b \U000e0001 \U000f0000 Ä→B ✓", "k\x9b": 1}
    raw = json.dumps(said, ensure_ascii=False)
    assert "\x9b" in raw and "\u202e" in raw  # what the encoder leaves
    line = visible_json(raw)
    assert_clean(line, "visible_json")
    assert json.loads(line) == said
    assert "Ä→B ✓" in line  # printable text stays readable
    assert visible_json('{"a":"Ä→B"}') == '{"a":"Ä→B"}'


def test_spelled_out_guards_both_streams_and_gives_them_back(capsys) -> None:  # type: ignore[no-untyped-def]
    import sys

    before = sys.stdout, sys.stderr
    with spelled_out():
        assert isinstance(sys.stdout, SpelledOut) and isinstance(sys.stderr, SpelledOut)
        print(f"out {HOSTILE}")
        print(f"err {HOSTILE}", file=sys.stderr, flush=True)
        sys.stdout.writelines([HOSTILE, "\n"])
        assert sys.stdout.isatty() is before[0].isatty()  # the stream's own, otherwise
    assert (sys.stdout, sys.stderr) == before
    got = capsys.readouterr()
    for text in (got.out, got.err):
        assert_clean(text, "stream")
        assert SPELLED in text
    assert got.out.count("\n") == 2


def test_a_closed_stream_stays_closed(monkeypatch) -> None:  # type: ignore[no-untyped-def]
    """`abtui ... >&-`: stdout is None, which print() skips; the guard keeps it so."""
    import sys

    monkeypatch.setattr(sys, "stdout", None)
    with spelled_out():
        assert sys.stdout is None
        print(HOSTILE)


# ---- abtui check -----------------------------------------------------------------------

# the facts script's answer is read line by line (a \r ends a line there): what stays on the
# line is what is shown
FACTS_ANSWER = "\n".join([
    "os=Linux", f"hostname=h{HOSTILE}", f"kernel_release=6.1.0{HOSTILE}",
    f"iperf3_version=iperf 3.12 {HOSTILE}", f"ping_version=ping {HEAD}", "cpu_count=2"])


def _profile(tmp_path: Path) -> Path:
    path = tmp_path / "p.toml"
    path.write_text('[profile]\nname = "p"\n\n[test]\nduration = 1\n\n[[pairs]]\n'
                    'label = "A"\nsender = "h-snd"\nreceiver = "h-rcv"\ntarget = "198.18.0.2"\n')
    return path


def test_check_spells_what_each_host_said(tmp_path, monkeypatch, capsys) -> None:  # type: ignore[no-untyped-def]
    """The facts script's answer (hostname, kernel release, iperf3 and ping versions) and an
    unreachable host's error, through `abtui check` as it prints them."""
    import abtui.hosts.connect as connect
    from abtui.remote.facts import parse_facts

    async def close() -> None:
        return None

    async def open_hosts(profile: Any, **_kw: Any) -> connect.Hosts:
        link = types.SimpleNamespace(uid=0, sudo=False, accepted_new_key=False, close=close)
        return connect.Hosts(links={"h-snd": link, "h-rcv": link},  # type: ignore[dict-item]
                             facts={"h-snd": parse_facts("h-snd", FACTS_ANSWER)},
                             errors={"h-rcv": f"connection refused {HOSTILE}"})

    monkeypatch.setattr(connect, "open_hosts", open_hosts)
    assert main(["check", str(_profile(tmp_path))]) == 1
    got = capsys.readouterr()
    assert_clean(got.out + got.err, "abtui check")
    lines = got.out.splitlines()
    assert lines[0].startswith(f"ok   h-snd: reachable, Linux 6.1.0{SPELLED_HEAD} "
                               f"(h{SPELLED_HEAD}), as root")
    assert lines[1] == f"ok   h-snd: iperf 3.12 {SPELLED_HEAD}"
    assert lines[2] == f"ok   h-snd: ping present (ping {SPELLED_HEAD})"
    assert f"FAIL h-rcv: unreachable: connection refused {SPELLED}" in got.out


# ---- abtui run --headless: its lines and its journal -------------------------------------

class _HostileEngine:
    """An engine whose host says HOSTILE in its facts, an error and a run's end."""

    failed_runs = 1

    def __init__(self, profile: Any, **_kw: Any) -> None:
        self.callbacks: list[Any] = []
        self.not_restored: list[str] = []

    def subscribe(self, callback: Any) -> None:
        self.callbacks.append(callback)

    def _emit(self, payload: Any, **where: str) -> None:
        from abtui.core.events import Event

        for callback in self.callbacks:
            callback(Event.of(payload, **where))

    async def connect(self) -> None:
        from abtui.core import events

        self._emit(events.Facts(facts={"alias": "h-snd", "kernel_release": HOSTILE}),
                   host="h-snd")
        self._emit(events.Link(state="lost", message=HOSTILE), host="h-snd")

    async def start(self, mode: str = "plan") -> None:
        from abtui.core import events

        self._emit(events.Error(message=f"iperf3: {HOSTILE}"), pair="A")
        self._emit(events.RunEnd(run="A-1", status="error", summary=None, ping=None,
                                 message=f"iperf3: {HOSTILE}"), pair="A")

    async def stop(self) -> None:
        return None

    async def wait(self) -> None:
        return None

    async def shutdown(self, reason: str = "shutdown") -> None:
        return None


def test_headless_lines_and_journal_keep_no_control(tmp_path, monkeypatch, capsys) -> None:  # type: ignore[no-untyped-def]
    import abtui.measure.headless as headless

    monkeypatch.setattr(headless, "Engine", _HostileEngine)
    out = tmp_path / "s.abtui.jsonl"
    assert main(["run", str(_profile(tmp_path)), "--headless", "--out", str(out)]) == 1
    got = capsys.readouterr()
    assert_clean(got.out + got.err, "abtui run --headless")
    assert f"abtui: A: error: iperf3: {SPELLED}" in got.err
    assert f"abtui: A: run A-1 error: iperf3: {SPELLED}" in got.err
    assert f"abtui: h-snd: link lost: {SPELLED}" in got.err
    # the journal: no C1 control or bidi override in it (JSON escapes), and what the host
    # said reads back exactly
    assert_clean_file(out)
    said = [json.loads(line).get("data", {}) for line in out.read_text().splitlines()]
    assert {"message": f"iperf3: {HOSTILE}"} in said
    assert any(d.get("facts", {}).get("kernel_release") == HOSTILE for d in said)


# ---- a recorded session whose hosts said HOSTILE: exports, plots, compare --------------

@pytest.fixture
def hostile_session(tmp_path: Path) -> Path:
    """The plan recording with HOSTILE in every host-controlled text a report shows: kernel
    release, hostname, iperf3 version, NIC driver, the receivers' own tcp_rmem (read on
    connect: every configuration's value), tso's `off` as the hosts reported it (a
    configuration's label, where a chart names each phase) and an iperf3 error."""
    with gzip.open(SESSIONS / "plan.abtui.jsonl.gz", "rt") as f:
        text = f.read()
    esc = json.dumps(HOSTILE)[1:-1]
    for key, value in (("kernel_release", "6.18.44-fc-v857"), ("nic_driver", "veth"),
                       ("iperf3_version", "iperf 3.12 (cJSON 1.7.15)"),
                       ("hostname", "ta14u-a-snd")):
        text = text.replace(f'"{key}":"{value}"', f'"{key}":"{value}{esc}"')
    assert text.count('4096 131072 33554432"') > 4
    text = text.replace('4096 131072 33554432"', f'4096 131072 33554432{esc}"')
    assert text.count('"tso":"off"') > 4
    text = text.replace('"tso":"off"', f'"tso":"off{esc}"')
    lines = text.splitlines()
    t = json.loads(lines[-2])["t"]
    error = {"kind": "error", "t": t, "pair": "A", "data": {"message": f"iperf3: {HOSTILE}"}}
    path = tmp_path / "hostile.abtui.jsonl"
    path.write_text("\n".join([*lines[:-1], json.dumps(error), lines[-1]]) + "\n")
    return path


@pytest.mark.parametrize("fmt", ["md", "csv", "json"])
def test_every_export_format_spells_it(hostile_session, tmp_path, capsys, fmt) -> None:  # type: ignore[no-untyped-def]
    assert main(["export", str(hostile_session), "--format", fmt]) == 0
    printed = capsys.readouterr().out
    assert_clean(printed, f"export --format {fmt}")
    out = tmp_path / f"e.{fmt}"
    assert main(["export", str(hostile_session), "--format", fmt, "--out", str(out)]) == 0
    assert assert_clean_file(out) == printed
    if fmt == "md":  # shown, spelled out: the hosts' table, a configuration, the error
        assert f"6.18.44-fc-v857{SPELLED}" in printed and f"veth{SPELLED}" in printed
        assert f"33554432{SPELLED}" in printed
        assert f"iperf3: {SPELLED}" in printed.replace("\n  ", " ")  # (the notes wrapped)
    elif fmt == "csv":
        assert f"33554432{SPELLED}" in printed
    else:  # JSON escapes it (ASCII), and a reader gets exactly what the host said
        assert printed.isascii()
        doc = json.loads(printed)
        assert doc["hosts"]["ta14u-a-snd"]["kernel_release"] == f"6.18.44-fc-v857{HOSTILE}"
        assert {"message": f"iperf3: {HOSTILE}"} in [
            {"message": e.get("message")} for e in doc["errors"]]


def test_the_console_s_export_spells_it(hostile_session) -> None:  # type: ignore[no-untyped-def]
    """The console writes what `render` gives (ui/render/tables.py): the same text."""
    from abtui.reports.exports import render
    from abtui.sessions.session import Session

    session = Session.load(hostile_session)
    for fmt in ("md", "csv", "json"):
        assert_clean(render(session, fmt), f"render {fmt}")


def test_plots_labels_spell_it(hostile_session, tmp_path, capsys, monkeypatch) -> None:  # type: ignore[no-untyped-def]
    """The text chart (stdout, .txt, .html) and the images' labels: the configurations'
    names where each phase begins, the pairs, the title."""
    assert main(["export", str(hostile_session), "--format", "plot"]) == 0
    assert_clean(capsys.readouterr().out, "export --format plot")
    for suffix in ("txt", "html", "svg"):
        out = tmp_path / f"chart.{suffix}"
        assert main(["export", str(hostile_session), "--format", "plot", "--out", str(out)]) == 0
        text = assert_clean_file(out)
        if suffix == "svg":
            assert "tso=off\\x1b]0;pwned" in text  # a phase's label, spelled
    # a PNG's text is compressed pixels: its labels are read off the figure as it is saved
    from matplotlib.figure import Figure
    from matplotlib.text import Text

    shown: list[str] = []
    savefig = Figure.savefig

    def keep(fig: Figure, *args: Any, **kwargs: Any) -> None:
        shown.extend(t.get_text() for t in fig.findobj(Text))
        savefig(fig, *args, **kwargs)

    monkeypatch.setattr(Figure, "savefig", keep)
    assert main(["export", str(hostile_session), "--format", "plot", "--out",
                 str(tmp_path / "chart.png")]) == 0
    assert any("tso=off\\x1b]0;pwned" in t for t in shown)
    assert_clean("\n".join(shown), "the PNG's labels")


@pytest.mark.parametrize("fmt", ["md", "json", "junit"])
def test_compare_spells_it(hostile_session, tmp_path, capsys, fmt) -> None:  # type: ignore[no-untyped-def]
    other = SESSIONS / "plan.abtui.jsonl.gz"
    rc = main(["compare", str(other), str(hostile_session), "--format", fmt,
               "--fail-on-regression", "2%"])
    assert rc in (0, 1, 3)  # 3: the gate tested nothing (a hostile session matches nothing)
    got = capsys.readouterr()
    assert_clean(got.out + got.err, f"compare --format {fmt}")
    assert "33554432\\x1b]0;pwned" in got.out + got.err  # the host's own value, spelled
    out = tmp_path / f"c.{fmt}"
    main(["compare", str(other), str(hostile_session), "--format", fmt, "--out", str(out)])
    assert_clean_file(out)


# ---- abtui import, lab status, the error line --------------------------------------------

def test_import_spells_iperf3_s_error(tmp_path, capsys) -> None:  # type: ignore[no-untyped-def]
    log = tmp_path / "client.txt"
    log.write_text(f"iperf3: error - unable to connect {HOSTILE}\n")
    assert main(["import", str(log)]) == 1
    printed = capsys.readouterr().out
    assert_clean(printed, "abtui import")
    assert f"unable to connect {SPELLED_HEAD}" in printed  # a \r ends the log's line
    assert main(["import", "--json", str(log)]) == 1
    printed = capsys.readouterr().out
    assert printed.isascii()
    assert json.loads(printed)["results"][0]["error"] == f"unable to connect {HEAD}"


def test_lab_status_spells_a_guest_s_release(monkeypatch, capsys) -> None:  # type: ignore[no-untyped-def]
    from abtui.lab.netns import Lab

    host = {"alias": "l-a-snd", "pair": "A", "role": "sender", "address": "198.18.255.11",
            "data_address": "198.18.1.1", "ok": True, "kernel": "k", "release": HOSTILE,
            "nic": f"e1000e {HOSTILE}", "accel": "tcg", "boot_s": 30}
    status = {"up": True, "ok": True, "hosts": [host]}
    monkeypatch.setattr(Lab, "default", classmethod(lambda cls: types.SimpleNamespace(
        status=lambda **_: status)))
    assert main(["lab", "status"]) == 0
    printed = capsys.readouterr().out
    assert_clean(printed, "abtui lab status")
    assert f"VM {SPELLED}" in printed
    assert main(["lab", "status", "--json"]) == 0
    assert capsys.readouterr().out.isascii()


def test_demo_s_reach_list_spells_what_hosts_answered(monkeypatch, capsys) -> None:  # type: ignore[no-untyped-def]
    """`abtui demo --no-ui` is a console command (not spelled out as a whole): its list of
    hosts reached spells what each answered itself."""
    import abtui.remote.probe as probe
    from abtui.commands.lab import print_reached

    async def probe_hosts(aliases: list[str], **_kw: Any) -> dict[str, tuple[bool, str]]:
        return {a: (True, f"hostname {HOSTILE}") for a in aliases}

    monkeypatch.setattr(probe, "probe_hosts", probe_hosts)
    lab = types.SimpleNamespace(pair_count=lambda: 1, ssh_config="x",
                                hosts=lambda n: [types.SimpleNamespace(alias="l-a-snd")])
    assert print_reached(lab) == 0  # type: ignore[arg-type]
    printed = capsys.readouterr().out
    assert_clean(printed, "demo --no-ui")
    assert f"hostname {SPELLED}" in printed


def test_recover_spells_what_the_journal_kept(tmp_path, monkeypatch, capsys) -> None:  # type: ignore[no-untyped-def]
    """A knob's original value is what the host said when it was read: `abtui recover
    --dry-run` lists it spelled out."""
    monkeypatch.setenv("XDG_STATE_HOME", str(tmp_path))
    undo = tmp_path / "abtui" / "undo"
    undo.mkdir(parents=True)
    records = [{"op": "start", "pid": 999999995},
               {"op": "host", "alias": "h1", "ssh_config": None, "known_hosts": None},
               {"op": "original", "host": "h1", "kind": "sysctl", "key": "net.x",
                "device": None, "value": f"1 {HOSTILE}"}]
    (undo / "x.jsonl").write_text("".join(json.dumps(r) + "\n" for r in records))
    main(["recover", "--dry-run"])
    got = capsys.readouterr()
    assert_clean(got.out + got.err, "abtui recover --dry-run")
    assert "h1" in got.out + got.err


@pytest.mark.parametrize("command", ["export", "tui"])
def test_an_error_line_spells_what_it_quotes(tmp_path, capsys, command) -> None:  # type: ignore[no-untyped-def]
    """The one line of a failed command, for the console's commands too (tui: before the
    console opens)."""
    missing = str(tmp_path / f"no{HEAD}such")  # a path holds no NUL
    assert main([command, missing]) == 2
    err = capsys.readouterr().err
    assert_clean(err, f"abtui {command}'s error")
    assert "no\\x1b]0;pwned" in err
