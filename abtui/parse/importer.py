"""Saved outputs → parsed results: tell iperf3 text, -J, --json-stream and ping apart by their
content, and parse each with its parser. `abtui import` prints these; a session importer can
build sessions from the same `ImportResult`s.
"""

from __future__ import annotations

import json
import re
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from abtui.core.errors import BadInput
from abtui.parse.iperf3.json import parse_iperf3_json
from abtui.parse.iperf3.result import Iperf3Result
from abtui.parse.iperf3.text import parse_iperf3_text
from abtui.parse.ping import PingResult, parse_ping

_PING_MARKS = re.compile(r"^(?:\[\d+\.\d+\] )?(?:PING \S|\d+ bytes from .*(?:icmp_[sr]eq|seq)=|"
                         r"\d+ packets transmitted|(?:rtt|round-trip) min/|ping6?: |"
                         r"Request timeout for icmp_seq)")
_IPERF_MARKS = re.compile(r"(?:^|\s)(?:Connecting to host |Server listening on |\[ ID\]|"
                          r"\[\s*(?:\d+|SUM)\](?:\[[TR]X-[CS]\])?\s+\d+\.\d+-\s*\d+\.\d+\s+sec|"
                          r"iperf3: |iperf Done\.)")
_SCAN_LINES = 200


@dataclass(slots=True)
class ImportResult:
    """One parsed file: where it came from, what it was, and the parser's result."""

    source: str
    kind: str  # "iperf3" or "ping"
    format: str  # "text", "json" (-J), "json-stream"
    result: Iperf3Result | PingResult

    @property
    def error(self) -> str | None:
        return self.result.error or self.result.parse_error

    def to_json(self) -> dict[str, Any]:
        """One entry of `abtui import --json`'s "results" (docs/contracts.md)."""
        return {"source": self.source, "kind": self.kind, "format": self.format,
                **self.result.to_json()}


def detect(text: str) -> tuple[str, str] | None:
    """(kind, format) of a saved output, or None when it is neither iperf3's nor ping's."""
    s = text.lstrip("\ufeff \t\r\n")
    if s.startswith("{"):
        first = s.split("\n", 1)[0].strip()
        if _is_event(first):
            return "iperf3", "json-stream"
        try:
            doc = json.loads(s)
        except (ValueError, RecursionError):
            doc = None
        if isinstance(doc, dict) and {"start", "intervals", "end", "error"} & doc.keys():
            return "iperf3", "json"
        return None
    for line in s.splitlines()[:_SCAN_LINES]:
        if _PING_MARKS.search(line):
            return "ping", "text"
        if _IPERF_MARKS.search(line):
            return "iperf3", "text"
    return None


def _is_event(line: str) -> bool:
    try:
        obj = json.loads(line)
    except (ValueError, RecursionError):
        return False
    return isinstance(obj, dict) and "event" in obj


def import_text(text: str, source: str) -> ImportResult:
    """Parse one saved output; BadInput (one line) when it is neither iperf3's nor ping's."""
    found = detect(text)
    if found is None:
        first = next((ln.strip() for ln in text.splitlines() if ln.strip()), "")
        what = f"first line: {first[:60]!r}" if first else "it is empty"
        raise BadInput(f"{source}: not an iperf3 or ping output ({what})")
    kind, fmt = found
    if kind == "ping":
        return ImportResult(source, kind, fmt, parse_ping(text))
    result = parse_iperf3_json(text) if fmt != "text" else parse_iperf3_text(text)
    return ImportResult(source, kind, result.format, result)


def read_source(path: str) -> str:
    """A file's text ("-" is stdin); BadInput naming the file when it cannot be read."""
    try:
        if path == "-":
            return sys.stdin.read()
        return Path(path).read_text(encoding="utf-8", errors="replace")
    except FileNotFoundError:
        raise BadInput(f"{path}: no such file") from None
    except IsADirectoryError:
        raise BadInput(f"{path}: is a directory, not a saved output") from None
    except OSError as exc:
        raise BadInput(f"{path}: cannot read it ({exc.strerror or exc})") from None


def import_file(path: str) -> ImportResult:
    """Read and parse one saved iperf3 or ping output (the hook for session import)."""
    return import_text(read_source(path), path)
