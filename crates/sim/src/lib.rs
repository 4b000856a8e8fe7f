//! slacknet's deterministic packet-level datacenter simulator.
//!
//! Pipeline: a [`spec::Spec`] (TOML/JSON) is validated into a [`spec::ValidSpec`] (every file
//! input read there); `topo` builds the network as dense arrays, `route` precomputes
//! equal-cost next hops, `workload` turns the scenario's workload entries into applications
//! (`app`), and `world` runs the event loop: applications start transfers, `proto` endpoints
//! at the hosts carry them, and applications hear how they ended. [`metrics::Output`] is what
//! comes out: per-flow records, per-application records and counters. Every random stream
//! comes from the registry in `rng`.
//!
//! Determinism: a run is a pure function of `(spec, seed)`. Equal-time events run in
//! scheduling order (`sched`), every random choice comes from RNGs derived from the seed, and
//! nothing reads the OS clock. There are no globals: many simulations can run in one process.

#![warn(missing_docs, unreachable_pub, missing_debug_implementations)]

pub mod admission;
pub mod app;
pub mod credence;
#[cfg(feature = "mimalloc")]
pub mod heap;
pub mod ideal;
pub mod metrics;
pub mod packet;
pub mod queue;
pub mod rng;
pub mod route;
pub mod sched;
pub mod spec;
pub mod textfile;
pub mod topo;
pub mod workload;
pub mod world;

pub use metrics::{FctRecord, Output, Summary};
pub use spec::{Spec, SpecError, ValidSpec};
pub use world::{Simulation, TakenRecords};

/// A run that could not be set up or carried out (the scenario itself was valid).
#[derive(Clone, Debug, PartialEq, thiserror::Error)]
pub enum SimError {
    /// A workload input (CDF or flow list) could not be read or is malformed.
    #[error("{key}: {message}")]
    Workload {
        /// The scenario key whose input is at fault (`workload[0].cdf`).
        key: String,
        /// What is wrong, with the file and line.
        message: String,
    },
    /// The network could not be built as the scenario asks (an admission policy's model).
    #[error("{key}: {message}")]
    Setup {
        /// The scenario key at fault.
        key: String,
        /// What is wrong.
        message: String,
    },
}

impl SimError {
    /// The scenario key at fault.
    pub fn key(&self) -> &str {
        match self {
            SimError::Workload { key, .. } | SimError::Setup { key, .. } => key,
        }
    }
}

/// Run a validated scenario to its end and return everything it produced.
pub fn run(spec: &ValidSpec) -> Result<Output, SimError> {
    let mut sim = Simulation::new(spec)?;
    sim.run_to_end();
    Ok(sim.output())
}
