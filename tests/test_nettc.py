"""slacknet.nettc and ``slacknet net tc``: the byte limits are the simulator's, the marking is
DSCP CSk, the commands are pinned, bad input is one clear line with exit status 2, and (as root,
where network namespaces work) the configuration applies to a veth pair and classifies packets."""

from __future__ import annotations

import json
import os
import re
import shutil
import socket
import subprocess
import sys
import uuid
from pathlib import Path
from typing import Iterator

import pytest

import slacknet
from slacknet import nettc
from slacknet.cli import main
from slacknet.config import Scenario
from slacknet.nettc import Command, TcApplyError, TcConfig, TcConfigError

# ---------------------------------------------------------------------------------------------
# Marking


def test_class_k_is_dscp_class_selector_csk() -> None:
    assert [nettc.dscp_of_class(k) for k in range(8)] == [0, 8, 16, 24, 32, 40, 48, 56]
    assert [nettc.tos_of_class(k) for k in range(8)] == [0x00, 0x20, 0x40, 0x60, 0x80, 0xA0, 0xC0, 0xE0]
    assert nettc.DSCP_MASK == 0xFC
    for k in range(8):
        tos = nettc.tos_of_class(k)
        assert tos & ~nettc.DSCP_MASK == 0, "the ECN bits stay clear"
        for ecn in range(4):  # Not-ECT, ECT(1), ECT(0), CE: the class does not change
            assert nettc.class_of_tos(tos | ecn) == k
    # DSCPs that are no class selector (AF11, EF) are nobody's class: they go to class 0.
    assert nettc.class_of_tos(10 << 2) is None and nettc.class_of_tos(46 << 2) is None
    with pytest.raises(ValueError):
        nettc.dscp_of_class(8)
    with pytest.raises(ValueError):
        nettc.dscp_of_class(-1)


# ---------------------------------------------------------------------------------------------
# Byte limits: the simulator's arithmetic


def _simulator_caps(tmp_path: Path, mtu: int, buffer_bytes: int) -> list[int]:
    """The caps the simulator gives the ``netapprox_slack`` queues (expanded by Rust), with the
    default transport's 40-byte header making ``mtu``."""
    sc = Scenario(
        topology=slacknet.FatTreeTopology(k=4, rate_gbps=10),
        transport=slacknet.DctcpTransport(mss_bytes=mtu - 40),
        switch=slacknet.SwitchSpec(buffer_bytes=buffer_bytes, queues="netapprox_slack"),
    )
    caps = [q.cap_bytes for q in sc.resolve(tmp_path).switch.queue_list()]
    assert all(c is not None for c in caps)
    return [int(c) for c in caps if c is not None]


@pytest.mark.parametrize(
    ("mtu", "buffer_bytes"),
    [(1500, 1_500_000), (1500, 1_500_777), (9000, 1_500_000), (1500, 29 * 1500), (1024, 100_000)],
)
def test_caps_are_the_simulators(tmp_path: Path, mtu: int, buffer_bytes: int) -> None:
    sim = _simulator_caps(tmp_path, mtu, buffer_bytes)
    assert nettc.slack_cap_bytes(8, mtu, buffer_bytes) == sim
    plan = TcConfig("eth0", mtu=mtu, buffer_bytes=buffer_bytes).classes_plan()
    assert [c.cap_bytes for c in plan] == sim
    assert [c.num_packets for c in plan[1:]] == [7, 6, 5, 4, 3, 2, 1]


def test_both_refuse_a_buffer_without_one_mtu_for_class_0(tmp_path: Path) -> None:
    for mtu in (1500, 9000):
        smallest = 29 * mtu  # 28 MTU for classes 1-7, one for class 0
        assert _simulator_caps(tmp_path, mtu, smallest)[0] == mtu
        with pytest.raises(slacknet.SpecError):
            _simulator_caps(tmp_path, mtu, smallest - 1)
        assert nettc.slack_cap_bytes(8, mtu, smallest - 1) is None
        with pytest.raises(TcConfigError, match=f"give at least {smallest}"):
            TcConfig("eth0", mtu=mtu, buffer_bytes=smallest - 1)


def test_fewer_classes_by_hand() -> None:
    # 4 classes: class 1 holds 3 MTU, class 2 two, class 3 one; class 0 the rest.
    plan = TcConfig("eth0", classes=4, mtu=1500, buffer_bytes=100_000).classes_plan()
    assert [c.cap_bytes for c in plan] == [100_000 - 6 * 1500, 4500, 3000, 1500]
    assert [c.num_packets for c in plan] == [60, 3, 2, 1]  # 91000 B is 60 full packets and 1000 B
    assert [c.limit_bytes for c in plan] == [91_000 + 60 * 14, 3 * 1514, 2 * 1514, 1514]
    assert nettc.slack_cap_bytes(2, 1500, 3000) == [1500, 1500]
    assert nettc.slack_cap_bytes(2, 1500, 2999) is None


def test_the_bare_helpers_refuse_nonsense() -> None:
    # Called without TcConfig's checks: 0 classes made one class of the whole buffer, an MTU of
    # 0 caps of 0 bytes, a float rate "1.5bit".
    for args, err, match in [((0, 1500, 10**6), ValueError, "classes = 0: must be from 2 to 8"),
                             ((9, 1500, 10**6), ValueError, "classes = 9"),
                             ((4, 0, 10**6), ValueError, "mtu = 0: must be at least 1"),
                             ((4, 1500, -1), ValueError, "buffer_bytes = -1"),
                             ((4.0, 1500, 10**6), TypeError, "classes = 4.0: give an integer"),
                             ((4, True, 10**6), TypeError, "mtu = True")]:
        with pytest.raises(err, match=match):
            nettc.slack_cap_bytes(*args)
    with pytest.raises(TypeError, match="bps = 1.5"):
        nettc.format_rate(1.5)  # type: ignore[arg-type]
    assert nettc.format_rate(0) == "0bit" and nettc.format_rate(10**10) == "10gbit"


def test_limits_count_the_link_header_of_every_full_packet() -> None:
    """A qdisc counts a 1500-byte packet as 1514 bytes on Ethernet: each limit holds as many
    full-size packets as the simulator's cap; on a layer-3 device (no header) limits are the caps."""
    eth = TcConfig("eth0").classes_plan()
    assert [c.limit_bytes for c in eth] == [1_471_608, 10_598, 9_084, 7_570, 6_056, 4_542, 3_028, 1_514]
    assert all(c.limit_bytes // 1514 == c.num_packets for c in eth)
    l3 = TcConfig("wg0", link_header_bytes=0).classes_plan()
    assert [c.limit_bytes for c in l3] == [c.cap_bytes for c in l3] == [1_458_000, 10_500, 9_000, 7_500, 6_000,
                                                                        4_500, 3_000, 1_500]


# ---------------------------------------------------------------------------------------------
# The commands


GOLDEN_HTB = """\
set -e
tc qdisc del dev eth0 root 2>/dev/null || true
tc qdisc add dev eth0 root handle 1: htb default 10
tc class add dev eth0 parent 1: classid 1:1 htb rate 10gbit ceil 10gbit burst 15140 cburst 15140 quantum 1514
tc class add dev eth0 parent 1:1 classid 1:10 htb rate 10mbit ceil 10gbit burst 1514 cburst 15140 prio 0 quantum 1514
tc class add dev eth0 parent 1:1 classid 1:11 htb rate 10mbit ceil 10gbit burst 1514 cburst 15140 prio 1 quantum 1514
tc class add dev eth0 parent 1:1 classid 1:12 htb rate 10mbit ceil 10gbit burst 1514 cburst 15140 prio 2 quantum 1514
tc class add dev eth0 parent 1:1 classid 1:13 htb rate 10mbit ceil 10gbit burst 1514 cburst 15140 prio 3 quantum 1514
tc class add dev eth0 parent 1:1 classid 1:14 htb rate 10mbit ceil 10gbit burst 1514 cburst 15140 prio 4 quantum 1514
tc class add dev eth0 parent 1:1 classid 1:15 htb rate 10mbit ceil 10gbit burst 1514 cburst 15140 prio 5 quantum 1514
tc class add dev eth0 parent 1:1 classid 1:16 htb rate 10mbit ceil 10gbit burst 1514 cburst 15140 prio 6 quantum 1514
tc class add dev eth0 parent 1:1 classid 1:17 htb rate 10mbit ceil 10gbit burst 1514 cburst 15140 prio 7 quantum 1514
tc qdisc add dev eth0 parent 1:10 handle 10: bfifo limit 1471608
tc qdisc add dev eth0 parent 1:11 handle 11: bfifo limit 10598
tc qdisc add dev eth0 parent 1:12 handle 12: bfifo limit 9084
tc qdisc add dev eth0 parent 1:13 handle 13: bfifo limit 7570
tc qdisc add dev eth0 parent 1:14 handle 14: bfifo limit 6056
tc qdisc add dev eth0 parent 1:15 handle 15: bfifo limit 4542
tc qdisc add dev eth0 parent 1:16 handle 16: bfifo limit 3028
tc qdisc add dev eth0 parent 1:17 handle 17: bfifo limit 1514
tc filter add dev eth0 parent 1: protocol ip prio 1 u32 match ip dsfield 0x00 0xfc flowid 1:10
tc filter add dev eth0 parent 1: protocol ip prio 1 u32 match ip dsfield 0x20 0xfc flowid 1:11
tc filter add dev eth0 parent 1: protocol ip prio 1 u32 match ip dsfield 0x40 0xfc flowid 1:12
tc filter add dev eth0 parent 1: protocol ip prio 1 u32 match ip dsfield 0x60 0xfc flowid 1:13
tc filter add dev eth0 parent 1: protocol ip prio 1 u32 match ip dsfield 0x80 0xfc flowid 1:14
tc filter add dev eth0 parent 1: protocol ip prio 1 u32 match ip dsfield 0xa0 0xfc flowid 1:15
tc filter add dev eth0 parent 1: protocol ip prio 1 u32 match ip dsfield 0xc0 0xfc flowid 1:16
tc filter add dev eth0 parent 1: protocol ip prio 1 u32 match ip dsfield 0xe0 0xfc flowid 1:17
tc filter add dev eth0 parent 1: protocol ipv6 prio 2 u32 match ip6 priority 0x00 0xfc flowid 1:10
tc filter add dev eth0 parent 1: protocol ipv6 prio 2 u32 match ip6 priority 0x20 0xfc flowid 1:11
tc filter add dev eth0 parent 1: protocol ipv6 prio 2 u32 match ip6 priority 0x40 0xfc flowid 1:12
tc filter add dev eth0 parent 1: protocol ipv6 prio 2 u32 match ip6 priority 0x60 0xfc flowid 1:13
tc filter add dev eth0 parent 1: protocol ipv6 prio 2 u32 match ip6 priority 0x80 0xfc flowid 1:14
tc filter add dev eth0 parent 1: protocol ipv6 prio 2 u32 match ip6 priority 0xa0 0xfc flowid 1:15
tc filter add dev eth0 parent 1: protocol ipv6 prio 2 u32 match ip6 priority 0xc0 0xfc flowid 1:16
tc filter add dev eth0 parent 1: protocol ipv6 prio 2 u32 match ip6 priority 0xe0 0xfc flowid 1:17
"""

GOLDEN_PRIO_4 = """\
set -e
tc qdisc del dev eth0 root 2>/dev/null || true
tc qdisc add dev eth0 root handle 1: prio bands 4 priomap 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0
tc qdisc add dev eth0 parent 1:1 handle 10: bfifo limit 947470
tc qdisc add dev eth0 parent 1:2 handle 11: bfifo limit 27042
tc qdisc add dev eth0 parent 1:3 handle 12: bfifo limit 18028
tc qdisc add dev eth0 parent 1:4 handle 13: bfifo limit 9014
tc filter add dev eth0 parent 1: protocol ip prio 1 u32 match ip dsfield 0x00 0xfc flowid 1:1
tc filter add dev eth0 parent 1: protocol ip prio 1 u32 match ip dsfield 0x20 0xfc flowid 1:2
tc filter add dev eth0 parent 1: protocol ip prio 1 u32 match ip dsfield 0x40 0xfc flowid 1:3
tc filter add dev eth0 parent 1: protocol ip prio 1 u32 match ip dsfield 0x60 0xfc flowid 1:4
tc filter add dev eth0 parent 1: protocol ipv6 prio 2 u32 match ip6 priority 0x00 0xfc flowid 1:1
tc filter add dev eth0 parent 1: protocol ipv6 prio 2 u32 match ip6 priority 0x20 0xfc flowid 1:2
tc filter add dev eth0 parent 1: protocol ipv6 prio 2 u32 match ip6 priority 0x40 0xfc flowid 1:3
tc filter add dev eth0 parent 1: protocol ipv6 prio 2 u32 match ip6 priority 0x60 0xfc flowid 1:4
"""


def _body(script: str) -> str:
    """The script without its shebang and comment header."""
    return "".join(line + "\n" for line in script.splitlines() if not line.startswith("#"))


def test_default_htb_script_is_pinned(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["net", "tc", "--dev", "eth0"]) == 0
    out = capsys.readouterr().out
    assert out.startswith("#!/bin/sh\n# NetApprox's slack-based switch queues")
    assert _body(out) == GOLDEN_HTB
    cfg = TcConfig("eth0")
    assert out == nettc.render_script(nettc.setup_commands(cfg), nettc.header_lines(cfg))
    # The header states, per class, its DSCP, TOS byte, priority and limit.
    header = [line for line in out.splitlines() if line.startswith("#")]
    for c in cfg.classes_plan():
        row = next(h for h in header if re.match(rf"#\s+{c.k}\s+CS{c.k} ", h))
        assert f"({c.dscp})" in row and f"0x{c.tos:02x}" in row and f"{c.limit_bytes} B" in row
        assert row.split()[5] == str(c.k)  # the prio column
    assert "non-approximate" in next(h for h in header if re.match(r"#\s+0\s+CS0 ", h))
    assert "link 10gbit" in out and "each class guaranteed 10mbit" in out


def test_the_script_is_valid_sh_and_idempotent_in_form() -> None:
    cmds = nettc.setup_commands(TcConfig("eth0"))
    assert cmds[0].argv == ("tc", "qdisc", "del", "dev", "eth0", "root") and cmds[0].may_fail
    assert all(not c.may_fail for c in cmds[1:]), "only the initial delete may fail"
    assert all(c.argv[1] != "qdisc" or c.argv[2] in ("del", "add") for c in cmds)
    sh = shutil.which("sh")
    if sh is not None:
        for script in (nettc.render_script(cmds, nettc.header_lines(TcConfig("eth0"))),
                       nettc.render_script(nettc.delete_commands("eth0"))):
            assert subprocess.run([sh, "-n"], input=script, text=True, check=False).returncode == 0


def _options(argv: tuple[str, ...]) -> dict[str, str]:
    """An htb class command's keyword arguments (those after ``htb``)."""
    rest = argv[argv.index("htb") + 1:]
    return dict(zip(rest[::2], rest[1::2]))


@pytest.mark.parametrize(("rate", "bps", "burst"), [("10gbit", 10**10, 15_140), ("100Gbit", 10**11, 125_000),
                                                     ("1mbit", 10**6, 15_140), ("25000000000", 25 * 10**9, 31_250)])
def test_htb_parameters(rate: str, bps: int, burst: int) -> None:
    """The parent runs at the link rate; each leaf has prio k, a guarantee of 1/1000 of the link,
    ceil = the link, a one-frame burst and quantum (no r2q warning), and the parent's cburst:
    10 frames or 10 us at the link rate, whichever is more."""
    cfg = TcConfig("eth0", rate_bps=nettc.parse_rate(rate))
    assert cfg.rate_bps == bps and cfg.burst_bytes() == burst
    classes = [c.argv for c in nettc.setup_commands(cfg) if c.argv[1] == "class"]
    parent, leaves = _options(classes[0]), [_options(a) for a in classes[1:]]
    link = nettc.format_rate(bps)
    assert parent == {"rate": link, "ceil": link, "burst": str(burst), "cburst": str(burst), "quantum": "1514"}
    assert [leaf["prio"] for leaf in leaves] == [str(k) for k in range(8)]
    for leaf in leaves:
        assert leaf["rate"] == nettc.format_rate(bps // 1000) and leaf["ceil"] == link
        assert leaf["burst"] == leaf["quantum"] == "1514" and leaf["cburst"] == str(burst)
        assert 1000 <= int(leaf["quantum"]) <= 200_000, "inside htb's quantum range even if derived"


def test_prio_form_is_pinned(capsys: pytest.CaptureFixture[str]) -> None:
    argv = ["net", "tc", "--dev", "eth0", "--form", "prio", "--classes", "4", "--mtu", "9000",
            "--buffer-bytes", "1000000"]
    assert main(argv) == 0
    out = capsys.readouterr().out
    assert _body(out) == GOLDEN_PRIO_4
    assert "Form prio" in out and "htb" not in _body(out)


def test_netns_commands_use_tc_n() -> None:
    cmds = nettc.setup_commands(TcConfig("va"), netns="ns1") + nettc.delete_commands("va", netns="ns1")
    assert all(c.argv[:3] == ("tc", "-n", "ns1") for c in cmds)


def test_delete_script(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["net", "tc", "--dev", "eth0", "--delete"]) == 0
    assert _body(capsys.readouterr().out) == (
        "set -e\ntc qdisc show dev eth0 >/dev/null\ntc qdisc del dev eth0 root 2>/dev/null || true\n"
    )


@pytest.mark.parametrize(("text", "bps"), [
    ("10gbit", 10**10), ("10Gbit", 10**10), ("10GBIT", 10**10), ("1.5gbit", 1_500_000_000), ("100mbit", 10**8),
    ("2500kbit", 2_500_000), ("1000000", 10**6), ("1000000bit", 10**6), ("1tbit", 10**12), ("1gibit", 2**30),
])
def test_parse_rate_reads_tcs_bit_units(text: str, bps: int) -> None:
    assert nettc.parse_rate(text) == bps


def test_format_rate() -> None:
    assert [nettc.format_rate(r) for r in (10**10, 1_500_000_000, 10**7, 1000, 1234567, 8)] == [
        "10gbit", "1500mbit", "10mbit", "1kbit", "1234567bit", "8bit"]


# ---------------------------------------------------------------------------------------------
# Bad input: one line naming the option, the value and the fix; exit status 2

BAD = {
    "classes_9": (["--classes", "9"], "--classes = 9", "between 2 and 8"),
    "classes_1": (["--classes", "1"], "--classes = 1", "CS0-CS7"),
    "buffer_small": (["--buffer-bytes", "40000"], "--buffer-bytes = 40000", "give at least 43500"),
    "buffer_small_jumbo": (["--mtu", "9000", "--buffer-bytes", "200000"], "--buffer-bytes = 200000",
                           "give at least 261000"),
    "buffer_small_4": (["--classes", "4", "--buffer-bytes", "10000"], "--buffer-bytes = 10000",
                       "give at least 10500"),
    "buffer_huge": (["--buffer-bytes", "5000000000"], "--buffer-bytes = 5000000000", "e.g. 1500000"),
    "rate_word": (["--rate", "fast"], "--rate = fast", "e.g. 10gbit"),
    "rate_bytes": (["--rate", "10gbps"], "--rate = 10gbps", "bytes per second"),
    "rate_unit": (["--rate", "10gbits"], "--rate = 10gbits", "units: bit, kbit, mbit, gbit"),
    "rate_percent": (["--rate", "50%"], "--rate = 50%", "e.g. 10gbit"),
    "rate_negative": (["--rate=-1gbit"], "--rate = -1gbit", "e.g. 10gbit"),
    "rate_slow": (["--rate", "100kbit"], "--rate = 100kbit", "at least 1mbit"),
    "rate_empty": (["--rate", ""], "--rate = ", "e.g. 10gbit"),
    "rate_huge": (["--rate", "100tbit"], "--rate = 100tbit", "above 10tbit"),
    "mtu_small": (["--mtu", "50"], "--mtu = 50", "between 68 and 9216"),
    "mtu_big": (["--mtu", "65536"], "--mtu = 65536", "e.g. 1500"),
    "link_header": (["--link-header-bytes", "-1"], "--link-header-bytes = -1", "14 on Ethernet"),
    "dev_long": (["--dev", "a" * 16], f"--dev = {'a' * 16}", "at most 15"),
    "dev_slash": (["--dev", "eth0/1"], "--dev = 'eth0/1'", "'/'"),
    "dev_space": (["--dev", "eth 0"], "--dev = 'eth 0'", "whitespace"),
    "dev_colon": (["--dev", "eth0:1"], "--dev = 'eth0:1'", "':'"),
    "dev_dot": (["--dev", ".."], "--dev = ..", "reserved"),
    "dev_empty": (["--dev", ""], "--dev = ''", "empty"),
    "dev_delete": (["--dev", "x/y", "--delete"], "--dev = 'x/y'", "e.g. eth0"),
}


# An interface name that is not UTF-8 reaches Python as a lone surrogate (surrogateescape):
# check_dev raised UnicodeEncodeError, a traceback from the command line.
BAD["dev_not_utf8"] = (["--dev", "eth\udcff"], "--dev = 'eth\\udcff'", "not UTF-8")
BAD["dev_not_utf8_delete"] = (["--dev", "\udcff", "--delete"], "--dev = '\\udcff'", "not UTF-8")


@pytest.mark.parametrize("case", list(BAD))
def test_bad_input_exits_2_with_one_clear_line(case: str, capsys: pytest.CaptureFixture[str]) -> None:
    extra, head, fix = BAD[case]
    argv = ["net", "tc", *(["--dev", "eth0"] if "--dev" not in extra else []), *extra]
    assert main(argv) == 2
    captured = capsys.readouterr()
    assert captured.out == ""
    lines = captured.err.splitlines()
    assert len(lines) == 1, captured.err
    assert lines[0].startswith(f"error: {head}: "), lines[0]
    assert fix in lines[0], lines[0]


@pytest.mark.parametrize("kw, option", [
    # From Python, a float made "bfifo limit 1471580.0" and "rate 1000000000.5bit"; a string or a
    # float class count a TypeError naming nothing.
    ({"mtu": 1500.5}, "--mtu"),
    ({"rate_bps": 1e9 + 0.5}, "--rate"),
    ({"rate_bps": "10gbit"}, "--rate"),
    ({"buffer_bytes": 1.5e6 + 0.25}, "--buffer-bytes"),
    ({"classes": 2.5}, "--classes"),
    ({"classes": True}, "--classes"),
    ({"link_header_bytes": 14.0}, "--link-header-bytes"),
    ({"dev": None}, "--dev"),
    ({"dev": b"eth0"}, "--dev"),
])
def test_config_fields_of_the_wrong_type_are_refused(kw: dict[str, object], option: str) -> None:
    with pytest.raises(TcConfigError, match=f"^{option} = .*give an integer|^{option} = .*give a string"):
        TcConfig(**{"dev": "eth0", **kw})  # type: ignore[arg-type]


@pytest.mark.parametrize("netns", ["", ".", "..", "../../proc/1/ns/net", "a/b", "x" * 256, "a\0b"])
def test_a_namespace_name_that_is_no_name_is_refused(netns: str) -> None:
    # tc -n opens /var/run/netns/NAME: "../../proc/1/ns/net" was the host's own namespace, and ""
    # dropped -n altogether, so the commands configured the caller's namespace.
    with pytest.raises(ValueError, match="netns = "):
        nettc.setup_commands(TcConfig("eth0"), netns=netns)
    with pytest.raises(ValueError, match="netns = "):
        nettc.delete_commands("eth0", netns=netns)


def test_usage_errors_exit_2(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["net", "tc"]) == 2  # --dev is required
    assert main(["net", "tc", "--dev", "eth0", "--form", "cbq"]) == 2
    assert main(["net", "tc", "--dev", "eth0", "--mtu", "big"]) == 2
    assert main(["net"]) == 2
    assert "usage:" in capsys.readouterr().err


def test_bad_input_in_a_real_process_has_no_traceback() -> None:
    proc = subprocess.run([sys.executable, "-m", "slacknet", "net", "tc", "--dev", "eth0", "--classes", "9"],
                          capture_output=True, text=True, timeout=60, check=False)
    assert proc.returncode == 2 and proc.stdout == ""
    assert proc.stderr.startswith("error: --classes = 9: ") and "Traceback" not in proc.stderr


def test_a_non_utf8_interface_name_in_a_real_process_has_no_traceback() -> None:
    proc = subprocess.run([sys.executable, "-m", "slacknet", "net", "tc", "--dev", os.fsdecode(b"eth\xff")],
                          capture_output=True, text=True, errors="replace", timeout=60, check=False)
    assert proc.returncode == 2 and proc.stdout == "", proc.stderr
    assert proc.stderr.startswith("error: --dev = ") and "Traceback" not in proc.stderr
    assert len(proc.stderr.splitlines()) == 1


@pytest.mark.parametrize("dev", ["eth0;reboot", "$(reboot)", "`id`", "a'b", "-n", "--help", "a|b>c"])
def test_a_name_with_shell_metacharacters_stays_one_word(dev: str) -> None:
    # The kernel allows these names; the script must quote them so that sh runs tc with the name
    # as one argument and nothing else (checked by running the script with a tc that echoes).
    cmds = nettc.setup_commands(TcConfig(dev))
    script = nettc.render_script(cmds)
    fake = "tc() { printf '%s\\n' \"$@\" >> \"$LOG\"; printf '\\0\\n' >> \"$LOG\"; }\n"
    log = Path(os.environ.get("TMPDIR", "/tmp")) / f"nettc-{uuid.uuid4().hex}.log"
    try:
        proc = subprocess.run(["sh", "-c", fake + script.replace("#!/bin/sh\n", "")],
                              env={**os.environ, "LOG": str(log)}, capture_output=True, text=True, timeout=30,
                              check=False)
        assert proc.returncode == 0, proc.stderr
        calls = [c.strip("\n").split("\n") for c in log.read_text().split("\0\n") if c.strip("\n")]
    finally:
        log.unlink(missing_ok=True)
    assert calls == [list(c.argv[1:]) for c in cmds]


# ---------------------------------------------------------------------------------------------
# --apply, with tc replaced


class FakeTc:
    """Runs nothing: records each argv and fails the first whose words contain ``fail_on``."""

    def __init__(self, fail_on: str | None = None, stderr: str = "", returncode: int = 2) -> None:
        self.fail_on, self.stderr, self.returncode = fail_on, stderr, returncode
        self.calls: list[list[str]] = []

    def __call__(self, argv: list[str]) -> subprocess.CompletedProcess[str]:
        self.calls.append(argv)
        if self.fail_on is not None and self.fail_on in " ".join(argv):
            self.fail_on = None
            return subprocess.CompletedProcess(argv, self.returncode, "", self.stderr)
        return subprocess.CompletedProcess(argv, 0, "", "")


def test_apply_runs_every_command_without_a_shell() -> None:
    fake = FakeTc(fail_on="qdisc del", stderr="Error: Cannot delete qdisc with handle of zero.\n")
    cmds = nettc.setup_commands(TcConfig("eth0"))
    nettc.apply(cmds, runner=fake)  # the initial delete fails: nothing was configured, fine
    assert fake.calls == [list(c.argv) for c in cmds]


def test_apply_names_the_first_failing_command_and_rolls_back() -> None:
    fake = FakeTc(fail_on="classid 1:13", stderr="RTNETLINK answers: Invalid argument\nWe have an error talking "
                  "to the kernel\n")
    cmds = nettc.setup_commands(TcConfig("eth0"))
    rollback = nettc.delete_commands("eth0")[1:]
    with pytest.raises(TcApplyError) as ei:
        nettc.apply(cmds, rollback=rollback, runner=fake)
    e = ei.value
    assert e.returncode == 2 and "classid 1:13" in " ".join(e.argv) and e.missing is None
    msg = str(e)
    assert "`tc class add dev eth0 parent 1:1 classid 1:13 htb" in msg
    assert "exit status 2: RTNETLINK answers: Invalid argument We have an error talking to the kernel" in msg
    assert "default qdisc" in msg
    # It stopped there, then deleted what it had added.
    failed_at = next(i for i, c in enumerate(cmds) if "1:13" in c.argv)
    assert fake.calls == [list(c.argv) for c in cmds[:failed_at + 1]] + [list(rollback[0].argv)]


@pytest.mark.parametrize(("fail_on", "stderr", "expect"), [
    ("root handle 1: prio", "Error: Specified qdisc kind is unknown.", "the kernel lacks the prio qdisc "
     "(CONFIG_NET_SCH_PRIO); use --form htb"),
    ("root handle 1: htb", "Error: Specified qdisc kind is unknown.", "the kernel lacks the htb qdisc"),
    ("bfifo", "Error: Specified qdisc kind is unknown.", "the kernel lacks the bfifo qdisc"),
    ("u32", "Error: TC classifier not found.\nWe have an error talking to the kernel", "lacks the u32 classifier"),
    ("root handle 1:", "RTNETLINK answers: Operation not permitted", "needs root (CAP_NET_ADMIN)"),
    ("root handle 1:", 'Cannot find device "eth0"', "no such interface"),
])
def test_apply_explains_the_kernels_answer(fail_on: str, stderr: str, expect: str) -> None:
    cfg = TcConfig("eth0", form="prio" if "prio" in fail_on else "htb")
    fake = FakeTc(fail_on=fail_on, stderr=stderr)
    with pytest.raises(TcApplyError) as ei:
        nettc.apply(nettc.setup_commands(cfg), runner=fake)
    assert expect in str(ei.value)
    assert stderr.splitlines()[0] in str(ei.value), "tc's own words are kept"


def test_cli_apply_failure_is_one_line_exit_2(monkeypatch: pytest.MonkeyPatch,
                                              capsys: pytest.CaptureFixture[str]) -> None:
    fake = FakeTc(fail_on="root handle 1: prio", stderr="Error: Specified qdisc kind is unknown.\n")
    monkeypatch.setattr(nettc, "_run", fake)
    assert main(["net", "tc", "--dev", "eth0", "--form", "prio", "--apply"]) == 2
    captured = capsys.readouterr()
    assert captured.out == ""
    (line,) = captured.err.splitlines()
    assert line.startswith("error: --form = prio: the kernel lacks the prio qdisc")
    assert "use --form htb" in line


def test_cli_apply_success_quotes_the_command_it_suggests(monkeypatch: pytest.MonkeyPatch,
                                                         capsys: pytest.CaptureFixture[str]) -> None:
    # It printed "`tc -s class show dev a;b` shows ...": pasted into a shell, that runs `b`.
    monkeypatch.setattr(nettc, "_run", FakeTc())
    assert main(["net", "tc", "--dev", "a;b", "--apply"]) == 0
    out = capsys.readouterr().out
    assert "`tc -s class show dev 'a;b'`" in out, out
    assert main(["net", "tc", "--dev", "a;b", "--delete", "--apply"]) == 0
    assert "removed the configuration of 'a;b'" in capsys.readouterr().out


def test_apply_without_tc_on_path() -> None:
    def missing(argv: list[str]) -> subprocess.CompletedProcess[str]:
        raise FileNotFoundError(argv[0])

    with pytest.raises(TcApplyError, match="tc not found on PATH: install iproute2"):
        nettc.apply(nettc.delete_commands("eth0"), runner=missing)


# ---------------------------------------------------------------------------------------------
# On this machine's kernel: a veth pair in a network namespace (root only)


def _sh(*argv: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(list(argv), capture_output=True, text=True, timeout=20, check=False)


def _ok(*argv: str) -> str:
    proc = _sh(*argv)
    assert proc.returncode == 0, f"{' '.join(argv)}: {proc.stderr}"
    return proc.stdout


@pytest.fixture
def veth() -> Iterator[str]:
    """A fresh network namespace holding the veth pair va-vb, va with 10.77.0.1/24 and fd77::1/64,
    and the peer's addresses (10.77.0.2, fd77::2) resolved to vb without ARP or neighbour
    discovery, so packets sent there leave through va's qdisc. Yields the namespace's name;
    deletes it (and with it the pair) however the test ends."""
    if os.geteuid() != 0:
        pytest.skip("needs root: it creates a network namespace and changes qdiscs")
    if shutil.which("ip") is None or shutil.which("tc") is None:
        pytest.skip("needs iproute2 (ip and tc)")
    ns = f"slacknet-tc-{os.getpid()}-{uuid.uuid4().hex[:8]}"
    made = _sh("ip", "netns", "add", ns)
    if made.returncode != 0:
        pytest.skip(f"network namespaces are not permitted here: {made.stderr.strip()}")
    try:
        _ok("ip", "-n", ns, "link", "add", "va", "type", "veth", "peer", "name", "vb")
        for dev in ("lo", "va", "vb"):
            _ok("ip", "-n", ns, "link", "set", dev, "up")
        mac = json.loads(_ok("ip", "-n", ns, "-j", "link", "show", "vb"))[0]["address"]
        _ok("ip", "-n", ns, "addr", "add", "10.77.0.1/24", "dev", "va")
        _ok("ip", "-n", ns, "neigh", "add", "10.77.0.2", "lladdr", mac, "dev", "va", "nud", "permanent")
        if _sh("ip", "-n", ns, "addr", "add", "fd77::1/64", "dev", "va", "nodad").returncode == 0:
            _ok("ip", "-n", ns, "neigh", "add", "fd77::2", "lladdr", mac, "dev", "va", "nud", "permanent")
        yield ns
    finally:
        _sh("ip", "netns", "del", ns)


_SEND = """
import socket, sys
family, dst, level, opt = {
    "4": (socket.AF_INET, "10.77.0.2", socket.IPPROTO_IP, socket.IP_TOS),
    "6": (socket.AF_INET6, "fd77::2", socket.IPPROTO_IPV6, socket.IPV6_TCLASS),
}[sys.argv[1]]
header = 28 if family == socket.AF_INET else 48
for spec in sys.argv[2:]:
    tos, count = (int(x) for x in spec.split(":"))
    s = socket.socket(family, socket.SOCK_DGRAM)
    s.setsockopt(level, opt, tos)
    for _ in range(count):
        s.sendto(b"x" * (1500 - header), (dst, 9))  # full-size packets: 1500 B of IP
    s.close()
"""


def _in_ns(ns: str, *argv: str) -> subprocess.CompletedProcess[str]:
    return _sh("ip", "netns", "exec", ns, *argv)


def _leaf_stats(ns: str) -> dict[int, dict[str, int]]:
    """Each class's bfifo (handle 1k:) counters and limit, by class."""
    qdiscs = json.loads(_ok("tc", "-n", ns, "-j", "-s", "qdisc", "show", "dev", "va"))
    return {
        int(q["handle"].rstrip(":"), 16) - 0x10: {
            "limit": q["options"]["limit"], "bytes": q["bytes"], "packets": q["packets"], "drops": q["drops"],
        }
        for q in qdiscs if q["kind"] == "bfifo"
    }


def test_htb_form_applies_and_classifies_on_this_kernel(veth: str) -> None:
    ns = veth
    cfg = TcConfig("va")
    plan = cfg.classes_plan()
    # Through the command line, inside the namespace, twice: the second run replaces the first.
    for _ in range(2):
        proc = _in_ns(ns, sys.executable, "-m", "slacknet", "net", "tc", "--dev", "va", "--apply")
        assert proc.returncode == 0, proc.stderr
        assert proc.stderr == "", f"tc or the kernel warned: {proc.stderr}"
        assert "configured va" in proc.stdout

    qdisc_text = _ok("tc", "-n", ns, "-s", "qdisc", "show", "dev", "va")
    assert re.search(r"qdisc htb 1: root .*default 0x10", qdisc_text)
    stats = _leaf_stats(ns)
    assert sorted(stats) == list(range(8))
    assert [stats[k]["limit"] for k in range(8)] == [c.limit_bytes for c in plan]

    class_text = _ok("tc", "-n", ns, "class", "show", "dev", "va")
    leaves = dict(re.findall(r"class htb 1:1([0-7]) parent 1:1 leaf 1\1: prio (\d) ", class_text))
    assert leaves == {str(k): str(k) for k in range(8)}, class_text
    assert re.search(r"class htb 1:1 root rate 10Gbit ceil 10Gbit ", class_text)
    assert len(re.findall(r"rate 10Mbit ceil 10Gbit", class_text)) == 8

    filters = json.loads(_ok("tc", "-n", ns, "-j", "filter", "show", "dev", "va"))
    rules = sorted((f["protocol"], f["options"]["flowid"], f["options"]["match"]["mask"])
                   for f in filters if "flowid" in f.get("options", {}))
    assert rules == sorted([("ip", f"1:1{k}", "fc0000") for k in range(8)]
                           + [("ipv6", f"1:1{k}", "fc00000") for k in range(8)])

    # k + 1 full-size IPv4 packets at class k's TOS (one with ECN bits set); one IPv6 packet each.
    sent = _in_ns(ns, sys.executable, "-c", _SEND, "4",
                  *(f"{nettc.tos_of_class(k) | (1 if k == 3 else 0)}:{k + 1}" for k in range(8)))
    assert sent.returncode == 0, sent.stderr
    has_v6 = _sh("ip", "-n", ns, "-6", "addr", "show", "dev", "va").stdout.count("fd77::1") == 1
    if has_v6:
        sent = _in_ns(ns, sys.executable, "-c", _SEND, "6", *(f"{nettc.tos_of_class(k)}:1" for k in range(8)))
        assert sent.returncode == 0, sent.stderr
    after = _leaf_stats(ns)
    for k in range(1, 8):
        expected = k + 1 + (1 if has_v6 else 0)
        s = after[k]
        assert s["packets"] + s["drops"] == expected, (k, s)
        assert s["packets"] >= 1, f"class {k} ({plan[k].limit_bytes} B) takes a full-size packet"
        assert s["bytes"] == s["packets"] * 1514, "a 1500-byte packet is a 1514-byte frame to the qdisc"
    # Class 0 gets its packet and whatever the kernel sends unmarked (IPv6 neighbour traffic).
    assert after[0]["packets"] + after[0]["drops"] >= 1 + (1 if has_v6 else 0)

    # The prio form: where the kernel has the prio qdisc it applies; where it lacks it (as here),
    # --apply fails with one line that says why and what to use instead.
    probe = _sh("tc", "-n", ns, "qdisc", "add", "dev", "vb", "root", "handle", "1:", "prio")
    _sh("tc", "-n", ns, "qdisc", "del", "dev", "vb", "root")
    proc = _in_ns(ns, sys.executable, "-m", "slacknet", "net", "tc", "--dev", "va", "--form", "prio", "--apply")
    if probe.returncode == 0:
        assert proc.returncode == 0, proc.stderr
        assert re.search(r"qdisc prio 1: root bands 8 ", _ok("tc", "-n", ns, "qdisc", "show", "dev", "va"))
    else:
        assert "kind is unknown" in probe.stderr, probe.stderr
        assert proc.returncode == 2 and proc.stdout == ""
        (line,) = proc.stderr.splitlines()
        assert line.startswith("error: --form = prio: the kernel lacks the prio qdisc"), line
        assert "use --form htb" in line and "Specified qdisc kind is unknown" in line
        assert "default qdisc" in line  # the htb configuration was deleted first

    # --delete removes it (whatever is there); a second --delete is not an error; no device is.
    for _ in range(2):
        proc = _in_ns(ns, sys.executable, "-m", "slacknet", "net", "tc", "--dev", "va", "--delete", "--apply")
        assert proc.returncode == 0, proc.stderr
    assert not re.search(r"qdisc (htb|prio|bfifo)", _ok("tc", "-n", ns, "qdisc", "show", "dev", "va"))
    with pytest.raises(TcApplyError, match="no such interface"):
        nettc.apply(nettc.delete_commands("nosuch0", netns=ns))


def test_api_applies_in_a_namespace_with_tc_n(veth: str) -> None:
    """What the namespace testbed calls: commands with ``tc -n``, applied from outside."""
    cfg = TcConfig("va", rate_bps=nettc.parse_rate("1gbit"), classes=4, buffer_bytes=100_000)
    nettc.apply(nettc.setup_commands(cfg, netns=veth), rollback=nettc.delete_commands("va", netns=veth)[1:])
    stats = _leaf_stats(veth)
    assert {k: s["limit"] for k, s in stats.items()} == {c.k: c.limit_bytes for c in cfg.classes_plan()}
    nettc.apply(nettc.delete_commands("va", netns=veth))
    assert _leaf_stats(veth) == {}


def test_readme_example_is_what_the_command_prints(capsys: pytest.CaptureFixture[str]) -> None:
    readme = (Path(__file__).resolve().parents[1] / "README.md").read_text(encoding="utf-8")
    section = readme.split("### The same queues on a Linux interface: `slacknet net tc`")[1]
    block = section.split("```sh\n")[1].split("```")[0]
    assert main(["net", "tc", "--dev", "eth0"]) == 0
    printed = capsys.readouterr().out.splitlines()
    shown = [line for line in block.splitlines() if not line.startswith(("...", "# ..."))]
    assert len(shown) >= 10
    for line in shown:
        assert line in printed, line
