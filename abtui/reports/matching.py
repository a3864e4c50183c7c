"""How `abtui compare` matches two sessions' configurations.

`config` (the default): by the whole configuration, every knob's value as the hosts had it.
`knobs`: by the knobs both sessions have, a value that was the host's own (what the pair's
hosts had before abtui changed anything, read on connect) and that the profile does not list
counting as `host's own` whatever it was. So two sessions whose hosts started with a different
tcp_rmem (a kernel update, another machine) still compare the configurations they set alike.
"""

from __future__ import annotations

from typing import Any

from abtui.core.configuration import config_id
from abtui.sessions.session import Session

MODES = ("config", "knobs")
OWN = "host's own"


def knobs_of(session: Session) -> set[str]:
    """Every knob any configuration of the session has a value for."""
    return {k for pair in session.pairs for ph in session.phases_of(pair) for k in ph.config}


def keys(session: Session, pair: str, shared: set[str]) -> dict[str, str]:
    """Each configuration identity of one pair -> what it is matched by in `knobs` mode."""
    from abtui.reports.naming import knob_values, text_of
    from abtui.reports.procedure.sections import layout_of

    doc = layout_of(session)[1]
    own = session.initial_configs.get(pair) or session.baseline() or {}
    out: dict[str, str] = {}
    for ph in session.phases_of(pair):
        key = config_id({k: OWN if _own(v, own.get(k), knob_values(doc, k)) else text_of(v)
                         for k, v in ph.config.items() if k in shared})
        out.setdefault(config_id(ph.config), key)
    return out


def _own(value: Any, initial: Any, listed: list[str]) -> bool:
    return initial is not None and str(value) == str(initial) and str(value) not in listed


def rekeyed(session: Session, table: dict[str, dict[str, Any]], shared: set[str]
            ) -> dict[str, dict[str, Any]]:
    """A {config identity: {pair: cell}} table keyed by what `knobs` mode matches; a key two
    configurations of one pair would share stays with the first (the other keeps its
    identity)."""
    by_pair = {pair: keys(session, pair, shared) for pair in session.pairs}
    out: dict[str, dict[str, Any]] = {}
    for config, row in table.items():
        for pair, cell in row.items():
            key = by_pair.get(pair, {}).get(config, config)
            out.setdefault(key if pair not in out.get(key, {}) else config, {})[pair] = cell
    return out
