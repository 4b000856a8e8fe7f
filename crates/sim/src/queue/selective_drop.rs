//! Aeolus's selective dropping (Hu et al., SIGCOMM'20, §3.2): at enqueue, a switch drops an
//! unscheduled packet (sent in its flow's first RTT without a credit) when its egress queue
//! already holds more than a small threshold, and admits scheduled packets as usual. So the
//! unscheduled burst only uses bandwidth that scheduled traffic leaves idle, and never builds
//! the queue that credit scheduling keeps near empty. Commodity switches do this with the
//! RED/ECN drop of non-ECT packets above a threshold; the paper's threshold is a few packets
//! (8 KB is our default, `spec::switch`).

use crate::packet::Packet;

/// The threshold rule of one switch.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct SelectiveDrop {
    /// Unscheduled packets are dropped while their queue holds more than this many bytes.
    pub threshold_bytes: u64,
}

impl SelectiveDrop {
    /// Whether `pkt` must be dropped on arrival at a queue holding `queue_bytes`.
    #[inline]
    pub fn drops(&self, pkt: &Packet, queue_bytes: u64) -> bool {
        queue_bytes > self.threshold_bytes && pkt.is_unscheduled()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proto::{Segment, XpassKind, XpassRepr};
    use units::NodeId;

    fn data(unscheduled: bool) -> Packet {
        let seg = Segment::Xpass(XpassRepr { kind: XpassKind::Data, unscheduled, len: 1454, ..Default::default() });
        Packet::new(&seg, 0, NodeId(0), 1538, true)
    }

    #[test]
    fn drops_only_unscheduled_packets_above_the_threshold() {
        let s = SelectiveDrop { threshold_bytes: 8000 };
        assert!(!s.drops(&data(true), 8000), "not above");
        assert!(s.drops(&data(true), 8001));
        assert!(!s.drops(&data(false), 1 << 30), "scheduled packets are admitted as usual");
    }
}
