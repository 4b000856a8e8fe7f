"""A small real network in Linux network namespaces, for the real transport (issue 13).

Hosts ``h0 .. h{n-1}`` each live in a namespace of their own and are joined by a veth pair to a
switch namespace that bridges them (one broadcast domain, ``10.77.0.0/24``, host ``i`` at
``10.77.0.{i+1}``). The egress of the switch toward every host, the port a real switch would
queue at, carries NetApprox's slack-based queues as ``slacknet net tc`` generates them (the htb
form, at ``rate``), so congestion drops happen at a real bottleneck, by priority class.

Needs root and ``ip netns`` (``available()`` says why not, for a skip message). Names carry a
random suffix, so testbeds do not collide; everything is removed on exit, also after an error.
"""

from __future__ import annotations

import os
import secrets
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any, Sequence

from . import nettc

__all__ = ["Testbed", "available"]

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


class Testbed:
    """``hosts`` hosts behind one switch whose ports toward the hosts run at ``rate`` (tc's
    spelling, e.g. ``"100mbit"``) with the slack-based queues of a ``buffer_bytes`` buffer.
    Use as a context manager."""

    def __init__(self, hosts: int = 3, *, rate: str = "100mbit", buffer_bytes: int = 150_000, mtu: int = 1500) -> None:
        if not 2 <= hosts <= 200:
            raise ValueError(f"hosts = {hosts}: must be between 2 and 200")
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

    def address(self, i: int) -> str:
        """Host ``i``'s IPv4 address."""
        return f"{SUBNET}.{i + 1}"

    def __enter__(self) -> Testbed:
        try:
            self._build()
        except BaseException:
            self.close()
            raise
        return self

    def __exit__(self, *exc: Any) -> None:
        self.close()

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
        """Remove every namespace (and with them the veths, bridge and qdiscs)."""
        for ns in reversed(self._made):
            _ip("netns", "del", ns)
        self._made.clear()

    def popen(self, host: int, argv: Sequence[str], **kw: Any) -> subprocess.Popen[str]:
        """Start ``argv`` in host ``host``'s namespace."""
        return subprocess.Popen(["ip", "netns", "exec", self.names[host], *argv], text=True, **kw)

    def python(self, host: int, script: Path, *args: str, **kw: Any) -> subprocess.Popen[str]:
        """Run a Python script with this interpreter in host ``host``'s namespace."""
        return self.popen(host, [sys.executable, str(script), *args], **kw)

    def egress_stats(self, host: int) -> str:
        """``tc -s class show`` of the switch port toward host ``host`` (sent, dropped per
        class)."""
        r = subprocess.run(["tc", "-n", self.switch, "-s", "class", "show", "dev", self._switch_if[host]],
                           capture_output=True, text=True, timeout=30)
        return r.stdout

    def egress_drops(self, host: int) -> dict[int, int]:
        """Packets dropped per class at the switch port toward host ``host`` (its bfifos)."""
        r = subprocess.run(["tc", "-n", self.switch, "-s", "qdisc", "show", "dev", self._switch_if[host]],
                           capture_output=True, text=True, timeout=30)
        drops: dict[int, int] = {}
        cls = None
        for line in r.stdout.splitlines():
            words = line.split()
            if words[:2] == ["qdisc", "bfifo"]:
                # "qdisc bfifo 1k: parent 1:1k limit ..." : class k from handle 1k:
                cls = int(words[2].rstrip(":")) - 10
            elif cls is not None and "(dropped" in words:
                # " Sent 0 bytes 0 pkt (dropped 0, overlimits 0 requeues 0)"
                drops[cls] = int(words[words.index("(dropped") + 1].rstrip(","))
                cls = None
        return drops
