"""Charts of a session: throughput over time, all pairs on one shared axis, phase
boundaries marked. Text with plotext: plain (one marker character per pair) for reports, colour
for the terminal, a .txt file, or a .html page (the coloured text, escaped); images with
matplotlib (its Agg renderer draws without a display): a .png or .svg file.

matplotlib is in abtui's default install; where an environment lacks it, a .png or .svg is
refused with one line saying how to install it there (never written as text), and the HTML
page falls back to the coloured text chart.
"""

from __future__ import annotations

import html
import re
from pathlib import Path
from typing import Any

import numpy as np

from abtui.core.errors import BadInput
from abtui.core.files import atomic_file, write_atomic
from abtui.core.numbers import rate_unit, sig
from abtui.core.text import visible
from abtui.reports.naming import title
from abtui.sessions.session import Session

MARKERS = ("*", "+", "o", "x", "#", "@", "%", "=")
_ANSI = re.compile(r"\x1b\[[0-9;]*m")


def _downsample(x: np.ndarray, y: np.ndarray, points: int) -> tuple[np.ndarray, np.ndarray]:
    """Bucket means, so a day of 1 s intervals draws as fast as a minute."""
    if x.size <= points:
        return x, y
    edges = np.linspace(0, x.size, points + 1).astype(int)
    xs = np.add.reduceat(x, edges[:-1]) / np.diff(edges)
    ys = np.add.reduceat(y, edges[:-1]) / np.diff(edges)
    return xs, ys


def _series(session: Session, points: int) -> list[tuple[str, np.ndarray, np.ndarray]]:
    """(label, seconds since start, bits/s) per pair, --bidir's way back as its own line; the
    label spelled out (core/text.py), as every name a chart shows."""
    t0 = session.start_t or 0.0
    series = []
    for pair in session.pairs:
        cols = session.intervals.get(pair)
        if cols is None or not len(cols):
            continue
        x = np.frombuffer(cols["t"], dtype=np.float64) - t0
        y = np.frombuffer(cols["bps"], dtype=np.float64)
        back = np.frombuffer(cols["rx"], dtype=np.int8) == 1  # --bidir's way back: its own line
        for label, keep in ((pair, np.isfinite(y) & ~back), (f"{pair} rx", np.isfinite(y) & back)):
            if keep.any():
                series.append((visible(label), *_downsample(x[keep], y[keep], points)))
    return series


TITLE = "throughput over time (phase boundaries: vertical lines)"


def throughput_chart(session: Session, width: int = 100, height: int = 22,
                     color: bool = False) -> str:
    """The chart as text (ANSI colours only when `color`); "" when nothing was measured."""
    import plotext as plt

    t0 = session.start_t or 0.0
    series = _series(session, width * 2)
    if not series:
        return ""
    unit = rate_unit(float(np.median(s[2])) for s in series if s[2].size)
    div = unit.div
    plt.clear_figure()
    plt.plot_size(width, height)
    if not color:
        plt.theme("clear")
    for i, (pair, x, y) in enumerate(series):
        marker = "braille" if color else MARKERS[i % len(MARKERS)]
        plt.plot(x.tolist(), (y / div).tolist(), label=pair, marker=marker)
    for boundary in phase_boundaries(session):
        plt.vline(boundary - t0)
    xs = [float(v) for _, x, _ in series for v in (x.min(), x.max())]
    ys = [float(v) / div for _, _, y in series for v in (y.min(), y.max())]
    for axis, (low, high) in ((plt.xticks, (min(xs), max(xs))), (plt.yticks, (min(ys), max(ys)))):
        ticks = np.linspace(low, high, 5).tolist()
        axis(ticks, [sig(t) for t in ticks])  # 3 significant digits, as every figure
    plt.title(TITLE)
    plt.xlabel("seconds since start")
    plt.ylabel(unit.name)
    text: str = plt.build()
    if color:
        return text
    # plotext pads its title and axis lines to the width: no trailing blanks in a mail
    return "\n".join(line.rstrip() for line in _ANSI.sub("", text).split("\n"))


def phase_boundaries(session: Session) -> list[float]:
    """Times at which a phase began, after the first, across all pairs (merged within 1 s)."""
    return [t for t, _ in phase_starts(session)[1:]]


def phase_starts(session: Session) -> list[tuple[float, str]]:
    """Each phase's start across all pairs (starts within 1 s merged, the first kept) and the
    configuration it began, as tables name it (spelled out: a host's own value is its text)."""
    starts = sorted({(round(p.start, 1), p.index): p for p in session.phases
                     if p.start is not None}.items(), key=lambda kv: kv[0])
    out: list[tuple[float, str]] = []
    for (t, _), phase in starts:
        if not out or t - out[-1][0] >= 1.0:
            out.append((t, visible(session.config_label(phase.config))))
    return out


IMAGE_SUFFIXES = (".png", ".svg")
TEXT_SUFFIXES = (".txt", ".html", ".htm")


def save_chart(session: Session, path: Path, width: int = 100, height: int = 22) -> None:
    """Write the chart to `path` by its suffix: .txt (plain text), .html/.htm (a page with the
    coloured text chart), .png or .svg (an image, matplotlib). Anything else, or an image
    without matplotlib, is refused (BadInput) before a file is written."""
    suffix = path.suffix.lower()
    if suffix in IMAGE_SUFFIXES:
        save_image(session, path)
    elif suffix in (".html", ".htm"):
        write_atomic(path, chart_html(session, width, height))
    elif suffix == ".txt":
        write_atomic(path, throughput_chart(session, width, height) + "\n")
    else:
        raise BadInput(f"--out {path}: a plot is written as .png, .svg, .html or .txt")


def install_hint(package: str) -> str:
    """How to install `package` into the environment abtui runs in: with the uv beside its
    Python (the README's .venv has uv and no pip), else that Python's pip."""
    import sys

    uv = Path(sys.executable).parent / "uv"
    if uv.exists():
        return f"{uv} pip install --python {sys.executable} {package}"
    return f"{sys.executable} -m pip install {package}"


def has_matplotlib() -> bool:
    import importlib.util

    return importlib.util.find_spec("matplotlib") is not None


def _matplotlib() -> None:
    if not has_matplotlib():
        raise BadInput(f"a .png or .svg plot needs matplotlib: {install_hint('matplotlib')} "
                       "(or write .html or .txt)")


def save_image(session: Session, path: Path, size: tuple[float, float] = (10.0, 4.5)) -> None:
    """The chart as a PNG or SVG image, drawn by matplotlib's Agg renderer on a Figure of its
    own (no pyplot state, no display)."""
    _matplotlib()
    fmt = path.suffix.lower().lstrip(".")
    with atomic_file(path) as fh:
        _draw(session, size, fh, fmt)


def svg_text(session: Session, size: tuple[float, float] = (10.0, 4.5)) -> str:
    """The chart as an SVG element to put in a page (no XML declaration, no doctype)."""
    import io

    _matplotlib()
    buf = io.BytesIO()
    _draw(session, size, buf, "svg")
    text = buf.getvalue().decode("utf-8")
    return text[text.index("<svg"):]


def _draw(session: Session, size: tuple[float, float], fh: Any, fmt: str) -> None:
    from matplotlib.backends.backend_agg import FigureCanvasAgg
    from matplotlib.figure import Figure

    series = _series(session, 2000)
    fig = Figure(figsize=size, dpi=100)
    FigureCanvasAgg(fig)
    ax = fig.add_subplot()
    if series:
        unit = rate_unit(float(np.median(s[2])) for s in series if s[2].size)
        for label, x, y in series:
            ax.plot(*_broken(x, y / unit.div), label=label, linewidth=1.2, marker=".",
                    markersize=3)
        t0 = session.start_t or 0.0
        ax.set_ylim(bottom=0)
        top = ax.get_ylim()[1]
        for i, (start, name) in enumerate(phase_starts(session)):
            if i:  # a boundary: a line; every phase named where it begins
                ax.axvline(start - t0, color="0.6", linewidth=0.8, linestyle="--")
            ax.text(start - t0, top, f" {name}", rotation=90, va="top", ha="left",
                    fontsize="x-small", color="0.35", clip_on=True)
        ax.set_ylabel(unit.name)
        ax.legend(loc="lower right", fontsize="small")
    else:
        ax.text(0.5, 0.5, "no intervals recorded", ha="center", va="center",
                transform=ax.transAxes)
    ax.set_xlabel("seconds since start")
    ax.set_title(f"{visible(title(session))}\n{TITLE}", fontsize="medium")
    ax.grid(True, linewidth=0.3)
    fig.tight_layout()
    import matplotlib

    # SVG: text as <text> (searchable, small), no date (the same session, the same file)
    with matplotlib.rc_context({"svg.fonttype": "none", "svg.hashsalt": "abtui"}):
        fig.savefig(fh, format=fmt, metadata={"Date": None} if fmt == "svg" else None)


def _broken(x: np.ndarray, y: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """The series with a gap (NaN) wherever no interval came for over twice the usual
    spacing (the pause between runs), so no line is drawn across it."""
    if x.size < 3:
        return x, y
    dt = np.diff(x)
    gaps = np.flatnonzero(dt > 2 * float(np.median(dt)))
    return np.insert(x, gaps + 1, np.nan), np.insert(y, gaps + 1, np.nan)


# 256-colour palette entries 0-15 (xterm's), as plotext's colour codes use them
_BASIC = ("000000", "800000", "008000", "808000", "000080", "800080", "008080", "c0c0c0",
          "808080", "ff0000", "00ff00", "ffff00", "0000ff", "ff00ff", "00ffff", "ffffff")
_SGR = re.compile(r"\x1b\[([0-9;]*)m")


def _xterm(n: int) -> str:
    """An xterm 256-colour index as #rrggbb."""
    if n < 16:
        return "#" + _BASIC[n]
    if n < 232:
        n -= 16
        levels = [0 if v == 0 else 55 + 40 * v for v in (n // 36, n // 6 % 6, n % 6)]
        return "#" + "".join(f"{v:02x}" for v in levels)
    g = 8 + 10 * (n - 232)
    return f"#{g:02x}{g:02x}{g:02x}"


def ansi_to_html(text: str) -> str:
    """Text with 256-colour SGR codes as escaped HTML: a <span style> per coloured run."""
    out, fg, bg, pos = [], None, None, 0

    def emit(chunk: str) -> None:
        if not chunk:
            return
        style = ";".join(s for s in (f"color:{fg}" if fg else "",
                                     f"background-color:{bg}" if bg else "") if s)
        esc = html.escape(chunk)
        out.append(f'<span style="{style}">{esc}</span>' if style else esc)

    for m in _SGR.finditer(text):
        emit(text[pos:m.start()])
        pos = m.end()
        codes = [int(c) for c in m.group(1).split(";") if c.isdigit()] or [0]
        i = 0
        while i < len(codes):
            c = codes[i]
            if c == 0:
                fg = bg = None
            elif c in (38, 48) and i + 2 < len(codes) and codes[i + 1] == 5:
                if c == 38:
                    fg = _xterm(codes[i + 2] % 256)
                else:
                    bg = _xterm(codes[i + 2] % 256)
                i += 2
            elif c == 39:
                fg = None
            elif c == 49:
                bg = None
            i += 1
    emit(text[pos:])
    return "".join(out)


def chart_html(session: Session, width: int = 100, height: int = 22) -> str:
    """A complete, valid HTML page with the chart as SVG (matplotlib's, inline: lines, not
    text characters, so phase boundaries are straight in a browser); where matplotlib is
    missing, the coloured text chart (escaped, in <pre>)."""
    name = html.escape(visible(title(session)))
    if has_matplotlib():
        chart = f"<figure>\n{svg_text(session)}</figure>\n"
    else:
        body = ansi_to_html(throughput_chart(session, width, height, color=True)) or \
            "(no intervals recorded)"
        chart = ("<pre style=\"font-family:monospace;font-size:10pt;line-height:1.1\">"
                 f"{body}</pre>\n")
    return ("<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n"
            f"<title>{name}: throughput over time</title>\n</head>\n<body>\n"
            f"{_verdicts(session)}{chart}</body>\n</html>\n")


def _verdicts(session: Session) -> str:
    """The alternation's verdict table the HTML page leads with ("" when none ran)."""
    from abtui.reports.alternation import to_html

    return to_html(session)
