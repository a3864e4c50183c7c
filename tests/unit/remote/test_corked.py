"""abtui.remote.cork.corked on real loopback TCP sockets: what is written inside is held by
the kernel and leaves at the end (the release's newlines to several hosts leave a system call
apart, or in one with abtui.remote.uring: no `setsockopt` of Python's called, what the ring
could not lift handed back and lifted one by one, the ring let go on close), and a socket
that cannot be corked is written to as usual."""

from __future__ import annotations

import os
import socket
from collections.abc import Iterator

import pytest

from abtui.remote.cork import corkable, corked
from abtui.remote.uring import ENTRIES, Uncorker

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


class _Watched(socket.socket):
    """A TCP socket that counts the corks lifted through Python's own setsockopt."""

    lifted_by_setsockopt = 0

    def setsockopt(self, level: int, option: int, value: object, *rest: object) -> None:
        if (level, option, value) == (socket.IPPROTO_TCP, socket.TCP_CORK, 0):
            type(self).lifted_by_setsockopt += 1
        super().setsockopt(level, option, value, *rest)  # type: ignore[call-overload]


@pytest.fixture
def uncorker() -> Iterator[Uncorker]:
    made = Uncorker()
    if not made.available:
        made.close()
        pytest.skip("this system gives no io_uring (not Linux, older than 6.7, or filtered)")
    try:
        yield made
    finally:
        made.close()


@pytest.fixture
def connections() -> Iterator[list[tuple[socket.socket, socket.socket]]]:
    """ENTRIES + 2 loopback connections (more than one submission), the client side watched."""
    _Watched.lifted_by_setsockopt = 0
    made: list[tuple[socket.socket, socket.socket]] = []
    with socket.create_server(("127.0.0.1", 0)) as server:
        try:
            for _ in range(ENTRIES + 2):
                client = _Watched(socket.AF_INET, socket.SOCK_STREAM)
                client.connect(server.getsockname())
                peer, _ = server.accept()
                made.append((client, peer))
            yield made
        finally:
            for ends in made:
                for end in ends:
                    end.close()


def test_every_cork_is_lifted_in_one_submission(
        uncorker: Uncorker, connections: list[tuple[socket.socket, socket.socket]]) -> None:
    clients = [client for client, _ in connections]
    with corked(clients, uncorker.lift) as held:
        assert held == clients
        for n, client in enumerate(clients):
            client.sendall(f"go {n}\n".encode())
        assert _received(connections[0][1], 0.05) == b""  # held by the cork
    assert [_received(peer, 1.0) for _, peer in connections] == \
        [f"go {n}\n".encode() for n in range(len(clients))]
    assert _Watched.lifted_by_setsockopt == 0  # the ring lifted them, not Python's calls
    assert all(c.getsockopt(socket.IPPROTO_TCP, socket.TCP_CORK) == 0 for c in clients)


def test_a_socket_the_ring_could_not_lift_is_lifted_one_by_one(
        uncorker: Uncorker, connections: list[tuple[socket.socket, socket.socket]]) -> None:
    (first, first_peer), (second, second_peer) = connections[:2]
    gone, _ = connections[2]
    with corked([first, gone, second], uncorker.lift) as held:
        for client in held:
            client.sendall(b"go\n")
        gone.close()  # a host's connection lost during the release: its fd is no more
    assert _received(first_peer, 1.0) == _received(second_peer, 1.0) == b"go\n"
    assert uncorker.lift([first, second]) == []
    assert uncorker.lift([first, gone]) == [gone]  # returned to the caller, nothing raised


def test_one_socket_or_no_ring_is_left_to_the_caller(
        connections: list[tuple[socket.socket, socket.socket]]) -> None:
    (client, peer), (other, _) = connections[:2]
    made = Uncorker()
    try:
        assert made.lift([client]) == [client]  # one: no ring needed
        made.close()
        assert not made.available and made.lift([client, other]) == [client, other]
        with corked([client], made.lift):
            client.sendall(b"alone\n")
        assert _received(peer, 1.0) == b"alone\n"
        assert _Watched.lifted_by_setsockopt == 1
    finally:
        made.close()


def test_close_lets_the_ring_go(uncorker: Uncorker) -> None:
    def fds() -> int:
        return len(os.listdir("/proc/self/fd"))

    before = fds()
    other = Uncorker()
    assert fds() > before  # the ring, and mmap's own copies of its descriptor
    other.close()
    other.close()  # twice is harmless
    assert fds() == before


def test_a_ring_the_kernel_cannot_use_for_sockets_is_given_up(uncorker: Uncorker) -> None:
    """A kernel with io_uring but without its socket commands (before 6.7) answers each
    entry as unsupported, as this one answers a TCP option on Unix sockets: not asked
    again."""
    left, right = socket.socketpair()
    with left, right:
        assert uncorker.lift([left, right]) == [left, right]
    assert not uncorker.available


def test_corks_are_lifted_even_when_lifting_them_together_fails(
        connections: list[tuple[socket.socket, socket.socket]]) -> None:
    """A host left corked would never start: whatever went wrong in `together`, every cork
    is lifted one by one."""
    def broken(held: list[socket.socket]) -> list[socket.socket]:
        raise RuntimeError("a ring in a state of its own")

    with corked([c for c, _ in connections[:2]], broken) as held:
        for client in held:
            client.sendall(b"go\n")
    assert [_received(peer, 1.0) for _, peer in connections[:2]] == [b"go\n", b"go\n"]
    assert _Watched.lifted_by_setsockopt == 2
