"""A one-shot probe of hosts over asyncssh: who answers, with which hostname and kernel."""

from __future__ import annotations

import asyncio


async def _probe(alias: str, ssh_config: str | None, timeout: float) -> tuple[bool, str]:
    from abtui.core.destination import parse_destination
    from abtui.remote.sshlib import asyncssh  # (its warnings kept quiet)

    try:
        host, extra = parse_destination(alias).connect_args()
        async with asyncssh.connect(host, config=[ssh_config] if ssh_config else (),
                                    connect_timeout=timeout, **extra) as conn:
            result = await conn.run("hostname; uname -sr", check=False, timeout=timeout)
    except (TimeoutError, OSError, ValueError, asyncssh.Error) as exc:
        return False, f"unreachable: {exc}"
    if result.exit_status != 0:
        return False, f"command failed: {str(result.stderr).strip()}"
    hostname, _, kernel = str(result.stdout).partition("\n")
    return True, f"hostname {hostname.strip()}, {kernel.strip()}"


async def probe_hosts(aliases: list[str], ssh_config: str | None = None,
                      timeout: float = 10.0) -> dict[str, tuple[bool, str]]:
    """Probe every alias concurrently; host keys are verified against known_hosts."""
    results = await asyncio.gather(*(_probe(a, ssh_config, timeout) for a in aliases))
    return dict(zip(aliases, results, strict=True))
