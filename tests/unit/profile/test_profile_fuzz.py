"""Hostile profiles and random bytes into the loader: a checked Profile or one BadInput line.

Whatever comes in, nothing else escapes and nothing runs (process creation is made to fail
loudly while loading)."""

from __future__ import annotations

import dataclasses
import re
import tomllib
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import tomlkit
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from abtui.core.errors import BadInput
from abtui.core.model import Profile
from abtui.profile import load_profile, parse_profile
from abtui.profile.fields import has_control
from tests.unit.sandbox import nothing_runs

# a fuzzer or a simulation: seconds of CPU, run by `make test`, not by `make check`
pytestmark = pytest.mark.sim

EXAMPLE = (Path(__file__).resolve().parents[3] / "profiles" / "example.toml").read_text()
BASE = tomllib.loads(EXAMPLE)
ONE_LINE = re.compile(r"[^\n\r]*:\d+: [^\n\r]+")
SETTINGS = settings(max_examples=250, deadline=None,
                    suppress_health_check=[HealthCheck.too_slow])
FEWER = settings(SETTINGS, max_examples=100)  # each example goes through tomlkit.dumps

HOSTILE = st.sampled_from([
    "; reboot", "$(reboot)", "`id`", "a\nb", "\r", "'\"", '"; rm -rf / #', "-oProxyCommand=x",
    "\x00", "\u202e", "\u2028", "..", "/etc/passwd", "q", "?", " ", "", "x" * 5000, "*",
    "--logfile=/tmp/x", "198.18.1.2; id", "dev.ix.2.enable_aim\n", "{}", "[]", "nan",
])
LEAF = st.one_of(HOSTILE, st.text(max_size=30), st.integers(), st.booleans(),
                 st.floats(allow_nan=True), st.lists(HOSTILE, max_size=3))



def strings_of(obj: Any) -> Iterator[str]:
    if isinstance(obj, str):
        yield obj
    elif dataclasses.is_dataclass(obj):
        for fld in dataclasses.fields(obj):
            if fld.name not in ("source_text", "source_path"):
                yield from strings_of(getattr(obj, fld.name))
    elif isinstance(obj, dict):
        for k, v in obj.items():
            yield from strings_of(k)
            yield from strings_of(v)
    elif isinstance(obj, list | tuple):
        for v in obj:
            yield from strings_of(v)


def outcome(text: str) -> Profile | None:
    """Load; a Profile must be checked, an error must be one line naming file and line."""
    try:
        with nothing_runs():
            prof = parse_profile(text, "fuzz.toml")
    except BadInput as exc:
        msg = str(exc)
        assert ONE_LINE.fullmatch(msg) and msg.startswith("fuzz.toml:"), msg
        assert not has_control(msg), msg
        return None
    for s in strings_of(prof):
        assert not has_control(s), s
    for pair in prof.pairs:
        assert not pair.sender.startswith("-") and not pair.receiver.startswith("-")
    for knob in prof.knobs:
        assert not set(knob.key) & set(";$`'\" \n"), knob.key
    return prof


@SETTINGS
@given(st.binary(max_size=2000))
def test_random_bytes(tmp_path_factory: Any, data: bytes) -> None:
    path = tmp_path_factory.getbasetemp() / "fuzz.toml"
    path.write_bytes(data)
    try:
        load_profile(path)
    except BadInput as exc:
        assert ONE_LINE.fullmatch(str(exc)), str(exc)


@SETTINGS
@given(st.text(alphabet=st.sampled_from('[]{}=."\'#\n ,abc123_-\\tfu'), max_size=300))
def test_random_toml_like_text(text: str) -> None:
    outcome(text)


@st.composite
def mutated_profiles(draw: st.DrawFn) -> dict[str, Any]:
    """The example profile with hostile keys and values put in at random places."""
    doc = dict(BASE)
    doc = {k: (dict(v) if isinstance(v, dict) else [dict(t) for t in v]) for k, v in doc.items()}
    for _ in range(draw(st.integers(1, 4))):
        section = draw(st.sampled_from(sorted(doc)))
        tables = [doc[section]] if isinstance(doc[section], dict) else doc[section]
        table = draw(st.sampled_from(tables))
        if draw(st.booleans()) and table:
            table[draw(st.sampled_from(sorted(table)))] = draw(LEAF)
        else:
            table[draw(st.one_of(HOSTILE, st.text(max_size=10)))] = draw(LEAF)
    return doc


@FEWER
@given(mutated_profiles())
def test_hostile_values_and_keys(doc: dict[str, Any]) -> None:
    try:
        text = tomlkit.dumps(doc)
    except Exception:  # tomlkit cannot write some values (NUL in a key): nothing to load
        return
    outcome(text)


@SETTINGS
@given(st.data())
def test_mutated_example_text(data: st.DataObject) -> None:
    lines = EXAMPLE.split("\n")
    for _ in range(data.draw(st.integers(1, 3))):
        i = data.draw(st.integers(0, len(lines) - 1))
        op = data.draw(st.sampled_from(["drop", "dup", "insert", "cut"]))
        if op == "drop":
            del lines[i]
        elif op == "dup":
            lines.insert(i, lines[i])
        elif op == "cut":
            lines[i] = lines[i][: data.draw(st.integers(0, len(lines[i])))]
        else:
            j = data.draw(st.integers(0, len(lines[i])))
            lines[i] = lines[i][:j] + data.draw(HOSTILE) + lines[i][j:]
    outcome("\n".join(lines))


def test_the_example_itself_passes_the_same_checks() -> None:
    assert outcome(EXAMPLE) is not None


def test_deep_nesting_is_bad_input_not_a_crash() -> None:
    assert outcome("a = " + "[" * 50_000) is None
    assert outcome("[profile]\nname = " + "{a = " * 3000 + "1" + "}" * 3000) is None


PRINTABLE_HOSTILE = st.one_of(
    st.sampled_from(["; reboot", "$(reboot)", "`id`", "'\"", '"; rm -rf / #', "a\\nb", "*"]),
    st.text(st.characters(blacklist_categories=("Cc", "Cf", "Zl", "Zp", "Cs")), min_size=1,
            max_size=40).filter(str.strip))


@FEWER
@given(PRINTABLE_HOSTILE, PRINTABLE_HOSTILE, PRINTABLE_HOSTILE)
def test_free_text_fields_keep_hostile_text_literally(value: str, desc: str, cmd: str) -> None:
    """Knob values, descriptions and watch commands are free text: kept exactly, to be quoted
    by whoever uses them, never interpreted here."""
    doc = {k: (dict(v) if isinstance(v, dict) else [dict(t) for t in v])
           for k, v in BASE.items()}
    doc["knobs"].append({"name": "x", "key": "net.core.x",
                         "values": list(dict.fromkeys(["0", value]))})
    doc["profile"]["description"] = desc
    doc["watches"][1]["command"] = cmd
    prof = outcome(tomlkit.dumps(doc))
    assert prof is not None
    assert prof.knob("x").values[-1] == value and prof.description == desc
    assert prof.watches[1].command == cmd
