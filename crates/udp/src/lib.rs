//! slacknet's real transport: the sans-I/O protocols of `proto`, unchanged, driven over UDP
//! sockets by the wall clock (STYLE §1: one protocol, two drivers; the simulator is the other).
//!
//! - [`node`]: a [`Node`] is one socket and one event-loop thread driving every connection
//!   through it; the application sends and receives through channels (blocking calls with
//!   deadlines; the Python binding releases the GIL around them).
//! - [`socket`]: batched, non-blocking UDP I/O with ECN and DSCP (`quinn-udp`, `socket2`).
//! - [`datagram`]: a segment as bytes, a `wire` header and its payload.
//! - [`fault`]: the seeded fault injector between protocol and socket (loss, duplication,
//!   delay, reordering, exact drops), off by default.
//!
//! Carried: the bounded-loss transport for distributed ML (`proto::mlt`): a vector of 32- or
//! 16-bit values sent so that it ends once the receiver holds a fraction p of them, the
//! receiver handing up the values with the exact list of missing ranges; and ATP, NetApprox's
//! approximate transport (`proto::atp`): a job of messages in groups, each group with its
//! minimal sampling rate (MSR), the receiver handing up each message as it arrives whole and,
//! at the end of the job, the messages lost (ApproxLib's interface, NetApprox §3.3). ATP's
//! priority class travels as the DSCP (class k: CS k).

pub mod datagram;
pub mod fault;
mod hash;
pub mod node;
mod rxbuf;
pub mod socket;

pub use fault::{FaultConfig, FaultStats};
pub use node::{Canceller, Delivered, Handle, JobEvent, JobHandle, JobReport, Node, NodeConfig, NodeError, NodeStats, SendHandle, SendReport};
pub use proto::{MltCc, MltSendOrder};
pub use socket::Capabilities;
