"""Hostile keys and values fed to every command builder, and what survives validation run
on a real lab host: nothing may execute (no marker file appears)."""

from __future__ import annotations

import secrets
from pathlib import Path

import pytest

from abtui.core.errors import AbtuiError, KnobRefused
from abtui.core.model import Knob, KnobKind
from abtui.hosts.knobs import KnobManager, Target
from abtui.lab.netns import Lab
from abtui.remote.facts import facts_command
from abtui.remote.link import HostLink
from abtui.remote.os.dialect import Setting
from abtui.remote.os.freebsd.knobs import FreeBSD
from abtui.remote.os.linux.knobs import Linux
from abtui.remote.os.pick import tunnels_for

LINUX = tunnels_for("linux")

pytestmark = pytest.mark.lab


def _hostile(marker: str) -> list[str]:
    touch = f"touch {marker}"
    return [f"; {touch}", f"$({touch})", f"`{touch}`", f"\n{touch}", f"'; {touch}; '",
            f'"; {touch}; "', f"-- ; {touch}", f"--x=$({touch})", f"| {touch}", f"&& {touch}",
            f"$( {touch} )\t", f"\\$({touch})", f"1 2 $({touch}) 3", f"${{IFS}}{touch}"]


async def test_nothing_hostile_executes_on_a_host(lab: Lab):
    marker = f"/tmp/PWNED-{secrets.token_hex(4)}"
    alias = lab.hosts(1)[0].alias
    link = HostLink(alias, ssh_config=str(lab.ssh_config))
    await link.connect()
    ran, rejected = 0, 0
    try:
        commands: list[str] = []
        for dialect in (Linux(), Linux(fast_sysctl=False), FreeBSD()):
            for value in _hostile(marker):
                for s in (Setting(KnobKind.SYSCTL, "net.ipv4.tcp_syn_retries"),
                          Setting(KnobKind.ETHTOOL_FEATURE, "tso", "data0"),
                          Setting(KnobKind.ETHTOOL_COALESCE, "rx-usecs", "data0"),
                          Setting(KnobKind.MTU, "mtu", "data0"),
                          Setting(KnobKind.SYSCTL, value),            # hostile keys
                          Setting(KnobKind.ETHTOOL_FEATURE, value, "data0"),
                          Setting(KnobKind.MTU, "mtu", value)):       # hostile devices
                    for build in (lambda s=s, d=dialect: d.read_command(s),
                                  lambda s=s, d=dialect, v=value: d.write_command(s, v)):
                        try:
                            commands.append(build())
                        except AbtuiError:
                            rejected += 1
        for value in _hostile(marker):
            for build in (lambda v=value: facts_command(v), lambda v=value: LINUX.verify(v),
                          lambda v=value: LINUX.down({"type": "vxlan", "ifname": v})):
                try:
                    commands.append(build())
                except AbtuiError:
                    rejected += 1
        for command in commands:
            await link.run(command)
            ran += 1
        # and through the knob manager, as the UI would send a typed value
        manager = KnobManager({alias: link}, {alias: Linux()})
        for value in _hostile(marker):
            for knob in (Knob("k", KnobKind.SYSCTL, (), key="net.ipv4.tcp_syn_retries"),
                         Knob("k", KnobKind.SYSCTL, (), key=value)):
                with pytest.raises(KnobRefused):
                    await manager.apply(knob, value, [Target(alias, None, "A")])
    finally:
        await manager.restore_all()
        await link.close()
    assert ran > 100 and rejected > 100
    assert not Path(marker).exists(), "a hostile value was executed"
