"""What a knob's key and values may be, per kind (and per OS variant of the knob)."""

from __future__ import annotations

import re
from typing import Any

from abtui.core import netem
from abtui.core.dimensions import DIRECTION
from abtui.core.errors import BadInput, Invalid, ProfileError
from abtui.core.model import ALWAYS_RESTART_KINDS, BUILD_KINDS, Knob, KnobKind, Scope, TunnelType
from abtui.profile import fields as f
from abtui.profile.builds import check_module_key, knob_builds
from abtui.profile.schema import (
    KNOB_FIELDS,
    KNOB_OS_FIELDS,
    OS_NAMES,
    RESERVED_KEYS,
    KeyPath,
    read_table,
    sub_table,
)

_ON_OFF = ("on", "off")
_BOOL_WORDS = ("on", "off", "true", "false")
_DIGITS = re.compile(r"[0-9]{1,9}")
# a build's name: a Debian package, a path (an image, a build tree, as the lab takes them), a tag
_BUILD_VALUE = re.compile(r"[A-Za-z0-9_.+:~/@-]{1,200}")

# iperf3 knobs change one TestOptions field: the value check per field.
IPERF3_KEYS: dict[str, tuple[re.Pattern[str] | tuple[str, ...], str]] = {
    "parallel": (re.compile(r"[1-9][0-9]?|1[01][0-9]|12[0-8]"), "a stream count from 1 to 128"),
    "reverse": (_BOOL_WORDS, "on or off"),
    "bidir": (_BOOL_WORDS, "on or off"),
    "udp": (_BOOL_WORDS, "on or off"),
    "bitrate": (f.BITRATE_RE, 'an iperf3 bitrate such as "1G"'),
    "omit": (_DIGITS, "seconds to omit"),
    "congestion": (f.CONGESTION_RE, "a congestion control name"),
}


def iperf3_value(key: str, value: str) -> bool | int | str:
    """An iperf3 knob's value as the TestOptions field it sets (a checked profile's values)."""
    if IPERF3_KEYS[key][0] is _BOOL_WORDS:
        return value in ("on", "true")
    if key in ("parallel", "omit"):
        return int(value)
    return value


def iperf3_setting(knob: Knob, value: str) -> tuple[str, bool | int | str]:
    """The test option an iperf3 knob sets and the value it takes: the one rule the loader,
    `abtui check` and the engine share. BadInput names the knob and what was expected."""
    key = knob.key or knob.name
    if key not in IPERF3_KEYS:
        raise BadInput(f"knob {knob.name}: {key!r} is not an iperf3 option abtui sets "
                       f"(one of {', '.join(IPERF3_KEYS)})")
    if value.startswith("-"):  # `iperf3 -C VALUE`: a --set or --alternate value too
        raise BadInput(f"knob {knob.name}: {f.option_problem(value)}")
    ok, expected = IPERF3_KEYS[key]
    if not (value in ok if isinstance(ok, tuple) else ok.fullmatch(value)):
        raise BadInput(f"knob {knob.name}: {value!r} is not a valid {key}; expected {expected}")
    return key, iperf3_value(key, value)


def _values_ok(values: tuple[str, ...], ok: Any, expected: str, where: KeyPath) -> None:
    for i, v in enumerate(values):
        good = v in ok if isinstance(ok, tuple) else bool(ok.fullmatch(v))
        if not good:
            raise ProfileError((*where, "values"),
                               f"entry {i}: {f.show(v)} is not allowed; expected {expected}")


def _no_options(values: tuple[str, ...], where: KeyPath) -> None:
    """Values that become a command's own argument (a build's name, iperf3's `-C NAME`)
    never begin with `-`."""
    for i, v in enumerate(values):
        if v.startswith("-"):
            raise ProfileError((*where, "values"), f"entry {i}: {f.option_problem(v)}")


def check_kind(kind: KnobKind, key: str, values: tuple[str, ...], knob: dict[str, Any],
               where: KeyPath) -> None:
    """The key and the values a knob of `kind` may have."""
    keyless = kind in (KnobKind.MTU, KnobKind.TUNNEL, KnobKind.NETEM, KnobKind.KERNEL)
    if keyless and key:
        raise ProfileError((*where, "key"), f"a {kind} knob has no key; expected none")
    if key.startswith("-"):  # `sysctl -n KEY`, `ethtool -K DEV KEY …`
        raise ProfileError((*where, "key"), f.option_problem(key))
    if kind is KnobKind.SYSCTL:
        if not f.SYSCTL_RE.fullmatch(key):
            raise ProfileError((*where, "key"), f"{f.show(key)} is not a sysctl name; expected "
                               "letters, digits and _ . % / -")
    elif kind in (KnobKind.ETHTOOL_FEATURE, KnobKind.ETHTOOL_COALESCE):
        if not f.ETHTOOL_KEY_RE.fullmatch(key):
            raise ProfileError((*where, "key"), f"{f.show(key)} is not an ethtool setting; "
                               'expected a name such as "gro" or "adaptive-rx"')
        if kind is KnobKind.ETHTOOL_FEATURE:
            _values_ok(values, _ON_OFF, "on or off", where)
        else:
            _values_ok(values, re.compile(r"on|off|[0-9]{1,9}"), "on, off or a number", where)
    elif kind is KnobKind.MTU:
        for i, v in enumerate(values):
            if not (_DIGITS.fullmatch(v) and 68 <= int(v) <= 65535):
                raise ProfileError((*where, "values"), f"entry {i}: {f.show(v)} is not an "
                                   "MTU; expected a number from 68 to 65535")
    elif kind is KnobKind.NETEM:
        for i, v in enumerate(values):
            try:
                netem.canonical(v)
            except BadInput as exc:
                raise ProfileError((*where, "values"), f"entry {i}: {exc}") from None
    elif kind is KnobKind.TUNNEL:
        _values_ok(values, tuple(t.value for t in TunnelType),
                   ", ".join(t.value for t in TunnelType), where)
        if knob.get("scope", "both") != Scope.BOTH:
            raise ProfileError((*where, "scope"), "a tunnel joins both hosts; expected \"both\"")
    elif kind in BUILD_KINDS:
        if kind is KnobKind.MODULE:
            check_module_key(key, where)
        _no_options(values, where)
        _values_ok(values, _BUILD_VALUE, "a build's name: letters, digits, _ . + : ~ / @ -",
                   where)
    elif kind is KnobKind.IPERF3:
        if key not in IPERF3_KEYS:
            raise ProfileError((*where, "key"), f"{f.show(key)} is not an iperf3 knob; expected "
                               f"one of {', '.join(IPERF3_KEYS)}")
        _no_options(values, where)
        _values_ok(values, *IPERF3_KEYS[key], where)
    if knob.get("device") and kind not in (KnobKind.ETHTOOL_FEATURE, KnobKind.ETHTOOL_COALESCE,
                                           KnobKind.MTU, KnobKind.NETEM, KnobKind.MODULE):
        raise ProfileError((*where, "device"), f"a {kind} knob has no device; expected device "
                           "only on ethtool, mtu, netem and module knobs")


def _binding(value: str | None, where: KeyPath) -> str | None:
    if value is None:
        return None
    if len(value) != 1 or value.isspace() or value in RESERVED_KEYS:
        reason = "is kept by the console" if value in RESERVED_KEYS else "is not a single key"
        raise ProfileError((*where, "binding"), f"{f.show(value)} {reason}; expected one "
                           f"character other than {' '.join(RESERVED_KEYS)}")
    return value


def _os_variants(raw: dict[str, Any], knob: dict[str, Any], where: KeyPath) -> dict[str, Any]:
    """The `[knobs.os.linux]` / `[knobs.os.freebsd]` tables: kind, key, value translation."""
    variants = sub_table(raw, "os", where)
    out: dict[str, Any] = {"os_kinds": {}, "os_keys": {}, "os_values": {}}
    for os_name, table in variants.items():
        at = (*where, "os", os_name)
        if os_name not in OS_NAMES:
            raise ProfileError(at, f"unknown OS; expected one of {', '.join(OS_NAMES)}")
        if not isinstance(table, dict):
            raise ProfileError(at, f"got {f.type_name(table)}; expected a table")
        var = read_table(table, KNOB_OS_FIELDS, at, extra=("values",))
        mapping = sub_table(table, "values", at)
        trans: dict[str, str] = {}
        for k, v in mapping.items():
            if k not in knob["values"]:
                raise ProfileError((*at, "values", k), "not one of the knob's values; expected "
                                   f"one of {', '.join(map(f.show, knob['values']))}")
            try:
                trans[k] = f.knob_value(v)
            except Invalid as exc:
                raise ProfileError((*at, "values", k), str(exc)) from None
        kind = KnobKind(var["kind"] or knob["kind"])
        if var["key"] is None and kind != knob["kind"] and kind not in (KnobKind.MTU,
                                                                       KnobKind.TUNNEL,
                                                                       KnobKind.NETEM):
            raise ProfileError((*at, "key"), f"missing; a {kind} variant needs its own key")
        key = knob["key"] if var["key"] is None else var["key"]
        check_kind(kind, key, tuple(trans.get(v, v) for v in knob["values"]), knob, at)
        if var["kind"] is not None:
            out["os_kinds"][os_name] = kind
        if var["key"] is not None:
            out["os_keys"][os_name] = key
        if trans:
            out["os_values"][os_name] = trans
    return out


def build_knob(raw: dict[str, Any], where: KeyPath) -> Knob:
    knob = read_table(raw, KNOB_FIELDS, where, extra=("os", "build", "builds"))
    if knob["name"] == DIRECTION:
        raise ProfileError((*where, "name"), f"{f.show(knob['name'])} is the plan's direction "
                           "dimension; expected another name")
    knob["kind"] = KnobKind(knob["kind"])
    knob["scope"] = Scope(knob["scope"])
    knob["binding"] = _binding(knob["binding"], where)
    check_kind(knob["kind"], knob["key"], knob["values"], knob, where)
    if knob["initial"] is not None and knob["initial"] not in knob["values"]:
        raise ProfileError((*where, "initial"), f"{f.show(knob['initial'])} is not one of the "
                           f"values; expected one of {', '.join(map(f.show, knob['values']))}")
    knob.update(_os_variants(raw, knob, where))
    knob["builds"] = _builds(raw, knob, where)
    _check_live(knob, where)
    return Knob(**knob)


def _check_live(knob: dict[str, Any], where: KeyPath) -> None:
    """`live` and `restart` say one thing (`restart = false` is `live = true`), and a kind
    that always restarts the runs (a tunnel, an iperf3 option, a build) cannot act live."""
    live, restart = knob["live"], knob["restart"]
    if live is not None and restart is not None and live == restart:
        raise ProfileError((*where, "live"), f"live = {str(live).lower()} contradicts restart = "
                           f"{str(restart).lower()}; expected one of them (restart = true is "
                           "live = false)")
    if knob["kind"] in ALWAYS_RESTART_KINDS and (live or restart is False):
        said = "live" if live else "restart"
        kind = str(knob["kind"])
        raise ProfileError((*where, said), f"{'an' if kind[0] in 'aeiou' else 'a'} {kind} knob "
                           "always restarts the runs (it changes what they connect to or run); "
                           f"expected no {said} = {'true' if live else 'false'}")


def _builds(raw: dict[str, Any], knob: dict[str, Any], where: KeyPath) -> dict[str, Any]:
    """A kernel or module knob's builds (profile/builds.py); no other kind has them, and a
    build knob has no per-OS variant (each build says how its host reaches it)."""
    if knob["kind"] not in BUILD_KINDS:
        for table in ("build", "builds"):
            if table in raw:
                raise ProfileError((*where, table), f"a {knob['kind']} knob has no builds; "
                                   "expected them only on kernel and module knobs")
        return {}
    if "os" in raw:
        raise ProfileError((*where, "os"), f"a {knob['kind']} knob has no per-OS variant; "
                           "expected each build's method to say how its host reaches it")
    return knob_builds(raw, knob["kind"], knob["values"], where)
