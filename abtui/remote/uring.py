"""Several sockets' TCP_CORK lifted in one system call (io_uring), so no other task runs
between them.

Uncorked one `setsockopt` after another, the release's writes are a system call apart, and
where a sender's sshd runs on the controller's own machine (the lab) the first one's delivery
wakes it: the kernel may preempt the controller on its way back from that call and let a CPU
hog beside it run its slice (3 ms and more) before the second, so the senders start that far
apart. One `io_uring_enter` submitting every socket's uncork (IORING_OP_URING_CMD's
SOCKET_URING_OP_SETSOCKOPT, Linux 6.7 and later) does them all before it returns. Where the
ring cannot be had (another system, an older kernel, io_uring disabled or filtered out) the
caller uncorks each socket itself, as before. Plain ctypes and mmap: a ring of ENTRIES
entries, made once by its owner.
"""

from __future__ import annotations

import ctypes
import errno
import mmap
import os
import platform
import socket
import struct
import sys
from typing import Any

# io_uring_setup and io_uring_enter: one number on every architecture since 5.1 (but alpha)
SETUP, ENTER = 425, 426
OP_URING_CMD = 46
SOCKET_OP_SETSOCKOPT = 3
ENTER_GETEVENTS = 1
OFF_SQ_RING, OFF_CQ_RING, OFF_SQES = 0, 0x8000000, 0x10000000
UNSUPPORTED = (errno.EINVAL, errno.EOPNOTSUPP)  # what a kernel without the command answers
ENTRIES = 8  # at most this many sockets in one submission (more: in several)

# struct io_uring_params: 10 u32, then io_sqring_offsets and io_cqring_offsets (40 bytes each)
_PARAMS = struct.Struct("10I" + "7IIQ" + "8IQ")
_SQE = struct.Struct("=BBHiIIIIIIQHHIQQ")  # struct io_uring_sqe, 64 bytes
_CQE = struct.Struct("=QiI")  # struct io_uring_cqe: user_data, res, flags
_U32 = struct.Struct("=I")
_ZERO = ctypes.c_int(0)
_long = ctypes.c_long  # syscall()'s arguments are longs: an int passed bare is 32 bits


class _Ring:
    """One io_uring of ENTRIES entries and its three mappings; closed with its owner."""

    def __init__(self, libc: Any) -> None:
        self.libc = libc
        params = ctypes.create_string_buffer(_PARAMS.size)
        fd = libc.syscall(_long(SETUP), _long(ENTRIES), params)
        if fd < 0:
            raise OSError(ctypes.get_errno(), os.strerror(ctypes.get_errno()))
        self.fd = fd
        try:
            fields = _PARAMS.unpack(params.raw)
            sq_entries, cq_entries = fields[0], fields[1]
            (self.sq_head, self.sq_tail, self.sq_mask, _entries, _flags, _dropped,
             self.sq_array) = fields[10:17]
            (self.cq_head, self.cq_tail, self.cq_mask, _centries, _overflow,
             self.cqes) = fields[19:25]
            self.sq = mmap.mmap(fd, self.sq_array + 4 * sq_entries, offset=OFF_SQ_RING)
            self.cq = mmap.mmap(fd, self.cqes + _CQE.size * cq_entries, offset=OFF_CQ_RING)
            self.sqes = mmap.mmap(fd, _SQE.size * sq_entries, offset=OFF_SQES)
        except BaseException:
            os.close(fd)
            raise

    def _u32(self, ring: mmap.mmap, offset: int) -> int:
        return int(_U32.unpack_from(ring, offset)[0])

    def submit(self, socks: list[socket.socket]) -> list[int]:
        """Every socket's TCP_CORK set to 0 in one io_uring_enter; each one's result
        (0, or a negative errno), in order."""
        tail = self._u32(self.sq, self.sq_tail)
        mask = self._u32(self.sq, self.sq_mask)
        for i, sock in enumerate(socks):
            slot = (tail + i) & mask
            _SQE.pack_into(self.sqes, slot * _SQE.size,
                           OP_URING_CMD, 0, 0, sock.fileno(),
                           SOCKET_OP_SETSOCKOPT, 0,  # cmd_op, pad
                           socket.IPPROTO_TCP, socket.TCP_CORK,  # level, optname
                           0, 0,  # len, op flags
                           i,  # user_data: the socket's place
                           0, 0, ctypes.sizeof(_ZERO),  # buf_index, personality, optlen
                           ctypes.addressof(_ZERO), 0)  # optval, pad
            _U32.pack_into(self.sq, self.sq_array + 4 * slot, slot)
        _U32.pack_into(self.sq, self.sq_tail, tail + len(socks))  # published to the kernel
        done = self.libc.syscall(_long(ENTER), _long(self.fd), _long(len(socks)),
                                 _long(len(socks)), _long(ENTER_GETEVENTS), None, _long(0))
        if done != len(socks):  # entries left in the ring would go out with the next ones
            raise OSError(ctypes.get_errno(), "io_uring_enter submitted "
                          f"{done} of {len(socks)}")
        results = [-1] * len(socks)  # not completed: the caller does that socket itself
        head = self._u32(self.cq, self.cq_head)
        cq_tail = self._u32(self.cq, self.cq_tail)
        cq_mask = self._u32(self.cq, self.cq_mask)
        while head != cq_tail:
            place, res, _ = _CQE.unpack_from(self.cq, self.cqes + _CQE.size * (head & cq_mask))
            if 0 <= place < len(results):
                results[place] = res
            head += 1
        _U32.pack_into(self.cq, self.cq_head, head)
        return results

    def close(self) -> None:
        for mapping in (self.sq, self.cq, self.sqes):
            mapping.close()
        os.close(self.fd)


class Uncorker:
    """Lifts TCP_CORK on several sockets in one system call, through a ring of its own when
    this system gives one. Owned by whoever releases runs; `close` it."""

    def __init__(self) -> None:
        self._ring: _Ring | None = None
        if sys.platform == "linux" and platform.machine() != "alpha":
            try:
                self._ring = _Ring(ctypes.CDLL(None, use_errno=True))
            except (OSError, ValueError, AttributeError):
                self._ring = None

    @property
    def available(self) -> bool:
        """Whether this system gave a ring (else `lift` lifts nothing)."""
        return self._ring is not None

    def lift(self, socks: list[socket.socket]) -> list[socket.socket]:
        """TCP_CORK lifted on the sockets, up to ENTRIES in one system call; returns those it
        could not lift (all of them without a ring), for the caller to lift one by one."""
        if self._ring is None or len(socks) < 2:
            return socks
        left: list[socket.socket] = []
        for start in range(0, len(socks), ENTRIES):
            chunk = socks[start:start + ENTRIES]
            try:
                results = self._ring.submit(chunk)
            except OSError:  # a ring in a state of its own: given up, the rest one by one
                self.close()
                return left + socks[start:]
            left += [s for s, res in zip(chunk, results, strict=True) if res != 0]
            if all(-res in UNSUPPORTED for res in results):
                # a kernel with io_uring but without sockets' commands (before 6.7): not
                # asked again, every later release uncorks one by one at once
                self.close()
                return left + socks[start + ENTRIES:]
        return left

    def close(self) -> None:
        if self._ring is not None:
            self._ring.close()
            self._ring = None
