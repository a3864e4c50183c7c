"""abtui.remote.link.corked on real loopback TCP sockets: what is written inside is held by
the kernel and leaves at the end (the release's newlines to several hosts leave a system call
apart), and a socket that cannot be corked is written to as usual."""

from __future__ import annotations

import socket
from collections.abc import Iterator

import pytest

from abtui.remote.link import corkable, corked

pytestmark = pytest.mark.skipif(not hasattr(socket, "TCP_CORK"), reason="no TCP_CORK here")


@pytest.fixture
def tcp_pair() -> Iterator[tuple[socket.socket, socket.socket]]:
    with socket.create_server(("127.0.0.1", 0)) as server:
        client = socket.create_connection(server.getsockname())
        peer, _ = server.accept()
        try:
            yield client, peer
        finally:
            client.close()
            peer.close()


def _received(sock: socket.socket, wait: float) -> bytes:
    sock.settimeout(wait)
    try:
        return sock.recv(4096)
    except TimeoutError:
        return b""


def test_writes_inside_are_held_and_leave_at_the_end(
        tcp_pair: tuple[socket.socket, socket.socket]) -> None:
    client, peer = tcp_pair
    with corked([corkable(client)]) as held:
        assert held == [client]
        client.sendall(b"\n")
        # a lone small segment waits for the cork (up to 200 ms in Linux): nothing yet
        assert _received(peer, 0.05) == b""
    assert _received(peer, 1.0) == b"\n"
    client.sendall(b"after")  # uncorked: sent as written
    assert _received(peer, 1.0) == b"after"


def test_a_socket_that_cannot_be_corked_is_written_as_usual() -> None:
    left, right = socket.socketpair()  # a Unix socket: no TCP_CORK
    with left, right:
        assert corkable(left) is None
        with corked([left]) as held:
            assert held == []
            left.sendall(b"x")
            assert _received(right, 1.0) == b"x"
