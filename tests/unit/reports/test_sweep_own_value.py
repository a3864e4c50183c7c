"""A translated knob at the hosts' own value (issue 49): the sweep table named the Linux
value under the knob's name (`enable_aim=4096 131072 33554432`) and glued `base` to it
(`base4096 131072 33554432`)."""

from __future__ import annotations

from abtui.reports.procedure.sweep import base_text, value_label

LISTED = ("0", "1", "2")


def test_a_listed_value_reads_as_before() -> None:
    assert value_label("2", LISTED, True) == "2 (default)"
    assert value_label("1", LISTED, False) == "1"
    assert base_text("0", LISTED) == "base0"


def test_the_hosts_own_unlisted_value_is_named_as_theirs() -> None:
    own = "4096 131072 33554432"
    assert value_label(own, LISTED, True) == f"hosts' own: {own}"
    assert base_text(own, LISTED) == "base (hosts' own)"
    assert "base4096" not in base_text(own, LISTED)
