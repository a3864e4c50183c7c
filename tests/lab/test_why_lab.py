"""`abtui run --alternate … --profile` on the lab: TSO off against on (software segmentation
on the sender's path instead of none) names the segmentation and transmit frames as moved
up, with intervals that exclude zero, the counters name the packets processed per second as
risen (each segment a packet of its own), and every export carries the table: the report's Why
section, JSON's "why", the CSV table and the HTML report's differential flame graph. Real
sshd, iperf3, ethtool and perf in namespaces."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
import xml.dom.minidom
from pathlib import Path

import pytest

from abtui.lab.netns import Lab
from abtui.sessions.session import Session

pytestmark = [pytest.mark.lab, pytest.mark.usefixtures("no_strays")]

# frames that only software segmentation, or the per-segment transmit path it feeds, runs
SEGMENTATION = {"skb_segment", "tcp_gso_segment", "inet_gso_segment", "__skb_gso_segment",
                "skb_mac_gso_segment", "__dev_queue_xmit", "ip_finish_output2",
                "validate_xmit_skb", "dev_hard_start_xmit", "veth_xmit", "__tcp_transmit_skb"}


def _export(out: Path, *args: str) -> str:
    return subprocess.run([sys.executable, "-m", "abtui", "export", str(out), *args],
                          capture_output=True, text=True, check=True, timeout=60).stdout


@pytest.mark.skipif(shutil.which("perf") is None, reason="perf is not installed (linux-perf)")
# an alternation of 12 stretches, 2-6 minutes at load 10-15 (each run ends with the host's
# fold of its profile, seconds a run: abtui.remote.profiling); tests/unit/reports/test_why.py
# and tests/ui/test_alternation_why.py keep the rule and the panel in the default tier
@pytest.mark.slow
@pytest.mark.timeout(660)
def test_tso_off_moves_the_segmentation_frames_up(lab: Lab, tmp_path: Path) -> None:
    out = tmp_path / "tso.jsonl"
    proc = subprocess.run([sys.executable, "-m", "abtui", "run", str(lab.profile_path),
                           "--headless", "--alternate", "tso=on,off", "--every", "3",
                           "--max-runs", "12", "--profile", "--out", str(out)],
                          capture_output=True, text=True, timeout=600)
    assert proc.returncode in (0, 1), proc.stderr
    assert "why A " in proc.stderr, proc.stderr
    session = Session.load(out)
    assert session.profiled, "no profile window was recorded"
    rows = session.why_rows
    up = [r for r in rows if r["moved"] and r["delta"] > 0 and r["frame"] in SEGMENTATION]
    assert up, "\n".join(f"{r['frame']} {r['kind']} {r['delta']} [{r['low']}, {r['high']}]"
                         for r in rows[:20])
    assert all(r["low"] > 0 for r in up)
    assert all(r["machine"] for r in rows)  # namespace hosts: the machine's profile, said
    # the why in counters: every segment is a packet of its own without TSO
    processed = [c for c in session.why_counters if c["counter"] == "softnet.processed"]
    assert processed and processed[0]["moved"] and processed[0]["pct"] > 0, \
        session.why_counters[:5]
    report = _export(out)
    assert "## Why (profiles)" in report and "the whole machine's" in report
    assert "### Counters (a second)" in report
    doc = json.loads(_export(out, "--format", "json"))
    assert doc["why"] and {"frame", "kind", "delta", "low", "high", "moved"} <= set(doc["why"][0])
    assert doc["why_counters"] and "pct" in doc["why_counters"][0]
    csv_text = _export(out, "--format", "csv", "--table", "why")
    assert csv_text.splitlines()[0].startswith("pair,host,value,base,frame,kind")
    page = _export(out, "--format", "html")
    start, end = page.index("<svg"), page.index("</svg>") + len("</svg>")
    svg = xml.dom.minidom.parseString(page[start:end])
    assert any(r.getAttribute("fill").startswith("rgb(230") for r in
               svg.getElementsByTagName("rect")), "no frame coloured as grown"
