"""Read a profile: TOML syntax by tomllib, then every section checked against the schema.

Any problem becomes one BadInput line, `FILE:LINE: FIELD: what was wrong; what was expected`;
nothing else escapes, whatever the bytes (tests/unit/profile/test_profile_fuzz.py).
"""

from __future__ import annotations

import re
import tomllib
from collections.abc import Callable, Collection, Sequence
from pathlib import Path
from typing import Any

from abtui.core.builds import derived_release
from abtui.core.dimensions import DIRECTION
from abtui.core.errors import BadInput, Invalid, ProfileError
from abtui.core.model import (
    BUILD_KINDS,
    Knob,
    KnobKind,
    Pair,
    Plan,
    Profile,
    Role,
    TestOptions,
    Watch,
)
from abtui.core.text import visible as _safe  # a message stays on one line, whatever it quotes
from abtui.profile import fields as f
from abtui.profile.knobs import build_knob
from abtui.profile.locate import key_lines, line_of
from abtui.profile.schema import (
    LAB_FIELDS,
    LAB_NICS,
    PAIR_FIELDS,
    PLAN_FIELDS,
    REPORT_FIELDS,
    SECTIONS,
    TEST_FIELDS,
    WATCH_FIELDS,
    KeyPath,
    check_keys,
    dotted,
    profile_fields,
    read_table,
    sub_table,
    table_array,
)

_TOML_AT = re.compile(r"\s*\(at line (\d+), column (\d+)\)\s*$")
_TOML_END = re.compile(r"\s*\(at end of document\)\s*$")


def load_profile(path: str | Path) -> Profile:
    """Load and check the profile at `path`; raises BadInput (exit 2) with one line."""
    p = Path(path)
    try:
        data = p.read_bytes()
    except OSError as exc:
        raise BadInput(_safe(f"{p}: cannot read the profile: {exc.strerror or exc}")) from None
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as exc:
        line = data[: exc.start].count(b"\n") + 1
        raise BadInput(_safe(f"{p}:{line}: TOML syntax: byte 0x{data[exc.start]:02x} is not "
                             "UTF-8; expected UTF-8 text")) from None
    return parse_profile(text, p)


def parse_profile(text: str, path: str | Path = "<profile>") -> Profile:
    """Check a profile's text; `path` names it in errors and anchors relative paths."""
    where = str(path)
    try:
        raw = tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        msg = str(exc)
        m = _TOML_AT.search(msg)
        line = int(m.group(1)) if m else max(1, len(text.splitlines()))  # end of document
        msg = _TOML_AT.sub(f" (column {m.group(2)})", msg) if m else _TOML_END.sub("", msg)
        raise BadInput(_safe(f"{where}:{line}: TOML syntax: {msg}; expected valid TOML")) \
            from None
    except RecursionError:
        raise BadInput(_safe(f"{where}:1: TOML syntax: nested too deeply; expected a "
                             "profile")) from None
    named = path != "<profile>"
    try:
        profile = _build(raw, Path(path).parent if named else None,
                         Path(path).stem if named else "profile")
    except ProfileError as exc:
        try:
            line = line_of(key_lines(text), exc.path)
        except (RecursionError, ValueError, tomllib.TOMLDecodeError):
            line = 1
        raise BadInput(_safe(f"{where}:{line}: {dotted(exc.path)}: {exc.message}")) from None
    profile.source_path = where if named else None
    profile.source_text = text
    return profile


def _unique(names: list[str], key: str, section: str) -> None:
    seen: set[str] = set()
    for i, name in enumerate(names):
        if name in seen:
            raise ProfileError((section, i, key), f"{f.show(name)} is used twice; expected "
                               f"each {key} once")
        seen.add(name)


def _known_pairs(labels: list[str], chosen: tuple[str, ...], where: KeyPath) -> None:
    for label in chosen:
        if label not in labels:
            raise ProfileError(where, f"no pair is labelled {f.show(label)}; expected one of "
                               f"{', '.join(labels)}")


def _test_options(opts: dict[str, Any], where: KeyPath) -> None:
    if opts.get("reverse") and opts.get("bidir"):
        raise ProfileError((*where, "bidir"), "reverse and bidir are both on; expected one")


def _build(raw: dict[str, Any], base: Path | None, stem: str) -> Profile:
    check_keys(raw, SECTIONS, ())
    head = read_table(sub_table(raw, "profile", ()), profile_fields(base), ("profile",))
    test = read_table(sub_table(raw, "test", ()), TEST_FIELDS, ("test",))
    _test_options(test, ("test",))

    pairs_raw = table_array(raw, "pairs", ())
    if not pairs_raw:
        raise ProfileError(("pairs",), "missing; expected at least one [[pairs]] table")
    pairs = []
    for i, t in enumerate(pairs_raw):
        at: KeyPath = ("pairs", i)
        pair = read_table(t, PAIR_FIELDS, at, extra=("test",))
        overrides = read_table(sub_table(t, "test", at), TEST_FIELDS, (*at, "test"), fill=False)
        _test_options({**test, **overrides}, (*at, "test"))
        pairs.append(Pair(**pair, overrides=overrides))
    labels = [p.label for p in pairs]
    _unique(labels, "label", "pairs")

    knobs = [build_knob(t, ("knobs", i)) for i, t in enumerate(table_array(raw, "knobs", ()))]
    _unique([k.name for k in knobs], "name", "knobs")
    _unique([k.binding or f"#{i}" for i, k in enumerate(knobs)], "binding", "knobs")
    for i, k in enumerate(knobs):
        _known_pairs(labels, k.pairs, ("knobs", i, "pairs"))

    watches = []
    for i, t in enumerate(table_array(raw, "watches", ())):
        w = read_table(t, WATCH_FIELDS, ("watches", i))
        if (w["sysctl"] is None) == (w["command"] is None):
            raise ProfileError(("watches", i), "has both or neither of sysctl and command; "
                               "expected exactly one")
        _known_pairs(labels, w["pairs"], ("watches", i, "pairs"))
        watches.append(Watch(**{**w, "role": Role(w["role"])}))
    _unique([w.name for w in watches], "name", "watches")

    # layout: read by the report from the profile copy; checked here
    report = read_table(sub_table(raw, "report", ()), REPORT_FIELDS, ("report",))
    if "lab" in raw:  # read by abtui.lab.prepare from the profile copy; checked here
        lab_kernels(raw, labels)
        lab_nics(raw, labels)
        lab_builds(raw, knobs)
        lab_modules(raw, knobs, base)
    plan = _plan(read_table(sub_table(raw, "plan", ()), PLAN_FIELDS, ("plan",)),
                 [k.name for k in knobs])
    tunnels = _tunnels(head["tunnels"], knobs)
    if head["base_pair"] is not None:
        _known_pairs(labels, (head["base_pair"],), ("profile", "base_pair"))
    head.pop("version")
    return Profile(**{**head, "name": head["name"] or stem, "tunnels": tunnels}, pairs=pairs,
                   knobs=knobs, test=TestOptions(**test), watches=watches, plan=plan,
                   min_effect=report["min_effect"], layout=report["layout"])


def lab_kernels(raw: dict[str, Any], labels: list[str]) -> dict[str, str]:
    """The [lab] section: pair label -> kernel SPEC (`kernel` for every pair, `kernels` per
    label, a label's own winning)."""
    return _lab_per_pair(raw, labels, "kernel", lambda v: f.text(v, 1000))


def build_knob_naming(knobs: Sequence[Knob], values: Collection[str]) -> Knob | None:
    """The kernel or module knob `values` (a [lab] builds table's keys) are values of."""
    return next((k for k in knobs if k.kind in BUILD_KINDS and set(values) <= set(k.values)),
                None)


def lab_builds(raw: dict[str, Any], knobs: list[Knob]) -> dict[str, str]:
    """The [lab] section's `builds`: a build knob's value -> the lab's kernel SPEC that stands
    for it (`builds = { before = "linux-image-6.1.0-47-amd64", after = ... }`). Every value
    of one kernel or module knob, each a Debian kernel package the lab's VM hosts boot."""
    lab = sub_table(raw, "lab", ())
    table = sub_table(lab, "builds", ("lab",))
    if not table:
        return {}
    at: KeyPath = ("lab", "builds")
    knob = build_knob_naming(knobs, table)
    if knob is None:
        builds = [k.name for k in knobs if k.kind in BUILD_KINDS]
        raise ProfileError(at, f"names {', '.join(map(f.show, table))}; expected the values "
                           "of one kernel or module knob" + (
                               f" ({', '.join(builds)})" if builds else
                               " (the profile has none)"))
    missing = [v for v in knob.values if v not in table]
    if missing:
        raise ProfileError(at, f"has no build for {', '.join(map(f.show, missing))}; expected "
                           f"one for every value of knob {knob.name}")
    return {value: _lab_spec(spec, (*at, value)) for value, spec in table.items()}


def lab_modules(raw: dict[str, Any], knobs: list[Knob], base: Path | None
                ) -> dict[str, tuple[Path, ...]]:
    """The [lab] section's `modules`: a module knob's value -> the patches (in order, paths
    relative to the profile's folder) of the build the lab makes for it, out of tree from the
    kernel source of the [lab] kernel (`modules = { plain = ["patches/x.patch"], gro = [] }`;
    abtui.lab.modbuild). Every value of one module knob; the [lab] kernel is the one the
    modules are built for."""
    lab = sub_table(raw, "lab", ())
    table = sub_table(lab, "modules", ("lab",))
    if not table:
        return {}
    at: KeyPath = ("lab", "modules")
    knob = next((k for k in knobs if k.kind is KnobKind.MODULE and set(table) <= set(k.values)),
                None)
    if knob is None:
        modules = [k.name for k in knobs if k.kind is KnobKind.MODULE]
        raise ProfileError(at, f"names {', '.join(map(f.show, table))}; expected the values "
                           "of one module knob" + (f" ({', '.join(modules)})" if modules else
                                                  " (the profile has none)"))
    missing = [v for v in knob.values if v not in table]
    if missing:
        raise ProfileError(at, f"has no build for {', '.join(map(f.show, missing))}; expected "
                           f"one for every value of knob {knob.name}")
    head = read_table(lab, LAB_FIELDS, ("lab",), extra=("kernels", "nics", "builds", "modules"))
    if not head["kernel"] or not derived_release(head["kernel"]):
        raise ProfileError(("lab", "kernel"), "missing; [lab] modules are built for the VM "
                           "guests' kernel: expected kernel = \"linux-image-RELEASE\"")
    out: dict[str, tuple[Path, ...]] = {}
    for value, patches in table.items():
        where: KeyPath = (*at, value)
        if not isinstance(patches, list) or not all(isinstance(p, str) for p in patches):
            raise ProfileError(where, f"got {f.type_name(patches)}; expected a list of patch "
                               "files (relative to the profile's folder), [] for none")
        # resolved against the profile's folder; whether they exist is asked when the lab
        # builds (a profile saved elsewhere still loads)
        paths = [Path(name).expanduser() for name in patches]
        out[value] = tuple(p if p.is_absolute() or base is None else base / p for p in paths)
    return out


def _lab_spec(value: Any, at: KeyPath) -> str:
    """A Debian kernel package the lab boots (`linux-image-RELEASE`)."""
    try:
        text = f.text(value, 1000)
    except Invalid as exc:
        raise ProfileError(at, str(exc)) from None
    if not text.startswith("linux-image-") or not derived_release(text):
        raise ProfileError(at, f"{f.show(text)} is not a Debian kernel package; expected "
                           "linux-image-RELEASE (the lab's VM hosts boot them by kexec)")
    return text


def lab_nics(raw: dict[str, Any], labels: list[str]) -> dict[str, str]:
    """The [lab] section's data NIC models: pair label -> model (`nic` for every pair, `nics`
    per label, a label's own winning)."""
    return _lab_per_pair(raw, labels, "nic", f.one_of(LAB_NICS))


def lab_clock(raw: dict[str, Any]) -> str:
    """The [lab] section's clock for the VM guests, parsed (abtui.core.clock): "" the host's."""
    from abtui.core.clock import parse_clock

    lab = sub_table(raw, "lab", ())
    head = read_table(lab, LAB_FIELDS, ("lab",), extra=("kernels", "nics", "builds", "modules"))
    return parse_clock(head["clock"] or "", "[lab] clock")


def _lab_per_pair(raw: dict[str, Any], labels: list[str], key: str,
                  conv: Callable[[Any], str]) -> dict[str, str]:
    """[lab] `key` for every pair and `key`s per label -> pair label -> value."""
    lab = sub_table(raw, "lab", ())
    head = read_table(lab, LAB_FIELDS, ("lab",), extra=("kernels", "nics", "builds", "modules"))
    per_pair = sub_table(lab, f"{key}s", ("lab",))
    out = dict.fromkeys(labels, head[key]) if head[key] else {}
    for label, value in per_pair.items():
        _known_pairs(labels, (label,), ("lab", f"{key}s", label))
        try:
            out[label] = conv(value)
        except Invalid as exc:
            raise ProfileError(("lab", f"{key}s", label), str(exc)) from None
    return out


def _plan(plan: dict[str, Any], knob_names: list[str]) -> Plan:
    matrix = list(plan["matrix"])
    for name in matrix:
        if name not in [*knob_names, DIRECTION]:
            raise ProfileError(("plan", "matrix"), f"{f.show(name)} is not a knob; expected "
                               f"knob names or {f.show(DIRECTION)}")
    if DIRECTION in matrix and not plan["directions"]:
        raise ProfileError(("plan", "directions"), "missing; the matrix has \"direction\", "
                           'expected directions = ["tx", "rx"]')
    if plan["directions"] and DIRECTION not in matrix:
        matrix.append(DIRECTION)
    return Plan(**{**plan, "matrix": tuple(matrix)})


def _tunnels(listed: tuple[str, ...] | None, knobs: list[Any]) -> tuple[str, ...]:
    """The tunnel types in use: `[profile] tunnels`, else those the tunnel knobs name."""
    used: list[str] = []
    for i, k in enumerate(knobs):
        if k.kind is not KnobKind.TUNNEL:
            continue
        for v in k.values:
            if listed is not None and v not in listed:
                raise ProfileError(("knobs", i, "values"), f"{f.show(v)} is not in [profile] "
                                   f"tunnels; expected one of {', '.join(listed)}")
            if v not in used:
                used.append(v)
    return listed or tuple(used) or ("none",)


def check_profile(path: str | Path) -> tuple[int, str]:
    """For `abtui check`: (0, a summary line) when the profile loads, else (2, its error line).

    Callers that prefer the CLI's own path just call load_profile: BadInput is an AbtuiError
    with exit code 2."""
    try:
        prof = load_profile(path)
    except BadInput as exc:
        return exc.exit_code, str(exc)
    return 0, (f"{path}: ok: profile {f.show(prof.name)}, {len(prof.pairs)} pairs, "
               f"{len(prof.knobs)} knobs, {len(prof.watches)} watches")
