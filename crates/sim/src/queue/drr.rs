//! Deficit round robin (Shreedhar and Varghese, SIGCOMM'95): equal byte shares among the busy
//! queues of a port. A queue earns one quantum when its turn begins and sends while its deficit
//! covers the head packet; then the turn passes on. An emptied queue forfeits its deficit.
//!
//! CORRECTNESS: the quantum is at least one MTU, so a queue's next turn always sends something
//! and `pick` ends within one round.

use std::collections::VecDeque;

use super::Scheduler;
use crate::packet::Packet;

/// DRR state of one port.
#[derive(Clone, Debug)]
pub struct Drr {
    deficit: Vec<u64>,
    next: usize,
    turn_fresh: bool,
    quantum: u64,
}

impl Drr {
    /// DRR over `num_queues` queues with a quantum of `quantum` bytes (at least one MTU).
    pub fn new(num_queues: usize, quantum: u64) -> Drr {
        Drr { deficit: vec![0; num_queues], next: 0, turn_fresh: true, quantum: quantum.max(1) }
    }
}

impl Scheduler for Drr {
    fn pick(&mut self, queues: &[VecDeque<Packet>]) -> usize {
        let n = queues.len();
        debug_assert!(queues.iter().any(|q| !q.is_empty()));
        // A bound instead of `loop` so that a broken precondition cannot hang the run.
        for _ in 0..=2 * n + 2 {
            let q = self.next;
            let Some(head) = queues[q].front() else {
                self.deficit[q] = 0;
                self.next = (q + 1) % n;
                self.turn_fresh = true;
                continue;
            };
            let size = head.size as u64;
            if self.turn_fresh {
                self.deficit[q] += self.quantum;
                self.turn_fresh = false;
            }
            if self.deficit[q] >= size {
                self.deficit[q] -= size;
                if queues[q].len() == 1 {
                    self.deficit[q] = 0;
                    self.next = (q + 1) % n;
                    self.turn_fresh = true;
                }
                return q;
            }
            self.next = (q + 1) % n;
            self.turn_fresh = true;
        }
        queues.iter().position(|q| !q.is_empty()).unwrap_or(0)
    }
}
