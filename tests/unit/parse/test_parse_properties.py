"""No input makes a parser raise: random text, random bytes, JSON of any shape, and real
outputs mutated. Every result also serialises to strict JSON (no NaN, no Infinity)."""

from __future__ import annotations

import contextlib
import json

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from abtui.core.errors import BadInput
from abtui.parse.importer import detect, import_text
from abtui.parse.iperf3.json import Iperf3JsonParser
from abtui.parse.iperf3.text import Iperf3TextParser
from abtui.parse.ping import PingParser
from tests.fixtures import FIXTURES

# a fuzzer or a simulation: seconds of CPU, run by `make test`, not by `make check`
pytestmark = pytest.mark.sim

SAMPLES = sorted(p.read_text() for p in FIXTURES.rglob("*.txt")) + sorted(
    p.read_text() for p in FIXTURES.rglob("*.jsonl"))
PARSERS = (Iperf3TextParser, Iperf3JsonParser, PingParser)
SETTINGS = settings(max_examples=150, deadline=None,
                    suppress_health_check=[HealthCheck.too_slow])


def run_all(text: str) -> None:
    lines = text.splitlines()
    for cls in PARSERS:
        p = cls()
        for line in lines:
            out = p.feed(line)
            assert isinstance(out, list)
        json.dumps(p.finish().to_json(), allow_nan=False)
    assert detect(text) in (None, ("iperf3", "text"), ("iperf3", "json"),
                            ("iperf3", "json-stream"), ("ping", "text"))
    with contextlib.suppress(BadInput):
        json.dumps(import_text(text, "x").to_json(), allow_nan=False)


# text that looks like the real thing: fragments of real lines mixed with noise
FRAGMENTS = ["[  5]", "[SUM]", "[TX-C]", "[RX-S]", "[ ID]", " 0.00-1.00 ", " sec ",
             " 1.2 GBytes ", " 9.9 Gbits/sec ", " 12 ", " 895 KBytes ", " sender", " receiver",
             " (omitted)", " 0.01 ms ", " 3/100 ", "(1e+02%)", "(-nan%)", "- - - - -",
             "iperf3: error - x", "Connecting to host h, port 1", "Mon Nov 30 08:50:37 2026 ",
             "64 bytes from 1.2.3.4: icmp_seq=1 ttl=64 time=0.1 ms", " (DUP!)", "[1.5] ",
             "5 packets transmitted, 4 received, ", "rtt min/avg/max/mdev = 1/2/3/4 ms",
             '{"event":"interval","data":', '{"sum":{"start":0,"end":1}}', "}", "{", "\t",
             "9" * 40, "1e999", "nan", "-1", "\x00", "\u2028", " "]
looks_real = st.lists(st.lists(st.sampled_from(FRAGMENTS) | st.text(max_size=5), max_size=12)
                      .map("".join), max_size=30).map("\n".join)


@SETTINGS
@given(st.text())
def test_random_text(text: str) -> None:
    run_all(text)


@SETTINGS
@given(looks_real)
def test_text_made_of_real_fragments(text: str) -> None:
    run_all(text)


@SETTINGS
@given(st.binary(), st.sampled_from(["utf-8", "latin-1"]))
def test_random_bytes_decoded(data: bytes, encoding: str) -> None:
    run_all(data.decode(encoding, errors="replace"))


@st.composite
def mutated(draw: st.DrawFn) -> str:
    text = draw(st.sampled_from(SAMPLES))
    for _ in range(draw(st.integers(1, 6))):
        i = draw(st.integers(0, len(text)))
        j = draw(st.integers(i, min(len(text), i + 40)))
        what = draw(st.sampled_from(["delete", "insert", "digits", "dup", "cut"]))
        if what == "delete":
            text = text[:i] + text[j:]
        elif what == "insert":
            text = text[:i] + draw(st.sampled_from(FRAGMENTS) | st.text(max_size=8)) + text[i:]
        elif what == "digits":
            text = text[:i] + draw(st.sampled_from(["9" * 30, "0", "-5", "1e+308", "NaN"])) + \
                text[j:]
        elif what == "dup":
            text = text[:j] + text[i:j] + text[j:]
        else:
            text = text[:i]
    return text


@SETTINGS
@given(mutated())
def test_mutated_real_outputs(text: str) -> None:
    run_all(text)


json_values = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats() | st.text(max_size=5),
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(
        st.sampled_from(["start", "end", "bytes", "bits_per_second", "sum", "streams",
                         "sum_bidir_reverse", "sum_sent", "sum_received", "test_start",
                         "protocol", "error", "intervals", "omitted", "snd_cwnd", "sender",
                         "connecting_to", "num_streams", "version", "jitter_ms", "x"]),
        inner, max_size=6),
    max_leaves=30)


@SETTINGS
@given(st.sampled_from(["start", "interval", "end", "error", "other"]), json_values)
def test_json_events_of_any_shape(kind: str, data: object) -> None:
    line = json.dumps({"event": kind, "data": data})
    run_all(line)
    run_all(json.dumps({"start": data, "intervals": [data], "end": data}))


def test_garbage_is_a_parse_error_not_a_result() -> None:
    for cls in PARSERS:
        p = cls()
        p.feed("lorem ipsum")
        assert p.finish().parse_error
