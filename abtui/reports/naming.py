"""A table's configurations as the report prints them: in the profile's order (its matrix's
values as it lists them, not the order the shuffled runs took) and named as the profile names
them, each row shown apart from the knobs every row shares. The report, its CPU section and
compare name rows through these, so a configuration reads the same everywhere."""

from __future__ import annotations

import tomllib
from typing import Any

from abtui.reports import stats
from abtui.reports.procedure.order import config_order, shown_config
from abtui.sessions.session import Session


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
