"""A kernel or module knob's builds: `[knobs.build]` (every value's) and `[knobs.builds.VALUE]`
(one value's, field by field over it), checked per method, into `core.builds.Build`s.

Every wrong entry is one ProfileError naming the field where it is written (FILE:LINE).
"""

from __future__ import annotations

import re
from typing import Any

from abtui.core.builds import (
    COMMAND_TIMEOUT_S,
    KERNEL_METHODS,
    KERNEL_TIMEOUT_S,
    MODULE_METHODS,
    MODULE_TIMEOUT_S,
    PLACEHOLDERS,
    Build,
    Method,
    Reports,
    derived_release,
    placeholders,
)
from abtui.core.errors import Invalid, ProfileError
from abtui.core.model import KnobKind
from abtui.profile import fields as f
from abtui.profile.schema import Field, KeyPath, check_keys, read_table, sub_table

_path = f.matching(f.HOST_PATH_RE, "an absolute path on the host")
_optional_path = f.matching(re.compile(f"|{f.HOST_PATH_RE.pattern}"),
                            'an absolute path on the host, or "" for none')

BUILD_FIELDS = (
    Field("method", f.one_of(tuple(m.value for m in (*KERNEL_METHODS, *MODULE_METHODS))), None),
    Field("image", _path, None),
    Field("initrd", _optional_path, None),
    Field("append", f.text, None),
    Field("entry", f.not_option(f.text), None),
    Field("kernel", f.not_option(f.matching(f.BOOT_NAME_RE, "a kernel's folder under /boot, such "
                                            "as \"D30155\"")), None),
    Field("command", f.str_list(f.text, unique=False, non_empty=True), None),
    Field("file", f.not_option(f.matching(f.KLD_FILE_RE, "a module file: an absolute path on "
                                          "the host")), None),
    Field("release", f.not_option(f.matching(f.RELEASE_RE, 'a `uname -r`, such as '
                                             '"6.1.0-57-amd64"')), None),
    Field("version", f.text, None),
    Field("srcversion", f.matching(re.compile(r"[0-9A-Fa-f]{1,64}"), "a module's srcversion "
                                   "(hex digits)"), None),
    Field("timeout", f.number(1, 3600), None),
    Field("command_timeout", f.number(1, 3600), None),
)
_TABLES = ("params", "reports")
REPORTS_FIELDS = (
    Field("kind", f.one_of((KnobKind.SYSCTL.value, KnobKind.ETHTOOL_FEATURE.value,
                            KnobKind.ETHTOOL_COALESCE.value, KnobKind.MTU.value)), None),
    Field("key", f.text, ""),
    Field("value", f.knob_value, None),
)
# the fields each method uses, beside method, version and timeout
USES: dict[Method, tuple[str, ...]] = {
    Method.KEXEC: ("release", "image", "initrd", "append"),
    Method.GRUB_REBOOT: ("release", "entry"),
    Method.NEXTBOOT: ("release", "kernel"),
    Method.COMMAND: ("release", "command", "command_timeout"),
    Method.MODPROBE: ("params", "srcversion", "reports"),
    Method.INSMOD: ("file", "params", "srcversion", "reports"),
    Method.KLD: ("file", "reports"),
}
_ALWAYS = ("method", "version", "timeout")
_NEEDS = {Method.GRUB_REBOOT: "entry", Method.NEXTBOOT: "kernel", Method.COMMAND: "command",
          Method.INSMOD: "file"}


def check_module_key(key: str, where: KeyPath) -> None:
    if key.startswith("-"):  # `modprobe -r KEY`, `kldload KEY`
        raise ProfileError((*where, "key"), f.option_problem(key))
    if not f.MODULE_RE.fullmatch(key):
        raise ProfileError((*where, "key"), f"{f.show(key)} is not a module name; expected "
                           'letters, digits, _ and -, such as "e1000e" or "if_ix"')


def knob_builds(raw: dict[str, Any], kind: KnobKind, values: tuple[str, ...],
                where: KeyPath) -> dict[str, Build]:
    """Each value's Build, from `[knobs.build]` and `[knobs.builds.VALUE]`."""
    shared = sub_table(raw, "build", where)
    own = sub_table(raw, "builds", where)
    for value, table in own.items():
        if value not in values:
            raise ProfileError((*where, "builds", value), "not one of the knob's values; "
                               f"expected one of {', '.join(map(f.show, values))}")
        if not isinstance(table, dict):
            raise ProfileError((*where, "builds", value),
                               f"got {f.type_name(table)}; expected a table")
    base = _read(shared, (*where, "build"))
    out = {}
    for value in values:
        at = (*where, "builds", value)
        mine = _read(own.get(value, {}), at)
        merged = {**base, **mine}
        origin = {k: (at if k in mine else (*where, "build")) for k in merged}
        out[value] = _build(kind, value, merged, origin, at if value in own else (*where, "build"))
    return out


def _read(table: dict[str, Any], where: KeyPath) -> dict[str, Any]:
    """One build table's given fields, converted (no defaults)."""
    got = read_table(table, BUILD_FIELDS, where, fill=False, extra=_TABLES)
    if "params" in table:
        got["params"] = _params(sub_table(table, "params", where), (*where, "params"))
    if "reports" in table:
        got["reports"] = _reports(sub_table(table, "reports", where), (*where, "reports"))
    return got


def _params(table: dict[str, Any], where: KeyPath) -> tuple[tuple[str, str], ...]:
    out = []
    for name, value in table.items():
        if not f.PARAM_RE.fullmatch(name):
            raise ProfileError((*where, name), "not a module parameter's name; expected "
                               "letters, digits and _")
        try:
            text = f.knob_value(value)
        except Invalid as exc:
            raise ProfileError((*where, name), str(exc)) from None
        if not f.PARAM_VALUE_RE.fullmatch(text):
            raise ProfileError((*where, name), f"{f.show(text)} is not a parameter value; "
                               "expected letters, digits and _ . , : / + -")
        out.append((name, text))
    return tuple(out)


def _reports(table: dict[str, Any], where: KeyPath) -> Reports:
    check_keys(table, tuple(x.key for x in REPORTS_FIELDS), where)
    got = read_table(table, REPORTS_FIELDS, where)
    for key in ("kind", "value"):
        if got[key] is None:
            raise ProfileError((*where, key), "missing; expected kind, key and value")
    if got["key"].startswith("-"):
        raise ProfileError((*where, "key"), f.option_problem(got["key"]))
    if got["kind"] != KnobKind.MTU.value and not f.ETHTOOL_KEY_RE.fullmatch(got["key"]) \
            and not f.SYSCTL_RE.fullmatch(got["key"]):
        raise ProfileError((*where, "key"), f"{f.show(got['key'])} is not a setting's key")
    return Reports(got["kind"], got["key"], got["value"])


def _build(kind: KnobKind, value: str, got: dict[str, Any], origin: dict[str, KeyPath],
           where: KeyPath) -> Build:
    """One value's Build: its method's fields only, what it needs there, the rest derived."""
    if got.get("method") is None:
        raise ProfileError((*where, "method"), f"missing; a {kind} knob's value {f.show(value)} "
                           "needs a method ([knobs.build] or [knobs.builds.VALUE])")
    method = Method(got["method"])
    allowed = KERNEL_METHODS if kind is KnobKind.KERNEL else MODULE_METHODS
    if method not in allowed:
        raise ProfileError((*origin["method"], "method"), f"{f.show(method.value)} is not a "
                           f"{kind} method; expected one of {', '.join(allowed)}")
    uses = (*_ALWAYS, *USES[method])
    for name in got:
        if name not in uses:
            raise ProfileError((*origin[name], name), f"not used by method {method}; expected "
                               f"only {', '.join(uses)}")
    need = _NEEDS.get(method)
    if need is not None and not got.get(need):
        raise ProfileError((*where, need), f"missing; method {method} needs it")
    release = got.get("release") or derived_release(value) or \
        derived_release(got.get("image") or "")
    if method is Method.KEXEC and not got.get("image") and not release:
        raise ProfileError((*where, "image"), "missing; kexec needs the image (or a release, or "
                           "a value spelled linux-image-RELEASE, to find /boot/vmlinuz-RELEASE)")
    for i, word in enumerate(got.get("command") or ()):
        for name in placeholders(word):
            if name not in PLACEHOLDERS:
                raise ProfileError((*origin["command"], "command"), f"entry {i}: {{{name}}} is "
                                   f"not a placeholder; expected {{{'}, {'.join(PLACEHOLDERS)}}} "
                                   "(write {{ and }} for braces)")
    timeout = MODULE_TIMEOUT_S if method in MODULE_METHODS else KERNEL_TIMEOUT_S
    return Build(method=method, image=got.get("image") or "", initrd=got.get("initrd"),
                 append=got.get("append") or "", entry=got.get("entry") or "",
                 kernel=got.get("kernel") or "", command=tuple(got.get("command") or ()),
                 file=got.get("file") or "", params=got.get("params") or (),
                 release=release if method not in MODULE_METHODS else "",
                 version=got.get("version") or "", srcversion=got.get("srcversion") or "",
                 reports=got.get("reports"), timeout=got.get("timeout") or timeout,
                 command_timeout=got.get("command_timeout") or COMMAND_TIMEOUT_S)


def build_table(build: Build) -> dict[str, Any]:
    """A build as its `[knobs.builds.VALUE]` table (saving a profile to a new file): every
    field its method uses that is set, so the file loads back to the same Build."""
    out: dict[str, Any] = {"method": build.method.value}
    for name in (*_ALWAYS, *USES[build.method]):
        if name in ("method", "params", "reports"):
            continue
        value = getattr(build, name)
        if name == "command":
            value = list(value)
        if value not in ("", (), [], None):
            out[name] = value
    if build.params:
        out["params"] = dict(build.params)
    if build.reports is not None:
        out["reports"] = {"kind": build.reports.kind, "key": build.reports.key,
                          "value": build.reports.value}
    return out
