"""The report's Hosts table names every kernel a build alternation booted a host into: the
release it started on, then each other release a verified boot reported, with the boots
counted; a module's reload and a failed boot change nothing there."""

from __future__ import annotations

from abtui.core import events
from abtui.core.events import Event
from abtui.reports.report import _hosts
from abtui.sessions.session import Session

PAIRS = [{"label": "A", "sender": "a-snd", "receiver": "a-rcv"}]


def _session(*switches: tuple[str, str, str, str]) -> Session:
    evs = [Event.of(events.SessionStart(profile_text="", profile_path="", abtui_version="",
                                             pairs=PAIRS)),
           *(Event.of(events.Facts(facts={"os": "Linux", "kernel_release": "6.1.0-47-amd64"}),
                      host=h) for h in ("a-snd", "a-rcv")),
           *(Event.of(events.BuildSwitch(knob="kernel", value="v", method=method, stage=stage,
                                         build=build), host=host)
             for host, method, stage, build in switches)]
    return Session.from_events(evs)


def test_a_host_booted_into_other_builds_lists_them_with_its_boots() -> None:
    s = _session(("a-snd", "kexec", "booting", ""), ("a-snd", "kexec", "up", "6.1.0-57-amd64"),
                 ("a-snd", "kexec", "up", "6.1.0-57-amd64"),
                 ("a-snd", "kexec", "up", "6.1.0-47-amd64"))
    table = _hosts(s)
    assert "| a-snd | Linux | 6.1.0-47-amd64, 6.1.0-57-amd64 (3 boots) |" in table
    assert "| a-rcv | Linux | 6.1.0-47-amd64 |" in table  # never switched


def test_module_reloads_and_failed_boots_leave_the_kernel_as_it_started() -> None:
    s = _session(("a-snd", "module", "up", "e1000e 3.2.6-k"),
                 ("a-rcv", "kexec", "failed", ""))
    table = _hosts(s)
    assert "| a-snd | Linux | 6.1.0-47-amd64 |" in table
    assert "| a-rcv | Linux | 6.1.0-47-amd64 |" in table
