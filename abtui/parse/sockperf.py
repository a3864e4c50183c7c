"""sockperf's client output (3.x, `ping-pong` or `under-load`, `--full-rtt --full-log
/dev/stdout`): its summary (avg, std-dev, percentiles, drops) and every observation of its
full log, as (time on sockperf's clock, round trip in ms).

sockperf prints nothing per message while it runs: the summary and the full log come when it
ends (at its `-t` or on SIGINT, which prints the full log). Its clock starts with the process,
so an observation's time plus the moment it was started is when it was sent (abtui.measure.run
places each one in its interval and phase that way). The summary's figures are sockperf's own
(one-way latency unless `--full-rtt`: a summary that says `avg-latency` had its figures and
observations doubled here, so a value is always a round trip). Never raises: text it does not
know is skipped; `sockperf: ERROR: ...` is the result's error.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

_ANSI = re.compile(r"\x1b\[[0-9;]*m|\[[0-9;]*m")
_NUM = r"\d{1,12}(?:\.\d{1,12})?"
_OBS = re.compile(rf"^\s*(\d{{1,12}}),\s*({_NUM}),\s*({_NUM}),\s*({_NUM})\s*$")
_AVG = re.compile(rf"avg-(rtt|latency)=({_NUM}) \(std-dev=({_NUM})\)")
_PCT = re.compile(rf"---> percentile ({_NUM}) =\s*({_NUM})")
_MINMAX = re.compile(rf"---> <(MIN|MAX)> observation =\s*({_NUM})")
_TOTAL = re.compile(r"Total (\d{1,12}) observations")
_DROPPED = re.compile(r"# dropped messages = (\d{1,12})")
_VALID = re.compile(rf"\[Valid Duration\] RunTime=({_NUM}) sec; SentMessages=(\d{{1,12}}); "
                    r"ReceivedMessages=(\d{1,12})")
_ERROR = re.compile(r"sockperf: ERROR: (.*)$")
SERVER_LISTENING = "[SERVER] listen on"


@dataclass(slots=True)
class SockperfResult:
    """One client's output: `observations` are (seconds on sockperf's clock, round trip ms)."""

    observations: list[tuple[float, float]] = field(default_factory=list)
    avg_ms: float | None = None
    stddev_ms: float | None = None
    min_ms: float | None = None
    max_ms: float | None = None
    percentiles_ms: dict[str, float] = field(default_factory=dict)  # "p99.9": its value
    total: int | None = None  # sockperf's "Total N observations"
    sent: int | None = None  # in its valid duration
    received: int | None = None
    dropped: int | None = None
    one_way: bool = False  # sockperf printed latency (half a round trip): doubled here
    error: str | None = None
    complete: bool = False  # its summary was seen


def _pname(q: str) -> str:
    return f"p{float(q):g}"


class SockperfParser:
    """Feed sockperf's lines; `finish()` gives the result (see the module docstring)."""

    def __init__(self) -> None:
        self._r = SockperfResult()
        self._log = False  # inside the full log's rows

    def feed(self, line: str) -> None:
        text = _ANSI.sub("", line).rstrip()
        r = self._r
        if self._log:
            m = _OBS.match(text)
            if m:
                rtt = float(m.group(4)) / 1000.0
                r.observations.append((float(m.group(2)), rtt))
                return
        if text.startswith("packet, txTime"):
            self._log = True
            return
        if (m := _ERROR.search(text)) is not None:
            r.error = r.error or m.group(1).strip()
        elif (m := _AVG.search(text)) is not None:
            r.one_way = m.group(1) == "latency"
            r.avg_ms, r.stddev_ms = float(m.group(2)) / 1000, float(m.group(3)) / 1000
            r.complete = True
        elif (m := _PCT.search(text)) is not None:
            r.percentiles_ms.setdefault(_pname(m.group(1)), float(m.group(2)) / 1000)
        elif (m := _MINMAX.search(text)) is not None:
            value = float(m.group(2)) / 1000
            if m.group(1) == "MIN":
                r.min_ms = value
            else:
                r.max_ms = value
        elif (m := _TOTAL.search(text)) is not None:
            r.total = int(m.group(1))
        elif (m := _DROPPED.search(text)) is not None:
            r.dropped = int(m.group(1))
        elif (m := _VALID.search(text)) is not None:
            r.sent, r.received = int(m.group(2)), int(m.group(3))

    def finish(self) -> SockperfResult:
        r = self._r
        if r.one_way:  # a round trip is what abtui's latency means
            r.observations = [(t, v * 2) for t, v in r.observations]
            for name in ("avg_ms", "stddev_ms", "min_ms", "max_ms"):
                v = getattr(r, name)
                setattr(r, name, None if v is None else v * 2)
            r.percentiles_ms = {k: v * 2 for k, v in r.percentiles_ms.items()}
            r.one_way = False
        return r


def parse_sockperf(text: str) -> SockperfResult:
    """A whole client output at once."""
    parser = SockperfParser()
    for line in text.splitlines():
        parser.feed(line)
    return parser.finish()


def server_outcome(lines: list[str]) -> str | None:
    """None when a server's first lines say it listens, else its error (or what it said)."""
    said = [_ANSI.sub("", ln).strip() for ln in lines]
    if any(SERVER_LISTENING in ln for ln in said):
        return None
    errors = [m.group(1).strip() for ln in said if (m := _ERROR.search(ln)) is not None]
    errors += [ln for ln in said if ln.startswith("(errno")]
    rest = [ln for ln in said if ln and "== version" not in ln]
    return " ".join(errors) if errors else (rest[0] if rest else "it exited without a word")


def bins(values: list[float]) -> list[list[float]]:
    """Round trips (ms) as [value, count] pairs, each value rounded to 3 significant digits:
    what a journal keeps of an interval's observations (thousands a second), from which any
    percentile of any stretch is read back within 0.5 % (abtui.reports.latency)."""
    counts: dict[float, int] = {}
    for v in values:
        key = float(f"{v:.3g}")
        counts[key] = counts.get(key, 0) + 1
    return [[k, c] for k, c in sorted(counts.items())]
