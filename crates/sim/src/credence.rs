//! Credence (Addanki, Pacut and Schmid, NSDI'24): the pieces around the
//! [`Credence`](crate::admission::Credence) admission policy.
//!
//! - [`features`]: what a drop oracle sees of an arrival (§3.4);
//! - [`oracle`]: drop oracles, "will LQD drop this packet?" (§2.3.1): a random forest,
//!   replayed LQD decisions, random flips of another oracle, and the two constant ones;
//! - [`forest`]: the scikit-learn random-forest format and its native evaluator;
//! - [`dtmodel`]: the discrete-time buffer model of Appendix A, in which every admission
//!   policy runs through the same `BufferAdmission` code as in the packet simulator, the
//!   adversarial sequences of §2.3.2 and Observation 1, and the Figure 14 experiment.
//!
//! The policies themselves (Credence, FollowLQD, and the baselines Harmonic and ABM) live in
//! [`admission`](crate::admission), one per file, with the other buffer sharing policies.

pub mod dtmodel;
pub mod features;
pub mod forest;
pub mod oracle;
