"""Linux traffic control (``tc``) for NetApprox's slack-based switch queues on a real egress port.

The simulator's ``queues = "netapprox_slack"`` preset (``crates/sim/src/spec/switch.rs``,
``QueuePreset::queues``, over ``proto::atp::slack_buffers``) gives every switch port 8
strict-priority queues (NetApprox §5.2, §7.1). This module writes the same queues as ``tc``
commands for a Linux interface, so that real hosts or network namespaces can stand in for the
switch; ``slacknet net tc`` prints or applies them. The real transport marks its packets with
the same mapping (:func:`dscp_of_class`), so a packet's class is defined in one place.

**Classes and marking.** Class k (0 = highest priority, non-approximate traffic; 1..classes-1
approximate, slack class k) is DSCP class selector CSk, DSCP = 8k (RFC 2474 §4.2.2.2: the class
selector codepoints are ``xxx000``), i.e. an IPv4 TOS (IPv6 Traffic Class) byte of 32k. The two
low bits of that byte are ECN (RFC 3168), so classification masks them off: the DSCP bits are
``TOS & 0xfc``. 8 class selectors exist, hence at most 8 classes. Traffic whose DSCP is not a
class selector of a configured class (unmarked traffic, ARP, other DSCPs) goes to class 0.

**Byte limits.** Class k in 1..classes-1 holds ``classes - k`` MTU (class 1 the most, the lowest
class one); class 0 holds ``buffer_bytes`` minus those, and the configuration is refused if that
is less than one MTU: exactly the simulator's arithmetic (:func:`slack_cap_bytes`; the tests
compare it with the simulator's expanded preset). The simulator's MTU is the whole IP packet
(``mss_bytes + header_bytes``), but a qdisc counts a packet with its link-layer header (14 B on
Ethernet and veth), so a 1500-byte packet occupies 1514 B of a ``bfifo``. A limit of the
simulator's bytes would hold one packet fewer than it should (the lowest class, 1500 B, none at
all), so each class's limit adds ``link_header_bytes`` per full-size packet its cap holds
(:attr:`TcClass.limit_bytes`): the qdisc holds as many full-size packets as the simulator's queue.

**htb form** (default; needs only the ``htb`` and ``bfifo`` qdiscs and the ``u32`` classifier).
Linux's strict-priority qdisc, ``prio``, is missing from some kernels (as are ``netem``, ``fq``
and ``red``), so strict priority is approximated with htb's borrowing priority:

* root ``htb`` (handle ``1:``, ``default 10``: unclassified traffic to class 0), one parent class
  ``1:1`` with ``rate`` = ``ceil`` = the link rate, which makes htb the bottleneck;
* one leaf class ``1:1k`` per class k with ``prio k``, a small guaranteed ``rate`` (1/1000 of the
  link, :data:`GUARANTEE_DIVISOR`) and ``ceil`` = the link rate, and a ``bfifo`` leaf qdisc
  ``1k:`` with the class's limit;
* ``u32`` filters matching ``ip dsfield`` (IPv4) and ``ip6 priority`` (IPv6) with mask 0xfc.

How close to strict priority that is: htb first serves leaves still within their own ``rate``,
whatever their ``prio``; only the bandwidth beyond those guarantees is lent by the parent, and
that goes strictly by ``prio``, lowest first. Every class above its guarantee is borrowing, so
the excess reaches the highest-priority backlogged class. The difference from a strict-priority
queue is the guarantee: each lower class may send up to 1/1000 of the link (one frame at a
time: its ``burst`` is one frame) ahead of a backlogged higher class, at most
``(classes - 1) / 1000`` of the link in all. Measured on a veth pair with this configuration
and classes 0 and 7 both backlogged: at 10 Mbit/s class 0 got 9.98 Mbit/s and class 7
0.016 Mbit/s, at 100 Mbit/s 100.1 and 0.097 (class 7's guarantee, 10 and 100 kbit/s). A class
gets more only when the classes above it have nothing queued, as strict priority would give it.
Other limits, shared by both forms:

* the shaper must be the bottleneck: set ``rate`` at (or slightly below) what the interface
  really carries, or packets queue below the qdisc (a NIC's ring), in one FIFO, without priority.
  On a veth pair, ``rate`` is the link rate;
* htb may release up to a parent ``burst`` (:func:`TcConfig.burst_bytes`) at once, which a NIC
  queues in FIFO order: a higher-class packet can wait behind at most that much;
* a limit counts whole packets as the qdisc sees them: a GSO/TSO super-packet (up to 64 KB) does
  not fit a small class and is dropped whole. Send MTU-sized datagrams in the approximate
  classes (the UDP driver sends datagrams of a DSCP other than 0 one at a time; its GSO runs are
  DSCP 0, class 0, whose limit holds them), or turn segmentation offloads off (``ethtool -K
  IFACE gso off tso off``, and ``gro off`` on the ingress of a forwarding host);
* the simulator's queue 0 marks ECN above 65 MTU; neither form marks (``red`` is missing too);
* the queues are per interface: the shared buffer of a switch (complete sharing) becomes fixed
  per-class limits whose sum is the buffer.

htb parameters, chosen so that the kernel prints no warning (sch_htb warns "quantum of class ...
is big/small. Consider r2q change." when it derives a quantum, rate / r2q, outside 1000..200000
bytes, which at 10 Gbit/s it always does):

* ``quantum`` = one frame on every class, given explicitly, so r2q is never used. Each class has
  a priority of its own, so quantum only paces round robin within one class: one frame a turn;
* leaf ``burst`` = one frame: a class within its guarantee sends one frame ahead of higher classes,
  then waits for its tokens;
* parent ``burst`` = ``cburst`` = leaf ``cburst`` = the larger of 10 frames and 10 us at the link
  rate (:data:`BURST_FRAMES`, :data:`BURST_US`). tc's default (rate / HZ + 1600 B, with HZ = 10^9
  on high-resolution timers) is about one packet: at 10 Gbit/s, in whole 64-ns ticks, 1200 B, less
  than a frame, so htb would need a timer per packet and could not keep the link busy (tc even
  shows it as ``burst 0b``). A leaf's ``cburst`` equals its
  parent's (a child's should not exceed it) so one class alone can use the whole link;
* guaranteed ``rate`` = link / 1000; ``rate`` >= 1 Mbit/s keeps it at least 1 kbit/s, so one frame
  of burst stays within the kernel's 32-bit token time (2^32 ticks of 64 ns, 275 s): up to
  74 s for a 9230-byte jumbo frame.

**prio form** (``form="prio"``, for kernels with the ``prio`` qdisc, ``CONFIG_NET_SCH_PRIO``):
``prio bands N`` with every priomap entry band 0 (class 0; a packet the filters do not classify
goes by its ``skb->priority`` through the priomap), a ``bfifo`` per band (band k is class
``1:(k+1)``), and the same filters. That is exact strict priority without a shaper: it only
orders packets if the interface itself is the bottleneck (a real NIC, not a veth pair, whose
transmit rarely pushes back).

The commands are idempotent: they first delete the interface's root qdisc (whatever it is;
failure, when there is none, is ignored), then add everything. :func:`setup_commands` returns them
(argv lists), :func:`render_script` turns them into a shell script, :func:`apply` runs them
without a shell. POSTCONDITION (checked in :meth:`TcConfig.classes_plan`): the classes' caps sum to
``buffer_bytes`` and class k in 1..classes-1 holds exactly ``classes - k`` full-size packets.
"""

from __future__ import annotations

import math
import numbers
import re
import shlex
import subprocess
from dataclasses import dataclass
from decimal import Decimal, InvalidOperation
from typing import Callable, Literal, Sequence

__all__ = [
    "BURST_FRAMES",
    "BURST_US",
    "DSCP_MASK",
    "ETH_HEADER_BYTES",
    "FORMS",
    "GUARANTEE_DIVISOR",
    "MAX_CLASSES",
    "MIN_CLASSES",
    "Command",
    "TcApplyError",
    "TcClass",
    "TcConfig",
    "TcConfigError",
    "apply",
    "check_dev",
    "class_of_tos",
    "delete_commands",
    "dscp_of_class",
    "format_rate",
    "header_lines",
    "parse_rate",
    "render_script",
    "setup_commands",
    "slack_cap_bytes",
    "tos_of_class",
]

#: Fewest classes: class 0 and one approximate class.
MIN_CLASSES = 2
#: Most classes: class k is DSCP class selector CSk, and there are 8 (CS0..CS7).
MAX_CLASSES = 8
#: The DSCP bits of the IPv4 TOS / IPv6 Traffic Class byte; the low two are ECN (RFC 3168).
DSCP_MASK = 0xFC
#: Bytes a qdisc counts per packet beyond the IP packet on Ethernet (and veth): the MAC header.
ETH_HEADER_BYTES = 14
#: The two configurations: htb (approximate strict priority) and prio (exact, needs the prio qdisc).
FORMS = ("htb", "prio")
#: Each htb class is guaranteed 1/GUARANTEE_DIVISOR of the link (htb needs a rate above 0).
GUARANTEE_DIVISOR = 1000
#: htb's parent burst and every cburst: at least this many frames ...
BURST_FRAMES = 10
#: ... and at least this long at the link rate, in microseconds.
BURST_US = 10

_MIN_RATE_BPS = 1_000_000
_MAX_RATE_BPS = 10 * 10**12
_MIN_MTU = 68  # RFC 791: every IPv4 host must forward a 68-byte packet
_MAX_MTU = 9216  # the largest jumbo frame common datacenter switches carry
_MAX_LINK_HEADER = 64
_MAX_BUFFER_BYTES = 10**9  # bfifo limits are 32-bit; no switch has a gigabyte per port
_IFNAMSIZ = 16  # include/uapi/linux/if.h, with the terminating NUL

Form = Literal["htb", "prio"]


def dscp_of_class(k: int) -> int:
    """The DSCP a packet of class ``k`` carries: class selector CSk, ``8 * k`` (RFC 2474
    §4.2.2.2). The one mapping shared by these queues and the transport that marks packets.
    Raises ``ValueError`` for ``k`` outside 0 to :data:`MAX_CLASSES` - 1."""
    if not 0 <= k < MAX_CLASSES:
        raise ValueError(f"class {k}: classes are 0..{MAX_CLASSES - 1} (DSCP CS0..CS7)")
    return 8 * k


def tos_of_class(k: int) -> int:
    """The IPv4 TOS (IPv6 Traffic Class) byte for class ``k`` with ECN bits 0: ``32 * k``, what
    ``setsockopt(IPPROTO_IP, IP_TOS, ...)`` takes."""
    return dscp_of_class(k) << 2


def class_of_tos(tos: int) -> int | None:
    """The class of a packet with TOS (Traffic Class) byte ``tos``, ignoring its ECN bits;
    ``None`` if its DSCP is no class selector (such packets go to class 0)."""
    dscp = (tos & DSCP_MASK) >> 2
    return dscp // 8 if dscp % 8 == 0 else None


def slack_cap_bytes(classes: int, mtu: int, buffer_bytes: int) -> list[int] | None:
    """The simulator's byte cap of each class (index = class), or ``None`` if class 0 would get
    less than one MTU. NetApprox §5.2: the lowest-priority queue holds 1 MTU, one more per class
    up to class 1; class 0 gets the rest. The same arithmetic as ``proto::atp::slack_buffers``
    and ``QueuePreset::queues``: class k gets ``classes - k`` MTU, class 0 the exact bytes left.

    Raises ``TypeError`` for an argument that is not an integer and ``ValueError`` for
    ``classes`` outside ``MIN_CLASSES..MAX_CLASSES``, an ``mtu`` below 1 or a negative buffer."""
    for name, v, lo in (("classes", classes, MIN_CLASSES), ("mtu", mtu, 1), ("buffer_bytes", buffer_bytes, 0)):
        if isinstance(v, bool) or not isinstance(v, numbers.Integral):
            raise TypeError(f"{name} = {v!r}: give an integer, not {type(v).__name__}")
        if v < lo or (name == "classes" and v > MAX_CLASSES):
            bound = f"from {MIN_CLASSES} to {MAX_CLASSES}" if name == "classes" else f"at least {lo}"
            raise ValueError(f"{name} = {v}: must be {bound}")
    approx = [(classes - k) * mtu for k in range(1, classes)]
    rest = buffer_bytes - sum(approx)
    if rest < mtu:
        return None
    return [rest, *approx]


class TcConfigError(ValueError):
    """A configuration option is unusable. ``option`` is the command-line option (``--rate``),
    ``value`` what was given, ``message`` why and how to fix it."""

    def __init__(self, option: str, value: object, message: str) -> None:
        super().__init__(f"{option} = {value}: {message}")
        self.option = option
        self.value = value
        self.message = message


_RATE_UNITS = {
    "": 1, "bit": 1,
    "kbit": 10**3, "mbit": 10**6, "gbit": 10**9, "tbit": 10**12,
    "kibit": 2**10, "mibit": 2**20, "gibit": 2**30, "tibit": 2**40,
}
_RATE_HELP = "units: bit, kbit, mbit, gbit, tbit (as tc reads them; a bare number is bit/s)"


def parse_rate(text: str, option: str = "--rate") -> int:
    """A rate in tc's bit units (``10gbit``, ``100mbit``, ``1.5gbit``, ``1000000``: case does not
    matter, a bare number is bit/s) as whole bit/s, at least 1 Mbit/s and at most 10 Tbit/s.
    tc's byte units (``bps``, ``kbps``, ...) are refused: they are bytes per second, a common
    slip. Raises :class:`TcConfigError` naming ``option`` (the command-line option the text
    came from)."""
    m = re.fullmatch(r"\s*(\d+(?:\.\d*)?|\.\d+)\s*([A-Za-z]*)\s*", text)
    unit = m.group(2).lower() if m else ""
    if m is None or unit not in _RATE_UNITS:
        if m is not None and unit.endswith("bps"):
            raise TcConfigError(option, text, f"tc reads {m.group(2)} as bytes per second; give the rate in "
                                f"bits, e.g. {m.group(1)}{unit[:-3]}bit ({_RATE_HELP})")
        raise TcConfigError(option, text, f"not a rate; give a number and a unit, e.g. 10gbit ({_RATE_HELP})")
    try:
        bps = int(Decimal(m.group(1)) * _RATE_UNITS[unit])
    except InvalidOperation:  # pragma: no cover - the pattern admits decimals only
        raise TcConfigError(option, text, f"not a rate; e.g. 10gbit ({_RATE_HELP})") from None
    if bps < _MIN_RATE_BPS:
        raise TcConfigError(option, text, f"below 1mbit: each htb class is guaranteed 1/{GUARANTEE_DIVISOR} of "
                            "the link, which must carry a frame in well under the kernel's 275 s of token time; "
                            "give at least 1mbit, e.g. 10gbit")
    if bps > _MAX_RATE_BPS:
        raise TcConfigError(option, text, "above 10tbit, faster than any interface; e.g. 10gbit")
    return bps


def format_rate(bps: int) -> str:
    """``bps`` in the largest tc unit that writes it exactly: ``10gbit``, ``1500mbit``, ``8bit``
    (any other integer as ``<bps>bit``, for messages about it); ``TypeError`` for a non-integer."""
    if isinstance(bps, bool) or not isinstance(bps, numbers.Integral):
        raise TypeError(f"bps = {bps!r}: give an integer number of bit/s, not {type(bps).__name__}")
    for unit, scale in (("tbit", 10**12), ("gbit", 10**9), ("mbit", 10**6), ("kbit", 10**3)):
        if bps >= scale and bps % scale == 0:
            return f"{bps // scale}{unit}"
    return f"{bps}bit"


def _is_utf8(text: str) -> bool:
    try:
        text.encode()
    except UnicodeEncodeError:
        return False
    return True


def check_dev(dev: str) -> str:
    """``dev`` if it is a valid Linux interface name (the kernel's ``dev_valid_name``: 1 to 15
    bytes, not ``.`` or ``..``, no ``/``, ``:``, whitespace or NUL), else :class:`TcConfigError`."""
    if not isinstance(dev, str):
        raise TcConfigError("--dev", repr(dev), "not a Linux interface name: give a string, e.g. eth0")
    bad = next((c for c in dev if c in "/: \t\n\v\f\r\0"), None)
    why = None
    if not dev:
        why = "empty"
    elif not _is_utf8(dev):
        # Bytes of a command line that are not UTF-8 arrive as lone surrogates (PEP 383); the
        # kernel would take them, but the script could not be printed.
        bad = dev
        why = "not UTF-8 text"
    elif len(dev.encode()) >= _IFNAMSIZ:
        why = f"{len(dev.encode())} bytes long, the kernel allows at most {_IFNAMSIZ - 1}"
    elif dev in (".", ".."):
        why = "reserved by the kernel"
    elif bad is not None:
        why = f"contains {bad!r}, which the kernel does not allow (nor '/', ':' or whitespace)"
    if why is not None:
        raise TcConfigError("--dev", repr(dev) if bad is not None or not dev else dev,
                            f"not a Linux interface name: {why}; give one `ip link` lists, e.g. eth0")
    return dev


@dataclass(frozen=True)
class TcClass:
    """One class of the configuration: its marking, its priority and its buffer."""

    #: The class: 0 is the highest priority (non-approximate), classes - 1 the lowest.
    k: int
    #: The simulator's cap in bytes of IP packets (:func:`slack_cap_bytes`).
    cap_bytes: int
    #: The qdisc's limit: the cap plus the link header of each full-size packet the cap holds.
    limit_bytes: int
    #: Full-size packets the class holds.
    num_packets: int

    @property
    def dscp(self) -> int:
        """DSCP class selector CSk (:func:`dscp_of_class`)."""
        return dscp_of_class(self.k)

    @property
    def tos(self) -> int:
        """The TOS byte that marks the class (:func:`tos_of_class`)."""
        return tos_of_class(self.k)


@dataclass(frozen=True)
class TcConfig:
    """A validated configuration; the constructor raises :class:`TcConfigError` naming the
    command-line option of the first bad field. Defaults are NetApprox §7.1's switch (1.5 MB,
    8 queues) on a 10 Gbit/s Ethernet port."""

    #: The interface whose egress is configured.
    dev: str
    #: Link rate in bit/s (:func:`parse_rate` reads tc's spelling).
    rate_bps: int = 10 * 10**9
    #: The largest IP packet in bytes: the simulator's ``mss_bytes + header_bytes``.
    mtu: int = 1500
    #: The port's buffer in bytes of IP packets (the simulator's ``switch.buffer_bytes``).
    buffer_bytes: int = 1_500_000
    #: Number of classes, 2..8 (NetApprox uses 8).
    classes: int = 8
    #: ``htb`` (approximate strict priority) or ``prio`` (needs the prio qdisc).
    form: Form = "htb"
    #: What a qdisc counts per packet beyond the IP packet: 14 on Ethernet and veth, 0 on a
    #: layer-3 device (tun, wireguard).
    link_header_bytes: int = ETH_HEADER_BYTES

    def __post_init__(self) -> None:
        check_dev(self.dev)
        # From Python a float would reach the commands as written ("limit 1471580.0").
        for option, v in (("--classes", self.classes), ("--rate", self.rate_bps), ("--mtu", self.mtu),
                          ("--buffer-bytes", self.buffer_bytes), ("--link-header-bytes", self.link_header_bytes)):
            if isinstance(v, bool) or not isinstance(v, numbers.Integral):
                raise TcConfigError(option, repr(v), "give an integer" + (" of bit/s (parse_rate reads "
                                    "\"10gbit\")" if option == "--rate" else ""))
        if not MIN_CLASSES <= self.classes <= MAX_CLASSES:
            raise TcConfigError("--classes", self.classes, f"must be between {MIN_CLASSES} and {MAX_CLASSES}: class k "
                                f"is marked with DSCP class selector CSk, and there are {MAX_CLASSES} (CS0-CS7); "
                                "e.g. 8 as in NetApprox §7.1")
        if self.form not in FORMS:
            raise TcConfigError("--form", self.form, f"choose {' or '.join(FORMS)}")
        if not _MIN_RATE_BPS <= self.rate_bps <= _MAX_RATE_BPS:
            raise TcConfigError("--rate", format_rate(self.rate_bps), "must be between 1mbit and 10tbit, e.g. 10gbit")
        if not _MIN_MTU <= self.mtu <= _MAX_MTU:
            raise TcConfigError("--mtu", self.mtu, f"must be between {_MIN_MTU} and {_MAX_MTU} bytes (the whole IP "
                                "packet, the simulator's mss_bytes + header_bytes), e.g. 1500")
        if not 0 <= self.link_header_bytes <= _MAX_LINK_HEADER:
            raise TcConfigError("--link-header-bytes", self.link_header_bytes, f"must be between 0 and "
                                f"{_MAX_LINK_HEADER}: {ETH_HEADER_BYTES} on Ethernet and veth, 0 on a layer-3 device")
        if self.buffer_bytes > _MAX_BUFFER_BYTES:
            raise TcConfigError("--buffer-bytes", self.buffer_bytes, f"above {_MAX_BUFFER_BYTES} (1 GB); e.g. "
                                "1500000 as in NetApprox §7.1")
        if slack_cap_bytes(self.classes, self.mtu, self.buffer_bytes) is None:
            approx = sum(range(1, self.classes))
            raise TcConfigError(
                "--buffer-bytes", self.buffer_bytes,
                f"leaves class 0 less than one MTU ({self.mtu} B) after the approximate classes' {approx} MTU "
                f"(classes 1-{self.classes - 1} hold {self.classes - 1} down to 1); give at least "
                f"{(approx + 1) * self.mtu}, e.g. 1500000 as in NetApprox §7.1",
            )

    @property
    def frame_bytes(self) -> int:
        """A full-size packet as a qdisc counts it: the MTU plus the link header."""
        return self.mtu + self.link_header_bytes

    @property
    def guarantee_bps(self) -> int:
        """Each htb class's guaranteed rate: 1/:data:`GUARANTEE_DIVISOR` of the link."""
        return self.rate_bps // GUARANTEE_DIVISOR

    def burst_bytes(self) -> int:
        """htb's parent burst and every cburst: :data:`BURST_FRAMES` frames or :data:`BURST_US`
        at the link rate, whichever is more."""
        return max(BURST_FRAMES * self.frame_bytes, math.ceil(self.rate_bps * BURST_US / 8 / 10**6))

    def classes_plan(self) -> list[TcClass]:
        """Every class, highest priority first, with its cap and limit."""
        caps = slack_cap_bytes(self.classes, self.mtu, self.buffer_bytes)
        assert caps is not None  # PRECONDITION: __post_init__ refused a buffer without room for class 0
        plan = [
            TcClass(k, cap, cap + self.link_header_bytes * (cap // self.mtu), cap // self.mtu)
            for k, cap in enumerate(caps)
        ]
        # POSTCONDITION: the buffer is split exactly; class k >= 1 holds classes - k packets.
        assert sum(c.cap_bytes for c in plan) == self.buffer_bytes
        assert all(c.num_packets == self.classes - c.k for c in plan[1:])
        return plan


@dataclass(frozen=True)
class Command:
    """One command of a configuration, run without a shell."""

    #: The program and its arguments.
    argv: tuple[str, ...]
    #: Failure is expected and ignored (deleting a root qdisc that is not there); the script
    #: renders it ``2>/dev/null || true``.
    may_fail: bool = False
    #: Only its exit status matters; the script sends its output to /dev/null.
    quiet: bool = False
    #: The kernel facility it adds (a key of ``_FACILITIES``), to explain a kernel that lacks it.
    needs: str | None = None

    def render(self) -> str:
        """The command as one line of a POSIX shell script."""
        line = shlex.join(self.argv)
        if self.quiet:
            line += " >/dev/null"
        if self.may_fail:
            line += " 2>/dev/null || true"
        return line


# Kernel facility -> (what it is, its Kconfig symbol).
_FACILITIES = {
    "htb": ("the htb qdisc", "CONFIG_NET_SCH_HTB"),
    "prio": ("the prio qdisc", "CONFIG_NET_SCH_PRIO"),
    "bfifo": ("the bfifo qdisc", "CONFIG_NET_SCH_FIFO"),
    "u32": ("the u32 classifier", "CONFIG_NET_CLS_U32"),
}


def _check_netns(netns: str | None) -> None:
    """Refuse a network namespace name that ``ip netns`` would not make: ``tc -n NAME`` opens
    ``/var/run/netns/NAME``, so a name with ``/`` or ``..`` is a path to another namespace
    (``../../proc/1/ns/net`` is the host's own), and ``""`` would drop ``-n`` altogether."""
    if netns is None:
        return
    if (not isinstance(netns, str) or netns in ("", ".", "..") or any(c in netns for c in "/\0")
            or len(netns.encode(errors="surrogateescape")) > 255):
        raise ValueError(f"netns = {netns!r:.80}: not a network namespace name (1 to 255 bytes, no '/' or NUL, "
                         "not '.' or '..'); give one `ip netns list` lists, or None for this namespace")


def _tc(netns: str | None, *args: str) -> tuple[str, ...]:
    _check_netns(netns)
    return ("tc", *(("-n", netns) if netns is not None else ()), *args)


def _htb_classid(k: int) -> str:
    # Class k is 1:1k and its bfifo 1k: (tc reads both in hex; k < 8 keeps them one digit).
    return f"1:{0x10 + k:x}"


def _leaf_handle(k: int) -> str:
    return f"{0x10 + k:x}:"


def _prio_classid(k: int) -> str:
    return f"1:{k + 1:x}"  # prio's band k is class 1:(k+1)


def setup_commands(cfg: TcConfig, netns: str | None = None) -> list[Command]:
    """The commands that configure ``cfg.dev``'s egress (run inside network namespace ``netns``
    with ``tc -n`` if given). The first deletes whatever root qdisc is there; its failure is
    expected when there is none."""
    dev = cfg.dev
    plan = cfg.classes_plan()
    cmds = [Command(_tc(netns, "qdisc", "del", "dev", dev, "root"), may_fail=True)]
    if cfg.form == "htb":
        rate = format_rate(cfg.rate_bps)
        frame = str(cfg.frame_bytes)
        burst = str(cfg.burst_bytes())
        cmds.append(Command(_tc(netns, "qdisc", "add", "dev", dev, "root", "handle", "1:", "htb",
                                "default", f"{0x10:x}"), needs="htb"))
        cmds.append(Command(_tc(netns, "class", "add", "dev", dev, "parent", "1:", "classid", "1:1", "htb",
                                "rate", rate, "ceil", rate, "burst", burst, "cburst", burst, "quantum", frame)))
        classid = _htb_classid
        for c in plan:
            cmds.append(Command(_tc(netns, "class", "add", "dev", dev, "parent", "1:1", "classid", classid(c.k), "htb",
                                    "rate", format_rate(cfg.guarantee_bps), "ceil", rate, "burst", frame,
                                    "cburst", burst, "prio", str(c.k), "quantum", frame)))
    else:
        classid = _prio_classid
        # Every skb->priority maps to band 0: a packet no filter classifies is class 0's.
        cmds.append(Command(_tc(netns, "qdisc", "add", "dev", dev, "root", "handle", "1:", "prio",
                                "bands", str(cfg.classes), "priomap", *(["0"] * 16)), needs="prio"))
    for c in plan:
        cmds.append(Command(_tc(netns, "qdisc", "add", "dev", dev, "parent", classid(c.k), "handle", _leaf_handle(c.k),
                                "bfifo", "limit", str(c.limit_bytes)), needs="bfifo"))
    # IPv4 filters at preference 1, IPv6 at 2 (one protocol per preference); class 0 first,
    # as most traffic is unmarked.
    for proto, pref, field in (("ip", "1", ("ip", "dsfield")), ("ipv6", "2", ("ip6", "priority"))):
        for c in plan:
            cmds.append(Command(_tc(netns, "filter", "add", "dev", dev, "parent", "1:", "protocol", proto,
                                    "prio", pref, "u32", "match", *field, f"0x{c.tos:02x}", f"0x{DSCP_MASK:02x}",
                                    "flowid", classid(c.k)), needs="u32"))
    return cmds


def delete_commands(dev: str, netns: str | None = None) -> list[Command]:
    """The commands that remove the configuration (whatever root qdisc ``dev`` has; the kernel's
    default returns; run inside network namespace ``netns`` with ``tc -n`` if given). The first
    fails if there is no such interface; deleting when nothing is configured is not an error.
    Raises :class:`TcConfigError` if ``dev`` is no valid interface name (:func:`check_dev`)."""
    check_dev(dev)
    return [
        Command(_tc(netns, "qdisc", "show", "dev", dev), quiet=True),
        Command(_tc(netns, "qdisc", "del", "dev", dev, "root"), may_fail=True),
    ]


def header_lines(cfg: TcConfig) -> list[str]:
    """What a configuration sets up, as comment lines (without ``#``): the form, and per class its
    DSCP, TOS byte, priority, cap and limit."""
    frame = f" ({cfg.frame_bytes} B frames, as the qdiscs count them)" if cfg.link_header_bytes else ""
    how = (
        f"Form htb: strict priority approximated by htb's borrowing priorities, link {format_rate(cfg.rate_bps)},\n"
        f"each class guaranteed {format_rate(cfg.guarantee_bps)} (1/{GUARANTEE_DIVISOR} of it)."
        if cfg.form == "htb"
        else "Form prio: strict priority, unshaped (the interface itself must be the bottleneck)."
    )
    lines = [
        f"NetApprox's slack-based switch queues (NetApprox §5.2, §7.1) on the egress of {cfg.dev},",
        "written by `slacknet net tc` (python/slacknet/nettc.py explains every number).",
        *how.split("\n"),
        f"MTU {cfg.mtu} B{frame}; buffer {cfg.buffer_bytes} B; {cfg.classes} classes.",
        "Class k is marked DSCP CSk (TOS byte 32k); all other traffic is class 0's.",
        "",
        f"{'class':>5}  {'DSCP':<9} {'TOS':<5} {'prio':>4}  {'holds':<22} {'bfifo limit':<12}",
    ]
    for c in cfg.classes_plan():
        holds = f"{c.cap_bytes} B ({c.num_packets} MTU)" if c.k == 0 else f"{c.num_packets} MTU ({c.cap_bytes} B)"
        note = "  non-approximate" if c.k == 0 else ""
        lines.append(f"{c.k:>5}  {f'CS{c.k} ({c.dscp})':<9} {f'0x{c.tos:02x}':<5} {c.k:>4}  {holds:<22} "
                     f"{f'{c.limit_bytes} B':<12}{note}".rstrip())
    return lines


def render_script(commands: Sequence[Command], header: Sequence[str] = ()) -> str:
    """A POSIX shell script that runs ``commands`` in order and stops at the first unexpected
    failure (``set -e``), with ``header`` as its opening comment."""
    lines = ["#!/bin/sh"]
    lines += [f"# {h}".rstrip() for h in header]
    lines.append("set -e")
    lines += [c.render() for c in commands]
    return "\n".join(lines) + "\n"


class TcApplyError(RuntimeError):
    """A command failed while applying a configuration. ``argv``, ``returncode`` and ``stderr``
    are the command's; ``missing`` names the kernel facility it lacks (``"prio"``, ``"htb"``,
    ``"bfifo"``, ``"u32"``) if that was the cause. The message says what it means and what to do."""

    def __init__(self, message: str, argv: Sequence[str], returncode: int, stderr: str,
                 missing: str | None = None) -> None:
        super().__init__(message)
        self.argv = tuple(argv)
        self.returncode = returncode
        self.stderr = stderr
        self.missing = missing


Runner = Callable[[list[str]], "subprocess.CompletedProcess[str]"]


def _run(argv: list[str]) -> subprocess.CompletedProcess[str]:
    return subprocess.run(argv, capture_output=True, text=True, timeout=30, check=False)


def _lacks(cmd: Command, stderr: str) -> bool:
    """Whether a command failed because the kernel lacks what it adds. The kernel answers
    "Specified qdisc kind is unknown." or "TC classifier not found."; older tc versions print
    "Unknown qdisc"/"Unknown filter"."""
    return cmd.needs is not None and any(
        s in stderr for s in ("kind is unknown", "classifier not found", "Unknown qdisc", "Unknown filter")
    )


def _explain(cmd: Command, stderr: str) -> str:
    """What a failure means, and what to do about it ("" if nothing better than tc's words)."""
    if cmd.needs is not None and _lacks(cmd, stderr):
        what, config = _FACILITIES[cmd.needs]
        fix = {
            "prio": "; use --form htb, which needs only the htb and bfifo qdiscs and the u32 classifier",
            "htb": "; use --form prio if the kernel has the prio qdisc",
        }.get(cmd.needs, "")
        return f"the kernel lacks {what} ({config}){fix}"
    if "Operation not permitted" in stderr:
        return "changing an interface's qdiscs needs root (CAP_NET_ADMIN); run it with sudo"
    if "Cannot find device" in stderr:
        return "no such interface in this network namespace (`ip link` lists them)"
    if "Cannot open network namespace" in stderr:
        return "no such network namespace (`ip netns list` lists them)"
    return ""


def apply(commands: Sequence[Command], *, rollback: Sequence[Command] = (), runner: Runner | None = None) -> None:
    """Run ``commands`` in order without a shell. At the first unexpected failure, if an earlier
    command changed something, run ``rollback`` (best effort, failures ignored); then raise
    :class:`TcApplyError` naming the command, tc's exit status and its stderr. ``runner`` runs one
    argv and returns its completed process (default: :func:`subprocess.run`, capturing its output;
    tests replace it)."""
    run = runner if runner is not None else _run
    changed = False
    for cmd in commands:
        argv = list(cmd.argv)
        try:
            proc = run(argv)
        except FileNotFoundError:
            raise TcApplyError(f"{argv[0]} not found on PATH: install iproute2", argv, 127, "") from None
        if proc.returncode == 0:
            changed = changed or not cmd.quiet
            continue
        if cmd.may_fail:
            continue
        undone = ""
        if rollback and changed:
            for r in rollback:
                try:
                    run(list(r.argv))
                except (OSError, subprocess.SubprocessError):
                    pass
            undone = "; the interface is left with the kernel's default qdisc"
        stderr = " ".join(line.strip() for line in (proc.stderr or "").splitlines() if line.strip())
        why = _explain(cmd, stderr)
        tc_said = f"`{shlex.join(argv)}` failed with exit status {proc.returncode}: {stderr or '(no message)'}"
        message = f"{why} ({tc_said}){undone}" if why else f"{tc_said}{undone}"
        missing = cmd.needs if _lacks(cmd, stderr) else None
        raise TcApplyError(message, argv, proc.returncode, proc.stderr or "", missing)
