"""A small real network in Linux network namespaces, for the real transport (issue 13).

Hosts ``h0 .. h{n-1}`` each live in a namespace of their own and are joined by a veth pair to a
switch namespace that bridges them (one broadcast domain, ``10.77.0.0/24``, host ``i`` at
``10.77.0.{i+1}``). The egress of the switch toward every host, the port a real switch would
queue at, carries NetApprox's slack-based queues as ``slacknet net tc`` generates them (the htb
form, at ``rate``), so congestion drops happen at a real bottleneck, by priority class.

Needs root and ``ip netns`` (``available()`` says why not, for a skip message). Names carry a
random suffix, so testbeds do not collide; everything is removed on exit, also after an error.

Dropping a TCP transfer's tail (``Testbed.tcp_tail_drop``, for the lossy-path benchmark) also
needs ``nft`` (Debian: ``apt-get install nftables``; ``tail_drop_available()`` says why not).
The Debian packages the testbed uses: ``iproute2`` (``ip``, ``tc``) and, for the tail drop
only, ``nftables``.
"""

from __future__ import annotations

import json
import numbers
import os
import re
import secrets
import shutil
import subprocess
import sys
import warnings
from pathlib import Path
from typing import Any, Sequence

from . import nettc

__all__ = ["TcpTailDrop", "Testbed", "available", "tail_drop_available"]

SUBNET = "10.77.0"


def _ip(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(["ip", *args], capture_output=True, text=True, timeout=30)


def available() -> str | None:
    """``None`` if a testbed can be built here, else the reason it cannot."""
    if sys.platform != "linux":
        return "network namespaces are Linux-only"
    if os.geteuid() != 0:
        return "building network namespaces needs root"
    if shutil.which("ip") is None or shutil.which("tc") is None:
        return "needs iproute2 (ip and tc): apt-get install iproute2"
    probe = f"snprobe{secrets.token_hex(3)}"
    r = _ip("netns", "add", probe)
    if r.returncode != 0:
        return f"ip netns add is not permitted here: {r.stderr.strip()}"
    _ip("netns", "del", probe)
    return None


def tail_drop_available() -> str | None:
    """``None`` if ``Testbed.tcp_tail_drop`` can work here (given a testbed), else why not."""
    if shutil.which("nft") is None:
        return "needs nft to drop TCP's tail: apt-get install nftables"
    return None


class Testbed:
    """``hosts`` hosts behind one switch whose ports toward the hosts run at ``rate`` (tc's
    spelling, e.g. ``"100mbit"``) with the slack-based queues of a ``buffer_bytes`` buffer,
    every interface at ``mtu``. Use as a context manager: entering builds the namespaces (root
    only, see :func:`available`; ``RuntimeError`` with ``ip``'s message if a step fails),
    leaving removes them (:meth:`close`).

    The constructor checks its arguments only: ``TypeError`` or ``ValueError`` (``hosts``
    must be 2 to 200, a numpy integer included; ``rate`` is text; ``rate``, ``mtu`` and
    ``buffer_bytes`` as :class:`~slacknet.nettc.TcConfig` takes them).

    Every method taking a host checks it is one of this testbed's (``IndexError``: ``-1`` is no
    host); the methods that look at a built testbed raise ``RuntimeError`` outside the ``with``
    block or when ``tc`` fails (an empty answer would read as "nothing dropped")."""

    def __init__(self, hosts: int = 3, *, rate: str = "100mbit", buffer_bytes: int = 150_000, mtu: int = 1500) -> None:
        if isinstance(hosts, bool) or not isinstance(hosts, (int, numbers.Integral)):
            raise TypeError(f"hosts = {hosts!r}: give an integer, between 2 and 200")
        if not 2 <= hosts <= 200:
            raise ValueError(f"hosts = {hosts}: must be between 2 and 200")
        hosts = int(hosts)
        if not isinstance(rate, str):  # was re's "expected string or bytes-like object"
            raise TypeError(f"rate = {rate!r}: give tc's spelling of a rate as text, e.g. \"100mbit\"")
        # The switch ports' queues, checked now rather than after the namespaces are built
        # (their errors name the command line's options; these are the arguments' names).
        try:
            nettc.TcConfig(dev="check", rate_bps=nettc.parse_rate(rate), mtu=mtu, buffer_bytes=buffer_bytes)
        except nettc.TcConfigError as e:
            name = {"--rate": "rate", "--mtu": "mtu", "--buffer-bytes": "buffer_bytes"}.get(e.option, e.option)
            raise ValueError(f"{name} = {e.value}: {e.message}") from None
        self.hosts = hosts
        self.rate = rate
        self.buffer_bytes = buffer_bytes
        self.mtu = mtu
        tag = secrets.token_hex(3)
        self.switch = f"sn{tag}sw"
        self.names = [f"sn{tag}h{i}" for i in range(hosts)]
        # Interface names: at most 15 bytes.
        self._host_if = [f"sn{tag}e{i}" for i in range(hosts)]
        self._switch_if = [f"sn{tag}p{i}" for i in range(hosts)]
        self._made: list[str] = []

    def _host(self, i: int) -> int:
        """``i`` if it numbers a host of this testbed, else ``IndexError`` (``-1`` is no host)."""
        if isinstance(i, bool) or not isinstance(i, (int, numbers.Integral)) or not 0 <= i < self.hosts:
            raise IndexError(f"host {i!r}: this testbed has hosts 0 to {self.hosts - 1}")
        return int(i)

    def _built(self, what: str) -> None:
        if not self._made:
            raise RuntimeError(f"{what}: the testbed is not built; use it inside `with Testbed(...) as tb:`")

    def address(self, i: int) -> str:
        """Host ``i``'s IPv4 address."""
        return f"{SUBNET}.{self._host(i) + 1}"

    def host_interface(self, i: int) -> str:
        """The name of host ``i``'s interface (in its namespace ``names[i]``)."""
        return self._host_if[self._host(i)]

    def tcp_tail_drop(self, host: int, dport: int, marker: int = ord("y")) -> TcpTailDrop:
        """Install a :class:`TcpTailDrop` on host ``host`` for TCP to port ``dport``, knowing the
        tail by its first payload byte ``marker`` (default ``ord("y")``), and return it (raises
        ``RuntimeError`` with nft's message if the rules are refused)."""
        d = TcpTailDrop(self, host, dport, marker)
        d.install()
        return d

    def __enter__(self) -> Testbed:
        if self._made:  # building again failed on the first namespace and then removed the live testbed
            raise RuntimeError("this testbed is already built (entered); use a new Testbed for a second one")
        try:
            self._build()
        except BaseException:
            self._close_quietly()
            raise
        return self

    def __exit__(self, exc_type: Any, *exc: Any) -> None:
        if exc_type is None:
            self.close()
        else:  # the exception in flight is the one to see; a leftover namespace is a warning
            self._close_quietly()

    def _close_quietly(self) -> None:
        try:
            self.close()
        except RuntimeError as e:
            warnings.warn(str(e), RuntimeWarning, stacklevel=3)

    def _must(self, *args: str) -> None:
        r = _ip(*args)
        if r.returncode != 0:
            raise RuntimeError(f"ip {' '.join(args)}: {r.stderr.strip()}")

    def _build(self) -> None:
        for ns in [self.switch, *self.names]:
            self._must("netns", "add", ns)
            self._made.append(ns)
            self._must("-n", ns, "link", "set", "lo", "up")
        self._must("-n", self.switch, "link", "add", "br0", "type", "bridge")
        self._must("-n", self.switch, "link", "set", "br0", "up")
        for i, ns in enumerate(self.names):
            h, s = self._host_if[i], self._switch_if[i]
            self._must("link", "add", h, "netns", ns, "type", "veth", "peer", "name", s, "netns", self.switch)
            self._must("-n", ns, "addr", "add", f"{self.address(i)}/24", "dev", h)
            self._must("-n", ns, "link", "set", h, "mtu", str(self.mtu), "up")
            self._must("-n", self.switch, "link", "set", s, "mtu", str(self.mtu), "master", "br0", "up")
            cfg = nettc.TcConfig(dev=s, rate_bps=nettc.parse_rate(self.rate), mtu=self.mtu,
                                 buffer_bytes=self.buffer_bytes)
            nettc.apply(nettc.setup_commands(cfg, netns=self.switch))

    def close(self) -> None:
        """Remove every namespace (and with them the veths, bridge and qdiscs). Raises
        ``RuntimeError`` naming the namespaces ``ip netns del`` could not remove (after trying
        every one), which stay until removed by hand."""
        left = [(ns, r.stderr.strip()) for ns in reversed(self._made) if (r := _ip("netns", "del", ns)).returncode != 0]
        self._made.clear()
        if left:
            names = " ".join(ns for ns, _ in left)
            raise RuntimeError(f"ip netns del {left[0][0]}: {left[0][1] or 'failed'}; the testbed's namespaces "
                               f"{names} are left: remove them with `ip netns del NAME` for each")

    def popen(self, host: int, argv: Sequence[str], **kw: Any) -> subprocess.Popen[str]:
        """Start ``argv`` in host ``host``'s namespace, in text mode; ``kw`` goes to
        :class:`subprocess.Popen`."""
        host = self._host(host)  # self.names[-1] was the last host
        self._built("popen")
        return subprocess.Popen(["ip", "netns", "exec", self.names[host], *argv], text=True, **kw)

    def python(self, host: int, script: Path, *args: str, **kw: Any) -> subprocess.Popen[str]:
        """Run the Python ``script`` with ``args`` and this interpreter in host ``host``'s
        namespace (:meth:`popen`, which ``kw`` goes to)."""
        return self.popen(host, [sys.executable, str(script), *args], **kw)

    def egress_stats(self, host: int) -> str:
        """``tc -s class show`` of the switch port toward host ``host`` (sent, dropped per
        class)."""
        return self._tc_show("class", host)

    def _tc_show(self, what: str, host: int) -> str:
        """``tc -s <what> show`` of the switch port toward host ``host``."""
        host = self._host(host)
        self._built(f"egress of host {host}")
        argv = ["tc", "-n", self.switch, "-s", what, "show", "dev", self._switch_if[host]]
        r = subprocess.run(argv, capture_output=True, text=True, timeout=30)
        if r.returncode != 0:
            raise RuntimeError(f"{' '.join(argv)}: {r.stderr.strip()}")
        return r.stdout

    def egress_drops(self, host: int) -> dict[int, int]:
        """Packets dropped per class at the switch port toward host ``host`` (its bfifos)."""
        drops: dict[int, int] = {}
        cls = None
        for line in self._tc_show("qdisc", host).splitlines():
            words = line.split()
            if words[:2] == ["qdisc", "bfifo"]:
                # "qdisc bfifo 1k: parent 1:1k limit ..." : class k from handle 1k:
                cls = int(words[2].rstrip(":")) - 10
            elif cls is not None and "(dropped" in words:
                # " Sent 0 bytes 0 pkt (dropped 0, overlimits 0 requeues 0)"
                drops[cls] = int(words[words.index("(dropped") + 1].rstrip(","))
                cls = None
        return drops


class TcpTailDrop:
    """Drops the first transmission of each of a TCP transfer's last segments, in the sending
    host's namespace, and lets their retransmissions through: the lost tail that TCP can only
    recover by a probe or a timeout (netem, iptables and tc's ``gact`` are absent here).

    How: the sender writes its last ``k x MSS`` bytes as ``marker`` and no earlier byte as
    ``marker``, so the last ``k`` segments, and only they, start with it; an nft rule on the host's
    output hook knows them by that first payload byte (``@ih,0,8``, the inner-header payload
    base) and their destination port. The first time a sequence number is seen it goes into a
    dynamic set and the packet is dropped; a packet whose sequence number is in the set (a
    retransmission) passes. For the rule to see segments and not 64 KB GSO super-packets, the
    host's interface is limited to one segment per packet (``gso_max_segs 1``) while armed.

    Why not the conntrack byte counter (``ct original bytes``) within [total - k segments,
    total): it counts retransmissions too, and through a congested port TCP retransmits
    hundreds of segments earlier in the transfer, so that window would fall before the tail.

    Use: ``arm()`` before a transfer (empties the set, notes the counters, caps GSO),
    ``disarm()`` after it (restores GSO) returns ``(dropped, passed)`` since ``arm()``: first
    transmissions dropped and retransmissions of them let through, from nft's counters. Armed
    for a transfer without the marker, it drops nothing: the same host setting as a control.
    """

    TABLE = "sntaildrop"

    def __init__(self, tb: Testbed, host: int, dport: int, marker: int) -> None:
        # Both go into nft's rules as written: anything but an integer in range would be rules too.
        for name, v in (("dport", dport), ("marker", marker)):
            if isinstance(v, bool) or not isinstance(v, (int, numbers.Integral)):
                raise TypeError(f"{name} = {v!r}: give an integer")
        if not 1 <= dport <= 65535:
            raise ValueError(f"dport = {dport}: a TCP port, 1-65535")
        if not 0 <= marker <= 255:
            raise ValueError(f"marker = {marker}: a byte value, 0-255")
        self.tb, self.host, self.dport, self.marker = tb, tb._host(host), int(dport), int(marker)
        self.ns = tb.names[self.host]
        self.dev = tb.host_interface(host)
        self._gso_segs: int | None = None
        self._base = (0, 0)

    def _run(self, argv: Sequence[str], stdin: str | None = None) -> str:
        r = subprocess.run(["ip", "netns", "exec", self.ns, *argv], input=stdin, capture_output=True,
                           text=True, timeout=30)
        if r.returncode != 0:
            raise RuntimeError(f"{' '.join(argv)}: {r.stderr.strip()}")
        return r.stdout

    def install(self) -> None:
        """Add the table (its rules match nothing until a transfer writes the marker)."""
        m = f"tcp dport {self.dport} @ih,0,8 {self.marker:#04x}"
        self._run(["nft", "-f", "-"], stdin=f"""
table inet {self.TABLE} {{
    set seen {{ typeof tcp sequence; size 65536; flags dynamic; }}
    chain out {{
        type filter hook output priority filter; policy accept;
        {m} tcp sequence @seen counter accept
        {m} add @seen {{ tcp sequence }} counter drop
    }}
}}
""")
        link = json.loads(self._run(["ip", "-d", "-j", "link", "show", "dev", self.dev]))
        self._gso_segs = int(link[0].get("gso_max_segs", 65535))

    def arm(self) -> None:
        """Empty the set of sequence numbers seen, zero the counters, one segment per packet."""
        self._run(["nft", "flush", "set", "inet", self.TABLE, "seen"])
        self._base = self._counts()
        self._run(["ip", "link", "set", "dev", self.dev, "gso_max_segs", "1"])

    def disarm(self) -> tuple[int, int]:
        """Restore GSO; ``(first transmissions dropped, retransmissions of them passed)`` since
        ``arm()``."""
        self._run(["ip", "link", "set", "dev", self.dev, "gso_max_segs", str(self._gso_segs or 65535)])
        dropped, passed = self._counts()
        return dropped - self._base[0], passed - self._base[1]

    def dropped_sequences(self) -> list[int]:
        """The TCP sequence numbers dropped since ``arm()``, ascending (the set's elements):
        consecutive segments lie exactly one MSS apart."""
        out = json.loads(self._run(["nft", "-j", "list", "set", "inet", self.TABLE, "seen"]))
        for item in out.get("nftables", []):
            if "set" in item:
                elems = item["set"].get("elem", [])
                return sorted(e if isinstance(e, int) else int(e["elem"]["val"]) for e in elems)
        return []

    def _counts(self) -> tuple[int, int]:
        """nft's counters: packets dropped, packets passed (the rules' own, never reset)."""
        counts = {verdict: int(pkts) for pkts, verdict in
                  re.findall(r"counter packets (\d+) bytes \d+ (accept|drop)",
                             self._run(["nft", "list", "chain", "inet", self.TABLE, "out"]))}
        return counts.get("drop", 0), counts.get("accept", 0)
