"""abtui reaches no asyncssh private: no attribute of asyncssh's own that starts with an
underscore (a method or an instance attribute of its modules), and none of the undocumented
methods its process classes use between themselves (the writer hand-off a stream once used,
abtui.remote.streams now reads its channel through the public SSHClientSession API).
The list of asyncssh privates abtui uses is empty; the check finds one where it is."""

from __future__ import annotations

import re
from pathlib import Path

import asyncssh

ABTUI = Path(__file__).resolve().parents[3] / "abtui"
ASYNCSSH = Path(asyncssh.__file__).parent
# undocumented, without an underscore: asyncssh's redirects between a process and its streams
UNDOCUMENTED = frozenset({"set_writer", "clear_writer", "feed_recv_buf", "get_writer",
                          "set_reader", "clear_reader"})


def _privates_of_asyncssh() -> set[str]:
    """Every `_name` asyncssh defines: its methods, its instance attributes."""
    names: set[str] = set()
    for path in ASYNCSSH.rglob("*.py"):
        text = path.read_text(errors="replace")
        names.update(re.findall(r"\bdef (_[a-z]\w*)", text))
        names.update(re.findall(r"\bself\.(_[a-z]\w*)", text))
    return names


_DEFINED = re.compile(r"\bdef (\w+)|\.(\w+)\s*(?::[^=\n]*)?=(?!=)|^\s*(\w+)\s*(?::[^=\n]*)?=(?!=)",
                      re.MULTILINE)
_UNPACKED = re.compile(r"^\s*((?:[\w.]+\s*,\s*)+[\w.]+)\s*=(?!=)", re.MULTILINE)
_READ = re.compile(r"\.(\w+)\b(?!\s*(?::[^=\n]*)?=(?!=))")


def _own(text: str) -> set[str]:
    """The names abtui defines itself (functions, attributes and names it assigns)."""
    names = {next(g for g in m.groups() if g) for m in _DEFINED.finditer(text)}
    for m in _UNPACKED.finditer(text):  # a, self.b = ...
        names.update(t.strip().rsplit(".", 1)[-1] for t in m.group(1).split(","))
    return names


def asyncssh_privates_used(sources: dict[str, str]) -> list[str]:
    """`file: name` for each asyncssh private or undocumented method the sources read
    (an attribute of that name that abtui does not define itself)."""
    own: set[str] = set().union(*(_own(text) for text in sources.values()))
    private = (_privates_of_asyncssh() - own) | UNDOCUMENTED
    return sorted({f"{name}: {attr}" for name, text in sources.items()
                   for attr in _READ.findall(text) if attr in private})


def test_abtui_uses_no_asyncssh_private() -> None:
    sources = {str(p.relative_to(ABTUI)): p.read_text() for p in ABTUI.rglob("*.py")}
    assert asyncssh_privates_used(sources) == []


def test_the_check_finds_a_private_where_one_is_used() -> None:
    """The check above can fail: the old hand-off, a keepalive reset, an attribute."""
    used = asyncssh_privates_used({
        "a.py": "def f(proc, w):\n    proc.set_writer(w, True, None)\n",
        "b.py": "def g(conn):\n    conn._reset_keepalive_timer()\n"
                "    return conn._transport\n",
        "c.py": "class C:\n    def _mine(self):\n        self._chan = 1\n"
                "        return self._chan\n",
    })
    assert used == ["a.py: set_writer", "b.py: _reset_keepalive_timer", "b.py: _transport"]
