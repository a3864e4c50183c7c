"""Host state beside the knobs as differences (abtui.reports.host_state): two sessions'
hosts compared in a table before compare's results, a session whose hosts changed under it
said so, what a host could not read never a difference, older sessions still compared."""

from __future__ import annotations

import json
from pathlib import Path

from abtui.core import events
from abtui.core.events import Event
from abtui.reports import compare, host_state, report
from abtui.sessions.session import Session
from tests import synth

BASE = {"sysctl net.ipv4.tcp_sack": "1", "sysctl net.ipv4.tcp_wmem": "4096 16384 4194304",
        "@dev mtu": "1500", "@dev offload tcp-segmentation-offload": "on",
        "@dev driver": "veth", "kernel cmdline": "ro quiet"}


def _session(name: str, start: dict[str, dict[str, str]], end: dict[str, dict[str, str]] |
             None = None, device: str = "data0", unavailable: dict[str, str] | None = None,
             hosts: tuple[str, ...] = ("lab-a-snd", "lab-a-rcv")) -> Session:
    evs = list(synth.plan([{"k": "1"}], {"A": [[5e9, 5.1e9]], "B": [[6e9, 6.1e9]]}, seconds=3))
    readings = []
    for moment, items in (("start", start), ("end", end or start)):
        for host in hosts:
            readings.append(Event.of(events.HostStateRead(
                moment=moment, device=device, items=dict(items.get(host, BASE)),
                unavailable=dict(unavailable or {})), synth.T0, host=host))
    starts = [e for e in readings if e.payload.moment == "start"]  # type: ignore[attr-defined]
    ends = [e for e in readings if e.payload.moment == "end"]  # type: ignore[attr-defined]
    return Session.from_events([evs[0], *starts, *evs[1:-1], *ends, evs[-1]], name=name)


def test_compare_names_every_difference_in_a_table_before_the_results() -> None:
    left = _session("before", {})
    changed = {**BASE, "sysctl net.ipv4.tcp_sack": "0", "@dev mtu": "1400"}
    right = _session("after", {"lab-a-snd": changed})
    text = compare.markdown(left, right)
    table, results = text.split("throughput in", 1)
    assert "| lab-a-snd | net.ipv4.tcp_sack | 1 | 0 |" in table
    assert "| lab-a-snd | data0 mtu | 1500 | 1400 |" in table
    assert "2 settings differ" in table and "lab-a-rcv" not in table.split("Not readable")[0]
    assert "| A |" in results  # the results follow, unchanged
    doc = compare.to_json(left, right)
    assert {"host": "lab-a-snd", "setting": "net.ipv4.tcp_sack", "left": "1",
            "right": "0"} in doc["host_state"]
    assert [c.line() for c in compare.host_changes(left, right)] == [
        "lab-a-snd: data0 mtu 1500 → 1400", "lab-a-snd: net.ipv4.tcp_sack 1 → 0"]


def test_the_same_hosts_say_so_and_what_was_unreadable_is_no_difference() -> None:
    left = _session("before", {}, unavailable={"@dev coalescing": "Operation not supported"})
    without = {h: {k: v for k, v in BASE.items()} for h in ("lab-a-snd",)}
    right = _session("after", without)
    assert host_state.between(left, right, [("A", "A")]) == []
    text = "\n".join(host_state.compare_section(left, right, [("A", "A")]))
    assert "the same in both sessions" in text
    assert "data0 coalescing (Operation not supported) on before lab-a-snd" in text
    # an item one side could not read is not "changed to —"
    gone = _session("after", {"lab-a-snd": {k: v for k, v in BASE.items()
                                            if not k.startswith("@dev offload")}},
                    unavailable={"@dev offloads": "ethtool: not installed"})
    assert host_state.between(left, gone, [("A", "A")]) == []
    # but one a host simply no longer has is
    lost = _session("after", {"lab-a-snd": {k: v for k, v in BASE.items()
                                            if k != "kernel cmdline"}})
    assert [c.line() for c in host_state.between(left, lost, [("A", "A")])] == [
        "lab-a-snd: kernel cmdline ro quiet → —"]


def test_other_hosts_are_matched_by_role_and_their_devices_by_place() -> None:
    left = _session("stock", {}, hosts=("lab-a-snd",))
    right = _session("patched", {"new-snd": {**BASE, "@dev mtu": "9000"}}, device="eth1",
                     hosts=("new-snd",))
    right.pair_hosts = {"A": {"sender": "new-snd", "receiver": "new-rcv"}}
    left.pair_hosts = {"A": {"sender": "lab-a-snd", "receiver": "lab-a-rcv"}}
    lines = [c.line() for c in host_state.between(left, right, [("A", "A")])]
    assert lines == ["lab-a-snd → new-snd: data device data0 → eth1",
                     "lab-a-snd → new-snd: data0/eth1 mtu 1500 → 9000"]


def test_a_session_whose_hosts_changed_under_it_says_so() -> None:
    s = _session("run", {}, end={"lab-a-rcv": {**BASE, "sysctl net.ipv4.tcp_sack": "0"}})
    assert [c.line() for c in host_state.within(s)] == ["lab-a-rcv: net.ipv4.tcp_sack 1 → 0"]
    text = report.markdown(s, chart=False)
    assert "## Hosts changed during the session" in text
    assert "| lab-a-rcv | net.ipv4.tcp_sack | 1 | 0 |" in text
    other = _session("other", {})
    assert "⚠ run: its hosts changed during the session: lab-a-rcv: net.ipv4.tcp_sack 1 → 0" \
        in compare.markdown(other, s)
    assert "Hosts changed" not in report.markdown(other, chart=False)


def test_sessions_recorded_before_host_state_still_load_and_compare(tmp_path: Path) -> None:
    old = Session.from_events(synth.plan([{"k": "1"}], {"A": [[5e9]], "B": [[6e9]]}),
                              name="old")
    new = _session("new", {})
    assert old.host_states == {}
    text = compare.markdown(old, new)
    assert "Host state: not recorded in old" in text and "| A |" in text
    assert json.loads(json.dumps(compare.to_json(old, new)))["host_state"] == []
    fixture = Path(__file__).parents[2] / "fixtures" / "sessions" / "base.jsonl"
    assert Session.load(fixture).host_states == {}  # a journal from before host state


def test_the_json_export_carries_the_readings_and_the_changes() -> None:
    from abtui.reports import exports

    s = _session("run", {}, end={"lab-a-rcv": {**BASE, "sysctl net.ipv4.tcp_sack": "0"}})
    doc = json.loads(exports.render(s, "json"))
    assert doc["host_state"]["lab-a-snd"]["start"]["items"]["@dev mtu"] == "1500"
    assert doc["hosts_changed"] == [{"host": "lab-a-rcv", "setting": "net.ipv4.tcp_sack",
                                     "start": "1", "end": "0"}]
    assert all(c["flags"] == [] for c in doc["configurations"])
    assert compare.to_json(s, s)["host_state_within"]["run"] == doc["hosts_changed"]


def test_the_gate_says_the_differences_and_the_flags_before_its_answer() -> None:
    from abtui.commands.compare import beside_gate

    left = _session("before", {})
    right = _session("after", {"lab-a-snd": {**BASE, "sysctl net.ipv4.tcp_sack": "0"}})
    said: list[str] = []
    beside_gate(left, right, "config", said.append)
    assert said == ["the hosts differ beside the knobs in 1 setting; the results include "
                    "their effect:", "  lab-a-snd: net.ipv4.tcp_sack 1 → 0"]
    said.clear()
    beside_gate(left, left, "config", said.append)
    assert said == []
