//! [`Segment`]: the header of whichever protocol sent a packet, as the drivers carry it. Each
//! protocol owns its header (`wire::SegmentRepr` for the TCP kinds, `wire::DatagramRepr` for
//! UDP; ATP and the bounded-loss transport add theirs); the network reads and writes only the
//! fields every header has, through the accessors here (connection, payload length and offset
//! for hashing, priority class, ECN, and pFabric's wide priority [`Segment::rank`]).
//!
//! INVARIANT: a `Segment` is small and `Copy` (the simulator moves it through queues by value).

use wire::{AtpRepr, DatagramRepr, Ecn, MltRepr, PfabricRepr, SegmentRepr, XpassRepr};

/// The header of one packet, tagged by protocol.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Segment {
    /// A reliable byte stream's segment (DCTCP, NewReno, PowerTCP).
    Tcp(SegmentRepr),
    /// An unreliable datagram.
    Udp(DatagramRepr),
    /// An ATP packet (data, ACK or end-of-job notice).
    Atp(AtpRepr),
    /// An ExpressPass/Aeolus packet (request, credit, data, ACK, probe).
    Xpass(XpassRepr),
    /// A pFabric packet (data, header-only probe or ACK), carrying its flow's remaining size.
    Pfabric(PfabricRepr),
    /// A bounded-loss transport packet (data carrying a value index range, or ACK).
    Mlt(MltRepr),
}

impl Segment {
    /// Connection (transfer) id.
    #[inline]
    pub fn conn(&self) -> u32 {
        match self {
            Segment::Tcp(s) => s.conn,
            Segment::Udp(d) => d.conn,
            Segment::Atp(a) => a.conn,
            Segment::Xpass(x) => x.conn,
            Segment::Pfabric(p) => p.conn,
            Segment::Mlt(m) => m.conn,
        }
    }

    /// Payload bytes.
    #[inline]
    pub fn len(&self) -> u32 {
        match self {
            Segment::Tcp(s) => s.len,
            Segment::Udp(d) => d.len,
            Segment::Atp(a) => a.len,
            Segment::Xpass(x) => x.len,
            Segment::Pfabric(p) => p.len,
            Segment::Mlt(m) => m.len,
        }
    }

    /// Whether the packet carries no payload (a pure ACK or SYN).
    #[inline]
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Byte offset of the payload within its transfer (the spraying hash's entropy and ABM's
    /// first-window test); for ATP, the transmission number (packets, not bytes).
    #[inline]
    pub fn seq(&self) -> u64 {
        match self {
            Segment::Tcp(s) => s.seq,
            Segment::Udp(d) => d.seq,
            Segment::Atp(a) => a.seq,
            Segment::Xpass(x) => x.seq,
            // The byte offset of the first value carried.
            Segment::Mlt(m) => u64::from(m.start) * u64::from(m.value_bytes),
            Segment::Pfabric(p) => p.seq,
        }
    }

    /// ECN codepoint.
    #[inline]
    pub fn ecn(&self) -> Ecn {
        match self {
            Segment::Tcp(s) => s.ecn,
            Segment::Udp(d) => d.ecn,
            Segment::Atp(a) => a.ecn,
            Segment::Xpass(x) => x.ecn,
            Segment::Pfabric(p) => p.ecn,
            Segment::Mlt(m) => m.ecn,
        }
    }

    /// Set the ECN codepoint (a switch marking CE).
    #[inline]
    pub fn set_ecn(&mut self, ecn: Ecn) {
        match self {
            Segment::Tcp(s) => s.ecn = ecn,
            Segment::Udp(d) => d.ecn = ecn,
            Segment::Atp(a) => a.ecn = ecn,
            Segment::Xpass(x) => x.ecn = ecn,
            Segment::Pfabric(p) => p.ecn = ecn,
            Segment::Mlt(m) => m.ecn = ecn,
        }
    }

    /// Priority class (0 = highest).
    #[inline]
    pub fn prio(&self) -> u8 {
        match self {
            Segment::Tcp(s) => s.prio,
            Segment::Udp(d) => d.prio,
            Segment::Atp(a) => a.prio,
            Segment::Xpass(x) => x.prio,
            Segment::Pfabric(p) => p.prio,
            Segment::Mlt(m) => m.prio,
        }
    }

    /// Set the priority class (the driver stamps the transfer's class).
    #[inline]
    pub fn set_prio(&mut self, prio: u8) {
        match self {
            Segment::Tcp(s) => s.prio = prio,
            Segment::Udp(d) => d.prio = prio,
            Segment::Atp(a) => a.prio = prio,
            Segment::Xpass(x) => x.prio = prio,
            Segment::Pfabric(p) => p.prio = prio,
            Segment::Mlt(m) => m.prio = prio,
        }
    }

    /// pFabric's packet priority (SIGCOMM'13 §4.1), a single wide number a switch compares
    /// (lower = more urgent: the flow's remaining bytes). 0 (the most urgent) for every other
    /// protocol, whose packets carry no such priority: under a pFabric queue they are served
    /// first, in arrival order, and never pushed out by pFabric packets.
    #[inline]
    pub fn rank(&self) -> u64 {
        match self {
            Segment::Pfabric(p) => p.rank,
            Segment::Tcp(_) | Segment::Udp(_) | Segment::Atp(_) | Segment::Xpass(_) | Segment::Mlt(_) => 0,
        }
    }
}

impl Segment {
    /// Whether this is an ExpressPass credit (switches queue and rate-limit credits apart,
    /// ExpressPass §3.1).
    #[inline]
    pub fn is_credit(&self) -> bool {
        matches!(self, Segment::Xpass(x) if x.is_credit())
    }

    /// Whether this is ExpressPass data sent for a credit (scheduled data, not Aeolus's
    /// unscheduled first RTT).
    #[inline]
    pub fn answers_credit(&self) -> bool {
        matches!(self, Segment::Xpass(x) if x.kind == wire::XpassKind::Data && !x.unscheduled)
    }

    /// Whether this is an Aeolus unscheduled packet (switches drop it first, Aeolus §3.2).
    #[inline]
    pub fn is_unscheduled(&self) -> bool {
        matches!(self, Segment::Xpass(x) if x.unscheduled)
    }
}

impl From<XpassRepr> for Segment {
    fn from(x: XpassRepr) -> Segment {
        Segment::Xpass(x)
    }
}

impl From<SegmentRepr> for Segment {
    fn from(s: SegmentRepr) -> Segment {
        Segment::Tcp(s)
    }
}

impl From<DatagramRepr> for Segment {
    fn from(d: DatagramRepr) -> Segment {
        Segment::Udp(d)
    }
}

impl From<PfabricRepr> for Segment {
    fn from(p: PfabricRepr) -> Segment {
        Segment::Pfabric(p)
    }
}

impl From<AtpRepr> for Segment {
    fn from(a: AtpRepr) -> Segment {
        Segment::Atp(a)
    }
}

impl From<MltRepr> for Segment {
    fn from(m: MltRepr) -> Segment {
        Segment::Mlt(m)
    }
}
