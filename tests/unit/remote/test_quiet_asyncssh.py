"""asyncssh's import and an ssh-agent's keys say nothing on stderr (issue 49): its DSA
support read cryptography's deprecated DSA classes, ten CryptographyDeprecationWarning
lines on every command. The filter is scoped to asyncssh's modules: the same warning raised
elsewhere still shows."""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.ssh_agent import agent_with_keys

LOAD = """
import asyncio
from abtui.remote import sshlib
asyncio.run(sshlib.load())
import asyncssh
async def keys():
    async with asyncssh.connect_agent() as agent:
        return await agent.get_keys()
print(len(asyncio.run(keys())))
from cryptography.utils import CryptographyDeprecationWarning
import warnings
warnings.warn("still shown elsewhere", CryptographyDeprecationWarning)
"""


@pytest.fixture
def agent(tmp_path: Path) -> Iterator[str]:
    with agent_with_keys(tmp_path) as sock:
        yield sock


def test_asyncssh_with_an_agent_holding_keys_is_quiet(agent: str) -> None:
    env = {k: v for k, v in os.environ.items() if k != "PYTHONWARNINGS"}
    done = subprocess.run([sys.executable, "-W", "default", "-c", LOAD], text=True,
                          capture_output=True, timeout=60,
                          env={**env, "SSH_AUTH_SOCK": agent})
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "2"  # the agent's two keys were read
    assert "DSA" not in done.stderr, done.stderr
    assert "still shown elsewhere" in done.stderr  # scoped to asyncssh, not silenced
