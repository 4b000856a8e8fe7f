//! Strict priority: always serve the lowest-index non-empty queue (index 0 is the highest
//! priority class), as commodity switches do between their priority queues.

use std::collections::VecDeque;

use super::Scheduler;
use crate::packet::Packet;

/// Strict priority between the queues of a port. Stateless.
#[derive(Clone, Copy, Debug, Default)]
pub struct StrictPriority;

impl Scheduler for StrictPriority {
    #[inline]
    fn pick(&mut self, queues: &[VecDeque<Packet>]) -> usize {
        // PRECONDITION (trait): some queue is non-empty, so the default is never used.
        queues.iter().position(|q| !q.is_empty()).unwrap_or(0)
    }
}
