"""A dead link noticed without a timer re-armed on every packet.

asyncssh's keepalive (`keepalive_interval`) is an idle timer: every packet received cancels
it and schedules a new one (a TimerHandle made and pushed on the loop's heap per packet, on
the path of every interval line and ping reply). `Keepalive` keeps the same detection and
drops that cost: a timer of its own ticks every half interval and asks the kernel how long
the connection's TCP socket has received no data (TCP_INFO's `tcpi_last_data_recv`, Linux).
While data comes, asyncssh's keepalive is off (`set_keepalive(0)`, public API: its per-packet
reset is then two calls that do nothing); once the link has been silent for an interval it is
turned on, its count shortened by the interval already waited, so a link that stopped
answering (sshd stopped or killed, the path down) is lost after about the same time as
before: KEEPALIVE_INTERVAL * (KEEPALIVE_COUNT_MAX + 1) of silence, one tick later at most.
Where the kernel cannot say (not a TCP socket: a ProxyJump tunnel; not Linux), asyncssh's own
keepalive stays on, as it was.
"""

from __future__ import annotations

import asyncio
import contextlib
import socket
import struct
from typing import Any

# struct tcp_info (linux/tcp.h): eight one-byte fields, then u32s; tcpi_last_data_recv (ms)
# is the twelfth of them
_LAST_DATA_RECV = struct.Struct("=I")
_LAST_DATA_RECV_AT = 8 + 11 * 4
_TCP_INFO_LEN = 104  # the fields up to tcpi_rcv_space: every Linux since 2.6 has them


def silent_for(sock: Any) -> float | None:
    """Seconds since `sock` last received data (None where the kernel cannot say)."""
    tcp_info = getattr(socket, "TCP_INFO", None)
    if sock is None or tcp_info is None:
        return None
    try:
        info = sock.getsockopt(socket.IPPROTO_TCP, tcp_info, _TCP_INFO_LEN)
    except (OSError, AttributeError, TypeError):
        return None
    if not isinstance(info, bytes) or len(info) < _LAST_DATA_RECV_AT + 4:
        return None
    return float(_LAST_DATA_RECV.unpack_from(info, _LAST_DATA_RECV_AT)[0]) / 1000


class Keepalive:
    """One connection's dead-link detection (see the module's docstring). `conn` is an
    asyncssh connection opened with keepalive_interval=`interval` and
    keepalive_count_max=`count_max`: where its socket cannot be watched, that stays."""

    def __init__(self, conn: Any, interval: float, count_max: int) -> None:
        self.conn = conn
        self.interval = interval
        self.count_max = count_max
        self.sock = conn.get_extra_info("socket")
        self.armed = True  # asyncssh's keepalive on (as the connection was opened)
        self._timer: asyncio.TimerHandle | None = None

    def start(self) -> bool:
        """Take over from asyncssh's per-packet timer; False (and nothing changed) where the
        socket cannot be watched."""
        if silent_for(self.sock) is None:
            return False
        self._disarm()
        self._timer = asyncio.get_running_loop().call_later(self.interval / 2, self._tick)
        return True

    def stop(self) -> None:
        if self._timer is not None:
            self._timer.cancel()
            self._timer = None

    def _tick(self) -> None:
        silent = silent_for(self.sock)
        if silent is None:  # the socket is gone: the connection's loss is on its way
            self._timer = None
            return
        if silent < self.interval:
            self._disarm()
        elif not self.armed:
            # asyncssh sends a keepalive an interval from now, and counts; the interval
            # already silent counts as its first
            self.armed = True
            with contextlib.suppress(Exception):
                self.conn.set_keepalive(self.interval, max(1, self.count_max - 1))
        self._timer = asyncio.get_running_loop().call_later(self.interval / 2, self._tick)

    def _disarm(self) -> None:
        if self.armed:
            self.armed = False
            with contextlib.suppress(Exception):
                self.conn.set_keepalive(0)
