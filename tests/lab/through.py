"""What iperf3 itself says a path carries, read from its own summary line (not abtui's parser):
the lab tests' independent measure of traffic through a tunnel."""

from __future__ import annotations

import re
from typing import Any


async def iperf3_mbits(hosts: Any, pair: Any, target: str, *, port: int, seconds: int = 1,
                       side: str = "sender", timeout: float = 20) -> float:
    """iperf3's Mbit/s from `pair`'s sender to `target`, from its sender or receiver line."""
    server = await hosts.links[pair.receiver].stream(
        f"exec iperf3 -s -1 -p {port} --forceflush")
    try:
        async for line in server.lines():
            if "listening" in line:
                break
        out = await hosts.links[pair.sender].check(
            f"iperf3 -c {target} -p {port} -t {seconds} -f m", timeout=timeout)
    finally:
        await server.terminate()
    m = re.search(rf"([\d.]+) Mbits/sec\s+\d*\s*{side}", out)
    assert m, out
    return float(m.group(1))
