"""How reports order and name configurations: in the profile's order (its knobs' values as it
lists them, not the order the shuffled runs took; pairs in the profile's order with the base
first), named as the profile names them (values where the lab ran a stand-in), each row shown
apart from the knobs every row shares, and which configurations may be compared. The report,
its CPU section, compare and every procedure table name rows through these, so a
configuration reads the same everywhere."""

from __future__ import annotations

import tomllib
from collections.abc import Callable, Sequence
from typing import Any

from abtui.core.configuration import config_id
from abtui.core.dimensions import DIRECTION, DIRECTIONS
from abtui.core.model import KnobKind
from abtui.reports import stats
from abtui.sessions.session import Session


def knob_values(doc: dict[str, Any], knob: str) -> list[str]:
    """A knob's values as the profile lists them (`direction`: the plan's directions)."""
    if knob == DIRECTION:
        return [str(d) for d in (doc.get("plan") or {}).get("directions") or DIRECTIONS]
    for k in doc.get("knobs") or []:
        if isinstance(k, dict) and k.get("name") == knob:
            return [text_of(v) for v in k.get("values") or []]
    return []


def text_of(v: Any) -> str:
    """A value as the profile's TOML spells it (`true`, not Python's `True`)."""
    return ("true" if v else "false") if isinstance(v, bool) else str(v)


def config_order(doc: dict[str, Any], session: Session | None = None
                 ) -> Callable[[dict[str, Any]], tuple[Any, ...]]:
    """Sort key for configurations in the profile's order: the plan's matrix knobs first,
    each by the position of its value in the profile's list (a lab's stand-in where the
    original stood; values it does not list after, by name), then the other knobs alike."""
    matrix = [str(m) for m in (doc.get("plan") or {}).get("matrix") or []]
    others = [str(k.get("name")) for k in doc.get("knobs") or [] if isinstance(k, dict)]
    names = list(dict.fromkeys([*matrix, *others]))
    return value_order(doc, names, session)


def value_order(doc: dict[str, Any], names: Sequence[str], session: Session | None
                ) -> Callable[[dict[str, Any]], tuple[Any, ...]]:
    """Sort key for configurations by their values of `names`, in that order (config_order);
    a value the profile does not list comes first when it is the hosts' own (the session's
    baseline, read on connect: the base a console session flips away from), else after the
    listed ones, by name."""
    orders = {n: knob_values(doc, n) for n in names}
    own = (session.baseline() if session is not None else None) or {}

    def key(config: dict[str, Any]) -> tuple[Any, ...]:
        out: list[Any] = []
        for n in names:
            raw = text_of(config.get(n, ""))
            v = _original(session, n, raw) if session is not None else raw
            values = orders[n]
            out.append((values.index(v), "") if v in values else
                       (-1, "") if n in own and text_of(own[n]) == raw else (len(values), v))
        return tuple(out)

    return key


def _original(session: Session, knob: str, value: str) -> str:
    """The profile's value the lab ran `value` for (the value itself when none)."""
    for t in session.translations:
        if t.get("subject") == f"knob {knob}" and t.get("lab") == value:
            return str(t.get("original"))
    return value


def shown_config(session: Session, config: dict[str, Any]) -> str:
    """A configuration as tables name it, each value as the profile names it (`tunnel=ipsec
    (lab: vxlan)`); the session's own label otherwise, and for a configuration of no knob
    (a pair none of the profile's knobs applies to) `(defaults)`, never an empty cell."""
    if not config or not any(str(t.get("subject", "")).startswith("knob ")
                             for t in session.translations):
        return config_id(config)
    return ", ".join(f"{k}={shown_value(session, k, text_of(v))}"
                     for k, v in sorted(config.items()))


def ordered(found: Sequence[tuple[str, ...]], doc: dict[str, Any], keys: Sequence[str],
             session: Session) -> list[tuple[str, ...]]:
    """Value tuples in the profile's order (values it does not list after, by name)."""
    key = value_order(doc, keys, session)
    return sorted(dict.fromkeys(found), key=lambda t: key(dict(zip(keys, t, strict=True))))


def base_pair(session: Session, doc: dict[str, Any], base: str | None) -> str | None:
    wanted = base or (doc.get("profile") or {}).get("base_pair")
    return wanted if wanted in session.pairs else (session.pairs[0] if session.pairs else None)


def pairs_in_order(session: Session, doc: dict[str, Any], first: str | None) -> list[str]:
    """The session's pairs in the profile's order (`first` first), then any it does not name."""
    named = [str(p.get("label")) for p in doc.get("pairs") or [] if isinstance(p, dict)]
    order = [p for p in named if p in session.pairs]
    order += [p for p in session.pairs if p not in order]
    return [*([first] if first in order else []), *[p for p in order if p != first]]


def references(session: Session, doc: dict[str, Any], base: str | None) -> list[str]:
    """The session's pairs the profile's `[report] reference` names (never `base`)."""
    report = doc.get("report") or {}
    refs = report.get("reference") if isinstance(report, dict) else None
    refs = [refs] if isinstance(refs, str) else refs if isinstance(refs, list) else []
    return [r for r in refs if r in session.pairs and r != base]


def shown_value(session: Session, knob: str, value: str) -> str:
    """A value as the profile names it; `ipsec (lab: vxlan)` when the lab ran another."""
    for t in session.translations:
        if t.get("subject") == f"knob {knob}" and t.get("lab") == value:
            return f"{t.get('original')} (lab: {value})"
    return value


def kernel_group(session: Session, pair: str) -> str:
    """A pair as a kernel group: its label and its sender's kernel release when known."""
    host = session.hosts_of(pair).get("sender")
    release = session.facts.get(host or "", {}).get("kernel_release")
    return f"{pair} ({release})" if release else pair


def is_default(session: Session, pair: str, knob: str, value: str) -> bool:
    """`value` is the knob's value the pair's hosts had before abtui touched them."""
    return text_of(session.initial_configs.get(pair, {}).get(knob, None)) == value


def group_knobs(doc: dict[str, Any]) -> list[str]:
    """Knobs whose values are separate tests, never compared with each other: the direction
    and the tunnel type (a Δ between them says nothing about a change)."""
    tunnels = [str(k.get("name")) for k in doc.get("knobs") or []
               if isinstance(k, dict) and k.get("kind") == KnobKind.TUNNEL.value]
    return [DIRECTION, *tunnels]


def comparable(doc: dict[str, Any], a: dict[str, Any], b: dict[str, Any]) -> bool:
    """Two configurations may be compared: the same direction and tunnel type."""
    return all(text_of(a.get(k, "")) == text_of(b.get(k, "")) for k in group_knobs(doc))


def title(session: Session) -> str:
    """What a report or chart is called: the profile's name and description (`ix-enable-aim:
    ix(4) adaptive interrupt moderation ...`), not the session file's name (`--out aim`),
    which the report lists below it; the session's name only without a profile."""
    try:
        doc = tomllib.loads(session.profile_text) if session.profile_text else {}
    except tomllib.TOMLDecodeError:
        doc = {}
    head = doc.get("profile")
    head = head if isinstance(head, dict) else {}
    name = head.get("name") if isinstance(head.get("name"), str) else session.profile_name
    about = head.get("description") if isinstance(head.get("description"), str) else ""
    if not name:
        return session.name or "abtui session"
    return f"{name}: {about}" if about else str(name)


def ordered_cells(session: Session, doc: dict[str, Any]) -> dict[str, dict[str, stats.Cell]]:
    """stats.cells in the profile's order (its matrix's values as it lists them; the hosts'
    own value of a knob first where the profile does not list it; other values it does not
    list after, by name), not the order the (shuffled) runs or the console's flips took."""
    table = stats.cells(session)
    key = config_order(doc, session)
    return dict(sorted(table.items(), key=lambda kv: key(config_of(session, kv[1]))))


def labels(session: Session, table: dict[str, dict[str, stats.Cell]],
           short: bool = False, common: dict[str, Any] | None = None) -> dict[str, str]:
    """Each configuration of a table as printed: the profile's names for the lab's values.
    `short`: only the knobs that set the rows apart, as the console's table names them (the
    rest, `common_knobs`, said once above the tables); `common`: those knobs, when more
    than this table shares them (two sessions side by side)."""
    if common is None:
        common = common_knobs(session, table) if short else {}
    return {k: shown_apart(session, config_of(session, row), common) if row else k
            for k, row in table.items()}


def shown_apart(session: Session, config: dict[str, Any], common: dict[str, Any]) -> str:
    """A configuration named without the knobs it shares with `common` (said once above)."""
    return shown_config(session, {k: v for k, v in config.items()
                                  if k not in common or common[k] != v})


def common_knobs(session: Session, table: dict[str, dict[str, stats.Cell]]) -> dict[str, Any]:
    """The knobs with one value in every configuration of a table of two or more: a row that
    repeated them all would bury the one value that differs."""
    return shared_knobs([config_of(session, row) for row in table.values() if row])


def shared_knobs(configs: list[dict[str, Any]]) -> dict[str, Any]:
    """The knobs with one value in every one of two or more configurations."""
    if len(configs) < 2:
        return {}
    return {k: v for k, v in configs[0].items()
            if all(k in c and c[k] == v for c in configs[1:])}


def config_of(session: Session, row: dict[str, stats.Cell]) -> dict[str, Any]:
    """A table row's configuration {knob: value}, from its first cell's first phase."""
    for c in row.values():
        if c.phases:
            return session.phases[c.phases[0]].config
    return {}
