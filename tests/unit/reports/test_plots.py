"""`abtui export --format plot --out FILE`: a real PNG or SVG image (matplotlib, no display),
a valid HTML page, plain text, or one line refusing anything else."""

from __future__ import annotations

import struct
import sys
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest

from abtui.cli import main
from abtui.reports.plots import ansi_to_html
from abtui.sessions.writer import SessionWriter
from tests import synth

WMEM = [{"wmem": "default"}, {"wmem": "64k"}, {"wmem": "default"}]
RATES = {"A": [10e9, 5e9, 10e9], "B": [11e9, 5.5e9, 11e9]}


@pytest.fixture
def session_file(tmp_path: Path) -> Path:
    with SessionWriter(tmp_path / "cont.abtui.jsonl", profile="synth") as w:
        for ev in synth.continuous(WMEM, RATES, seconds=10, ping_interval=0.5):
            w.write(ev)
    assert w.final_path is not None
    return w.final_path


def _plot(session: Path, out: Path) -> int:
    return main(["export", str(session), "--format", "plot", "--out", str(out)])


def test_png_is_a_png_image(session_file: Path, tmp_path: Path) -> None:
    pytest.importorskip("matplotlib", reason="the `plot` extra is not installed")
    out = tmp_path / "x.png"
    assert _plot(session_file, out) == 0
    data = out.read_bytes()
    assert data[:8] == b"\x89PNG\r\n\x1a\n"  # not text
    width, height = struct.unpack(">II", data[16:24])  # IHDR
    assert (width, height) == (1000, 450)


def test_svg_is_an_svg_image_naming_the_pairs(session_file: Path, tmp_path: Path) -> None:
    pytest.importorskip("matplotlib", reason="the `plot` extra is not installed")
    out = tmp_path / "x.svg"
    assert _plot(session_file, out) == 0
    root = ET.parse(out).getroot()
    assert root.tag == "{http://www.w3.org/2000/svg}svg"
    texts = {t.text for t in root.iter("{http://www.w3.org/2000/svg}text")}
    assert {"A", "B", "Gbit/s", "seconds since start"} <= texts
    first = out.read_bytes()
    assert _plot(session_file, out) == 0 and out.read_bytes() == first  # the same file


def test_html_is_valid_html_with_the_chart_as_svg(session_file: Path, tmp_path: Path) -> None:
    """The page's chart is real SVG (matplotlib's lines, so phase boundaries are straight in
    a browser; issue 49), not a braille text chart in <pre>."""
    html5lib = pytest.importorskip("html5lib")
    out = tmp_path / "x.html"
    assert _plot(session_file, out) == 0
    text = out.read_text()
    # strict: any parse error (a malformed attribute like `style = style=…`) raises
    doc = html5lib.HTMLParser(strict=True, namespaceHTMLElements=False).parse(text)
    ns = "{http://www.w3.org/2000/svg}"
    svg = doc.find(f"./body/figure/{ns}svg")
    assert svg is not None and doc.find("./body/pre") is None
    assert svg.findall(f".//{ns}path") and "throughput over time" in "".join(svg.itertext())
    assert not any("\u2800" <= ch <= "\u28ff" for ch in text)  # no braille


def test_html_without_matplotlib_keeps_the_text_chart(session_file: Path, tmp_path: Path,
                                                     monkeypatch: pytest.MonkeyPatch) -> None:
    html5lib = pytest.importorskip("html5lib")
    monkeypatch.setitem(sys.modules, "matplotlib", None)
    out = tmp_path / "x.html"
    assert _plot(session_file, out) == 0
    doc = html5lib.HTMLParser(strict=True, namespaceHTMLElements=False).parse(out.read_text())
    pre = doc.find("./body/pre")
    assert pre is not None and "throughput over time" in "".join(pre.itertext())
    assert all(s.get("style", "").startswith(("color:", "background-color:"))
               for s in pre.iter("span"))


def test_ansi_to_html_escapes_and_colours() -> None:
    assert ansi_to_html("\x1b[38;5;9m<a>&\x1b[0m ok") == (
        '<span style="color:#ff0000">&lt;a&gt;&amp;</span> ok')
    assert ansi_to_html("\x1b[48;5;231m \x1b[38;5;244mx") == (
        '<span style="background-color:#ffffff"> </span>'
        '<span style="color:#808080;background-color:#ffffff">x</span>')


def test_other_suffixes_and_a_missing_matplotlib_are_refused_in_one_line(
        session_file: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str],
        monkeypatch: pytest.MonkeyPatch) -> None:
    out = tmp_path / "x.pdf"
    assert _plot(session_file, out) == 2 and not out.exists()
    assert capsys.readouterr().err == (
        f"abtui: --out {out}: a plot is written as .png, .svg, .html or .txt\n")
    monkeypatch.setitem(sys.modules, "matplotlib", None)  # import matplotlib: ImportError
    png = tmp_path / "y.png"
    assert _plot(session_file, png) == 2 and not png.exists()
    err = capsys.readouterr().err
    assert err.startswith("abtui: a .png or .svg plot needs matplotlib") and err.count("\n") == 1
    # a hint that works in the README's venv, which has uv and no pip
    assert f"{Path(sys.executable).parent / 'uv'} pip install --python {sys.executable} " \
        "matplotlib" in err or f"{sys.executable} -m pip install matplotlib" in err
