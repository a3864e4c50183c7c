"""Charts of a session with plotext: throughput over time, all pairs on one shared axis,
phase boundaries marked. Plain text (one marker character per pair) for reports, colour for
the terminal, or a .txt / .html file."""

from __future__ import annotations

import re
from pathlib import Path

import numpy as np

from abtui.reports.formatting import rate_unit
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


def throughput_chart(session: Session, width: int = 100, height: int = 22,
                     color: bool = False) -> str:
    """The chart as text (ANSI colours only when `color`); "" when nothing was measured."""
    import plotext as plt

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
                series.append((label, *_downsample(x[keep], y[keep], width * 2)))
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
    plt.title("throughput over time (phase boundaries: vertical lines)")
    plt.xlabel("seconds since start")
    plt.ylabel(unit.name)
    text: str = plt.build()
    return text if color else _ANSI.sub("", text)


def phase_boundaries(session: Session) -> list[float]:
    """Times at which a phase began, after the first, across all pairs (merged within 1 s)."""
    starts = sorted({round(p.start, 1) for p in session.phases if p.start is not None})
    out: list[float] = []
    for s in starts[1:] if starts else []:
        if not out or s - out[-1] >= 1.0:
            out.append(s)
    return [b for b in out if starts and b > starts[0]]


def save_chart(session: Session, path: Path, width: int = 100, height: int = 22) -> None:
    """Write the chart to a .txt (plain) or .html file (plotext's HTML export)."""
    if path.suffix.lower() in (".html", ".htm"):
        import contextlib
        import io

        import plotext as plt

        throughput_chart(session, width, height, color=True)
        with contextlib.redirect_stdout(io.StringIO()):  # plotext announces the file
            plt.save_fig(str(path), keep_colors=True)
        return
    path.write_text(throughput_chart(session, width, height) + "\n")
