"""The profile format: each section's keys, their checks and defaults, and the table reader.

One list of `Field`s per section drives loading (check, convert, default), saving (what to
write, what is a default) and the unknown-key check, so the three never disagree.
"""

from __future__ import annotations

import difflib
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from abtui.core.dimensions import DIRECTIONS
from abtui.core.errors import Invalid, ProfileError
from abtui.core.model import DEFAULT_MIN_EFFECT, KnobKind, Scope
from abtui.profile import fields as f

REQUIRED: Any = object()
KeyPath = tuple[str | int, ...]

# Keys the console keeps for itself; a knob's `binding` may not take them (docs/profiles.md).
RESERVED_KEYS = ("q", "?", "space", "s", "S", "m", "e", "p", "a", "b", "tab")
OS_NAMES = ("linux", "freebsd")


@dataclass(frozen=True, slots=True)
class Field:
    """A section's key: its check and conversion, its default (REQUIRED: none), and the
    model's attribute it sets when that differs from the key."""

    key: str
    conv: f.Conv
    default: Any = None
    attr: str = ""  # the model's attribute when it differs from the key

    @property
    def name(self) -> str:
        return self.attr or self.key


def dotted(path: KeyPath) -> str:
    """("pairs", 1, "sender") -> "pairs[1].sender"; odd keys are shown JSON-quoted."""
    out = ""
    for part in path:
        if isinstance(part, int):
            out += f"[{part}]"
        else:
            name = part if f.ETHTOOL_KEY_RE.fullmatch(part) else f.show(part)
            out += f".{name}" if out else name
    return out or "(top)"


def check_keys(raw: dict[str, Any], known: tuple[str, ...], where: KeyPath) -> None:
    """Reject keys the format does not have, naming the closest known one."""
    for key in raw:
        if key not in known:
            close = difflib.get_close_matches(key, known, n=1, cutoff=0.6)
            hint = f"did you mean {f.show(close[0])}? " if close else ""
            raise ProfileError((*where, key),
                               f"unknown key; {hint}expected one of {', '.join(known)}")


def read_table(raw: dict[str, Any], fields: tuple[Field, ...], where: KeyPath, *,
               fill: bool = True, extra: tuple[str, ...] = ()) -> dict[str, Any]:
    """Check and convert one table. `fill` adds defaults; a REQUIRED default must be there.

    `extra` names keys the caller reads itself (sub-tables)."""
    check_keys(raw, tuple(x.key for x in fields) + extra, where)
    out: dict[str, Any] = {}
    for fld in fields:
        if fld.key in raw:
            try:
                out[fld.name] = fld.conv(raw[fld.key])
            except Invalid as exc:
                raise ProfileError((*where, fld.key), str(exc)) from None
        elif fill:
            if fld.default is REQUIRED:
                raise ProfileError((*where, fld.key), "missing; expected this required key")
            out[fld.name] = fld.default
    return out


def sub_table(raw: dict[str, Any], key: str, where: KeyPath) -> dict[str, Any]:
    value = raw.get(key, {})
    if not isinstance(value, dict):
        raise ProfileError((*where, key), f"got {f.type_name(value)}; expected a table [{key}]")
    return value


def table_array(raw: dict[str, Any], key: str, where: KeyPath) -> list[dict[str, Any]]:
    value = raw.get(key, [])
    if not isinstance(value, list) or not all(isinstance(t, dict) for t in value):
        raise ProfileError((*where, key),
                           f"got {f.type_name(value)}; expected [[{key}]] tables")
    return value


def profile_fields(base: Path | None) -> tuple[Field, ...]:
    path = f.path_in(base)
    return (
        Field("version", f.integer(1, 1), 1),
        Field("name", f.text, None),
        Field("description", f.text, ""),
        Field("base_pair", f.matching(f.LABEL_RE, "a pair's label"), None),
        Field("tunnels", f.str_list(f.tunnel_type, non_empty=True), None),
        Field("ssh_config", path, None),
        Field("known_hosts", path, None),
        Field("accept_new_host_keys", f.boolean, False),
        Field("sudo", f.boolean, False),
    )


SOCKPERF_MODES = ("ping-pong", "under-load")  # abtui.remote.iperf_cmd.sockperf_client_argv

TEST_FIELDS = (
    Field("duration", f.number(0, 7 * 86400), 10.0),
    Field("interval", f.number(0.1, 60), 1.0),
    Field("parallel", f.integer(1, 128), 1),
    Field("reverse", f.boolean, False),
    Field("bidir", f.boolean, False),
    Field("udp", f.boolean, False),
    Field("bitrate", f.matching(f.BITRATE_RE, 'an iperf3 bitrate such as "1G" or "500M"'), None),
    Field("omit", f.integer(0, 600), 0),
    Field("congestion", f.not_option(f.matching(f.CONGESTION_RE,
                                                'an algorithm name such as "bbr"')), None),
    Field("bind", f.ip, None),
    Field("port", f.integer(1, 65535), 5201),
    Field("ping", f.boolean, True),
    Field("ping_interval", f.number(0.01, 60), 0.2),
    Field("ping_count", f.integer(0, 100_000), 0),
    Field("sockperf", f.one_of(SOCKPERF_MODES), None),
    Field("sockperf_mps", f.integer(1, 1_000_000), 1000),
    Field("sockperf_tcp", f.boolean, True),
    Field("host_cpu", f.boolean, True),
    Field("profile_hz", f.integer(0, 999), 0),
    Field("extra_args", f.str_list(f.extra_arg, unique=False), ()),
    Field("iperf3", f.not_option(f.matching(f.PROGRAM_RE, 'a program name or an absolute path '
                                                          'on the hosts, such as '
                                                          '"/opt/iperf3/bin/iperf3"')), "iperf3"),
)

_label = f.matching(f.LABEL_RE, "letters, digits, _ . + - (at most 32, starting with a "
                                "letter or digit)")
_name = f.matching(f.NAME_RE, "letters, digits, _ . - (at most 40, starting with a letter)")
_device = f.matching(f.DEVICE_RE, "a network interface name (at most 15 characters)")

PAIR_FIELDS = (
    Field("label", _label, REQUIRED),
    Field("sender", f.host, REQUIRED),
    Field("receiver", f.host, REQUIRED),
    Field("target", f.address, REQUIRED),
    Field("sender_device", _device, None),
    Field("receiver_device", _device, None),
)

KNOB_FIELDS = (
    Field("name", _name, REQUIRED),
    Field("kind", f.one_of(tuple(k.value for k in KnobKind)), KnobKind.SYSCTL.value),
    Field("key", f.text, ""),
    Field("device", _device, None),
    Field("values", f.str_list(f.knob_value, non_empty=True), REQUIRED),
    Field("scope", f.one_of(tuple(s.value for s in Scope)), Scope.BOTH.value),
    Field("pairs", f.str_list(_label), ()),
    Field("binding", f.text, None),
    Field("initial", f.knob_value, None),
    # None: not said, the kind's default (core.model.Knob.restarts)
    Field("restart", f.boolean, None),
    Field("live", f.boolean, None),
)

KNOB_OS_FIELDS = (
    Field("kind", f.one_of(tuple(k.value for k in KnobKind)), None),
    Field("key", f.text, None),
)

WATCH_FIELDS = (
    Field("name", _name, REQUIRED),
    Field("role", f.one_of(("sender", "receiver")), REQUIRED),
    Field("sysctl", f.not_option(f.matching(f.SYSCTL_GLOB_RE,  # `sysctl -n KEY`
                                            "a sysctl name; * matches any characters")), None),
    Field("command", lambda v: f.text(v, 1000), None),
    Field("interval", f.number(0.1, 3600), 1.0),
    Field("pairs", f.str_list(_label), ()),
)

PLAN_FIELDS = (
    Field("matrix", f.str_list(f.text), ()),
    Field("directions", f.str_list(f.one_of(DIRECTIONS)), ()),
    Field("repetitions", f.integer(1, 1000), 1),
    Field("shuffle", f.boolean, True),
    Field("pause", f.number(0, 3600), 2.0),
    Field("seed", f.integer(0, 2**63 - 1), None),
)

# [report] layout: the table a procedure's community expects, before the generic report
# (abtui.reports.procedure): a knob sweep per pair, BEFORE/AFTER speedups, builds vs the first
REPORT_LAYOUTS = ("sweep", "before-after", "builds")
# min_effect: the smallest change (percent) the user cares about; the live verdict's
# "stretches still needed" aims at it (abtui.reports.sequential)
REPORT_FIELDS = (
    Field("layout", f.one_of(REPORT_LAYOUTS), None),
    Field("min_effect", f.percent(0, 100), DEFAULT_MIN_EFFECT),
    # sweep: pairs shown once, at their hosts' own setting, not compared (a Linux reference)
    Field("reference", f.str_list(f.text), ()),
)

# [lab]: the kernels `abtui run --lab` boots on VM hosts, one for every pair (`kernel`) or per
# pair label (`kernels = { stock = SPEC, patched = SPEC }`); SPEC as `abtui lab up --kernel`
# takes it; and their data NIC's model, for every VM pair (`nic`) or per label (`nics`); and
# `builds = { VALUE = PACKAGE }`: the Debian kernel the lab boots for each value of a build knob.
# Read by abtui.lab.prepare from the profile copy; checked here.
LAB_NICS = ("e1000e", "virtio")
LAB_FIELDS = (
    Field("kernel", lambda v: f.text(v, 1000), None),
    Field("nic", f.one_of(LAB_NICS), None),
    # the VM guests' clock: "host" (wall-clock time) or "icount[=SHIFT]" (abtui.core.clock)
    Field("clock", f.lab_clock, None),
)

SECTIONS = ("profile", "test", "pairs", "knobs", "watches", "plan", "report", "lab")
