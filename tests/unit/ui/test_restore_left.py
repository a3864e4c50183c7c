"""A setting left to its new owner on exit (a RESTORE event with `left`) is said, recorded in
the session, and is no failed restore: the console does not send the user to `abtui
recover`, which would have nothing to do; headless says it in its own words."""

from __future__ import annotations

import json

from abtui.core import events
from abtui.core.events import Event
from abtui.measure.headless import describe
from abtui.measure.replay.synthetic import synthetic_profile
from abtui.ui.flow.record import SessionRecord
from abtui.ui.model.state import ConsoleState
from abtui.ui.render.eventlog import EventLog

LEFT = Event.of(events.Restore(knob="tcp_wmem", value="4096 16384 4194304", ok=False,
                               message="left as it is: reads '1 2 3', not the '4096 16384 "
                                       "65536' abtui set (set by someone else since)",
                               left="1 2 3"), host="a-snd")
FAILED = Event.of(events.Restore(knob="tcp_wmem", value="4096 16384 4194304", ok=False,
                                 message="a-snd: link lost"), host="a-snd")


def test_a_value_left_to_its_new_owner_is_no_failed_restore():
    record = SessionRecord(ConsoleState(synthetic_profile(2, 1.0)), EventLog())
    record.keep(LEFT)
    assert not record.restore_failed
    record.keep(FAILED)
    assert record.restore_failed


def test_headless_says_it_was_left_and_the_journal_keeps_the_value():
    assert describe(LEFT, None) == ("a-snd: tcp_wmem left as it is: reads '1 2 3', not the "
                                    "'4096 16384 65536' abtui set (set by someone else since)")
    assert describe(FAILED, None) == "a-snd: could not restore tcp_wmem: a-snd: link lost"
    again = Event.from_json(json.loads(json.dumps(LEFT.to_json())))
    assert again.payload.left == "1 2 3"
    assert "left" not in FAILED.to_json()["data"]  # left out while it has no value
