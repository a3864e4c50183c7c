"""The host's profiling loop: its fold (the real awk program, fed a recorded shape of `perf
script -F time,comm,sym` output), its stream parser, and the packed stacks a session keeps."""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import pytest

from abtui.core.folded import pack, unpack
from abtui.remote.profiling import _FOLD, MAX_DEPTH, ProfileStream, profile_loop_command

PERF_SCRIPT = """\
iperf3 1700000000.100000:\x20
\tffffffff8121 skb_segment+0x12
\tffffffff8122 tcp_gso_segment
\tffffffff8123 __dev_queue_xmit
\t    7f7139656240 [unknown]

kworker/0:1H-kb 1700000000.200000:\x20
\tffffffff8124 aes_encrypt

iperf3 1700000000.300000:\x20
\tffffffff8121 skb_segment+0x12
\tffffffff8122 tcp_gso_segment
\tffffffff8123 __dev_queue_xmit

iperf3 1700000001.500000:\x20
\tffffffff8125 copy_user;evil

"""


@pytest.mark.skipif(shutil.which("awk") is None, reason="no awk on this machine")
def test_the_fold_counts_stacks_per_window_root_first() -> None:
    out = subprocess.run(["awk", "-v", "W=1", "-v", f"D={MAX_DEPTH}", _FOLD],
                         input=PERF_SCRIPT, capture_output=True, text=True, check=True).stdout
    assert out.splitlines()[0] == "@F 1700000000.100000" and out.count("@F") == 1
    stream = ProfileStream()
    windows = [w for w in (stream.feed(line) for line in out.splitlines()) if w is not None]
    assert stream.first == 1700000000.1
    assert [(w.start, w.end, w.samples) for w in windows] == [
        (1700000000.0, 1700000001.0, 3), (1700000001.0, 1700000002.0, 1)]
    assert windows[0].stacks == {
        "iperfN;__dev_queue_xmit;tcp_gso_segment;skb_segment": 2,  # offsets and [unknown] gone
        "kworker/N:NH-kb;aes_encrypt": 1,  # a pool's workers are one name
    }
    assert windows[1].stacks == {"iperfN;copy_user:evil": 1}  # a `;` cannot split a frame


def test_the_stream_says_the_event_or_why_there_is_none_and_skips_garbage() -> None:
    stream = ProfileStream()
    for line in ["@ABTUI-PROFILE event cycles", "@W x y z", "12 orphan;line", "@E",
                 "@W 1.0 2.0 5", "5 a;b", "garbage", "-3 c;d", "@E"]:
        stream.feed(line)
    assert stream.event == "cycles" and stream.refused is None
    other = ProfileStream()
    other.feed("@ABTUI-PROFILE none perf is not installed (Debian: linux-perf)")
    assert other.refused == "perf is not installed (Debian: linux-perf)"


def test_the_loop_is_quoted_and_bounded() -> None:
    command = profile_loop_command(99)
    assert "-F 99" in command and "-k CLOCK_REALTIME" in command and "-a -g" in command
    with pytest.raises(ValueError):
        profile_loop_command(0)
    with pytest.raises(ValueError):
        profile_loop_command(5000)


def test_packed_stacks_round_trip_and_hostile_strings_read_as_nothing() -> None:
    stacks = {"t;a;b": 3, "t;c": 1}
    assert unpack(pack(stacks)) == stacks
    assert unpack("not base64 !!") == {}
    assert unpack(12) == {}
    import base64
    import zlib

    bomb = base64.b64encode(zlib.compress(b"1 a\n" * (5 * 1024 * 1024))).decode()
    assert unpack(bomb) == {}  # inflates past the bound: not trusted


def test_the_counters_stream_reads_hex_softnet_softirqs_nstat_and_kthreads() -> None:
    from abtui.remote.counters import CounterStream

    stream = CounterStream()
    lines = ["@C 1700000000.5", "softnet 0 0000000a 00000001 00000002",
             "softnet 1 00000010 00000000 00000003", "      NET_RX:        5        7",
             "nstat TcpRetransSegs 12", "kthread kworker 30", "kthread cryptd x",
             "garbage line", "@E"]
    got = [g for g in (stream.feed(x) for x in lines) if g is not None]
    assert len(got) == 1
    clock, values = got[0]
    assert clock == 1700000000.5
    assert values["softnet.processed"] == 26 and values["softnet.processed.cpu1"] == 16
    assert values["softnet.time_squeeze"] == 5 and values["softnet.dropped"] == 1
    assert values["softirq.NET_RX"] == 12 and values["softirq.NET_RX.cpu1"] == 7
    assert values["nstat.TcpRetransSegs"] == 12 and values["kthread.kworker"] == 30
    assert "kthread.cryptd" not in values  # a value it cannot read is skipped
    assert stream.feed("@E") is None  # an end without a start is nothing


_SNMP = """\
Ip: Forwarding DefaultTTL InReceives InHdrErrors
Ip: 1 64 2571820 0
Icmp: InMsgs InErrors
Icmp: 25 0
Tcp: RtoAlgorithm MaxConn ActiveOpens CurrEstab RetransSegs
Tcp: 1 -1 1418 3 12
Udp: InDatagrams NoPorts
Udp: 7 0
UdpLite: InDatagrams NoPorts
UdpLite: 0 0
"""
_NETSTAT = """\
TcpExt: SyncookiesSent TCPHPHits
TcpExt: 0 18446744073709551615
IpExt: InNoRoutes InOctets
IpExt: 0 99
MPTcpExt: MPCapableSYNRX
MPTcpExt: 4
"""


@pytest.mark.skipif(shutil.which("awk") is None, reason="no awk on this machine")
@pytest.mark.parametrize("listed", [True, False])
def test_one_awk_reads_a_sample_as_the_programs_did(tmp_path, listed: bool) -> None:
    """The sample's awk over a made-up /proc: softnet's hex fields as they are, NET_RX and
    NET_TX lines, the IP, TCP and UDP counters as `nstat -as` printed them (nonzero, paired
    names, without nstat's constants, a counter past 2^53 to the digit), and the kernel's
    workers' ticks by pool, from kthreadd's children (one of which ended) or from every
    process's stat on stdin."""
    from abtui.remote.counters import _SAMPLE

    proc = tmp_path / "proc"
    (proc / "net").mkdir(parents=True)
    (proc / "net/softnet_stat").write_text("0000000a 00000001 00000002 0 0\n"
                                           "00000010 00000000 00000003 0 0\n")
    (proc / "softirqs").write_text("          CPU0 CPU1\n   TIMER: 1 2\n  NET_TX: 3 4\n"
                                   "  NET_RX: 5 7\n")
    (proc / "net/snmp").write_text(_SNMP)
    (proc / "net/netstat").write_text(_NETSTAT)
    stats = {10: "10 (kworker/0:1H-kblockd) I 2 0 0 0 -1 0 0 0 0 0 4 5 0 0",
             11: "11 (ksoftirqd/0) S 2 0 0 0 -1 0 0 0 0 0 6 1 0 0",
             12: "12 (kworker/u4:2) I 2 0 0 0 -1 0 0 0 0 0 1 1 0 0",
             13: "13 (rcu_sched) I 2 0 0 0 -1 0 0 0 0 0 9 9 0 0",
             99: "99 (napi/eth0-1) S 1 0 0 0 -1 0 0 0 0 0 2 2 0 0"}  # not kthreadd's
    for pid, line in stats.items():
        (proc / str(pid)).mkdir()
        (proc / str(pid) / "stat").write_text(line + "\n")
    (proc / "2/task/2").mkdir(parents=True)
    (proc / "2/task/2/children").write_text("10 11 12 13 14 \n")  # 14 ended since
    program = _SAMPLE.replace("/proc/", f"{proc}/")
    stdin = "".join(stats[p] + "\n" for p in (10, 11, 12, 13)) if not listed else ""
    out = subprocess.run(["awk", "-v", "t=1700000000.25", "-v", f"k={int(listed)}", program],
                         input=stdin, capture_output=True, text=True, check=True).stdout
    lines = out.splitlines()
    assert lines[0] == "@C 1700000000.25" and lines[-1] == "@E"
    assert lines[1:3] == ["softnet 0 0000000a 00000001 00000002",
                          "softnet 1 00000010 00000000 00000003"]
    assert lines[3:5] == ["  NET_TX: 3 4", "  NET_RX: 5 7"]
    assert [x for x in lines if x.startswith("nstat")] == [
        "nstat IpInReceives 2571820", "nstat TcpActiveOpens 1418", "nstat TcpRetransSegs 12",
        "nstat UdpInDatagrams 7", "nstat TcpExtTCPHPHits 18446744073709551615",
        "nstat IpExtInOctets 99"]
    assert sorted(x for x in lines if x.startswith("kthread")) == [
        "kthread ksoftirqd 7", "kthread kworker 11"]


@pytest.mark.skipif(shutil.which("awk") is None or not Path("/proc/uptime").exists(),
                    reason="no awk or no /proc/uptime on this machine")
@pytest.mark.parametrize("date", ["busybox", "gnu"])
def test_the_counters_loop_has_a_clock_where_date_has_no_nanoseconds(tmp_path, date) -> None:
    """busybox's `date +%s.%N` prints `1700000000.%N` (the ARM guest's userspace): the loop
    then reads the seconds since boot, so every sample still has a clock and is kept."""
    import os
    import signal

    from abtui.remote.counters import CounterStream, counters_loop_command

    fake = tmp_path / "date"
    fake.write_text("#!/bin/sh\necho 1700000000.%N\n" if date == "busybox" else
                    "#!/bin/sh\necho 1700000000.250000000\n")
    fake.chmod(0o755)
    proc = subprocess.Popen(["sh", "-c", counters_loop_command(0.2)], stdout=subprocess.PIPE,
                            text=True, env={**os.environ, "PATH": f"{tmp_path}:/usr/bin:/bin"},
                            start_new_session=True)
    stream, got = CounterStream(), []
    try:
        assert proc.stdout is not None
        for n, line in enumerate(proc.stdout):
            if n > 2000:  # samples that never complete: the clock was not read
                break
            sample = stream.feed(line.rstrip("\n"))
            if sample is not None:
                got.append(sample)
            if len(got) == 2:
                break
    finally:
        os.killpg(proc.pid, signal.SIGTERM)
        proc.wait(timeout=10)
    assert len(got) == 2, got
    if date == "gnu":
        assert got[0][0] == 1700000000.25
    else:
        uptime = float(Path("/proc/uptime").read_text().split()[0])
        assert 0 < got[0][0] <= got[1][0] <= uptime  # the seconds since boot, rising
    assert all(any(k.startswith("kthread.") for k in values) for _, values in got)


def _perf_records() -> bool:
    if shutil.which("perf") is None:
        return False
    got = subprocess.run(["perf", "record", "-a", "-e", "cpu-clock", "-q", "-o", "/dev/null",
                          "--", "true"], capture_output=True, check=False)
    return got.returncode == 0


@pytest.mark.skipif(not _perf_records(), reason="perf is missing or may not record every CPU")
def test_the_loop_records_until_its_stdin_ends_then_folds_and_leaves_nothing(tmp_path) -> None:
    """The real loop, locally: ready once perf is enabled, nothing but that while it records,
    its windows (with the first sample's time) once stdin ends, its file gone."""
    import os
    import time

    proc = subprocess.Popen(["sh", "-c", profile_loop_command(99)], stdin=subprocess.PIPE,
                            stdout=subprocess.PIPE, text=True,
                            env={**os.environ, "TMPDIR": str(tmp_path)})
    assert proc.stdin is not None and proc.stdout is not None
    stream = ProfileStream()
    while not (stream.ready or stream.refused):
        line = proc.stdout.readline()
        assert line, "the loop ended before it was ready"
        assert stream.feed(line.rstrip("\n")) is None
    assert stream.refused is None and stream.event in ("cycles", "cpu-clock")
    ready = time.time()
    time.sleep(1.5)
    proc.stdin.close()  # the run is over
    windows = [w for w in (stream.feed(line.rstrip("\n")) for line in proc.stdout) if w]
    assert proc.wait(timeout=60) == 0
    assert windows and sum(w.samples for w in windows) > 0
    assert stream.first is not None and abs(stream.first - ready) < 1.0  # same clock, enabled
    assert list(tmp_path.iterdir()) == []  # its recording removed
