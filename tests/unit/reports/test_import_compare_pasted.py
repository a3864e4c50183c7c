"""Issue 8: logs pasted into mail (BEFORE/AFTER, multi-stream [SUM] lines) become sessions that
`abtui compare` puts side by side, with the right speedup."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path


def _pasted_log(sum_gbits: list[float]) -> str:
    """An iperf3 -P 2 client log as pasted in a mail: stream lines, [SUM] lines, summary."""
    lines = ["Connecting to host 198.18.1.2, port 5201",
             "[  5] local 198.18.1.1 port 40000 connected to 198.18.1.2 port 5201",
             "[  7] local 198.18.1.1 port 40002 connected to 198.18.1.2 port 5201",
             "[ ID] Interval           Transfer     Bitrate         Retr  Cwnd"]
    total_bytes = 0.0
    for i, g in enumerate(sum_gbits):
        half_bytes = g * 1e9 / 8 / 2
        total_bytes += 2 * half_bytes
        for sid in (5, 7):
            lines.append(f"[  {sid}]   {i}.00-{i + 1}.00   sec  {half_bytes / 2**30:.2f} GBytes  "
                         f"{g / 2:.2f} Gbits/sec    0    512 KBytes")
        lines.append(f"[SUM]   {i}.00-{i + 1}.00   sec  {2 * half_bytes / 2**30:.2f} GBytes  "
                     f"{g:.2f} Gbits/sec    0")
        lines.append("- - - - - - - - - - - - - - - - - - - - - - - - -")
    n = len(sum_gbits)
    mean = sum(sum_gbits) / n
    lines += ["[ ID] Interval           Transfer     Bitrate         Retr",
              f"[SUM]   0.00-{n}.00   sec  {total_bytes / 2**30:.2f} GBytes  {mean:.2f} Gbits/sec"
              "    0             sender",
              f"[SUM]   0.00-{n}.04   sec  {total_bytes / 2**30:.2f} GBytes  {mean:.2f} Gbits/sec"
              "                  receiver", "", "iperf Done."]
    return "\n".join(lines) + "\n"


def _abtui(*args: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "abtui", *args], capture_output=True, text=True,
                          cwd=cwd, timeout=120)


def test_pasted_before_after_logs_compare_with_the_right_speedup(tmp_path: Path) -> None:
    before = tmp_path / "before.txt"
    after = tmp_path / "after.txt"
    before.write_text(_pasted_log([1.00, 1.10, 0.90, 1.00]))   # mean 1.00 Gbit/s
    after.write_text(_pasted_log([1.40, 1.50, 1.30, 1.56]))    # mean 1.44 Gbit/s: +44 %
    sessions = tmp_path / "sessions"
    for name, log in (("before", before), ("after", after)):
        out = _abtui("import", "--sessions-dir", str(sessions), "--session", name,
                     "--pair", f"wg@tunnel=wireguard:{log}", cwd=tmp_path)
        assert out.returncode == 0, out.stderr
    cmp = _abtui("compare", "--sessions-dir", str(sessions), "before", "after", "--format",
                 "json", cwd=tmp_path)
    assert cmp.returncode == 0, cmp.stderr
    rows = json.loads(cmp.stdout)["rows"]
    assert len(rows) == 1
    row = rows[0]
    assert row["pair"] == "wg" and row["config"] == {"tunnel": "wireguard"}
    assert row["config_label"] == "tunnel=wireguard"
    assert abs(row["delta_pct"] - 44.0) < 0.5
    md = _abtui("compare", "--sessions-dir", str(sessions), "before", "after", cwd=tmp_path)
    assert md.returncode == 0 and "+44" in md.stdout


def test_pair_without_session_is_bad_input(tmp_path: Path) -> None:
    out = _abtui("import", "--pair", "a:x.txt", cwd=tmp_path)
    assert out.returncode == 2
    assert out.stderr.count("\n") == 1 and "--session" in out.stderr
