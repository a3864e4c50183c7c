"""The ciphers a link offers: AES-GCM first (one OpenSSL call a packet; asyncssh's
chacha20-poly1305 is several Python-level calls), nothing asyncssh would not offer anyway,
and an ssh_config `Ciphers` line still deciding."""

from __future__ import annotations

from pathlib import Path

import asyncssh

from abtui.remote.link import HostLink


def _offered(link: HostLink) -> list[bytes]:
    opts = link._options()
    opts.pop("client_factory")
    return list(asyncssh.SSHClientConnectionOptions(host=link.destination.host,
                                                    **opts).encryption_algs)


def test_aes_gcm_is_offered_first_then_asyncssh_defaults(tmp_path: Path) -> None:
    config = tmp_path / "ssh_config"
    config.write_text("Host h\n  Port 22\n")
    offered = _offered(HostLink("h", ssh_config=str(config), connect_timeout=1))
    assert offered[:3] == [b"aes128-gcm@openssh.com", b"aes256-gcm@openssh.com",
                           b"chacha20-poly1305@openssh.com"]
    defaults = asyncssh.encryption.get_default_encryption_algs()
    assert sorted(offered) == sorted(defaults)


def test_the_ssh_configs_ciphers_still_decide(tmp_path: Path) -> None:
    config = tmp_path / "ssh_config"
    config.write_text("Host h\n  Ciphers chacha20-poly1305@openssh.com\n")
    offered = _offered(HostLink("h", ssh_config=str(config), connect_timeout=1))
    assert offered == [b"chacha20-poly1305@openssh.com"]
