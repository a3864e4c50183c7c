"""The undo journal's records, typed: one frozen class per kind of line (`op`), its fields the
line's keys in the order written, as `core/events.py`'s payloads are a session journal's.

The on-disk format is the one abtui has always written (one JSON object a line, `"op"` first):
a journal an earlier abtui left is read by this one, and this one's by an earlier one. A field
with LEFT_OUT metadata is left out of the line while None; any key a line carries that its
class does not name is kept in `extra` (a newer abtui's), so a line read and written again is
the same line.

Each class says what a line must hold to be used: the types of its fields (from their
annotations: a field without a default is required) and `problem`, a check of its values
beyond their types. Adding a kind is one class here, registered with `@_record("op")`, and
an `on_<op>` method of `abtui.hosts.undo.Pending`.
"""

from __future__ import annotations

import types
import typing
from collections.abc import Callable, Mapping
from dataclasses import MISSING, dataclass, field, fields
from types import MappingProxyType
from typing import Any, ClassVar, Protocol, Self, TypeVar

from abtui.core.errors import AbtuiError
from abtui.core.model import KnobKind
from abtui.core.pids import pgid_problem
from abtui.core.text import visible

# A field's metadata when the line leaves it out while it is None.
LEFT_OUT = {"left_out": True}
NO_EXTRA: Mapping[str, Any] = MappingProxyType({})
# The types a field's value may have in a line: JSON's, as json.loads gives them.
Types = tuple[type, ...]


@dataclass(frozen=True, slots=True)
class FieldSpec:
    """One field of a kind of line: its key, the JSON types it may hold, whether a line
    must have it, and whether it is left out while None."""

    name: str
    types: Types
    required: bool
    left_out: bool


@dataclass(frozen=True, slots=True)
class UndoRecord:
    """One line of the undo journal."""

    OP: ClassVar[str] = ""
    # set by _record: the fields in the order written
    SPEC: ClassVar[tuple[FieldSpec, ...]] = ()

    extra: Mapping[str, Any] = field(default_factory=lambda: NO_EXTRA, kw_only=True,
                                     compare=False)

    def to_data(self) -> dict[str, Any]:
        """The line's object: `op` first, then the fields in order, then `extra`."""
        out: dict[str, Any] = {"op": self.OP}
        for spec in self.SPEC:
            value = getattr(self, spec.name)
            if value is not None or not spec.left_out:
                out[spec.name] = value
        out.update(self.extra)
        return out

    @classmethod
    def from_data(cls, data: Mapping[str, Any]) -> Self:
        """The record of a line `problem_of` passed (a missing optional key takes its
        default; an unknown one goes to `extra`)."""
        known = {s.name for s in cls.SPEC}
        extra = {k: v for k, v in data.items() if k not in known and k != "op"}
        return cls(**{k: v for k, v in data.items() if k in known},
                   extra=MappingProxyType(extra) if extra else NO_EXTRA)

    def problem(self) -> str:
        """Why this record cannot be used beyond its fields' types ("" when it can)."""
        return ""


R = TypeVar("R", bound=type[UndoRecord])
RECORDS: dict[str, type[UndoRecord]] = {}


def _record(op: str) -> Callable[[R], R]:
    def register(cls: R) -> R:
        hints = typing.get_type_hints(cls)
        cls.OP = op
        cls.SPEC = tuple(
            FieldSpec(f.name, _json_types(hints[f.name]),
                      f.default is MISSING and f.default_factory is MISSING,
                      bool(f.metadata.get("left_out")))
            for f in fields(cls) if f.name != "extra")
        RECORDS[op] = cls
        return cls
    return register


def _json_types(hint: object) -> Types:
    """The JSON values a field's annotation admits: a float field takes a whole number too."""
    if isinstance(hint, types.UnionType) or typing.get_origin(hint) is typing.Union:
        return tuple(t for arg in typing.get_args(hint) for t in _json_types(arg))
    if hint is type(None):
        return (type(None),)
    origin = typing.get_origin(hint) or hint
    if origin is float:
        return (int, float)
    if isinstance(origin, type) and issubclass(origin, Mapping):
        return (dict,)
    assert isinstance(origin, type), hint
    return (origin,)


def problem_of(line: object) -> str:
    """Why a journal line cannot be used ("" when it can): not an object, an unknown kind,
    a field missing or of the wrong type, a value its class's check refuses."""
    if not isinstance(line, dict):
        return "not an entry (a JSON object): skipped"
    op = line.get("op")
    cls = RECORDS.get(op) if isinstance(op, str) else None
    if cls is None:
        return (f"unknown kind of entry '{visible(str(op))}' (written by a newer abtui?): "
                "skipped")
    for spec in cls.SPEC:
        if spec.name not in line:
            if spec.required:
                return f"{op} entry without {spec.name!r}: skipped"
            continue
        value = line[spec.name]
        if not isinstance(value, spec.types) or (isinstance(value, bool)
                                                 and bool not in spec.types):
            wanted = " or ".join(_type_name(t) for t in spec.types)
            return (f"{op} entry's {spec.name!r} is {type(value).__name__} "
                    f"{visible(repr(value))[:40]}, not {wanted}: skipped")
    why = cls.from_data(line).problem()
    return f"{op} entry: {why}: skipped" if why else ""


def _type_name(t: type) -> str:
    return {str: "text", int: "a whole number", float: "a number", bool: "true/false",
            type(None): "null", dict: "an object"}.get(t, t.__name__)


def _known_kind(kind: str) -> str:
    return "" if kind in {str(k) for k in KnobKind} else \
        f"unknown kind of setting '{visible(kind)}'"


@_record("start")
@dataclass(frozen=True, slots=True)
class Start(UndoRecord):
    """A controller process began this journal (its first line)."""

    pid: int
    t: float | None = None


@_record("host")
@dataclass(frozen=True, slots=True)
class HostRecord(UndoRecord):
    """How to reach a host again (written once per host, before anything is changed)."""

    alias: str
    ssh_config: str | None = None
    known_hosts: str | None = None
    sudo: bool = False


class SettingLine(Protocol):
    """A line about one setting of one host: a knob's key (and device) of a kind."""

    @property
    def host(self) -> str: ...
    @property
    def kind(self) -> str: ...
    @property
    def key(self) -> str: ...
    @property
    def device(self) -> str | None: ...


def setting(r: SettingLine) -> tuple[str, str, str, str | None]:
    """The setting a line is about, as `Pending` keys it."""
    return (r.host, r.kind, r.key, r.device)


@_record("original")
@dataclass(frozen=True, slots=True)
class Original(UndoRecord):
    """A setting's value before abtui first changes it."""

    host: str
    kind: str
    key: str
    device: str | None = None
    value: str = field(kw_only=True)
    knob: str = field(default="", kw_only=True)

    def problem(self) -> str:
        return _known_kind(self.kind)


@_record("wrote")
@dataclass(frozen=True, slots=True)
class Wrote(UndoRecord):
    """A value abtui is about to write to a setting (once per value)."""

    host: str
    kind: str
    key: str
    device: str | None = None
    value: str = field(kw_only=True)

    def problem(self) -> str:
        return _known_kind(self.kind)


@_record("foreign")
@dataclass(frozen=True, slots=True)
class Foreign(UndoRecord):
    """A setting abtui set, found changed by someone else to `value`: left as found."""

    host: str
    kind: str
    key: str
    device: str | None = None
    value: str = field(kw_only=True)

    def problem(self) -> str:
        return _known_kind(self.kind)


@_record("restored")
@dataclass(frozen=True, slots=True)
class Restored(UndoRecord):
    """Set back; or (`left`: the value found) left as someone else set it."""

    host: str
    kind: str
    key: str
    device: str | None = None
    left: str | None = field(default=None, kw_only=True, metadata=LEFT_OUT)


@_record("unchanged")
@dataclass(frozen=True, slots=True)
class Unchanged(UndoRecord):
    """A recorded setting was never changed after all (its write was refused)."""

    host: str
    kind: str
    key: str
    device: str | None = None


@_record("tunnel")
@dataclass(frozen=True, slots=True, kw_only=True)
class TunnelUp(UndoRecord):
    """A tunnel end brought up on `host` (its End's record, no key material), and the pair
    it serves."""

    host: str
    type: str
    ifname: str
    local: str | None = None
    remote: str | None = None
    spi_out: int | None = None
    spi_in: int | None = None
    os: str | None = None  # None: a journal of abtui before FreeBSD tunnels, a Linux end
    pair: str | None = None

    def end(self) -> dict[str, Any]:
        """The end as its OS's tunnel commands read it (`down`, `present`)."""
        out = self.to_data()
        del out["op"], out["host"]
        return out

    def problem(self) -> str:
        from abtui.remote.os.pick import tunnels_of

        end = self.end()
        try:
            tunnels_of(end).down(end)
        except (KeyError, TypeError, ValueError, AbtuiError) as exc:
            return f"a tunnel this abtui cannot remove ({visible(str(exc))[:60]})"
        return ""


@_record("tunnel_down")
@dataclass(frozen=True, slots=True)
class TunnelDown(UndoRecord):
    """That tunnel end is removed."""

    host: str
    ifname: str


@_record("pgid")
@dataclass(frozen=True, slots=True)
class GroupStarted(UndoRecord):
    """A remote process group abtui started, and when (the controller's clock)."""

    host: str
    pgid: int
    what: str = ""
    t: float | None = None

    def problem(self) -> str:
        return pgid_problem(self.pgid)


@_record("pgid_gone")
@dataclass(frozen=True, slots=True)
class GroupGone(UndoRecord):
    """That process group has ended (or was ended)."""

    host: str
    pgid: int


@_record("build")
@dataclass(frozen=True, slots=True, kw_only=True)
class BuildSaved(UndoRecord):
    """The build `host` ran before abtui first switched `knob` there, and how to come back
    to it (abtui.hosts.builds.record: its kind, key, value, device, build and interface)."""

    host: str
    knob: str
    kind: str
    key: str
    value: str
    device: str | None = None
    build: dict[str, Any]
    iface: dict[str, Any] | None = None

    def origin(self) -> dict[str, Any]:
        """The first build as abtui.hosts.builds.origin_of reads it."""
        return self.to_data()


@_record("build_restored")
@dataclass(frozen=True, slots=True)
class BuildRestored(UndoRecord):
    """`host` is back on that build."""

    host: str
    knob: str


@_record("forget")
@dataclass(frozen=True, slots=True)
class Forget(UndoRecord):
    """Every entry of `host` dropped, nothing set back (`abtui recover --forget`)."""

    host: str
