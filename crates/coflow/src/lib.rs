//! The coflow layer at flow level (issue 14; `../shared/papers/coflow-intra-scheduling.txt`).
//!
//! A coflow is a set of flows with a shared completion time: its CCT is the last flow's finish
//! minus the coflow's arrival. This crate holds the fast flow-level models, which need no
//! packets: inter-coflow scheduling on a non-blocking fabric (Varys, Aalo, Sincronia; `inter`,
//! with the reference simulator's rules in `coflowsim`), and intra-coflow shuffles and
//! broadcasts (MADD, Cornet) on a rack topology (`net`, `broadcast`). The packet-level
//! counterparts (`packet`) run the same shuffle and broadcast code as applications of `sim`.

pub mod apps;
pub mod broadcast;
pub mod coflowsim;
pub mod fabric;
pub mod inter;
pub mod net;
pub mod packet;
pub mod shuffle;
pub mod trace;
#[cfg(test)]
mod testrng;
