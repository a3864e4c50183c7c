"""asyncssh's import looks for liboqs (optional post-quantum key exchanges) with
ctypes.util.find_library, which on Linux runs gcc and ld where the linker's cache has no such
library: abtui.remote.sshlib has it looked up by the cache and the loader alone while asyncssh
is imported (docs/performance.md: `demo_first_number_warm_s`)."""

from __future__ import annotations

import ctypes.util
import sys

import pytest

from abtui.remote import sshlib

pytestmark = pytest.mark.skipif(not sys.platform.startswith("linux"),
                                reason="find_library's compiler fallback is Linux's")


def test_a_library_the_loader_knows_is_found_and_no_compiler_runs(monkeypatch) -> None:  # type: ignore[no-untyped-def]
    def no_compiler(name: str) -> None:
        raise AssertionError(f"gcc or ld run for {name}")

    monkeypatch.setattr(ctypes.util, "_findLib_gcc", no_compiler)
    monkeypatch.setattr(ctypes.util, "_findLib_ld", no_compiler)
    assert sshlib._find_library("no-such-library-abtui") is None
    found = sshlib._find_library("c")  # the C library: in the linker's cache
    assert found is not None and ctypes.CDLL(found) is not None


def test_find_library_is_put_back_after_the_import() -> None:
    original = ctypes.util.find_library
    with sshlib._libraries_found_by_the_loader():
        assert ctypes.util.find_library is sshlib._find_library
    assert ctypes.util.find_library is original
    with pytest.raises(RuntimeError), sshlib._libraries_found_by_the_loader():
        raise RuntimeError("the import failed")
    assert ctypes.util.find_library is original
