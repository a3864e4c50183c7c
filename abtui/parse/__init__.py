"""Parsers for what iperf3 and ping print: text, --json-stream, -J, and ping's dialects.

Every parser is incremental (`feed(line)` returns what became complete, `finish()` the whole
result) so the engine can feed live output line by line and `abtui import` whole files through
the same code. No parser raises on any input: unrecognised text ends up in `parse_error`.
"""

from abtui.parse.iperf3.json import Iperf3JsonParser, parse_iperf3_json
from abtui.parse.iperf3.result import Iperf3Result
from abtui.parse.iperf3.text import Iperf3TextParser, parse_iperf3_text
from abtui.parse.ping import PingParser, PingResult, parse_ping

__all__ = [
    "Iperf3JsonParser",
    "Iperf3Result",
    "Iperf3TextParser",
    "PingParser",
    "PingResult",
    "parse_iperf3_json",
    "parse_iperf3_text",
    "parse_ping",
]
