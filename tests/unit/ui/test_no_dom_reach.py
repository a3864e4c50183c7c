"""The console's rule (docs/architecture.md, ui/): the render wing owns its widgets, and the
flow helpers post typed messages (abtui.ui.flow.messages) the app handles with `@on`. Read from
the source: no widget is queried outside abtui/ui/render, no flow helper holds the app, pushes a
screen, notifies or exits, and every message the helpers post has a handler in the app."""

from __future__ import annotations

import ast
from pathlib import Path

import abtui.ui

UI = Path(abtui.ui.__file__).parent
QUERIES = {"query", "query_one", "query_exactly_one", "query_children", "query_ancestor"}
# what only the app does, on a message: show a screen, notify, exit (and a thread's way back)
APP_ONLY = {"push_screen", "switch_screen", "pop_screen", "install_screen", "notify", "exit",
            "call_from_thread", "action_quit"}


def _calls(tree: ast.AST, names: set[str]) -> list[tuple[int, str]]:
    """Each call of a method named in `names` (`x.query_one(...)`, `query(...)`)."""
    found = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Call):
            f = node.func
            name = f.attr if isinstance(f, ast.Attribute) else getattr(f, "id", "")
            if name in names:
                found.append((node.lineno, name))
    return found


def _holds_app(tree: ast.AST) -> list[int]:
    """Lines that keep the app in an attribute (`self.app = ...`) or take Textual's App."""
    lines = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Assign | ast.AnnAssign):
            targets = node.targets if isinstance(node, ast.Assign) else [node.target]
            for t in targets:
                for sub in ast.walk(t):
                    if isinstance(sub, ast.Attribute) and sub.attr == "app":
                        lines.append(node.lineno)
        if isinstance(node, ast.ImportFrom) and node.module == "textual.app" and any(
                a.name == "App" for a in node.names):
            lines.append(node.lineno)
    return lines


def _modules(folder: Path) -> list[Path]:
    return sorted(folder.rglob("*.py"))


def _tree(path: Path) -> ast.Module:
    return ast.parse(path.read_text(), str(path))


def test_the_scans_find_what_they_look_for() -> None:
    """A scan that found nothing in any source would pass vacuously: each finds its own."""
    tree = ast.parse("from textual.app import App\n"
                     "class F:\n"
                     "    def __init__(self, app):\n"
                     "        self.app = app\n"
                     "    def go(self):\n"
                     "        self.app.query_one('#verdicts').show(None)\n"
                     "        self.app.push_screen(None)\n"
                     "        self.app.exit(1)\n")
    assert _calls(tree, QUERIES) == [(6, "query_one")]
    assert _calls(tree, APP_ONLY) == [(7, "push_screen"), (8, "exit")]
    assert _holds_app(tree) == [1, 4]
    assert _calls(_tree(UI / "app.py"), {"push_screen", "exit"}), \
        "the app's handlers do push screens and exit: the scan reads real sources"


def test_no_widget_is_queried_outside_the_render_wing() -> None:
    render = UI / "render"
    found = [f"{p.relative_to(UI.parent.parent)}:{line}: {name}()"
             for p in _modules(UI) if render not in p.parents
             for line, name in _calls(_tree(p), QUERIES)]
    assert not found, "the render wing owns its widgets (abtui.ui.render.layout.MainWidgets); " \
        f"post a message (abtui.ui.flow.messages) instead: {found}"


def test_flow_helpers_post_messages_and_never_hold_the_app() -> None:
    flow = UI / "flow"
    acts = [f"{p.relative_to(UI.parent.parent)}:{line}: {name}()"
            for p in _modules(flow) for line, name in _calls(_tree(p), APP_ONLY)]
    holds = [f"{p.relative_to(UI.parent.parent)}:{line}"
             for p in _modules(flow) for line in _holds_app(_tree(p))]
    assert not acts, f"post ShowScreen, Notice, Done or Leave instead: {acts}"
    assert not holds, f"a flow helper is given `post` and `run_worker`, not the app: {holds}"


def test_every_message_the_helpers_post_is_handled_by_the_app() -> None:
    messages = {node.name for node in _tree(UI / "flow" / "messages.py").body
                if isinstance(node, ast.ClassDef)
                and any(getattr(b, "id", "") == "Message" for b in node.bases)}
    handled = set()
    for node in ast.walk(_tree(UI / "app.py")):
        if isinstance(node, ast.FunctionDef):
            for deco in node.decorator_list:
                if isinstance(deco, ast.Call) and getattr(deco.func, "id", "") == "on":
                    handled |= {a.id for a in deco.args if isinstance(a, ast.Name)}
    assert {"Said", "Failed", "VerdictsShown", "ShowScreen", "Leave"} <= messages
    assert messages <= handled, f"posted but handled nowhere: {sorted(messages - handled)}"
