"""SSH destinations as profiles write them (`user@host:port`): taken apart by one rule, given
to asyncssh as its username and port, the ssh_config Host block of the host still applying."""

from __future__ import annotations

import asyncssh
import pytest

from abtui.core.destination import Destination, parse_destination
from abtui.core.errors import Invalid, RemoteError
from abtui.profile import fields
from abtui.remote import link as link_module
from abtui.remote.link import HostLink


@pytest.mark.parametrize(("text", "want"), [
    ("lab-a-snd", Destination("lab-a-snd", "lab-a-snd")),
    ("root@patched-sender", Destination("root@patched-sender", "patched-sender", "root")),
    ("patched-receiver:2222", Destination("patched-receiver:2222", "patched-receiver",
                                          None, 2222)),
    ("ops@198.19.255.11:22", Destination("ops@198.19.255.11:22", "198.19.255.11", "ops", 22)),
    ("fe80::1", Destination("fe80::1", "fe80::1")),
    ("root@[2001:db8::7]:2200", Destination("root@[2001:db8::7]:2200", "2001:db8::7", "root",
                                            2200)),
])
def test_destinations_are_taken_apart(text, want):
    assert parse_destination(text) == want
    assert fields.host(text) == text  # the profile keeps the string as written


@pytest.mark.parametrize(("text", "why"), [
    ("", "empty"), ("@host", "user ''"), ("ro ot@host", "user 'ro ot'"),
    ("host:", "no port"), ("host:99999", "port '99999'"), ("host:22x", "port '22x'"),
    ("host:²", "port '²'"), ("-oProxyCommand=x", "host '-oProxyCommand=x'"),
    ("root@[::1", "not valid"), ("[::1]x", "not valid"), ("a@b@c", "user 'a@b'"),
])
def test_bad_destinations_say_what_and_what_is_expected(text, why):
    with pytest.raises(ValueError, match="expected") as bad:
        parse_destination(text)
    assert why in str(bad.value)
    with pytest.raises(Invalid):
        fields.host(text)


async def test_the_link_gives_asyncssh_the_user_and_port_and_the_host_for_ssh_config(
        monkeypatch, tmp_path):
    """Before: the whole `root@host:2222` went to asyncssh as a host name ("Name or service
    not known"). Now asyncssh gets host, username and port; ssh_config is matched on host."""
    seen = []

    async def connect(host, **kwargs):
        seen.append((host, {k: kwargs.get(k) for k in ("username", "port", "config")}))
        raise OSError("stop here")

    monkeypatch.setattr(link_module.asyncssh, "connect", connect)
    config = str(tmp_path / "ssh_config")
    for text, want in [("root@snd:2222", ("snd", "root", 2222)), ("snd", ("snd", None, None)),
                       ("rcv:2200", ("rcv", None, 2200))]:
        link = HostLink(text, ssh_config=config, reconnect=False)
        with pytest.raises(RemoteError, match=f"^{text}: cannot reach {text}: stop here"):
            await link.connect()
        host, kw = seen.pop()
        assert (host, kw["username"], kw["port"]) == want and kw["config"] == [config]
        assert link.alias == text


async def test_a_bad_destination_is_a_reason_not_to_connect():
    link = HostLink("root@host:http", reconnect=False)
    with pytest.raises(RemoteError, match=r"^root@host:http: port 'http' in"):
        await link.connect()


def test_ssh_config_is_read_for_the_host_part(tmp_path):
    """`user@alias:port`: the known_hosts files come from alias's Host block."""
    config = tmp_path / "ssh_config"
    config.write_text(f"Host snd\n  HostName 127.0.0.1\n  UserKnownHostsFile {tmp_path}/kh\n")
    assert HostLink("root@snd:2222", ssh_config=str(config)).known_hosts_files() == \
        [f"{tmp_path}/kh"]


def test_a_new_key_on_another_port_is_recorded_as_ssh_does(tmp_path):
    """known_hosts lists a host on another port than 22 as `[host]:port` (asyncssh matches
    it so); on port 22, as the bare host."""
    known = tmp_path / "known_hosts"
    known.write_text("")
    link = HostLink("root@snd:2222", known_hosts=str(known), accept_new_host_keys=True)
    key = asyncssh.generate_private_key("ssh-ed25519")
    assert link.host_keys.judge("snd", "127.0.0.1", 2222, key)
    assert link.host_keys.judge("rcv", "127.0.0.2", 22, key)
    names = [line.split()[0] for line in known.read_text().splitlines()]
    assert names == ["[snd]:2222", "rcv"]
    trusted = asyncssh.import_known_hosts(known.read_text())
    assert trusted.match("snd", "127.0.0.1", 2222)[0] and \
        not trusted.match("snd", "127.0.0.1", None)[0]
