"""Dialects: commands built from validated, quoted input; FreeBSD replies parsed."""

from __future__ import annotations

import shlex
import shutil
import subprocess

import pytest

from abtui.core.errors import BadInput
from abtui.core.model import KnobKind
from abtui.remote.checks import validate_sysctl_key
from abtui.remote.os.dialect import Setting, same_value
from abtui.remote.os.freebsd.knobs import (
    FreeBSD,
    parse_freebsd_pciconf,
    parse_ifconfig_options,
    parse_sysctl_change,
)
from abtui.remote.os.linux.knobs import Linux, parse_ethtool_coalesce, parse_ethtool_feature
from abtui.remote.os.pick import dialect_for
from abtui.remote.refusals import (
    EXIT_UNKNOWN,
    EXIT_WRITE,
    READ_ONLY,
    UNKNOWN_KEY,
    classify_error,
    reason_line,
)


def _unwrap(command: str) -> str:
    """A dialect command is a shell function defined and called at once: its body."""
    assert command.startswith("abtui_do() {\n") and command.endswith("\n}; abtui_do")
    return command.removeprefix("abtui_do() {\n").removesuffix("\n}; abtui_do")


SYSCTL = KnobKind.SYSCTL
FEATURE = KnobKind.ETHTOOL_FEATURE
COALESCE = KnobKind.ETHTOOL_COALESCE

IFCONFIG_IX = """\
ix2: flags=1008843<UP,BROADCAST,RUNNING,SIMPLEX,MULTICAST,LOWER_UP> metric 0 mtu 9000
\toptions=4e538bb<RXCSUM,TXCSUM,VLAN_MTU,VLAN_HWTAGGING,JUMBO_MTU,VLAN_HWCSUM,TSO4,LRO,WOL_UCAST>
\tether 00:1b:21:aa:bb:cc
\tinet 10.0.0.1 netmask 0xffffff00 broadcast 10.0.0.255
\tmedia: Ethernet autoselect (10Gbase-SR <full-duplex,rxpause,txpause>)
\tstatus: active
"""

PCICONF = """\
ix0@pci0:3:0:0:\tclass=0x020000 rev=0x01 hdr=0x00 vendor=0x8086 device=0x10fb subvendor=0x8086
    vendor     = 'Intel Corporation'
    device     = '82599ES 10-Gigabit SFI/SFP+ Network Connection'
    class      = network
    subclass   = ethernet
ix2@pci0:4:0:0:\tclass=0x020000 rev=0x01 hdr=0x00 vendor=0x8086 device=0x1528
    vendor     = 'Intel Corporation'
    device     = 'Ethernet Controller X540-AT2'
    class      = network
em0@pci0:0:25:0:\tclass=0x020000
    vendor     = 'Intel Corporation'
"""


def test_dialect_detected_from_uname():
    assert dialect_for("Linux\n").name == "linux"
    assert dialect_for("FreeBSD").name == "freebsd"
    with pytest.raises(BadInput, match="Darwin"):
        dialect_for("Darwin")


def test_freebsd_sysctl_commands_and_the_old_to_new_reply():
    d = FreeBSD()
    s = Setting(SYSCTL, "dev.ix.2.enable_aim")
    assert _unwrap(d.read_command(s)) == "sysctl -n dev.ix.2.enable_aim"
    assert _unwrap(d.write_command(s, "2")) == "sysctl dev.ix.2.enable_aim=2"
    assert parse_sysctl_change("dev.ix.2.enable_aim: 0 -> 2\n") == \
        ("dev.ix.2.enable_aim", "0", "2")
    assert d.parse_value(s, "dev.ix.2.enable_aim: 1 -> 2\n") == "2"
    assert d.parse_value(s, "1\n") == "1"  # a read
    # a string value with spaces and an empty old value
    assert parse_sysctl_change("kern.hostname:  -> box one") == ("kern.hostname", "", "box one")
    assert parse_sysctl_change("garbage") is None
    assert parse_sysctl_change("") is None


def test_freebsd_coalescing_is_the_drivers_sysctl():
    d = FreeBSD()
    s = Setting(COALESCE, "dev.ix.2.enable_aim", "ix2")
    assert _unwrap(d.write_command(s, "on")) == "sysctl dev.ix.2.enable_aim=1"
    assert _unwrap(d.write_command(s, "off")) == "sysctl dev.ix.2.enable_aim=0"
    assert _unwrap(d.write_command(s, "2")) == "sysctl dev.ix.2.enable_aim=2"
    with pytest.raises(BadInput, match=r"os_keys\.freebsd"):
        _unwrap(d.read_command(Setting(COALESCE, "adaptive-rx", "ix2")))


def test_freebsd_ifconfig_capabilities():
    d = FreeBSD()
    tso = Setting(FEATURE, "tso", "ix2")
    assert _unwrap(d.read_command(tso)) == "ifconfig ix2"
    assert _unwrap(d.write_command(tso, "off")) == "ifconfig ix2 -tso && ifconfig ix2"
    assert _unwrap(d.write_command(tso, "on")) == "ifconfig ix2 tso && ifconfig ix2"
    assert _unwrap(d.write_command(Setting(FEATURE, "rx", "ix2"), "off")) == \
        "ifconfig ix2 -rxcsum && ifconfig ix2"
    assert parse_ifconfig_options(IFCONFIG_IX) >= {"TSO4", "LRO", "RXCSUM"}
    assert d.parse_value(tso, IFCONFIG_IX) == "on"
    assert d.parse_value(Setting(FEATURE, "txcsum6", "ix2"), IFCONFIG_IX) == "off"
    assert d.parse_value(tso, "no options here") is None
    assert d.parse_value(Setting(KnobKind.MTU, "mtu", "ix2"), IFCONFIG_IX) == "9000"
    assert _unwrap(d.write_command(Setting(KnobKind.MTU, "mtu", "ix2"), "1500")) == \
        "ifconfig ix2 mtu 1500 && ifconfig ix2"
    with pytest.raises(BadInput, match="capability"):
        _unwrap(d.write_command(Setting(FEATURE, "gro", "ix2"), "on"))


def test_freebsd_pciconf_block_of_the_device():
    assert parse_freebsd_pciconf(PCICONF, "ix2") == {
        "vendor": "Intel Corporation", "device": "Ethernet Controller X540-AT2",
        "class": "network"}
    assert parse_freebsd_pciconf(PCICONF, "ix9") == {}
    assert parse_freebsd_pciconf("", "ix2") == {}


@pytest.mark.parametrize(("stderr", "why"), [
    ("sysctl: unknown oid 'dev.ix.9.enable_aim'", UNKNOWN_KEY),
    ("sysctl: oid 'kern.ostype' is read only", READ_ONLY),
    ("sysctl: dev.ix.2.enable_aim=x: Operation not permitted", "permission denied"),
    ("sysctl: invalid integer 'abc'", "invalid value"),
    ("netlink error: bit name not found (offset 56)", UNKNOWN_KEY),
    ("Actual changes:\nrx-lro: off [requested on]\nCould not change any device features",
     READ_ONLY),
    ("netlink error: Operation not supported", "not supported by the device"),
    ("bash: printf: write error: Invalid argument", "invalid value"),
    # the key exists (checked first): ENOENT is the kernel's "no such value", not the key's
    ("main: line 85: printf: write error: No such file or directory", "invalid value"),
    ('sysctl: setting key "net.ipv4.tcp_congestion_control": No such file or directory',
     "invalid value"),
    ("bash: line 3: printf: write error: Operation not permitted", "permission denied"),
    ("sysctl: cannot stat /proc/sys/net/ipv4/nope: No such file or directory", UNKNOWN_KEY),
])
def test_refusals_are_classified(stderr, why):
    assert classify_error(stderr, 1) == why


@pytest.mark.parametrize("stderr", [
    "main: line 85: printf: write error: No such file or directory\n",
    "dash: 3: printf: printf: I/O error\n",
    'sysctl: setting key "net.ipv4.tcp_congestion_control": No such file or directory\n'])
def test_a_refused_congestion_control_says_why_and_what_is_allowed(stderr):
    """`--set cc=nosuchcc`: one line that says the kernel refused the value and lists what
    the host allows (the write prints net.ipv4.tcp_allowed_congestion_control on failure),
    never bash's "printf: write error" as an unknown key."""
    allowed = "net.ipv4.tcp_allowed_congestion_control: reno bbr\n"
    line = reason_line(stderr + allowed, EXIT_WRITE)
    errno = "I/O error" if "dash" in stderr else "No such file or directory"
    assert line.endswith(f"the kernel refused it ({errno}); "
                         "net.ipv4.tcp_allowed_congestion_control: reno bbr")
    assert "printf" not in line and UNKNOWN_KEY not in line and "\n" not in line
    s = Setting(SYSCTL, "net.ipv4.tcp_congestion_control")
    for dialect in (Linux(), Linux(fast_sysctl=False)):
        body = _unwrap(dialect.write_command(s, "nosuchcc"))
        assert "/proc/sys/net/ipv4/tcp_allowed_congestion_control" in body
        assert f"return {EXIT_WRITE}" in body


def test_an_unknown_key_is_said_once():
    # our script says `unknown key <key>` and exits EXIT_UNKNOWN: the line said it twice
    assert reason_line("unknown key net.ipv4.nope\n", EXIT_UNKNOWN) == \
        "unknown key net.ipv4.nope"
    assert reason_line("sysctl: cannot stat /proc/sys/net/ipv4/nope\n", 1) == \
        "unknown key: sysctl: cannot stat /proc/sys/net/ipv4/nope"


def test_linux_sysctl_through_proc_and_classic():
    fast, slow = Linux(), Linux(fast_sysctl=False)
    s = Setting(SYSCTL, "net.ipv4.conf.eth0/1.rp_filter")
    assert Linux.proc_path(s.key) == "/proc/sys/net/ipv4/conf/eth0.1/rp_filter"
    assert "/proc/sys/net/ipv4/conf/eth0.1/rp_filter" in _unwrap(fast.read_command(s))
    assert _unwrap(slow.read_command(s)) == "sysctl -n net.ipv4.conf.eth0/1.rp_filter"
    assert _unwrap(slow.write_command(s, "2")) == ("sysctl -w net.ipv4.conf.eth0/1.rp_filter=2 "
                                          ">/dev/null && sysctl -n net.ipv4.conf.eth0/1.rp_filter")
    assert fast.parse_value(s, "4096\t16384\t65536\n") == "4096\t16384\t65536"
    assert same_value("4096\t16384\t65536", "4096 16384 65536")
    assert not same_value("1", None)


def test_swap_reads_then_writes_in_one_command():
    d = FreeBSD()
    s = Setting(SYSCTL, "dev.ix.2.enable_aim")
    assert _unwrap(d.swap_command(s, "1")) == (
        "{ sysctl -n dev.ix.2.enable_aim\n} || return $?; echo __ABTUI_SWAP__; "
        "sysctl dev.ix.2.enable_aim=1")
    assert d.parse_swap(s, "0\n__ABTUI_SWAP__\ndev.ix.2.enable_aim: 0 -> 1\n") == ("0", "1")
    assert d.parse_swap(s, "0\n") == ("0", None)
    assert d.parse_swap(s, "") == (None, None)


def test_linux_ethtool_parsers():
    out = ("Features for data0:\ntcp-segmentation-offload: on\n\ttx-tcp-segmentation: on\n"
           "large-receive-offload: off [fixed]\n")
    assert parse_ethtool_feature(out, "tcp-segmentation-offload") == "on"
    assert parse_ethtool_feature(out, "large-receive-offload") == "off"
    assert parse_ethtool_feature(out, "nope") is None
    co = "Coalesce parameters for eth0:\nAdaptive RX: on  TX: off\nrx-usecs: 50\nrx-frames: n/a\n"
    assert parse_ethtool_coalesce(co, "adaptive-rx") == "on"
    assert parse_ethtool_coalesce(co, "adaptive-tx") == "off"
    assert parse_ethtool_coalesce(co, "rx-usecs") == "50"
    assert parse_ethtool_coalesce("", "adaptive-rx") is None
    d = Linux()
    assert _unwrap(d.write_command(Setting(COALESCE, "adaptive-rx", "eth0"), "1")).startswith(
        "ethtool -C eth0 adaptive-rx on;")
    assert _unwrap(d.write_command(Setting(FEATURE, "tso", "data0"), "off")) == \
        "ethtool -K data0 tso off && ethtool -k data0"


@pytest.mark.parametrize("key", [
    "", "-a", "--help", ".net", "net..ipv4", "net/../../etc", "a;b", "a b", "a$(x)", "a`x`",
    "net.ipv4\n.x", "net.'x'", "a/./b", "/etc/passwd", "a.", "a./.b"])
def test_bad_sysctl_keys_are_rejected(key):
    with pytest.raises(BadInput):
        validate_sysctl_key(key)


def test_good_sysctl_keys_pass():
    for key in ("net.ipv4.tcp_wmem", "dev.ix.2.%desc", "net.ipv4.conf.eth0/1.rp_filter",
                "kern.ipc.maxsockbuf", "net.core.rmem-max"):
        assert validate_sysctl_key(key) == key


HOSTILE = ["; touch /tmp/PWNED", "$(touch /tmp/PWNED)", "`touch /tmp/PWNED`", "a\nb",
           "'; touch /tmp/PWNED; '", '"$(id)"', "--help", "-w", "x|y", "a&&b", "\\", "\x00"]


@pytest.mark.parametrize("dialect", [Linux(), Linux(fast_sysctl=False), FreeBSD()])
@pytest.mark.parametrize("value", HOSTILE)
def test_hostile_values_are_rejected_or_stay_one_word(dialect, value):
    """Every builder: a hostile value is refused, or is a single literal shell word."""
    for s in (Setting(SYSCTL, "net.ipv4.tcp_wmem"), Setting(FEATURE, "tso", "data0"),
              Setting(KnobKind.MTU, "mtu", "data0")):
        try:
            cmd = dialect.write_command(s, value)
        except BadInput:
            continue
        assert value in shlex.split(cmd) or f"{s.key}={value}" in shlex.split(cmd)


@pytest.mark.parametrize("device", ["-eth0", "eth0; reboot", "$(x)", "a" * 16, "", "e th"])
def test_hostile_devices_are_rejected(device):
    for dialect in (Linux(), FreeBSD()):
        with pytest.raises(BadInput):
            dialect.read_command(Setting(FEATURE, "tso", device))


@pytest.mark.parametrize("dialect", [Linux(), FreeBSD()])
def test_a_swap_is_built_once_per_setting_and_value(dialect, monkeypatch):
    """A flip between two values builds each swap command once (8 us of the client's CPU a
    host on a knob flip's path), not on every flip; each is the text built fresh."""
    s = Setting(SYSCTL, "net.ipv4.tcp_syn_retries")
    fresh = {v: type(dialect)().swap_command(s, v) for v in ("5", "6")}
    built = []
    swap_body = type(dialect).swap_body
    monkeypatch.setattr(type(dialect), "swap_body",
                        lambda self, s, value: (built.append(value), swap_body(self, s, value))[1])
    for n in range(10):
        v = ("5", "6")[n % 2]
        assert dialect.swap_command(s, v) == fresh[v]
    assert sorted(built) == ["5", "6"]


@pytest.mark.parametrize("shell", ["bash", "dash"])
def test_a_sysctl_swap_prints_before_mark_and_after_as_the_read_and_write_did(
        shell, tmp_path, monkeypatch):
    """Linux's sysctl swap (one existence test, the value before and the mark in one write)
    run by a real shell on a file standing for /proc/sys: what it prints parses as the read
    and the write's did; a key that is not there is said once, status EXIT_UNKNOWN, nothing
    printed on stdout."""
    if shutil.which(shell) is None:
        pytest.skip(f"no {shell} here")
    d = Linux()
    monkeypatch.setattr(Linux, "proc_path", staticmethod(lambda key: str(tmp_path / key)))
    (tmp_path / "net.x").write_text("4096\t16384\n")
    s = Setting(SYSCTL, "net.x")

    def run(command: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run([shell, "-c", command], capture_output=True, text=True,
                              timeout=10, check=False)

    done = run(d.swap_command(s, "4096 32768"))
    assert (done.returncode, done.stdout, done.stderr) == \
        (0, "4096\t16384\n__ABTUI_SWAP__\n4096 32768\n", "")
    assert d.parse_swap(s, done.stdout) == ("4096\t16384", "4096 32768")
    gone = run(d.swap_command(Setting(SYSCTL, "net.gone"), "1"))
    assert (gone.returncode, gone.stdout, gone.stderr) == \
        (EXIT_UNKNOWN, "", "unknown key net.gone\n")
    assert d.parse_swap(s, gone.stdout) == (None, None)
