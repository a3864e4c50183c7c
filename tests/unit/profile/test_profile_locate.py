"""Key paths to line numbers, through the TOML that fools a naive line scanner."""

from __future__ import annotations

import tomllib

from abtui.profile.locate import key_lines, line_of

TEXT = '''\
title = """
fake = 1
[[pairs]]
"""
[profile]
"quoted.key" = 'x = "y"'   # not = a key
a.b . c = 1
arr = [
  "x = 2",
  { inline = 1 },
]
[[pairs]]
label = "A"
[pairs.test]
port = 1
[[pairs]]
label = 'B'
[[pairs.hops]]
via = "h1"
[[pairs.hops]]
via = "h2"
lit = \'\'\'
nope = 3
\'\'\'
after = 1
esc = "a\\"b = c"
'''


def test_lines_of_keys_and_tables():
    assert tomllib.loads(TEXT)["pairs"][1]["hops"][1]["esc"] == 'a"b = c'  # valid TOML
    lines = key_lines(TEXT)
    assert lines[("title",)] == 1
    assert ("fake",) not in lines and ("pairs", 1) in lines
    assert lines[("profile",)] == 5
    assert lines[("profile", "quoted.key")] == 6
    assert lines[("profile", "a", "b", "c")] == 7 and lines[("profile", "a")] == 7
    assert lines[("profile", "arr")] == 8
    assert ("profile", "inline") not in lines
    assert lines[("pairs",)] == 12 and lines[("pairs", 0, "label")] == 13
    assert lines[("pairs", 0, "test", "port")] == 15
    assert lines[("pairs", 1, "label")] == 17
    assert lines[("pairs", 1, "hops", 0, "via")] == 19
    assert lines[("pairs", 1, "hops", 1, "via")] == 21
    assert ("pairs", 1, "hops", 1, "nope") not in lines
    assert lines[("pairs", 1, "hops", 1, "after")] == 25
    assert lines[("pairs", 1, "hops", 1, "esc")] == 26


def test_line_of_falls_back_to_the_nearest_written_ancestor():
    lines = key_lines(TEXT)
    assert line_of(lines, ("pairs", 0, "sender")) == 12
    assert line_of(lines, ("profile", "arr", 1)) == 8
    assert line_of(lines, ("plan", "matrix")) == 1
