"""A dead link noticed without a timer re-armed per packet (abtui.remote.keepalive): the
kernel's time since the socket last received data (real loopback TCP sockets), asyncssh's
keepalive turned off while data comes and on once the link is silent for an interval, with
the interval already waited counted; left as it was where the socket cannot be watched."""

from __future__ import annotations

import asyncio
import socket
import struct
import time
from collections.abc import Iterator

import pytest

from abtui.remote.keepalive import Keepalive, silent_for

pytestmark = pytest.mark.skipif(not hasattr(socket, "TCP_INFO"), reason="no TCP_INFO here")


@pytest.fixture
def pair() -> Iterator[tuple[socket.socket, socket.socket]]:
    server = socket.socket()
    server.bind(("127.0.0.1", 0))
    server.listen()
    client = socket.create_connection(server.getsockname())
    peer, _ = server.accept()
    server.close()
    yield client, peer
    client.close()
    peer.close()


class _Conn:
    """What Keepalive asks of an asyncssh connection."""

    def __init__(self, sock: object) -> None:
        self.sock = sock
        self.calls: list[tuple[float, int | None]] = []

    def get_extra_info(self, name: str) -> object:
        return self.sock if name == "socket" else None

    def set_keepalive(self, interval: float, count_max: int | None = None) -> None:
        self.calls.append((interval, count_max))


def test_the_kernel_says_how_long_a_socket_received_nothing(pair) -> None:
    client, peer = pair
    peer.send(b"x")
    time.sleep(0.6)
    before = silent_for(client) or 0
    assert 0.55 <= before < 30
    client.recv(1)
    peer.send(b"y")
    time.sleep(0.02)
    assert (silent_for(client) or 99) < before - 0.3  # the new data counts from its arrival
    assert silent_for(None) is None and silent_for(object()) is None
    with socket.socket(socket.AF_UNIX) as unix:
        assert silent_for(unix) is None


class _Sock:
    """A socket whose TCP_INFO says it received nothing for `silent` seconds."""

    def __init__(self) -> None:
        self.silent = 0.0

    def getsockopt(self, level: int, option: int, size: int) -> bytes:
        assert (level, option) == (socket.IPPROTO_TCP, socket.TCP_INFO)
        info = bytearray(size)
        struct.pack_into("=I", info, 52, int(self.silent * 1000))  # tcpi_last_data_recv
        return bytes(info)


async def test_off_while_data_comes_on_after_a_silent_interval() -> None:
    sock = _Sock()
    conn = _Conn(sock)
    keep = Keepalive(conn, interval=2.0, count_max=3)
    assert keep.start()
    try:
        assert conn.calls == [(0, None)] and not keep.armed  # asyncssh's per-packet timer off
        for silent in (0.0, 0.9, 1.9):  # data within the interval: never armed
            sock.silent = silent
            keep._tick()
        assert conn.calls == [(0, None)]
        sock.silent = 2.0  # silent an interval: on, its count shortened by that interval
        keep._tick()
        assert conn.calls == [(0, None), (2.0, 2)] and keep.armed
        sock.silent = 3.5
        keep._tick()  # still silent: asyncssh counts on its own, nothing asked again
        assert conn.calls == [(0, None), (2.0, 2)]
        sock.silent = 0.1  # its keepalive answered: off again
        keep._tick()
        assert conn.calls[-1] == (0, None) and not keep.armed
    finally:
        keep.stop()


async def test_the_ticks_go_on_by_themselves_until_stopped(pair) -> None:
    client, _peer = pair
    conn = _Conn(client)
    keep = Keepalive(conn, interval=0.1, count_max=3)
    assert keep.start()
    await asyncio.sleep(0.5)  # nothing received: armed by a tick of its own
    keep.stop()
    assert conn.calls[:2] == [(0, None), (0.1, 2)] and keep.armed
    assert keep._timer is None


async def test_where_the_socket_cannot_be_watched_asyncssh_keeps_its_own() -> None:
    conn = _Conn(None)  # a ProxyJump tunnel: no socket of its own
    keep = Keepalive(conn, interval=0.2, count_max=3)
    assert not keep.start()
    assert conn.calls == [] and keep.armed
