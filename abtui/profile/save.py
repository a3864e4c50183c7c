"""Save the live setup as a profile, editing an existing file in place to keep its comments.

tomlkit keeps comments and layout; only values that changed are rewritten, pairs, knobs and
watches are matched by label/name, and the result must load before it replaces the file.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from enum import Enum
from pathlib import Path
from typing import Any

import tomlkit
from tomlkit.items import AoT, Comment, Whitespace

from abtui.core.errors import BadInput, Invalid
from abtui.core.files import write_atomic
from abtui.core.model import Knob, KnobKind, Profile
from abtui.profile import fields as f
from abtui.profile.builds import build_table
from abtui.profile.load import _tunnels, parse_profile
from abtui.profile.schema import (
    KNOB_FIELDS,
    PAIR_FIELDS,
    PLAN_FIELDS,
    REPORT_FIELDS,
    TEST_FIELDS,
    WATCH_FIELDS,
    Field,
    profile_fields,
)

_HEADER = "abtui profile (format: docs/profiles.md)"


def _plain(value: Any) -> Any:
    """A model value as TOML writes it."""
    if isinstance(value, Enum):
        return value.value
    if isinstance(value, tuple | list):
        return [_plain(v) for v in value]
    if isinstance(value, dict):
        return {k: _plain(v) for k, v in value.items()}
    return value


def _unwrap(item: Any) -> Any:
    """A tomlkit item as plain Python (dicts, lists, str, int, ...)."""
    return item.unwrap() if hasattr(item, "unwrap") else item


def _same(fld: Field, old: Any, new: Any) -> bool:
    """Whether the old TOML value loads as the new model value (then it is left as written)."""
    try:
        return bool(fld.conv(old) == new)
    except (Invalid, TypeError, ValueError):
        return False


def _merge(table: Any, fields: tuple[Field, ...], values: Mapping[str, Any]) -> None:
    """Write into `table` the values that differ from what it holds; drop keys now default."""
    for fld in fields:
        if fld.name not in values:
            continue
        new = values[fld.name]
        if fld.key in table:
            if _same(fld, _unwrap(table[fld.key]), new):
                continue
            if new is None:
                del table[fld.key]
                continue
        elif new is None or new == fld.default:
            continue
        table[fld.key] = _plain(new)


def _merge_section(doc: Any, key: str, fields: tuple[Field, ...],
                   values: Mapping[str, Any]) -> None:
    """Merge into [key]; a section that would be empty is not added."""
    if key in doc:
        _merge(doc[key], fields, values)
        return
    table = tomlkit.table()
    _merge(table, fields, values)
    if len(table):
        table.add(tomlkit.nl())  # a blank line before whatever follows
        doc[key] = table


def _detach_trailing(table: Any) -> list[Any]:
    """Remove and return the comments and blank lines that end a table's body."""
    body = table.value.body
    n = len(body)
    while n and body[n - 1][0] is None and isinstance(body[n - 1][1], Comment | Whitespace):
        n -= 1
    tail = [item for _, item in body[n:]]
    del body[n:]
    return tail


def _reattach(table: Any, items: list[Any]) -> None:
    for item in items:
        table.value.body.append((None, item))


def _merge_array(doc: Any, key: str, ident: str, items: list[Any],
                 write: Any) -> None:
    """Match [[key]] tables by `ident`, update them, append new ones, remove the gone."""
    if not items and key not in doc:
        return
    if key not in doc or not isinstance(doc[key], AoT):
        doc[key] = tomlkit.aot()  # absent, or written inline: rewritten as tables
    aot = doc[key]
    # comments after a table are about what follows it: keep them where they are
    tail = _detach_trailing(aot[-1]) if len(aot) else []
    wanted = {getattr(it, ident): it for it in items}
    for i in reversed(range(len(aot))):
        if aot[i].get(ident) not in wanted:
            moved = _detach_trailing(aot[i])
            del aot[i]
            if i > 0:
                _reattach(aot[i - 1], moved)
    have = {t.get(ident): t for t in aot}
    for it in items:
        name = getattr(it, ident)
        if name in have:
            write(have[name], it)
        else:
            t = tomlkit.table()
            write(t, it)
            aot.append(t)
    if len(aot):
        if not tail and getattr(items[-1], ident) not in have:
            tail = [tomlkit.ws("\n")]  # a blank line before whatever follows the new table
        _reattach(aot[-1], tail)
    elif tail:
        doc.add(tomlkit.nl())  # no table left to carry the comments: keep the spacing


def _write_knob(table: Any, knob: Knob) -> None:
    _merge(table, KNOB_FIELDS, dataclasses.asdict(knob))
    wanted: dict[str, dict[str, Any]] = {}
    for os_name in sorted({*knob.os_kinds, *knob.os_keys, *knob.os_values}):
        var: dict[str, Any] = {}
        if os_name in knob.os_kinds:
            var["kind"] = KnobKind(knob.os_kinds[os_name]).value
        if os_name in knob.os_keys:
            var["key"] = knob.os_keys[os_name]
        if os_name in knob.os_values:
            var["values"] = dict(knob.os_values[os_name])
        wanted[os_name] = var
    if knob.builds and "build" not in table and "builds" not in table:  # a new file's knob
        table["builds"] = {value: build_table(b) for value, b in knob.builds.items()}
    old_plain = _unwrap(table.get("os"))
    if old_plain != wanted and (old_plain or wanted):
        if wanted:
            table["os"] = wanted
        else:
            del table["os"]


def _write_profile(doc: Any, profile: Profile, base: Path, stem: str) -> None:
    written = doc.get("profile", {})
    head = {
        "name": profile.name,
        "description": profile.description,
        "base_pair": profile.base_pair,
        "tunnels": profile.tunnels,
        "ssh_config": profile.ssh_config,
        "known_hosts": profile.known_hosts,
        "accept_new_host_keys": profile.accept_new_host_keys,
        "sudo": profile.sudo,
    }
    # what the loader derives when the key is absent stays absent
    if "name" not in written and profile.name == stem:
        head["name"] = None
    if "tunnels" not in written and profile.tunnels == _tunnels(None, profile.knobs):
        head["tunnels"] = None
    _merge_section(doc, "profile", profile_fields(base), head)
    _merge_section(doc, "test", TEST_FIELDS, dataclasses.asdict(profile.test))

    def write_pair(table: Any, pair: Any) -> None:
        _merge(table, PAIR_FIELDS, dataclasses.asdict(pair))
        old_plain = _unwrap(table.get("test")) or {}
        over = dict(pair.overrides)
        if any(not _same(fld, old_plain.get(fld.key), over[fld.key])
               for fld in TEST_FIELDS if fld.key in over) or set(old_plain) != set(over):
            if over:
                table["test"] = _plain(over)
            elif "test" in table:
                del table["test"]

    _merge_array(doc, "pairs", "label", profile.pairs, write_pair)
    _merge_array(doc, "knobs", "name", profile.knobs, _write_knob)
    _merge_array(doc, "watches", "name", profile.watches, lambda t, w: _merge(
        t, WATCH_FIELDS, dataclasses.asdict(w)))
    plan = dataclasses.asdict(profile.plan)
    if plan["directions"] and plan["matrix"][-1:] == ("direction",) and \
            "direction" not in doc.get("plan", {}).get("matrix", []):
        plan["matrix"] = plan["matrix"][:-1]  # the loader appends it when it is not written
    _merge_section(doc, "plan", PLAN_FIELDS, plan)
    _merge_section(doc, "report", REPORT_FIELDS,
                   {"layout": profile.layout, "min_effect": profile.min_effect})
    _carry_unmodelled(doc, profile.source_text)


# what the model does not hold but a profile's own file does: the report's reference pairs and
# the [lab] kernels/NICs (read from the profile copy); a new file must not lose them
_UNMODELLED = {"report": ("reference",), "lab": None}


def _carry_unmodelled(doc: Any, source_text: str | None) -> None:
    """Copy into `doc` the keys of `_UNMODELLED` (None: the whole section) that the profile's
    own text has and `doc` lacks, so saving to a new file keeps them."""
    if not source_text:
        return
    try:
        source = tomlkit.parse(source_text)
    except tomlkit.exceptions.TOMLKitError:
        return  # the profile loaded from it, so this is not expected; nothing to carry
    for section, keys in _UNMODELLED.items():
        src = source.get(section)
        if src is None:
            continue
        if section not in doc:
            doc[section] = tomlkit.table()
        for key in src if keys is None else keys:
            if key in src and key not in doc[section]:
                doc[section][key] = src[key]


def save_profile(profile: Profile, path: str | Path, *,
                 knob_values: Mapping[str, str] | None = None) -> Path:
    """Write `profile` to `path`; `knob_values` (the live settings) become knobs' `initial`.

    An existing file is edited in place (comments kept); the text must load before it
    atomically replaces the file. Raises BadInput when a live value is not a knob's value or
    the existing file is not a readable profile."""
    p = Path(path)
    knobs = list(profile.knobs)
    for name, value in (knob_values or {}).items():
        i = next((i for i, k in enumerate(knobs) if k.name == name), None)
        if i is None or value not in knobs[i].values:
            raise BadInput(f"{p}: knob {f.show(name)}: value {f.show(value)} is not one of its "
                           "values; expected a value the profile lists")
        knobs[i] = dataclasses.replace(knobs[i], initial=value)
    profile = dataclasses.replace(profile, knobs=knobs)
    if p.exists():
        try:
            doc = tomlkit.parse(p.read_text(encoding="utf-8"))
        except (OSError, UnicodeDecodeError, tomlkit.exceptions.TOMLKitError) as exc:
            raise BadInput(f"{p}: cannot edit the existing profile ({exc}); expected a TOML "
                           "file or a new path") from None
    else:
        doc = tomlkit.document()
        doc.add(tomlkit.comment(_HEADER))
    _write_profile(doc, profile, p.parent, p.stem)
    text = tomlkit.dumps(doc)
    parse_profile(text, p)  # never write a profile that would not load
    p.parent.mkdir(parents=True, exist_ok=True)
    write_atomic(p, text)
    return p


@dataclasses.dataclass(frozen=True, slots=True)
class SetupChange:
    """What saving the live setup does to one knob: `value` becomes its `initial`
    (`before`: what the profile had), or, with `why`, the knob is left as the file has it."""

    knob: str
    value: str
    before: str | None = None
    why: str = ""

    def line(self) -> str:
        if self.why:
            return f"{self.knob}: left as it is ({self.why})"
        was = f" (was {self.before})" if self.before is not None else " (was not set)"
        return f"{self.knob} = {self.value}{was}"


def setup_changes(profile: Profile,
                  live: Mapping[str, Mapping[str, str]]) -> list[SetupChange]:
    """Each of the profile's knobs the live setup (pair -> knob -> value, as the hosts
    reported and the flips set) holds one value of on every pair: written when it is one of
    the knob's values and not already its `initial`; said when the pairs differ or the value
    is a host's own (a profile can only name listed values)."""
    out: list[SetupChange] = []
    for knob in profile.knobs:
        seen = {pair: cfg[knob.name] for pair, cfg in live.items() if knob.name in cfg}
        values = set(seen.values())
        if not values:
            continue
        if len(values) > 1:
            each = ", ".join(f"{pair} {value}" for pair, value in seen.items())
            out.append(SetupChange(knob.name, "", knob.initial,
                                   f"the pairs differ: {each}; a profile holds one value"))
            continue
        value = values.pop()
        if value == knob.initial:
            continue
        if value not in knob.values:
            out.append(SetupChange(knob.name, value, knob.initial,
                                   "the hosts' own value, not one the profile lists"))
            continue
        out.append(SetupChange(knob.name, value, knob.initial))
    return out


def save_setup(path: str | Path,
               live: Mapping[str, Mapping[str, str]]) -> tuple[Path, list[SetupChange]]:
    """The live setup written into the profile at `path` as its knobs' `initial` values.

    The file is read and checked again first (it may have been edited since the console
    loaded it: what it now says is kept, only the knobs' values change), edited in place with
    its comments, checked once more and atomically replaced (save_profile). BadInput, naming
    the file, when it no longer loads."""
    from abtui.profile.load import load_profile

    p = Path(path)
    current = load_profile(p)
    changes = setup_changes(current, live)
    values = {c.knob: c.value for c in changes if not c.why}
    if values:
        save_profile(current, p, knob_values=values)
    return p, changes
