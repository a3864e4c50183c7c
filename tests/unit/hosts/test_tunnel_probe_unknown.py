"""A host whose OS is not known (it did not answer when abtui connected) is said to be that,
not an OS abtui cannot make tunnels on: the refusal of `--set tunnel=ipsec` on a guest still
booting read `abtui makes tunnels on Linux and FreeBSD hosts only`."""

from __future__ import annotations

from types import SimpleNamespace

from abtui.hosts.tunnels import probe_host


async def test_an_unknown_os_is_said_as_unknown_and_another_os_as_unsupported() -> None:
    link = SimpleNamespace(alias="h")
    unknown = await probe_host(link, None)  # type: ignore[arg-type]
    assert unknown["none"] == "yes"
    assert unknown["ipsec"] == "no: the host's OS is not known (it did not answer when connecting)"
    other = await probe_host(link, SimpleNamespace(name="windows", tunnels=None))  # type: ignore[arg-type]
    assert other["ipsec"] == "no: abtui makes tunnels on Linux and FreeBSD hosts only"
