"""What every tier shares: a run's own state and temporary folders (and the check that the
tests left nothing in the latter), lab tests skipped without root, the lab
(shared by the lab and end-to-end tiers; each run uses its own lab names, see
tests/lab/namespaces.py) and the reliability table's hooks. The tiers' own fixtures are in
tests/<tier>/conftest.py; helpers are plain modules beside the tests, never imported from a
conftest or a test module."""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path

import pytest

from abtui.lab.netns import Lab
from tests.lab.namespaces import host_settings, make_test_lab, tidy_after_test


def pytest_configure(config: pytest.Config) -> None:
    """No test reads or writes the user's own abtui state and data (undo journals, saved
    sessions): a run gets folders of its own, inherited by every abtui it starts. Its
    temporary files (tempfile's, and TMPDIR of what it starts) go to a folder of its own too,
    so what a test leaves there is found at the end (pytest_sessionfinish) without mistaking
    another run on the machine for this one; pytest's own tmp_path stays where it was."""
    import tempfile

    _hear_ctrl_c()
    os.environ.setdefault("PYTEST_DEBUG_TEMPROOT", tempfile.gettempdir())
    home = Path(tempfile.mkdtemp(prefix="abtui-test-home-"))
    tmp = Path(tempfile.mkdtemp(prefix="abtui-test-tmp-"))
    config.stash[_HOME] = home
    config.stash[_TMP] = tmp
    for var, sub in (("XDG_STATE_HOME", "state"), ("XDG_DATA_HOME", "data")):
        os.environ[var] = str(home / sub)
    os.environ["TMPDIR"] = tempfile.tempdir = str(tmp)


@pytest.hookimpl(trylast=True)
def pytest_sessionfinish(session: pytest.Session, exitstatus: int) -> None:
    """The run's folders removed; a folder its tests left in its temporary folder (every
    folder a test makes it removes), or a file of abtui's, fails the run, named."""
    import gc
    import shutil

    from tests import reliability as table

    table.pytest_sessionfinish(session, exitstatus)  # reliability.md, when asked
    config = session.config
    home, tmp = config.stash.get(_HOME, None), config.stash.get(_TMP, None)
    gc.collect()  # what removes its own folder when collected (a console's spool) has done so
    # folders, and abtui's own files; a tool's stray files (virtme's) go with the folder
    left = sorted(p.name for p in tmp.iterdir() if p.is_dir() or p.name.startswith("abtui")) \
        if tmp is not None and tmp.is_dir() else []
    for folder in (home, tmp):
        if folder is not None:
            shutil.rmtree(folder, ignore_errors=True)
    if not left:
        return
    reporter = config.pluginmanager.get_plugin("terminalreporter")
    if reporter is not None:
        reporter.write("\n")
        reporter.write_line(f"the tests left {len(left)} file(s) or folder(s) in the "
                            f"temporary folder: {', '.join(left[:10])}"
                            f"{' …' if len(left) > 10 else ''}", red=True)
    if session.exitstatus == pytest.ExitCode.OK:
        session.exitstatus = pytest.ExitCode.TESTS_FAILED


def pytest_unconfigure(config: pytest.Config) -> None:
    import shutil

    home = config.stash.get(_HOME, None)
    if home is not None:  # made again by a process that outlived the run
        shutil.rmtree(home, ignore_errors=True)


_HOME = pytest.StashKey[Path]()
_TMP = pytest.StashKey[Path]()


def _hear_ctrl_c() -> None:
    """A run started in the background of a shell without job control (`cmd &` in a script)
    inherits SIGINT ignored, and so would every abtui it starts: the tests that end a
    console, a run or a holder with ctrl+c then timed out, and left a tunnel to the next ones.
    The run hears SIGINT again, as its children do."""
    import signal

    if signal.getsignal(signal.SIGINT) is signal.SIG_IGN:
        signal.signal(signal.SIGINT, signal.default_int_handler)


def _root_reason() -> str | None:
    if os.geteuid() != 0:
        return "lab tests need root (network namespaces, sshd)"
    return None


def _slow_wanted(config: pytest.Config) -> bool:
    """The slow tier runs only when asked: ABTUI_SLOW=1 (`make test-slow`) or `-m slow`."""
    return os.environ.get("ABTUI_SLOW") == "1" or "slow" in (config.option.markexpr or "")


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    if not _slow_wanted(config):
        slow = [item for item in items if item.get_closest_marker("slow")]
        if slow:
            config.hook.pytest_deselected(items=slow)
            items[:] = [item for item in items if not item.get_closest_marker("slow")]
    reason = _root_reason()
    if reason is None:
        return
    skip = pytest.mark.skip(reason=reason)
    for item in items:
        # the marker, not the keyword: a keyword is also any folder's name, and
        # tests/unit/lab/ (the lab package's unit tests) needs no root
        if item.get_closest_marker("lab") is not None:
            item.add_marker(skip)


@pytest.fixture(scope="session")
def lab(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Lab]:
    """A 2-pair lab shared by the lab tests of one run; taken down even when tests fail."""
    the_lab = make_test_lab(tmp_path_factory.mktemp("lab"))
    the_lab.down()  # leftovers of an earlier, killed run
    the_lab.up(pairs=2)
    try:
        yield the_lab
    finally:
        the_lab.down()


@pytest.fixture(autouse=True)
def _lab_tidied(request: pytest.FixtureRequest) -> Iterator[None]:
    """After each test on the shared lab, failed ones included, what it left there is ended
    or set back (tests.lab.namespaces.tidy_after_test) and said: a test that failed half-way
    (its engine never stopped, a colleague's value left) fails alone, not the tests after it.
    Tests that must leave nothing assert it themselves (tests/lab's `no_strays`)."""
    if "lab" not in request.fixturenames:
        yield
        return
    lab: Lab = request.getfixturevalue("lab")
    settings = _LAB_SETTINGS.setdefault(lab.name, host_settings(lab))
    yield
    tidied = tidy_after_test(lab, settings)
    if tidied:
        print(f"\n{request.node.nodeid} left on the lab (tidied): {'; '.join(tidied)}")


_LAB_SETTINGS: dict[str, dict[str, list[str]]] = {}


# the reliability table (tests/reliability.py): its fixture and the hooks that note each
# scenario's outcome and write the table
from tests.reliability import (  # noqa: E402, F401
    pytest_collection_finish,
    pytest_runtest_makereport,
    reliability,
)
