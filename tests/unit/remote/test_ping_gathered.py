"""A gathered ping (iperf_cmd.gathered): its lines cross the SSH link a second at a time, each
with its age, so that the controller dates every reply when it came. Run by this machine's
bash, with a scripted ping that prints its own clock in each reply."""

from __future__ import annotations

import os
import selectors
import shutil
import signal
import subprocess
import time

import pytest

from abtui.remote.iperf_cmd import (
    GATHER_MIN_INTERVAL_S,
    GATHER_POLL_S,
    GATHER_S,
    GATHER_SEP,
    gathered,
    gathers,
    ungathered,
)

pytestmark = pytest.mark.skipif(shutil.which("bash") is None, reason="no bash here")

# ping's reply lines, each with the moment it was printed; SIGINT prints the summary (as
# iputils' ping does) and ends it
SCRIPTED_PING = r"""
summary() { echo; echo "--- x ping statistics ---"; echo "$i packets transmitted, $i received"; }
trap 'summary; exit 0' INT
i=0
while :; do
  i=$((i + 1))
  echo "64 bytes from 198.18.0.2: icmp_seq=$i ttl=64 time=0.05 ms at=$EPOCHREALTIME"
  sleep "$1" & wait
done
"""


def _read_for(proc: subprocess.Popen[bytes], seconds: float) -> list[tuple[float, bytes]]:
    """What the process wrote in `seconds`, each chunk with the moment it came."""
    assert proc.stdout is not None
    got: list[tuple[float, bytes]] = []
    with selectors.DefaultSelector() as sel:
        sel.register(proc.stdout, selectors.EVENT_READ)
        end = time.time() + seconds
        while (left := end - time.time()) > 0:
            if sel.select(left):
                chunk = os.read(proc.stdout.fileno(), 65536)
                if not chunk:
                    break
                got.append((time.time(), chunk))
    return got


def _lines(chunks: list[tuple[float, bytes]]) -> list[tuple[float, str]]:
    """Each line with the moment its chunk came (split on newlines only, as abtui's feed
    does: str.splitlines would split on the batch's record separator too)."""
    return [(came, line) for came, chunk in chunks
            for line in chunk.decode().split("\n")[:-1]]


def test_replies_come_a_second_at_a_time_each_dated_when_it_was_printed() -> None:
    proc = subprocess.Popen(["bash", "-c", gathered(["bash", "-c", SCRIPTED_PING, "ping",
                                                     "0.1"])],
                            stdout=subprocess.PIPE, start_new_session=True)
    try:
        chunks = _read_for(proc, 3.4)
        os.killpg(proc.pid, signal.SIGINT)  # ping's cue: its summary passes, all ends
        rest = _read_for(proc, 3.0)
        assert proc.wait(timeout=3.0) == 0
    finally:
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait()
    # a batch a second or so, each one line written at once: not a write (on a busy host,
    # an SSH packet) a reply; 10 replies a second were printed
    batches = _lines(chunks)
    assert 2 <= len(batches) <= 4, [came for came, _ in batches]
    assert len({came for came, _ in batches}) == len(batches)  # no batch cut in two reads
    replies = [(came, record) for came, batch in batches for record in ungathered(batch)]
    assert len(replies) >= 20
    errors = []
    for came, (age, text) in replies:
        assert 0 < age <= GATHER_S + GATHER_POLL_S + 0.2, text
        printed = float(text.rpartition("at=")[2])
        errors.append(abs((came - age) - printed))
        # the reply's own moment, not its batch's: one dated by its batch would be off by its
        # age (0 to GATHER_S); a few are late by the scheduling of the gatherer's bash and of
        # this reader on a busy machine (82 ms at load 5), not by what the product did
        assert errors[-1] < GATHER_POLL_S, text
    errors.sort()
    assert errors[len(errors) // 2] < 0.05, errors  # most within 50 ms
    # after SIGINT: the replies it held, then ping's summary, then the end
    tail = [record for _, batch in _lines(rest) for record in ungathered(batch)]
    assert all(age > 0 for age, _ in tail)
    texts = [text for _, text in tail]
    assert texts[-1].endswith("received") and "--- x ping statistics ---" in texts


def test_a_slow_or_fast_ping_or_a_host_without_bash_is_not_gathered() -> None:
    assert gathers(0.2, bash=True) and gathers(GATHER_MIN_INTERVAL_S, bash=True)
    assert not gathers(GATHER_S, bash=True)  # a reply a second: nothing to gather
    assert not gathers(0.2, bash=False)  # FreeBSD's sh: no clock builtin
    # bash reads its pipe a byte at a time: past ten replies a second the gatherer would
    # cost the host under test more than the packets it saves
    assert not gathers(0.05, bash=True)


def test_a_batch_splits_into_its_lines_and_a_record_without_an_age_is_taken_as_it_is() -> None:
    assert ungathered(f"123 64 bytes from x{GATHER_SEP}42 ") == [(123e-6, "64 bytes from x"),
                                                                (42e-6, "")]
    # a host's own text is never taken for an age
    assert ungathered("PING 198.18.0.2") == [(0.0, "PING 198.18.0.2")]
    assert ungathered("1733350000.25") == [(0.0, "1733350000.25")]
    assert ungathered(f"7 a{GATHER_SEP}b c") == [(7e-6, "a"), (0.0, "b c")]
