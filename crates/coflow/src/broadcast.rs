//! Broadcasts (one-to-many coflows) at flow level: HDFS, chain, tree, BitTorrent and Cornet.
//!
//! One sender holds `S` bytes that `N` receivers all need (`../shared/papers/
//! coflow-intra-scheduling.txt`, "Broadcast Coflow"; Orchestra, SIGCOMM'11 §5). Every
//! mechanism moves blocks as flows on a [`Net`]; a receiver finishes when it holds every
//! block, the broadcast when the last receiver does.
//!
//! # Mechanisms
//!
//! * **HDFS** (`Hdfs { replicas: R }`): the sender writes the data into a distributed file
//!   system with replication `R`, then every receiver reads it back (Spark's first broadcast,
//!   Orchestra's baseline). The write is HDFS's pipeline, block by block (64 MB HDFS blocks):
//!   sender → replica 1 → ... → replica `R`, every hop a flow started together (cut-through,
//!   as DataNodes forward packets as they arrive). The `R` replica holders are `R` receivers
//!   picked at random (seeded); they finish when the write does. The others then read the
//!   file block by block, each block from a replica (same-rack first, as HDFS orders replicas
//!   by distance, else random). Reads start after the file is closed.
//! * **Chain** and **Tree** (`Tree { degree: d }`, chain = degree 1): receivers in a d-ary tree
//!   in heap order under the sender; every node streams blocks to each child in order, one
//!   block at a time per child, forwarding a block as soon as it has it.
//! * **BitTorrent**: small blocks, peers upload to at most `unchoke_slots` others (tit-for-tat:
//!   at every rechoke, the peers that uploaded most to it in the last interval, plus one
//!   random optimistic unchoke; free slots are filled at random as peers become interested),
//!   one block request at a time per connection, rarest block first (approximately: the
//!   rarest of up to [`RAREST_SAMPLE`] candidates, so that a selection costs O(1) not
//!   O(blocks)).
//! * **Cornet**: large blocks (4 MB), no tit-for-tat: a receiver requests a random block it
//!   lacks from a random node holding it that has a free upload slot (every receiver serves
//!   every block it holds, finished or not); it keeps up to `max_fetches` requests in flight
//!   and every node serves at most `upload_slots` at once. A receiver that finds nothing to
//!   fetch waits for its next poll (`poll_interval_s`) or a wake-up: each finished transfer
//!   wakes the longest-waiting receivers before the one whose block just landed, so a freed
//!   slot goes to whoever waited (without this, receivers finished up to 35% apart).
//!   Integrity is one check over the whole data at the end, which, like BitTorrent's
//!   per-block SHA1, costs CPU, not network, and is not modelled.
//! * **CornetTopology**: Cornet that knows the racks: a receiver fetches a block from a
//!   same-rack holder when one exists, and goes across racks only for a block that no
//!   rack-mate holds or is fetching (so about one copy of each block enters each rack).
//! * **CornetClustering**: Cornet that infers the racks: it runs as Cornet while it measures
//!   block transfer rates; once `cluster_after_transfers` transfers have finished (0: eight
//!   per receiver, at most a quarter of all) it clusters the nodes (see [`infer_racks`]) and
//!   behaves as CornetTopology with the inferred racks.
//!
//! Every block-level fetch (Cornet, BitTorrent) pays `request_overhead_s` (5 ms) between the
//! request and the first byte: the request's round trip and the peer's handling of it. Chain,
//! tree and HDFS stream, so they pay none. This fixed cost per block is what makes small
//! blocks slow (Figure 4.10's left side); large blocks limit sharing (its right side).
//!
//! HDFS's replication is clamped to the number of receivers. Hadoop writes job files shared
//! by all tasks with replication 10 (`mapred.submit.replication`), so `Hdfs { replicas: 10 }`
//! is the "status quo in Hadoop" the slides compare Cornet with.
//!
//! # Lower bound
//!
//! `S` over the smallest of: the sender's up link, any receiver's down link, the downlink of
//! any rack that holds receivers but not the sender (every byte must cross each of these).
//!
//! # Invariants
//!
//! No receiver ever requests a block it holds or is already fetching, so every receiver ends
//! with every block exactly once ([`BroadcastResult::block_receipts`]). Every random choice
//! comes from one [`Pcg32`] seeded with [`BroadcastConfig::seed`], and events are processed in
//! a fixed order, so a run is a pure function of its inputs.

use std::cmp::Ordering;
use std::collections::{BinaryHeap, VecDeque};

pub mod figures;

use crate::net::{
    check_at_least, check_positive, gbps_to_bytes_per_s, Completion, FlowNet, Net, ParamError,
    Pcg32, Topology,
};

/// Candidates examined by BitTorrent's approximate rarest-first (module docs).
pub const RAREST_SAMPLE: usize = 32;

/// Cornet's block choices tried before a receiver gives up until its next wake-up.
const CORNET_PROBES: usize = 8;

/// BitTorrent: candidate peers a peer with a free unchoke slot looks at, per attempt.
const BT_FILL_CANDIDATES: usize = 16;

/// Idle receivers woken by each finished transfer (they find the freed slot or new block).
const WAKE_PER_COMPLETION: usize = 2;

/// A broadcast mechanism (module docs).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Mechanism {
    /// Write into HDFS with this many replicas, then read.
    Hdfs {
        /// Replication factor `R` (clamped to the number of receivers).
        replicas: usize,
    },
    /// A chain of receivers (a tree of degree 1).
    Chain,
    /// A d-ary tree of receivers.
    Tree {
        /// Children per node.
        degree: usize,
    },
    /// BitTorrent-like: small blocks, tit-for-tat choking, rarest first.
    BitTorrent,
    /// Cornet: large blocks, any holder serves, random blocks.
    Cornet,
    /// Cornet with the rack topology given.
    CornetTopology,
    /// Cornet with the rack topology inferred from measured rates.
    CornetClustering,
}

impl Mechanism {
    /// A short name for tables: `HDFS-3`, `Chain`, `Tree-2`, `BitTorrent`, `Cornet`, ...
    pub fn name(&self) -> String {
        match self {
            Mechanism::Hdfs { replicas } => format!("HDFS-{replicas}"),
            Mechanism::Chain => "Chain".into(),
            Mechanism::Tree { degree } => format!("Tree-{degree}"),
            Mechanism::BitTorrent => "BitTorrent".into(),
            Mechanism::Cornet => "Cornet".into(),
            Mechanism::CornetTopology => "CornetTopology".into(),
            Mechanism::CornetClustering => "CornetClustering".into(),
        }
    }
}

/// A mechanism name that [`Mechanism`]'s `FromStr` does not know.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error("unknown broadcast mechanism {0:?} (expected HDFS-<R>, Chain, Tree-<d>, BitTorrent, Cornet, CornetTopology or CornetClustering)")]
pub struct UnknownMechanism(pub String);

impl std::str::FromStr for Mechanism {
    type Err = UnknownMechanism;

    /// Parses [`Mechanism::name`]'s output back (case-insensitive), e.g. for a Python binding.
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        let lower = s.to_ascii_lowercase();
        let err = || UnknownMechanism(s.to_string());
        let number = |rest: &str| rest.parse::<usize>().map_err(|_| err());
        Ok(match lower.as_str() {
            "chain" => Mechanism::Chain,
            "bittorrent" => Mechanism::BitTorrent,
            "cornet" => Mechanism::Cornet,
            "cornettopology" => Mechanism::CornetTopology,
            "cornetclustering" => Mechanism::CornetClustering,
            _ => match lower.split_once('-') {
                Some(("hdfs", r)) => Mechanism::Hdfs {
                    replicas: number(r)?,
                },
                Some(("tree", d)) => Mechanism::Tree { degree: number(d)? },
                _ => return Err(err()),
            },
        })
    }
}

/// Parameters of a broadcast. [`Default`] holds the documented defaults.
#[derive(Clone, Debug, PartialEq)]
pub struct BroadcastConfig {
    /// Data size `S`, bytes.
    pub bytes: f64,
    /// Block size of Cornet, chain and tree, bytes (Cornet: 4 MB).
    pub block_bytes: f64,
    /// BitTorrent's block size, bytes (256 KB, the slides' "small").
    pub bittorrent_block_bytes: f64,
    /// HDFS block size, bytes (64 MB, HDFS's default of the time).
    pub hdfs_block_bytes: f64,
    /// Cornet: block requests a receiver keeps in flight (2).
    pub max_fetches: usize,
    /// Cornet: concurrent uploads per node. With 2 fetches and 2 uploads per node, Cornet's
    /// receivers finished within 3% of each other and within 27% of the lower bound on the
    /// EC2 model (1 GB, 100 receivers: 10.1 s); 1/1, 4/4 and 8/8 took 5-9% longer, and
    /// unlimited uploads let every receiver queue on the sender at the start (53.7 s).
    pub upload_slots: usize,
    /// BitTorrent: unchoke slots per peer (4, BitTorrent's default).
    pub unchoke_slots: usize,
    /// Cornet, BitTorrent: delay between a block request and its first byte, seconds.
    pub request_overhead_s: f64,
    /// Cornet: how long a receiver that found nothing to fetch waits before looking again.
    pub poll_interval_s: f64,
    /// BitTorrent: rechoke interval, seconds (10 s, as in BitTorrent).
    pub rechoke_interval_s: f64,
    /// CornetClustering: finished transfers after which the racks are inferred.
    pub cluster_after_transfers: usize,
    /// Seed of every random choice.
    pub seed: u64,
}

impl Default for BroadcastConfig {
    fn default() -> Self {
        BroadcastConfig {
            bytes: 1e9,
            block_bytes: 4.0 * MB,
            bittorrent_block_bytes: 256.0 * KB,
            hdfs_block_bytes: 64.0 * MB,
            max_fetches: 2,
            upload_slots: 2,
            unchoke_slots: 4,
            request_overhead_s: 5e-3,
            poll_interval_s: 0.1,
            rechoke_interval_s: 10.0,
            cluster_after_transfers: 0,
            seed: 1,
        }
    }
}

/// 2^10 bytes.
pub const KB: f64 = 1024.0;
/// 2^20 bytes.
pub const MB: f64 = 1024.0 * 1024.0;

/// Who sends and who receives.
#[derive(Clone, Debug, PartialEq)]
pub struct Placement {
    /// The sender's host.
    pub sender: usize,
    /// The receivers' hosts (distinct, without the sender).
    pub receivers: Vec<usize>,
}

impl Placement {
    /// Sender on host 0, receivers on hosts `1..=num_receivers`.
    pub fn first_hosts(num_receivers: usize) -> Self {
        Placement {
            sender: 0,
            receivers: (1..=num_receivers).collect(),
        }
    }
}

/// The outcome of one broadcast.
#[derive(Clone, Debug, PartialEq)]
pub struct BroadcastResult {
    /// When the last receiver finished, seconds.
    pub completion_s: f64,
    /// When each receiver (in placement order) finished, seconds.
    pub receiver_finish_s: Vec<f64>,
    /// The lower bound (module docs), seconds.
    pub lower_bound_s: f64,
    /// Per receiver, how many times it received each of the mechanism's blocks (all 1 when
    /// bytes are conserved; HDFS replica holders count their pipeline copy).
    pub block_receipts: Vec<Vec<u32>>,
    /// Block transfers (flows) in the run.
    pub num_transfers: usize,
    /// CornetClustering: the inferred cluster of each node (sender first), else `None`.
    pub inferred_racks: Option<Vec<usize>>,
}

/// The lower bound of a broadcast of `bytes` (module docs), seconds.
pub fn lower_bound_s(topo: &Topology, placement: &Placement, bytes: f64) -> f64 {
    let mut slowest = topo.host_up_gbps[placement.sender];
    for &r in &placement.receivers {
        slowest = slowest.min(topo.host_down_gbps[r]);
        let rack = topo.rack_of[r];
        if !topo.is_flat() && rack != topo.rack_of[placement.sender] {
            slowest = slowest.min(topo.rack_down_gbps[rack]);
        }
    }
    bytes / gbps_to_bytes_per_s(slowest)
}

/// Runs one broadcast from time 0 to its end.
pub fn run_broadcast(
    topo: &Topology,
    placement: &Placement,
    mechanism: Mechanism,
    cfg: &BroadcastConfig,
) -> Result<BroadcastResult, ParamError> {
    let block = check_broadcast(topo, placement, mechanism, cfg)?;
    let mut b = Bcast::new(Net::new(topo.clone())?, placement, mechanism, cfg, block)?;
    b.run()?;
    Ok(b.into_result(topo, placement))
}

/// Checks a broadcast's parameters; returns the mechanism's block size in bytes.
pub(crate) fn check_broadcast(
    topo: &Topology,
    placement: &Placement,
    mechanism: Mechanism,
    cfg: &BroadcastConfig,
) -> Result<f64, ParamError> {
    check_positive("broadcast size (bytes)", cfg.bytes)?;
    check_positive("block size (bytes)", cfg.block_bytes)?;
    check_positive("BitTorrent block size (bytes)", cfg.bittorrent_block_bytes)?;
    check_positive("HDFS block size (bytes)", cfg.hdfs_block_bytes)?;
    check_at_least("number of receivers", placement.receivers.len(), 1)?;
    check_at_least("concurrent fetches per receiver", cfg.max_fetches, 1)?;
    check_at_least("upload slots", cfg.upload_slots, 1)?;
    check_at_least("unchoke slots", cfg.unchoke_slots, 1)?;
    check_positive("poll interval (s)", cfg.poll_interval_s)?;
    check_positive("rechoke interval (s)", cfg.rechoke_interval_s)?;
    if !(cfg.request_overhead_s >= 0.0 && cfg.request_overhead_s.is_finite()) {
        return Err(ParamError::NotPositive {
            what: "request overhead (s)",
            value: cfg.request_overhead_s,
        });
    }
    match mechanism {
        Mechanism::Hdfs { replicas } => check_at_least("HDFS replicas", replicas, 1)?,
        Mechanism::Tree { degree } => check_at_least("tree degree", degree, 1)?,
        _ => {}
    }
    let n = topo.num_hosts();
    let mut seen = vec![false; n];
    for &h in std::iter::once(&placement.sender).chain(&placement.receivers) {
        if h >= n {
            return Err(ParamError::UnknownHost {
                host: h,
                num_hosts: n,
            });
        }
        if seen[h] {
            return Err(if h == placement.sender {
                ParamError::SenderAmongReceivers { host: h }
            } else {
                ParamError::RepeatedReceiver { host: h }
            });
        }
        seen[h] = true;
    }
    let block = match mechanism {
        Mechanism::BitTorrent => cfg.bittorrent_block_bytes,
        Mechanism::Hdfs { .. } => cfg.hdfs_block_bytes,
        _ => cfg.block_bytes,
    };
    // The engine keeps per-node bitsets and per-receiver receipt counts over the blocks.
    let blocks = (cfg.bytes / block).ceil();
    let cells = blocks * (placement.receivers.len() + 1) as f64;
    if blocks > MAX_BLOCKS as f64 || cells > MAX_BLOCK_CELLS as f64 {
        return Err(ParamError::TooMany {
            what: "blocks (bytes / block size, times nodes at most 2^25; use larger blocks)",
            max: MAX_BLOCKS.min(MAX_BLOCK_CELLS / (placement.receivers.len() + 1)),
            value: blocks.min(usize::MAX as f64) as usize,
        });
    }
    Ok(block)
}

/// The most blocks one broadcast may have (a larger block size fits more data).
pub const MAX_BLOCKS: usize = 1 << 20;

/// The most blocks times nodes one broadcast may have: the per-node block tables then take at
/// most a few hundred MB.
pub const MAX_BLOCK_CELLS: usize = 1 << 25;

// ---------------------------------------------------------------------------------------------
// The engine: shared block bookkeeping, timers, and one `on_*` per mechanism family.

/// A pending timer. Ordered by (time, seq): FIFO among equal times.
#[derive(Clone, Copy, Debug)]
struct Timer {
    at: f64,
    seq: u64,
    ev: TimerEv,
}

#[derive(Clone, Copy, Debug)]
enum TimerEv {
    /// A block request's overhead elapsed: start its flow.
    StartTransfer { transfer: u32 },
    /// A Cornet receiver's poll.
    Poll { node: u32 },
    /// BitTorrent's periodic rechoke.
    Rechoke,
}

impl PartialEq for Timer {
    fn eq(&self, o: &Self) -> bool {
        self.cmp(o) == Ordering::Equal
    }
}
impl Eq for Timer {}
impl PartialOrd for Timer {
    fn partial_cmp(&self, o: &Self) -> Option<Ordering> {
        Some(self.cmp(o))
    }
}
impl Ord for Timer {
    fn cmp(&self, o: &Self) -> Ordering {
        o.at.total_cmp(&self.at).then(o.seq.cmp(&self.seq))
    }
}

#[derive(Clone, Copy, Debug)]
struct Transfer {
    from: u32,
    to: u32,
    block: u32,
}

/// A fixed-size bitset over blocks.
#[derive(Clone, Debug)]
struct Bits(Vec<u64>);

impl Bits {
    fn new(n: usize) -> Self {
        Bits(vec![0; n.div_ceil(64)])
    }
    fn full(n: usize) -> Self {
        let mut b = Bits::new(n);
        for i in 0..n {
            b.set(i);
        }
        b
    }
    fn get(&self, i: usize) -> bool {
        self.0[i / 64] >> (i % 64) & 1 == 1
    }
    fn set(&mut self, i: usize) {
        self.0[i / 64] |= 1 << (i % 64);
    }
    fn clear(&mut self, i: usize) {
        self.0[i / 64] &= !(1 << (i % 64));
    }
}

/// BitTorrent: one upload connection of a peer.
#[derive(Clone, Copy, Debug)]
struct Conn {
    peer: u32,
    is_busy: bool,
    /// Choked at a rechoke while a block was in flight: dropped when it lands.
    is_choked: bool,
}

/// One broadcast's state, driven by the fluid [`Net`] ([`Bcast::run`]) or by the packet
/// simulator (`crate::packet`) through [`Bcast::begin`], [`Bcast::fire_due_timers`] and
/// [`Bcast::on_transfer_done`].
#[derive(Debug)]
pub(crate) struct Bcast<N> {
    cfg: BroadcastConfig,
    mechanism: Mechanism,
    pub(crate) net: N,
    rng: Pcg32,
    timers: BinaryHeap<Timer>,
    timer_seq: u64,
    /// Host of each node; node 0 is the sender, node `i >= 1` is receiver `i - 1`.
    host: Vec<usize>,
    num_blocks: usize,
    block: f64,
    has: Vec<Bits>,
    in_flight: Vec<Bits>,
    num_have: Vec<usize>,
    holders: Vec<Vec<u32>>,
    receipts: Vec<Vec<u32>>,
    finish_s: Vec<f64>,
    transfers: Vec<Transfer>,
    // Cornet.
    uploads: Vec<usize>,
    fetches: Vec<usize>,
    wanted: Vec<Vec<u32>>,
    is_idle: Vec<bool>,
    is_poll_pending: Vec<bool>,
    idle: VecDeque<u32>,
    /// Rack of each node as the mechanism believes it (`None` = topology not used).
    rack: Option<Vec<usize>>,
    /// Per believed rack and block: holders and fetchers in that rack.
    rack_holders: Vec<Vec<u32>>,
    rack_fetching: Vec<Vec<u32>>,
    /// CornetClustering: per ordered node pair, the sum of measured block rates (Gbit/s) and
    /// their count.
    measured: Vec<Vec<(f64, u32)>>,
    num_finished_transfers: usize,
    inferred: Option<Vec<usize>>,
    // Chain / tree.
    children: Vec<Vec<u32>>,
    /// Per node, per child: next block to send and whether the edge is busy.
    next_block: Vec<Vec<(usize, bool)>>,
    // HDFS.
    replicas: Vec<u32>,
    hdfs_hops_left: usize,
    hdfs_write_block: usize,
    hdfs_next_read: Vec<usize>,
    // BitTorrent.
    conns: Vec<Vec<Conn>>,
    recv_from: Vec<Vec<f64>>,
}

impl Bcast<Net> {
    /// Runs the broadcast on the fluid network to its end.
    fn run(&mut self) -> Result<(), ParamError> {
        self.begin()?;
        let mut done = Vec::new();
        loop {
            let next_timer = self.next_timer_s().unwrap_or(f64::INFINITY);
            if self.net.num_active() == 0 && self.timers.is_empty() {
                break;
            }
            if self.is_complete() {
                break; // only polls and rechokes are left
            }
            done.clear();
            self.net.advance(next_timer, &mut done);
            if !done.is_empty() {
                for c in &done {
                    self.on_transfer_done(c)?;
                }
                continue;
            }
            self.fire_due_timers(self.net.now())?;
        }
        Ok(())
    }
}

impl<N: FlowNet> Bcast<N> {
    pub(crate) fn new(
        net: N,
        placement: &Placement,
        mechanism: Mechanism,
        cfg: &BroadcastConfig,
        block: f64,
    ) -> Result<Self, ParamError> {
        let topo = net.topology();
        let host: Vec<usize> = std::iter::once(placement.sender)
            .chain(placement.receivers.iter().copied())
            .collect();
        let nodes = host.len();
        let num_blocks = (cfg.bytes / block).ceil().max(1.0) as usize;
        let mut has = vec![Bits::new(num_blocks); nodes];
        has[0] = Bits::full(num_blocks);
        let mut num_have = vec![0; nodes];
        num_have[0] = num_blocks;
        let rack = match mechanism {
            Mechanism::CornetTopology => {
                Some(host.iter().map(|&h| topo.rack_of[h]).collect::<Vec<_>>())
            }
            _ => None,
        };
        let mut b = Bcast {
            cfg: cfg.clone(),
            mechanism,
            net,
            rng: Pcg32::new(cfg.seed),
            timers: BinaryHeap::new(),
            timer_seq: 0,
            num_blocks,
            block,
            has,
            in_flight: vec![Bits::new(num_blocks); nodes],
            num_have,
            holders: vec![vec![0]; num_blocks],
            receipts: vec![vec![0; num_blocks]; nodes - 1],
            finish_s: vec![f64::NAN; nodes],
            transfers: Vec::new(),
            uploads: vec![0; nodes],
            fetches: vec![0; nodes],
            wanted: Vec::new(),
            is_idle: vec![false; nodes],
            is_poll_pending: vec![false; nodes],
            idle: VecDeque::new(),
            rack: None,
            rack_holders: Vec::new(),
            rack_fetching: Vec::new(),
            measured: Vec::new(),
            num_finished_transfers: 0,
            inferred: None,
            children: Vec::new(),
            next_block: Vec::new(),
            replicas: Vec::new(),
            hdfs_hops_left: 0,
            hdfs_write_block: 0,
            hdfs_next_read: Vec::new(),
            conns: Vec::new(),
            recv_from: Vec::new(),
            host,
        };
        b.set_racks(rack);
        Ok(b)
    }

    fn nodes(&self) -> usize {
        self.host.len()
    }

    fn block_bytes(&self, blk: usize) -> f64 {
        if blk + 1 < self.num_blocks {
            self.block
        } else {
            self.cfg.bytes - self.block * (self.num_blocks - 1) as f64
        }
    }

    fn schedule(&mut self, after: f64, ev: TimerEv) {
        self.timer_seq += 1;
        self.timers.push(Timer {
            at: self.net.now() + after,
            seq: self.timer_seq,
            ev,
        });
    }

    /// Registers a transfer; it starts after `overhead` seconds.
    fn request(&mut self, from: u32, to: u32, blk: usize, overhead: f64) -> Result<(), ParamError> {
        let t = self.transfers.len() as u32;
        self.transfers.push(Transfer {
            from,
            to,
            block: blk as u32,
        });
        self.in_flight[to as usize].set(blk);
        self.uploads[from as usize] += 1;
        self.fetches[to as usize] += 1;
        if let Some(rack) = &self.rack {
            self.rack_fetching[rack[to as usize]][blk] += 1;
        }
        if overhead > 0.0 {
            self.schedule(overhead, TimerEv::StartTransfer { transfer: t });
            Ok(())
        } else {
            self.start_transfer(t)
        }
    }

    fn start_transfer(&mut self, t: u32) -> Result<(), ParamError> {
        let tr = self.transfers[t as usize];
        let bytes = self.block_bytes(tr.block as usize);
        self.net.start_flow(
            self.host[tr.from as usize],
            self.host[tr.to as usize],
            bytes,
            None,
            t as u64,
        )?;
        Ok(())
    }

    /// Books a landed block; returns the transfer.
    fn land(&mut self, c: &Completion) -> Transfer {
        let tr = self.transfers[c.tag as usize];
        let (from, to, blk) = (tr.from as usize, tr.to as usize, tr.block as usize);
        self.uploads[from] -= 1;
        self.fetches[to] -= 1;
        self.in_flight[to].clear(blk);
        if let Some(rack) = &self.rack {
            self.rack_fetching[rack[to]][blk] -= 1;
            self.rack_holders[rack[to]][blk] += 1;
        }
        // INVARIANT: a node is never sent a block it holds (requests check `has` and
        // `in_flight`), so every receipt is a first receipt.
        debug_assert!(!self.has[to].get(blk));
        self.has[to].set(blk);
        self.num_have[to] += 1;
        self.holders[blk].push(to as u32);
        self.receipts[to - 1][blk] += 1;
        if self.num_have[to] == self.num_blocks {
            self.finish_s[to] = c.finish_s;
        }
        self.num_finished_transfers += 1;
        if !self.measured.is_empty() {
            let m = &mut self.measured[from][to];
            m.0 += c.mean_gbps();
            m.1 += 1;
        }
        tr
    }

    fn set_racks(&mut self, rack: Option<Vec<usize>>) {
        self.rack_holders.clear();
        self.rack_fetching.clear();
        if let Some(r) = &rack {
            let num_racks = r.iter().copied().max().unwrap_or(0) + 1;
            self.rack_holders = vec![vec![0; self.num_blocks]; num_racks];
            self.rack_fetching = vec![vec![0; self.num_blocks]; num_racks];
            for (node, &rack_of_node) in r.iter().enumerate() {
                for blk in 0..self.num_blocks {
                    if self.has[node].get(blk) {
                        self.rack_holders[rack_of_node][blk] += 1;
                    }
                    if self.in_flight[node].get(blk) {
                        self.rack_fetching[rack_of_node][blk] += 1;
                    }
                }
            }
        }
        self.rack = rack;
    }

    /// Starts the mechanism at the current time.
    pub(crate) fn begin(&mut self) -> Result<(), ParamError> {
        match self.mechanism {
            Mechanism::Hdfs { replicas } => self.hdfs_start(replicas)?,
            Mechanism::Chain => self.tree_start(1)?,
            Mechanism::Tree { degree } => self.tree_start(degree)?,
            Mechanism::BitTorrent => self.bt_start()?,
            Mechanism::Cornet | Mechanism::CornetTopology | Mechanism::CornetClustering => {
                self.cornet_start()?
            }
        }
        Ok(())
    }

    /// When the earliest pending timer is due, if any.
    pub(crate) fn next_timer_s(&self) -> Option<f64> {
        self.timers.peek().map(|t| t.at)
    }

    /// Whether every receiver holds every block (only polls and rechokes may be left).
    pub(crate) fn is_complete(&self) -> bool {
        self.num_have.iter().all(|&h| h == self.num_blocks)
    }

    /// Runs every timer due at or before `now`, in (time, insertion) order.
    pub(crate) fn fire_due_timers(&mut self, now: f64) -> Result<(), ParamError> {
        while self.timers.peek().is_some_and(|t| t.at <= now) {
            let t = self.timers.pop().expect("peeked");
            self.on_timer(t.ev)?;
        }
        Ok(())
    }
    fn on_timer(&mut self, ev: TimerEv) -> Result<(), ParamError> {
        match ev {
            TimerEv::StartTransfer { transfer } => self.start_transfer(transfer),
            TimerEv::Poll { node } => {
                self.is_poll_pending[node as usize] = false;
                self.cornet_try(node as usize)
            }
            TimerEv::Rechoke => self.bt_rechoke(),
        }
    }

    /// A block transfer started by this broadcast finished.
    pub(crate) fn on_transfer_done(&mut self, c: &Completion) -> Result<(), ParamError> {
        match self.mechanism {
            Mechanism::Hdfs { .. } => self.hdfs_on_done(c),
            Mechanism::Chain | Mechanism::Tree { .. } => self.tree_on_done(c),
            Mechanism::BitTorrent => self.bt_on_done(c),
            Mechanism::Cornet | Mechanism::CornetTopology | Mechanism::CornetClustering => {
                self.cornet_on_done(c)
            }
        }
    }

    pub(crate) fn into_result(self, topo: &Topology, placement: &Placement) -> BroadcastResult {
        let receiver_finish_s: Vec<f64> = self.finish_s[1..].to_vec();
        BroadcastResult {
            completion_s: receiver_finish_s.iter().copied().fold(0.0, f64::max),
            receiver_finish_s,
            lower_bound_s: lower_bound_s(topo, placement, self.cfg.bytes),
            block_receipts: self.receipts,
            num_transfers: self.transfers.len(),
            inferred_racks: self.inferred,
        }
    }

    // ---- Chain and tree ------------------------------------------------------------------

    fn tree_start(&mut self, degree: usize) -> Result<(), ParamError> {
        let nodes = self.nodes();
        self.children = (0..nodes)
            .map(|i| {
                ((degree * i + 1)..=(degree * i + degree))
                    .filter(|&c| c < nodes)
                    .map(|c| c as u32)
                    .collect()
            })
            .collect();
        self.next_block = self
            .children
            .iter()
            .map(|ch| vec![(0, false); ch.len()])
            .collect();
        self.tree_push(0)
    }

    /// Starts, on every idle edge out of `node`, the next block if `node` has it.
    fn tree_push(&mut self, node: usize) -> Result<(), ParamError> {
        for k in 0..self.children[node].len() {
            let (next, is_busy) = self.next_block[node][k];
            if !is_busy && next < self.num_blocks && self.has[node].get(next) {
                self.next_block[node][k] = (next + 1, true);
                let child = self.children[node][k];
                self.request(node as u32, child, next, 0.0)?;
            }
        }
        Ok(())
    }

    fn tree_on_done(&mut self, c: &Completion) -> Result<(), ParamError> {
        let tr = self.land(c);
        let k = self.children[tr.from as usize]
            .iter()
            .position(|&x| x == tr.to)
            .expect("tree edge");
        self.next_block[tr.from as usize][k].1 = false;
        self.tree_push(tr.from as usize)?;
        self.tree_push(tr.to as usize)
    }

    // ---- HDFS ----------------------------------------------------------------------------

    fn hdfs_start(&mut self, replicas: usize) -> Result<(), ParamError> {
        let mut receivers: Vec<u32> = (1..self.nodes() as u32).collect();
        self.rng.shuffle(&mut receivers);
        receivers.truncate(replicas.min(self.nodes() - 1));
        self.replicas = receivers;
        self.hdfs_next_read = vec![0; self.nodes()];
        self.hdfs_write_next()
    }

    /// Starts the pipeline write of the next HDFS block: every hop at once (module docs).
    fn hdfs_write_next(&mut self) -> Result<(), ParamError> {
        let blk = self.hdfs_write_block;
        self.hdfs_hops_left = self.replicas.len();
        let mut from = 0;
        for k in 0..self.replicas.len() {
            let to = self.replicas[k];
            self.request(from, to, blk, 0.0)?;
            from = to;
        }
        Ok(())
    }

    fn hdfs_on_done(&mut self, c: &Completion) -> Result<(), ParamError> {
        let tr = self.land(c);
        let is_write = self.hdfs_write_block < self.num_blocks;
        if is_write {
            self.hdfs_hops_left -= 1;
            if self.hdfs_hops_left > 0 {
                return Ok(());
            }
            self.hdfs_write_block += 1;
            if self.hdfs_write_block < self.num_blocks {
                return self.hdfs_write_next();
            }
            // The file is closed: every other receiver starts reading.
            for node in 1..self.nodes() {
                if self.num_have[node] < self.num_blocks {
                    self.hdfs_read_next(node)?;
                }
            }
            return Ok(());
        }
        self.hdfs_read_next(tr.to as usize)
    }

    /// A reader's next block, from a same-rack replica if any, else a random one.
    fn hdfs_read_next(&mut self, node: usize) -> Result<(), ParamError> {
        let blk = self.hdfs_next_read[node];
        if blk >= self.num_blocks {
            return Ok(());
        }
        self.hdfs_next_read[node] = blk + 1;
        let topo = self.net.topology();
        let my_rack = topo.rack_of[self.host[node]];
        let local: Vec<u32> = self
            .replicas
            .iter()
            .copied()
            .filter(|&r| topo.rack_of[self.host[r as usize]] == my_rack)
            .collect();
        let pool = if local.is_empty() {
            self.replicas.clone()
        } else {
            local
        };
        let src = pool[self.rng.below(pool.len())];
        self.request(src, node as u32, blk, 0.0)
    }

    // ---- Cornet --------------------------------------------------------------------------

    fn cornet_start(&mut self) -> Result<(), ParamError> {
        let nodes = self.nodes();
        self.wanted = (0..nodes)
            .map(|n| {
                if n == 0 {
                    Vec::new()
                } else {
                    (0..self.num_blocks as u32).collect()
                }
            })
            .collect();
        if self.mechanism == Mechanism::CornetClustering {
            self.measured = vec![vec![(0.0, 0); nodes]; nodes];
        }
        for node in 1..nodes {
            self.cornet_try(node)?;
        }
        Ok(())
    }

    /// Whether `to` may fetch `blk` from `from` under the topology rule (module docs).
    fn is_allowed(&self, from: usize, to: usize, blk: usize) -> bool {
        match &self.rack {
            None => true,
            Some(rack) => {
                rack[from] == rack[to]
                    || (self.rack_holders[rack[to]][blk] == 0
                        && self.rack_fetching[rack[to]][blk] == 0)
            }
        }
    }

    /// Fills `node`'s free fetch slots; if it finds nothing, it waits (module docs).
    fn cornet_try(&mut self, node: usize) -> Result<(), ParamError> {
        self.is_idle[node] = false;
        'slots: while self.fetches[node] < self.cfg.max_fetches && !self.wanted[node].is_empty() {
            for _ in 0..CORNET_PROBES.min(self.wanted[node].len()) {
                let i = self.rng.below(self.wanted[node].len());
                let blk = self.wanted[node][i] as usize;
                if let Some(src) = self.cornet_pick_source(node, blk) {
                    self.wanted[node].swap_remove(i);
                    self.request(src as u32, node as u32, blk, self.cfg.request_overhead_s)?;
                    continue 'slots;
                }
            }
            // Nothing fetchable now: wait for a wake-up or the next poll.
            self.is_idle[node] = true;
            self.idle.push_back(node as u32);
            if !self.is_poll_pending[node] {
                self.is_poll_pending[node] = true;
                self.schedule(
                    self.cfg.poll_interval_s,
                    TimerEv::Poll { node: node as u32 },
                );
            }
            break;
        }
        Ok(())
    }

    /// A holder of `blk` with a free upload slot that `node` may use: same rack first when
    /// the racks are known, random among equals.
    fn cornet_pick_source(&mut self, node: usize, blk: usize) -> Option<usize> {
        let holders = &self.holders[blk];
        let len = holders.len();
        let start = self.rng.below(len);
        let mut fallback = None;
        for k in 0..len {
            let h = holders[(start + k) % len] as usize;
            if self.uploads[h] >= self.cfg.upload_slots || !self.is_allowed(h, node, blk) {
                continue;
            }
            match &self.rack {
                Some(rack) if rack[h] != rack[node] => {
                    if fallback.is_none() {
                        fallback = Some(h);
                    }
                }
                _ => return Some(h),
            }
        }
        fallback
    }

    fn cornet_on_done(&mut self, c: &Completion) -> Result<(), ParamError> {
        let tr = self.land(c);
        if self.mechanism == Mechanism::CornetClustering
            && self.inferred.is_none()
            && self.num_finished_transfers >= self.cluster_threshold()
        {
            let means: Vec<Vec<f64>> = self
                .measured
                .iter()
                .map(|row| {
                    row.iter()
                        .map(|&(sum, n)| if n > 0 { sum / n as f64 } else { 0.0 })
                        .collect()
                })
                .collect();
            let racks = infer_racks(&means);
            self.set_racks(Some(racks.clone()));
            self.inferred = Some(racks);
        }
        // Receivers already waiting go first (FIFO), then the one whose fetch just landed:
        // otherwise a receiver that holds a source's slot keeps winning it back the moment
        // it frees, and receivers finish far apart.
        for _ in 0..WAKE_PER_COMPLETION {
            let Some(n) = self.idle.pop_front() else {
                break;
            };
            if self.is_idle[n as usize] {
                self.cornet_try(n as usize)?;
            }
        }
        self.cornet_try(tr.to as usize)
    }

    fn cluster_threshold(&self) -> usize {
        if self.cfg.cluster_after_transfers > 0 {
            self.cfg.cluster_after_transfers
        } else {
            // Default: eight block transfers per receiver, capped at a quarter of the run.
            (8 * (self.nodes() - 1))
                .min(self.num_blocks * (self.nodes() - 1) / 4)
                .max(1)
        }
    }

    // ---- BitTorrent ----------------------------------------------------------------------

    fn bt_start(&mut self) -> Result<(), ParamError> {
        let nodes = self.nodes();
        self.conns = vec![Vec::new(); nodes];
        self.recv_from = vec![vec![0.0; nodes]; nodes];
        self.schedule(self.cfg.rechoke_interval_s, TimerEv::Rechoke);
        self.bt_fill(0)
    }

    fn bt_unchoked(&self, p: usize) -> usize {
        self.conns[p].iter().filter(|c| !c.is_choked).count()
    }

    /// Whether `q` wants something `p` has.
    fn bt_is_interested(&self, p: usize, q: usize) -> bool {
        self.has[p]
            .0
            .iter()
            .zip(&self.has[q].0)
            .zip(&self.in_flight[q].0)
            .any(|((a, b), f)| a & !b & !f != 0)
    }

    /// Fills `p`'s free unchoke slots with random interested peers.
    fn bt_fill(&mut self, p: usize) -> Result<(), ParamError> {
        let nodes = self.nodes();
        if self.bt_unchoked(p) >= self.cfg.unchoke_slots {
            return Ok(());
        }
        let start = self.rng.below(nodes);
        // PERF: look at a bounded number of candidates (a fill runs after every landed
        // block; scanning all peers' bitsets each time cost O(N * blocks) per block). A peer
        // with nothing in flight scans everyone: otherwise late in a run, when few peers
        // still want anything, it could miss them all and idle until the next rechoke.
        let limit = if self.conns[p].iter().any(|c| c.is_busy) {
            BT_FILL_CANDIDATES
        } else {
            nodes
        };
        for k in 0..nodes.min(limit) {
            if self.bt_unchoked(p) >= self.cfg.unchoke_slots {
                break;
            }
            let q = (start + k) % nodes;
            if q == 0 || q == p || self.conns[p].iter().any(|c| c.peer as usize == q) {
                continue;
            }
            if self.bt_is_interested(p, q) {
                self.conns[p].push(Conn {
                    peer: q as u32,
                    is_busy: false,
                    is_choked: false,
                });
                self.bt_serve(p, q)?;
            }
        }
        Ok(())
    }

    /// On the idle connection `p -> q`, requests the rarest block `q` wants; drops the
    /// connection (and refills the slot) if `q` wants nothing from `p`.
    fn bt_serve(&mut self, p: usize, q: usize) -> Result<(), ParamError> {
        let Some(k) = self.conns[p].iter().position(|c| c.peer as usize == q) else {
            return Ok(());
        };
        if self.conns[p][k].is_busy {
            return Ok(());
        }
        match self.bt_rarest(p, q) {
            Some(blk) => {
                self.conns[p][k].is_busy = true;
                self.request(p as u32, q as u32, blk, self.cfg.request_overhead_s)
            }
            None => {
                self.conns[p].swap_remove(k);
                self.bt_fill(p)
            }
        }
    }

    /// The rarest of up to `RAREST_SAMPLE` blocks `p` has and `q` wants, scanning from a
    /// random word; ties go to the first seen.
    fn bt_rarest(&mut self, p: usize, q: usize) -> Option<usize> {
        let words = self.has[p].0.len();
        let start = self.rng.below(words);
        let mut best: Option<(usize, usize)> = None;
        let mut seen = 0;
        for k in 0..words {
            let w = (start + k) % words;
            let mut bits = self.has[p].0[w] & !self.has[q].0[w] & !self.in_flight[q].0[w];
            while bits != 0 {
                let blk = w * 64 + bits.trailing_zeros() as usize;
                bits &= bits - 1;
                let count = self.holders[blk].len();
                if best.is_none_or(|(_, c)| count < c) {
                    best = Some((blk, count));
                }
                seen += 1;
                if seen >= RAREST_SAMPLE {
                    return best.map(|(b, _)| b);
                }
            }
        }
        best.map(|(b, _)| b)
    }

    fn bt_on_done(&mut self, c: &Completion) -> Result<(), ParamError> {
        let tr = self.land(c);
        let (p, q) = (tr.from as usize, tr.to as usize);
        self.recv_from[q][p] += c.bytes;
        let k = self.conns[p]
            .iter()
            .position(|x| x.peer as usize == q)
            .expect("busy connection");
        if self.conns[p][k].is_choked {
            self.conns[p].swap_remove(k);
            self.bt_fill(p)?;
        } else {
            self.conns[p][k].is_busy = false;
            self.bt_serve(p, q)?;
        }
        // `q` has a new block: peers may now be interested in it.
        self.bt_fill(q)
    }

    /// Tit-for-tat (BitTorrent's choker): each peer keeps unchoked the `slots - 1` interested
    /// peers that uploaded most to it in the last interval, plus one random optimistic
    /// unchoke. The sender, which downloads nothing, keeps random peers.
    fn bt_rechoke(&mut self) -> Result<(), ParamError> {
        let nodes = self.nodes();
        for p in 0..nodes {
            let mut interested: Vec<usize> = (1..nodes)
                .filter(|&q| q != p && self.bt_is_interested(p, q))
                .collect();
            self.rng.shuffle(&mut interested);
            if p != 0 {
                let from = &self.recv_from[p];
                interested.sort_by(|&a, &b| from[b].total_cmp(&from[a]));
            }
            let regular = self.cfg.unchoke_slots.saturating_sub(1).max(1);
            let mut keep: Vec<usize> = interested.iter().copied().take(regular).collect();
            let rest = &interested[keep.len().min(interested.len())..];
            if !rest.is_empty() && keep.len() < self.cfg.unchoke_slots {
                keep.push(rest[self.rng.below(rest.len())]);
            }
            // Choke the others: idle connections go now, busy ones when their block lands.
            let mut i = 0;
            while i < self.conns[p].len() {
                let c = &mut self.conns[p][i];
                if keep.contains(&(c.peer as usize)) {
                    c.is_choked = false;
                    i += 1;
                } else if c.is_busy {
                    c.is_choked = true;
                    i += 1;
                } else {
                    self.conns[p].swap_remove(i);
                }
            }
            for &q in &keep {
                if !self.conns[p].iter().any(|c| c.peer as usize == q) {
                    self.conns[p].push(Conn {
                        peer: q as u32,
                        is_busy: false,
                        is_choked: false,
                    });
                }
                self.bt_serve(p, q)?;
            }
            self.recv_from[p].iter_mut().for_each(|x| *x = 0.0);
        }
        self.schedule(self.cfg.rechoke_interval_s, TimerEv::Rechoke);
        Ok(())
    }
}

/// Infers racks from measured rates (CornetClustering). `rates[a][b]` is the mean rate
/// measured from node `a` to node `b`, Gbit/s, 0 if never measured; a pair's rate is the mean
/// of its measured directions.
///
/// Average-linkage agglomerative clustering: start from singletons and repeatedly merge the
/// two clusters with the highest mean rate over their measured cross pairs, while that mean
/// is in the "fast" class. The fast/slow threshold is the midpoint of a 1-D 2-means on the
/// log rates of all measured pairs (deterministic start at the extremes). Average linkage,
/// unlike single linkage, is not fooled by one cross-rack transfer that happened to run fast.
/// If the two classes are within a factor of 2 there is no structure: one rack. Clusters are
/// numbered in order of their first node; unmeasured nodes stay alone.
pub fn infer_racks(rates: &[Vec<f64>]) -> Vec<usize> {
    let n = rates.len();
    // Pairwise (sum of log rates, count) between current clusters.
    let mut pair = vec![vec![(0.0f64, 0u32); n]; n];
    let mut logs = Vec::new();
    for a in 0..n {
        for b in (a + 1)..n {
            let (mut sum, mut k) = (0.0, 0);
            for r in [rates[a][b], rates[b][a]] {
                if r > 0.0 && r.is_finite() {
                    sum += r;
                    k += 1;
                }
            }
            if k > 0 {
                let l = (sum / k as f64).ln();
                logs.push(l);
                pair[a][b] = (l, 1);
                pair[b][a] = (l, 1);
            }
        }
    }
    let mut cluster: Vec<usize> = (0..n).collect();
    // No two classes: every measured pair is "fast", so measured nodes end up in one rack.
    let threshold = two_means_threshold(&logs).unwrap_or(f64::NEG_INFINITY);
    {
        let mut alive: Vec<bool> = vec![true; n];
        loop {
            let mut best: Option<(f64, usize, usize)> = None;
            for a in 0..n {
                if !alive[a] {
                    continue;
                }
                for b in (a + 1)..n {
                    let (sum, k) = pair[a][b];
                    if alive[b] && k > 0 {
                        let mean = sum / k as f64;
                        if best.is_none_or(|(m, _, _)| mean > m) {
                            best = Some((mean, a, b));
                        }
                    }
                }
            }
            let Some((mean, a, b)) = best else { break };
            if mean < threshold {
                break;
            }
            // Merge b into a.
            alive[b] = false;
            for c in 0..n {
                if c != a && alive[c] {
                    let (s2, k2) = pair[b][c];
                    let (s1, k1) = pair[a][c];
                    pair[a][c] = (s1 + s2, k1 + k2);
                    pair[c][a] = pair[a][c];
                }
            }
            for c in cluster.iter_mut() {
                if *c == b {
                    *c = a;
                }
            }
        }
    }
    let mut label = vec![usize::MAX; n];
    let mut next = 0;
    cluster
        .iter()
        .map(|&r| {
            if label[r] == usize::MAX {
                label[r] = next;
                next += 1;
            }
            label[r]
        })
        .collect()
}

/// The midpoint between the two 1-D 2-means centres of `xs`, or `None` if the centres are
/// within `ln 2` of each other (no two classes).
fn two_means_threshold(xs: &[f64]) -> Option<f64> {
    let (mut lo, mut hi) = xs
        .iter()
        .fold((f64::INFINITY, f64::NEG_INFINITY), |(l, h), &x| {
            (l.min(x), h.max(x))
        });
    if hi - lo <= 2f64.ln() || !hi.is_finite() {
        return None;
    }
    for _ in 0..100 {
        let mid = (lo + hi) / 2.0;
        let (mut sl, mut nl, mut sh, mut nh) = (0.0, 0usize, 0.0, 0usize);
        for &x in xs {
            if x < mid {
                sl += x;
                nl += 1;
            } else {
                sh += x;
                nh += 1;
            }
        }
        let nlo = if nl > 0 { sl / nl as f64 } else { lo };
        let nhi = if nh > 0 { sh / nh as f64 } else { hi };
        if nlo == lo && nhi == hi {
            break;
        }
        (lo, hi) = (nlo, nhi);
    }
    (hi - lo > 2f64.ln()).then_some((lo + hi) / 2.0)
}
