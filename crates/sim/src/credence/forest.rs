//! A random-forest drop classifier exported from scikit-learn, evaluated natively (Credence
//! §3.4 and §4.1: four trees of depth at most four over queue length, buffer occupancy and
//! their averages).
//!
//! # File format (`slacknet-forest/1`, JSON)
//!
//! ```json
//! {
//!   "format": "slacknet-forest/1",
//!   "features": ["queue_len", "occupancy"],
//!   "vote": "mean_proba",
//!   "threshold": 0.5,
//!   "drop_class": 1,
//!   "trees": [
//!     { "children_left":  [1, -1, -1],
//!       "children_right": [2, -1, -1],
//!       "feature":        [0, -2, -2],
//!       "threshold":      [30000.5, -2.0, -2.0],
//!       "value":          [[[90, 10]], [[80, 0]], [[10, 10]]] }
//!   ]
//! }
//! ```
//!
//! - `trees[k]` holds the arrays of scikit-learn's `estimators_[k].tree_` as they are
//!   (`.tolist()`): `children_left`/`children_right` (child node ids, `-1` at leaves),
//!   `feature` (column of `features`; ignored at leaves, where sklearn writes `-2`),
//!   `threshold` (go left iff `x[feature] <= threshold`; ignored at leaves) and `value`
//!   (per node, class weights: sklearn's `(n_nodes, n_outputs = 1, n_classes)` array, or the
//!   same without the output axis). Counts or fractions both work: a leaf's drop probability is
//!   `value[drop_class] / sum(value)`.
//! - `features` names the model's input columns in training order; each must be one of
//!   [`FEATURE_NAMES`] (`queue_len`, `avg_queue_len`, `occupancy`, `avg_occupancy`, in the
//!   buffer's unit: bytes in the packet simulator). A model may use any subset, in any order.
//! - `training` (optional): free-form provenance written by `slacknet credence train`
//!   (scenario, metrics); ignored when loading.
//! - `drop_class` (default 1): the class index (position in sklearn's `classes_`) meaning
//!   "LQD drops this packet".
//! - `vote` (default `"mean_proba"`): `"mean_proba"` is sklearn's `predict`: the mean over
//!   trees of the leaf drop probability, drop iff it exceeds `threshold` (default 0.5; a tie
//!   means accept, as sklearn's argmax picks class 0 = accept on a tie); `"majority"` counts a
//!   tree as voting drop iff the drop class has the strictly largest weight at its leaf, and
//!   drops iff more than half of the trees vote drop.
//!
//! Inputs are rounded to `f32` before comparison, as sklearn casts `X` to `float32`, so that a
//! threshold learnt between two `f32` values splits exactly as in Python.
//!
//! Export from Python:
//!
//! ```python
//! json.dump({"format": "slacknet-forest/1", "features": ["queue_len", "occupancy"],
//!            "drop_class": list(clf.classes_).index(1),
//!            "trees": [{k: getattr(e.tree_, k).tolist() for k in
//!                       ("children_left", "children_right", "feature", "threshold", "value")}
//!                      for e in clf.estimators_]}, f)
//! ```
//!
//! # Evaluation
//!
//! Loading re-lays every tree out breadth-first into one flat node array in which the two
//! children of a node are adjacent (evaluation: a loop over `nodes[left + (x > t)]`), and, for
//! forests at most ten deep, also as complete binary trees of the forest's depth in heap
//! order, evaluated four trees at a time in exactly `depth` branch-free steps. No allocation
//! per evaluation; a four-tree depth-four forest takes under 2 KiB either way.
//!
//! INVARIANT: in the flat array every child index is larger than its parent's, so evaluation
//! terminates; internal nodes' `feature` is `< NUM_FEATURES`.

use std::collections::VecDeque;
use std::path::Path;

use serde::Deserialize;

use super::features::{FeatureVector, FEATURE_NAMES, NUM_FEATURES, OCCUPANCY, QUEUE_LEN};

/// The `format` value this loader reads.
pub const FOREST_FORMAT: &str = "slacknet-forest/1";

const LEAF: u32 = u32::MAX;

/// A forest file that cannot be used, with what is wrong.
#[derive(Clone, Debug, PartialEq, thiserror::Error)]
#[error("{0}")]
pub struct ForestError(pub String);

/// How the trees' answers combine.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Vote {
    /// Mean leaf drop probability against a threshold (scikit-learn's `predict`).
    #[default]
    MeanProba,
    /// Majority of per-tree argmax votes.
    Majority,
}

/// One node of the flattened forest.
#[derive(Clone, Copy, Debug, PartialEq)]
struct Node {
    /// Internal: the split threshold. Leaf: the drop probability.
    key: f64,
    /// Internal: the feature index. Leaf: `LEAF`.
    feature: u32,
    /// Internal: the left child (the right one is `left + 1`). Leaf: 1 if the tree votes drop.
    left: u32,
}

/// A loaded random forest. Cheap to share behind an `Arc`; evaluation takes `&self`.
#[derive(Clone, Debug, PartialEq)]
pub struct Forest {
    nodes: Vec<Node>,
    roots: Vec<u32>,
    vote: Vote,
    threshold: f64,
    /// The same trees as complete binary trees, when they are shallow enough.
    dense: Option<Dense>,
}

/// Deepest forest evaluated in the complete layout ([`Dense`]): `2^10` leaves per tree.
const MAX_DENSE_DEPTH: u32 = 10;

/// Trees evaluated side by side in the complete layout.
const LANES: usize = 4;

/// A split of the complete layout. The threshold is the largest `f32` not above sklearn's
/// `f64` threshold, so that `x32 <= threshold` holds exactly when sklearn's
/// `(x32 as f64) <= threshold64` does (`x32` is an `f32`).
#[derive(Clone, Copy, Debug, PartialEq)]
struct Split {
    threshold: f32,
    feature: u32,
}

/// The largest `f32` that is `<= t`.
fn f32_at_or_below(t: f64) -> f32 {
    let r = t as f32;
    if (r as f64) <= t || r.is_nan() {
        return r;
    }
    // Round-to-nearest went up: step one ulp toward -inf.
    if r == 0.0 {
        -f32::from_bits(1)
    } else if r > 0.0 {
        f32::from_bits(r.to_bits() - 1)
    } else {
        f32::from_bits(r.to_bits() + 1)
    }
}

// INVARIANT: feature indices are masked with `NUM_FEATURES - 1`, which needs a power of two.
const _: () = assert!(NUM_FEATURES.is_power_of_two());

/// Every tree padded to the forest's depth `D` as a complete binary tree in heap order (the
/// children of `i` are `2i + 1` and `2i + 2`); a leaf above depth `D` is copied into every
/// leaf below it, with arbitrary splits above those copies. Evaluation is then exactly `D`
/// steps per tree with no data-dependent branch, and [`LANES`] trees advance together so
/// that their loads overlap. Tree count is padded to a multiple of [`LANES`] with trees
/// whose leaves are 0 (they add nothing to the sums).
// PERF: a 4-tree, depth-4 forest costs about 26 ns a prediction this way on random inputs
// (the critical path is `D` dependent split-then-feature loads). Measured alternatives: the
// pointer walk with its data-dependent loop exit (11.4% of a 256-host leaf-spine run against
// 10.0% for this layout) and a QuickScorer-style bitmask evaluator (sorted thresholds per
// feature, one 64-bit split mask: 35 ns a prediction, slower).
#[derive(Clone, Debug, PartialEq)]
struct Dense {
    depth: u32,
    /// `trees x 2^D` splits (`2^D - 1` per tree and one unused, so that a tree's block is a
    /// power of two long and masked indices provably stay inside it).
    splits: Vec<Split>,
    /// `trees x 2^D` leaf drop probabilities.
    leaves: Vec<f64>,
    /// `trees x 2^D` leaf votes (1 = drop).
    votes: Vec<u8>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct ForestFile {
    format: String,
    features: Vec<String>,
    #[serde(default)]
    vote: Vote,
    #[serde(default = "default_threshold")]
    threshold: f64,
    #[serde(default = "default_drop_class")]
    drop_class: usize,
    trees: Vec<TreeFile>,
    /// Free-form provenance (how the model was trained and scored); not read.
    #[serde(default)]
    #[allow(dead_code)]
    training: Option<serde_json::Value>,
}

fn default_threshold() -> f64 {
    0.5
}
fn default_drop_class() -> usize {
    1
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct TreeFile {
    children_left: Vec<i64>,
    children_right: Vec<i64>,
    feature: Vec<i64>,
    threshold: Vec<f64>,
    value: Vec<serde_json::Value>,
}

impl Forest {
    /// Read and check a forest file.
    pub fn from_file(path: &Path) -> Result<Forest, ForestError> {
        use crate::textfile::{describe, read_text_file, MAX_FOREST_BYTES};
        let text = read_text_file(path, MAX_FOREST_BYTES).map_err(|e| {
            ForestError(format!("cannot read {}: {}", path.display(), describe(&e, MAX_FOREST_BYTES, "a forest file")))
        })?;
        Forest::from_json_str(&text)
    }

    /// Parse and check a forest from JSON text (the format in the module docs).
    pub fn from_json_str(text: &str) -> Result<Forest, ForestError> {
        let f: ForestFile =
            serde_json::from_str(text).map_err(|e| ForestError(format!("not a forest file: {e}")))?;
        if f.format != FOREST_FORMAT {
            return Err(ForestError(format!("format is {:?}; expected {FOREST_FORMAT:?}", f.format)));
        }
        if f.trees.is_empty() {
            return Err(ForestError("the forest has no trees".into()));
        }
        if !(f.threshold.is_finite() && (0.0..1.0).contains(&f.threshold)) {
            return Err(ForestError(format!("threshold {} is not in [0, 1)", f.threshold)));
        }
        let columns = f
            .features
            .iter()
            .map(|name| {
                FEATURE_NAMES.iter().position(|n| n == name).ok_or_else(|| {
                    ForestError(format!("unknown feature {name:?}; expected some of {FEATURE_NAMES:?}"))
                })
            })
            .collect::<Result<Vec<usize>, _>>()?;
        let mut forest =
            Forest { nodes: Vec::new(), roots: Vec::new(), vote: f.vote, threshold: f.threshold, dense: None };
        for (k, t) in f.trees.iter().enumerate() {
            forest.add_tree(t, &columns, f.drop_class).map_err(|e| ForestError(format!("trees[{k}]: {}", e.0)))?;
        }
        forest.dense = forest.to_dense();
        Ok(forest)
    }

    /// Number of trees.
    pub fn num_trees(&self) -> usize {
        self.roots.len()
    }

    /// Number of nodes over all trees.
    pub fn num_nodes(&self) -> usize {
        self.nodes.len()
    }

    /// Whether any split reads feature `f` (an index into `FEATURE_NAMES`).
    pub fn uses_feature(&self, f: usize) -> bool {
        self.nodes.iter().any(|n| n.feature != LEAF && n.feature as usize == f)
    }

    fn add_tree(&mut self, t: &TreeFile, columns: &[usize], drop_class: usize) -> Result<(), ForestError> {
        let n = t.children_left.len();
        if n == 0 {
            return Err(ForestError("empty tree".into()));
        }
        if [t.children_right.len(), t.feature.len(), t.threshold.len(), t.value.len()] != [n; 4] {
            return Err(ForestError(
                "children_left, children_right, feature, threshold and value differ in length".into(),
            ));
        }
        let probs = t
            .value
            .iter()
            .enumerate()
            .map(|(i, v)| leaf_value(v, drop_class).map_err(|e| ForestError(format!("value[{i}]: {}", e.0))))
            .collect::<Result<Vec<(f64, bool)>, _>>()?;
        // Breadth-first re-layout: children of a node land next to each other.
        let base = self.nodes.len() as u32;
        self.roots.push(base);
        let mut order: VecDeque<(usize, u32)> = VecDeque::from([(0usize, base)]);
        self.nodes.push(Node { key: 0.0, feature: LEAF, left: 0 });
        let mut visited = vec![false; n];
        while let Some((i, slot)) = order.pop_front() {
            if std::mem::replace(&mut visited[i], true) {
                return Err(ForestError(format!("node {i} is reached twice (not a tree)")));
            }
            let (l, r) = (t.children_left[i], t.children_right[i]);
            let node = if l < 0 && r < 0 {
                let (p, vote) = probs[i];
                Node { key: p, feature: LEAF, left: vote as u32 }
            } else {
                let child = |c: i64| -> Result<usize, ForestError> {
                    if c <= i as i64 || c >= n as i64 {
                        return Err(ForestError(format!("node {i} has child {c} out of range")));
                    }
                    Ok(c as usize)
                };
                let (l, r) = (child(l)?, child(r)?);
                let col = usize::try_from(t.feature[i])
                    .ok()
                    .and_then(|c| columns.get(c).copied())
                    .ok_or_else(|| ForestError(format!("node {i} splits on feature {} of {}", t.feature[i], columns.len())))?;
                let thr = t.threshold[i];
                if !thr.is_finite() {
                    return Err(ForestError(format!("node {i} has threshold {thr}")));
                }
                let left = self.nodes.len() as u32;
                self.nodes.push(Node { key: 0.0, feature: LEAF, left: 0 });
                self.nodes.push(Node { key: 0.0, feature: LEAF, left: 0 });
                order.push_back((l, left));
                order.push_back((r, left + 1));
                Node { key: thr, feature: col as u32, left }
            };
            self.nodes[slot as usize] = node;
        }
        debug_assert!(self.nodes.iter().all(|n| n.feature == LEAF || (n.feature as usize) < NUM_FEATURES));
        Ok(())
    }

    /// Depth of the deepest tree. One pass from the last node back, because every child comes
    /// after its parent in the flat array; no recursion, since a file may hold a tree as deep
    /// as it has nodes (a recursive walk overflowed the stack on a chain of 300,000 splits).
    fn max_depth(&self) -> Option<u32> {
        let mut depth = vec![0u32; self.nodes.len()];
        for (i, n) in self.nodes.iter().enumerate().rev() {
            if n.feature != LEAF {
                depth[i] = 1 + depth[n.left as usize].max(depth[n.left as usize + 1]);
            }
        }
        self.roots.iter().map(|&r| depth[r as usize]).max()
    }

    /// The complete layout, if every tree is at most [`MAX_DENSE_DEPTH`] deep.
    fn to_dense(&self) -> Option<Dense> {
        let depth = self.max_depth()?;
        if depth == 0 || depth > MAX_DENSE_DEPTH {
            return None; // stumps-only forests walk (one step); deep ones too
        }
        let trees = self.roots.len().div_ceil(LANES) * LANES;
        let nl = 1usize << depth;
        let mut d = Dense {
            depth,
            splits: vec![Split { threshold: 0.0, feature: 0 }; trees * nl],
            leaves: vec![0.0; trees * nl],
            votes: vec![0; trees * nl],
        };
        for (t, &root) in self.roots.iter().enumerate() {
            self.fill_dense(&mut d, t, root as usize, 0, 0);
        }
        Some(d)
    }

    /// Copy the subtree at flat index `i` to heap position `pos` (at `level`) of tree `t`.
    fn fill_dense(&self, d: &mut Dense, t: usize, i: usize, pos: usize, level: u32) {
        let (ni, nl) = ((1usize << d.depth) - 1, 1usize << d.depth);
        let n = self.nodes[i];
        debug_assert!(n.feature == LEAF || (n.feature as usize) < NUM_FEATURES);
        if level == d.depth {
            // INVARIANT: only leaves reach the last level (depth is the maximum).
            debug_assert_eq!(n.feature, LEAF);
            d.leaves[t * nl + pos - ni] = n.key;
            d.votes[t * nl + pos - ni] = n.left as u8;
        } else if n.feature == LEAF {
            // A shallow leaf: whichever way the padding splits go, they end at a copy of it.
            self.fill_dense(d, t, i, 2 * pos + 1, level + 1);
            self.fill_dense(d, t, i, 2 * pos + 2, level + 1);
        } else {
            d.splits[t * nl + pos] = Split { threshold: f32_at_or_below(n.key), feature: n.feature };
            self.fill_dense(d, t, n.left as usize, 2 * pos + 1, level + 1);
            self.fill_dense(d, t, n.left as usize + 1, 2 * pos + 2, level + 1);
        }
    }

    /// Sum over trees of the leaf drop probabilities, and the number of drop votes.
    // `!(x <= t)` on purpose: NaN must go right, as in sklearn.
    #[allow(clippy::neg_cmp_op_on_partial_ord)]
    #[inline]
    fn sum_leaves(&self, x: &FeatureVector) -> (f64, usize) {
        let Some(d) = &self.dense else {
            let x = round_f32(x);
            return self.roots.iter().fold((0.0, 0), |(p, v), &r| {
                let leaf = self.leaf(r, &x);
                (p + leaf.key, v + leaf.left as usize)
            });
        };
        // sklearn compares float32 inputs (see the module docs).
        let x: [f32; NUM_FEATURES] = x.map(|v| v as f32);
        let nl = 1usize << d.depth;
        let mask = nl - 1;
        let (mut p, mut v) = (0.0, 0);

        // PERF: masked indices into blocks sliced to exactly `nl` let the compiler drop every
        // bounds check in the inner loop (the masks are no-ops: heap indices stay below
        // `nl - 1` until the last step, features below NUM_FEATURES).
        for ((splits, leaves), votes) in
            d.splits.chunks_exact(LANES * nl).zip(d.leaves.chunks_exact(LANES * nl)).zip(d.votes.chunks_exact(LANES * nl))
        {
            let lanes: [&[Split]; LANES] = std::array::from_fn(|k| &splits[k * nl..][..=mask]);
            let mut idx = [0usize; LANES];
            for _ in 0..d.depth {
                for (i, lane) in idx.iter_mut().zip(&lanes) {
                    let s = lane[*i & mask];
                    // CORRECTNESS: sklearn goes left iff x <= threshold; NaN goes right.
                    *i = 2 * *i + 1 + !(x[s.feature as usize & (NUM_FEATURES - 1)] <= s.threshold) as usize;
                }
            }
            for (k, i) in idx.iter().enumerate() {
                // After `depth` steps, i is in [nl - 1, 2 nl - 2]: leaf (i + 1) - nl.
                let leaf = k * nl + ((i + 1) & mask);
                p += leaves[leaf];
                v += votes[leaf] as usize;
            }
        }
        (p, v)
    }

    /// Mean over trees of the leaf drop probability (scikit-learn's `predict_proba[:, drop]`).
    #[inline]
    pub fn drop_probability(&self, x: &FeatureVector) -> f64 {
        self.sum_leaves(x).0 / self.roots.len() as f64
    }

    /// Whether the forest predicts that LQD drops a packet with features `x`.
    #[inline]
    pub fn predict_drop(&self, x: &FeatureVector) -> bool {
        let (p, votes) = self.sum_leaves(x);
        match self.vote {
            Vote::MeanProba => p / self.roots.len() as f64 > self.threshold,
            Vote::Majority => 2 * votes > self.roots.len(),
        }
    }

    #[allow(clippy::neg_cmp_op_on_partial_ord)] // `!(x <= t)`: NaN goes right, as in sklearn
    #[inline]
    fn leaf(&self, root: u32, x: &FeatureVector) -> &Node {
        let mut n = &self.nodes[root as usize];
        while n.feature != LEAF {
            // CORRECTNESS: sklearn goes left iff x <= threshold; NaN goes right there too.
            let right = !(x[n.feature as usize] <= n.key);
            n = &self.nodes[n.left as usize + right as usize];
        }
        n
    }
}

/// The box around the last evaluated feature vector inside which every tree of a forest reaches
/// the same leaf, so the forest's prediction there is a known constant.
///
/// PERF: consecutive arrivals at a switch have nearly the same features (a queue one packet
/// longer, an average that barely moved), and a depth-4 tree cuts each feature at a few
/// thresholds only, so most predictions are a box test of 2 x 4 comparisons instead of a
/// forest walk. The answer is exact: the box is the intersection of the split conditions on
/// every tree's path.
///
/// The same box is also kept as integer ranges of queue length and occupancy for feature
/// vectors `[queue_len, 0, occupancy, 0]` (models without averages): see
/// [`Forest::predict_drop_counts`].
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct BoxCache {
    /// Exclusive lower bounds (the path went right at these thresholds).
    lo: FeatureVector,
    /// Inclusive upper bounds (the path went left at these thresholds).
    hi: FeatureVector,
    /// Inclusive integer ranges `[lo, hi]` of queue length and occupancy below
    /// [`COUNT_LIMIT`] whose vectors `[queue_len, 0, occupancy, 0]` lie in the box (empty,
    /// `lo > hi`, if the box excludes 0 in an averaged feature).
    counts: [(u64, u64); 2],
    answer: bool,
    valid: bool,
}

/// Counts below `2^24` are exact in `f32`, so the box's integer ranges stay below it.
const COUNT_LIMIT: u64 = 1 << 24;

/// The empty integer range.
const NO_COUNTS: (u64, u64) = (u64::MAX, 0);

impl Default for BoxCache {
    fn default() -> Self {
        BoxCache {
            lo: [f64::NEG_INFINITY; NUM_FEATURES],
            hi: [f64::INFINITY; NUM_FEATURES],
            counts: [NO_COUNTS; 2],
            answer: false,
            valid: false,
        }
    }
}

impl BoxCache {
    /// The integers `v < COUNT_LIMIT` with `lo[f] < v <= hi[f]`.
    // CORRECTNESS: for such `v`, `v as f64 as f32 as f64 == v` (what the box tests against),
    // and for a real `t`, `v > t <=> v >= floor(t) + 1` and `v <= t <=> v <= floor(t)`.
    fn count_range(&self, f: usize) -> (u64, u64) {
        let (lo, hi) = (self.lo[f].floor(), self.hi[f].floor());
        let max = (COUNT_LIMIT - 1) as f64;
        if lo >= max || hi < 0.0 {
            return NO_COUNTS;
        }
        let first = if lo < 0.0 { 0 } else { lo as u64 + 1 };
        (first, hi.min(max) as u64)
    }

    /// Fill `counts` from the box (after a walk).
    fn set_counts(&mut self) {
        let zeros = (0..NUM_FEATURES)
            .filter(|&f| f != QUEUE_LEN && f != OCCUPANCY)
            .all(|f| self.lo[f] < 0.0 && 0.0 <= self.hi[f]);
        self.counts = if zeros { [self.count_range(QUEUE_LEN), self.count_range(OCCUPANCY)] } else { [NO_COUNTS; 2] };
    }
}

impl Forest {
    /// [`Forest::predict_drop`] through a [`BoxCache`]: identical answers, far fewer walks.
    // PERF: the hit path (98% of the queries on the Credence benchmark) is inlined into the
    // caller and tests the box without a branch per bound; the walk is a call of its own.
    #[inline]
    pub fn predict_drop_cached(&self, x: &FeatureVector, cache: &mut BoxCache) -> bool {
        let x = round_f32(x);
        // NaN never hits the cache (every comparison with it is false) and goes right.
        let bounds = cache.lo.iter().zip(&cache.hi);
        let inside = x.iter().zip(bounds).fold(cache.valid, |ok, (&v, (&lo, &hi))| ok & (lo < v) & (v <= hi));
        if inside {
            return cache.answer;
        }
        self.predict_and_cache(&x, cache)
    }

    /// Walk every tree for the (rounded) `x`, and make `cache` the box around it.
    #[inline(never)]
    fn predict_and_cache(&self, x: &FeatureVector, cache: &mut BoxCache) -> bool {
        let mut c = BoxCache { valid: true, ..BoxCache::default() };
        let (mut p, mut votes) = (0.0, 0usize);
        for &root in &self.roots {
            let mut n = &self.nodes[root as usize];
            while n.feature != LEAF {
                let f = n.feature as usize;
                // CORRECTNESS: the same comparison as `leaf` (sklearn: left iff x <= t).
                if x[f] <= n.key {
                    c.hi[f] = c.hi[f].min(n.key);
                    n = &self.nodes[n.left as usize];
                } else {
                    c.lo[f] = c.lo[f].max(n.key);
                    n = &self.nodes[n.left as usize + 1];
                }
            }
            p += n.key;
            votes += n.left as usize;
        }
        c.answer = match self.vote {
            Vote::MeanProba => p / self.roots.len() as f64 > self.threshold,
            Vote::Majority => 2 * votes > self.roots.len(),
        };
        c.set_counts();
        *cache = c;
        c.answer
    }

    /// [`Forest::predict_drop_cached`] of `[queue_len, 0, occupancy, 0]` (a model without
    /// averages): identical answers, and a hit costs four integer comparisons.
    // PERF: no int-to-float conversions, `f32` roundings or float comparisons on a hit.
    #[inline]
    pub fn predict_drop_counts(&self, queue_len: u64, occupancy: u64, cache: &mut BoxCache) -> bool {
        let [(q0, q1), (o0, o1)] = cache.counts;
        if (q0 <= queue_len) & (queue_len <= q1) & (o0 <= occupancy) & (occupancy <= o1) {
            return cache.answer;
        }
        let mut x = [0.0; NUM_FEATURES];
        (x[QUEUE_LEN], x[OCCUPANCY]) = (queue_len as f64, occupancy as f64);
        self.predict_drop_cached(&x, cache)
    }
}

#[inline]
fn round_f32(x: &FeatureVector) -> FeatureVector {
    x.map(|v| v as f32 as f64)
}

/// A node's drop probability and whether the drop class is its strict argmax.
fn leaf_value(v: &serde_json::Value, drop_class: usize) -> Result<(f64, bool), ForestError> {
    // sklearn: (n_outputs = 1, n_classes) per node; also accept the bare class vector.
    let classes = match v.as_array() {
        Some(a) if a.len() == 1 && a[0].is_array() => a[0].as_array().expect("checked"),
        Some(a) => a,
        None => return Err(ForestError("not an array".into())),
    };
    let w = classes
        .iter()
        .map(|c| c.as_f64().filter(|x| x.is_finite() && *x >= 0.0))
        .collect::<Option<Vec<f64>>>()
        .ok_or_else(|| ForestError("class weights must be non-negative numbers".into()))?;
    if drop_class >= w.len() {
        return Err(ForestError(format!("drop_class {drop_class} but only {} classes", w.len())));
    }
    let total: f64 = w.iter().sum();
    let p = if total > 0.0 { w[drop_class] / total } else { 0.0 };
    let first_max = w.iter().enumerate().fold(0, |best, (i, &x)| if x > w[best] { i } else { best });
    Ok((p, first_max == drop_class && total > 0.0))
}

#[cfg(test)]
pub(crate) mod tests {
    #[test]
    fn box_cache_answers_exactly_like_the_forest() {
        let f = Forest::from_json_str(include_str!("testdata/forest_4x4.json")).unwrap();
        let mut cache = BoxCache::default();
        // A random walk through feature space, like a queue growing and shrinking.
        let mut x: FeatureVector = [10_000.0, 8_000.0, 300_000.0, 250_000.0];
        let mut r: u64 = 0x2545_F491_4F6C_DD1D;
        let (mut hits, n) = (0, 200_000);
        for _ in 0..n {
            r ^= r << 13;
            r ^= r >> 7;
            r ^= r << 17;
            let step = (r % 3000) as f64 - 1500.0;
            let k = (r >> 32) as usize % NUM_FEATURES;
            x[k] = (x[k] + step * if k >= 2 { 20.0 } else { 1.0 }).clamp(0.0, 2e6);
            let before = cache;
            let cached = f.predict_drop_cached(&x, &mut cache);
            hits += usize::from(cache == before && before.valid);
            assert_eq!(cached, f.predict_drop(&x), "at {x:?}");
        }
        assert!(hits > n / 2, "the cache should usually hit: {hits} of {n}");
    }

    #[test]
    fn count_box_answers_exactly_like_the_forest() {
        let f = Forest::from_json_str(include_str!("testdata/forest_4x4.json")).unwrap();
        // Thresholds are all near integers here; add splits at x.5, at integers and above
        // 2^24, where `f32` rounds counts, on queue length and occupancy.
        let g = Forest::from_json_str(
            &TWO_TREES.replace("5000.5", "16777217.0").replace("1000.0", "999.5"),
        )
        .unwrap();
        let limit = COUNT_LIMIT as f64;
        for forest in [&f, &g] {
            let mut cache = BoxCache::default();
            let (mut q, mut o) = (10_000u64, 300_000u64);
            let mut r: u64 = 0x2545_F491_4F6C_DD1D;
            let mut hits = 0;
            for i in 0..300_000 {
                r ^= r << 13;
                r ^= r >> 7;
                r ^= r << 17;
                let step = (r % 3001) as i64 - 1500;
                if i % 50_000 == 0 {
                    // Jump next to and beyond 2^24.
                    (q, o) = ((limit as u64).wrapping_sub(i as u64 / 50_000), COUNT_LIMIT - 3 + i as u64 / 25_000);
                } else if r >> 63 == 0 {
                    q = q.saturating_add_signed(step);
                } else {
                    o = o.saturating_add_signed(step * 20);
                }
                let before = cache;
                let x = [q as f64, 0.0, o as f64, 0.0];
                assert_eq!(forest.predict_drop_counts(q, o, &mut cache), forest.predict_drop(&x), "at {x:?}");
                hits += usize::from(cache == before && before.valid);
            }
            assert!(hits > 100_000, "the cache should usually hit: {hits}");
        }
    }

    #[test]
    fn count_ranges_are_the_integers_inside_the_box() {
        let mut c = BoxCache::default();
        c.lo[QUEUE_LEN] = 2.5;
        c.hi[QUEUE_LEN] = 7.0;
        c.lo[OCCUPANCY] = -3.0;
        c.hi[OCCUPANCY] = 1e30;
        c.set_counts();
        assert_eq!(c.counts, [(3, 7), (0, COUNT_LIMIT - 1)]);
        c.lo[OCCUPANCY] = 0.0;
        c.hi[OCCUPANCY] = -0.5;
        c.set_counts();
        assert_eq!(c.counts[1], NO_COUNTS);
        // An averaged feature whose box excludes 0: no count vector is inside.
        c.hi[OCCUPANCY] = 10.0;
        c.lo[crate::credence::features::AVG_OCCUPANCY] = 0.0;
        c.set_counts();
        assert_eq!(c.counts, [NO_COUNTS; 2]);
    }

    use super::*;

    /// One depth-2 tree on occupancy and queue length, plus a stump on queue length.
    pub(crate) const TWO_TREES: &str = r#"{
      "format": "slacknet-forest/1",
      "features": ["occupancy", "queue_len"],
      "trees": [
        { "children_left":  [1, 3, -1, -1, -1],
          "children_right": [2, 4, -1, -1, -1],
          "feature":        [0, 1, -2, -2, -2],
          "threshold":      [5000.5, 1000.0, -2, -2, -2],
          "value": [[[50, 50]], [[40, 10]], [[0, 40]], [[30, 0]], [[10, 10]]] },
        { "children_left":  [1, -1, -1],
          "children_right": [2, -1, -1],
          "feature":        [1, -2, -2],
          "threshold":      [2000.0, -2, -2],
          "value": [[0.6, 0.4], [1.0, 0.0], [0.2, 0.8]] }
      ]
    }"#;

    fn x(queue: f64, occ: f64) -> FeatureVector {
        [queue, 0.0, occ, 0.0]
    }

    /// A chain of `splits` splits, each with a leaf on its left: as deep as it is long.
    fn chain(splits: usize) -> String {
        let n = 2 * splits + 1;
        let (mut l, mut r, mut f, mut t) = (vec![-1i64; n], vec![-1i64; n], vec![-2i64; n], vec![-2.0; n]);
        for j in 0..splits {
            (l[2 * j], r[2 * j], f[2 * j], t[2 * j]) = (2 * j as i64 + 1, 2 * j as i64 + 2, 0, j as f64);
        }
        let value = vec!["[1, 1]"; n].join(",");
        format!(
            r#"{{"format": "slacknet-forest/1", "features": ["queue_len"], "trees": [{{"children_left": {l:?},
                "children_right": {r:?}, "feature": {f:?}, "threshold": {t:?}, "value": [{value}]}}]}}"#
        )
    }

    // The depth of a tree was computed recursively, and a chain of 300,000 splits overflowed
    // the stack while loading (found by running the forest fuzz target on a hand-made input:
    // libFuzzer's inputs are too short; fuzz/corpus/forest/deep_chain.json is a shorter chain).
    #[test]
    fn a_tree_as_deep_as_it_is_long_loads_and_evaluates() {
        let f = Forest::from_json_str(&chain(200_000)).unwrap();
        assert_eq!((f.num_trees(), f.num_nodes()), (1, 400_001));
        assert!(f.dense.is_none(), "too deep for the complete layout");
        assert_eq!(f.drop_probability(&[1e9, 0.0, 0.0, 0.0]), 0.5);
        let shallow = Forest::from_json_str(&chain(3)).unwrap();
        assert_eq!(shallow.dense.as_ref().map(|d| d.depth), Some(3));
    }

    #[test]
    fn evaluates_like_sklearn_predict_proba() {
        let f = Forest::from_json_str(TWO_TREES).unwrap();
        assert_eq!((f.num_trees(), f.num_nodes()), (2, 8));
        // occ <= 5000.5, queue <= 1000 -> leaf [30, 0] (p 0); stump: queue <= 2000 -> [1, 0].
        assert_eq!(f.drop_probability(&x(1000.0, 5000.0)), 0.0);
        // occ <= 5000.5, queue 1500 -> [10, 10] (0.5); stump -> 0: mean 0.25, accept.
        assert_eq!(f.drop_probability(&x(1500.0, 100.0)), 0.25);
        assert!(!f.predict_drop(&x(1500.0, 100.0)));
        // occ 6000 -> [0, 40] (1.0); queue 2500 -> [0.2, 0.8]: mean 0.9, drop.
        assert!((f.drop_probability(&x(2500.0, 6000.0)) - 0.9).abs() < 1e-12);
        assert!(f.predict_drop(&x(2500.0, 6000.0)));
    }

    #[test]
    fn inputs_are_compared_as_f32_like_sklearn() {
        // 5000.5 is exact in f32; 5000.5000001 rounds to 5000.5 in f32 and goes left.
        let f = Forest::from_json_str(TWO_TREES).unwrap();
        assert_eq!(f.drop_probability(&x(0.0, 5_000.500_000_1)), 0.0);
    }

    #[test]
    fn majority_vote_needs_more_than_half_of_the_trees() {
        let text = TWO_TREES.replace("\"features\"", "\"vote\": \"majority\", \"features\"");
        let f = Forest::from_json_str(&text).unwrap();
        // Tree 1 votes drop ([0, 40]); tree 2 ([0.2, 0.8]) votes drop: 2 of 2.
        assert!(f.predict_drop(&x(2500.0, 6000.0)));
        // Tree 1 votes drop, tree 2 ([1, 0]) does not: 1 of 2 is not a majority.
        assert!(!f.predict_drop(&x(100.0, 6000.0)));
        // A [10, 10] leaf is a tie: no drop vote.
        assert!(!f.predict_drop(&x(1500.0, 100.0)));
    }

    /// A 4-tree, depth-4 forest that scikit-learn 1.9 trained on the discrete model's LQD
    /// trace (`examples/credence_lqd_trace.rs`, seed 14), with columns in a permuted order,
    /// and sklearn's `predict_proba`/`predict` on 300 rows of another trace (seed 15).
    pub(crate) const SKLEARN_FOREST: &str = include_str!("testdata/forest_4x4.json");
    const SKLEARN_GOLDEN: &str = include_str!("testdata/forest_4x4_golden.json");

    #[test]
    fn matches_sklearn_on_a_trained_forest() {
        let f = Forest::from_json_str(SKLEARN_FOREST).unwrap();
        assert_eq!(f.num_trees(), 4);
        let golden: Vec<serde_json::Value> = serde_json::from_str(SKLEARN_GOLDEN).unwrap();
        assert_eq!(golden.len(), 300);
        for row in &golden {
            let x: Vec<f64> = row["x"].as_array().unwrap().iter().map(|v| v.as_f64().unwrap()).collect();
            let x: FeatureVector = x.try_into().unwrap();
            let p = row["p_drop"].as_f64().unwrap();
            assert!((f.drop_probability(&x) - p).abs() < 1e-12, "{x:?}: {} vs sklearn {p}", f.drop_probability(&x));
            assert_eq!(f.predict_drop(&x), row["drop"].as_bool().unwrap(), "{x:?}");
        }
    }

    #[test]
    fn f32_thresholds_split_like_sklearn_f64_ones() {
        for t in [0.0, -0.0, 1.0, 0.1, -0.1, 42.05533981323242, 5000.5, 1e-40, -1e-40, 3.5e38, f64::MAX, -f64::MAX] {
            let r = f32_at_or_below(t);
            assert!((r as f64) <= t, "{t}: {r}");
            // No f32 between r and t.
            let up = if r >= 0.0 { f32::from_bits(r.to_bits() + 1) } else { f32::from_bits(r.to_bits() - 1) };
            assert!(r == f32::MAX || (up as f64) > t || r == -0.0 && t == 0.0, "{t}: {r} {up}");
        }
    }

    #[test]
    fn complete_layout_evaluates_exactly_like_the_tree_walk() {
        // The sklearn forest five times over: 20 trees, five groups of lanes.
        let mut big: serde_json::Value = serde_json::from_str(SKLEARN_FOREST).unwrap();
        let trees: Vec<serde_json::Value> = (0..5).flat_map(|_| big["trees"].as_array().unwrap().clone()).collect();
        big["trees"] = serde_json::Value::Array(trees);
        let big = big.to_string();
        for text in [TWO_TREES, SKLEARN_FOREST, big.as_str()] {
            let f = Forest::from_json_str(text).unwrap();
            assert!(f.dense.is_some());
            let walk = Forest { dense: None, ..f.clone() };
            let mut rng = <rand_pcg::Pcg64 as rand::SeedableRng>::seed_from_u64(3);
            for _ in 0..2000 {
                let x: FeatureVector = std::array::from_fn(|_| rand::Rng::gen_range(&mut rng, 0.0..8000.0_f64).floor() / 100.0);
                let x = if rand::Rng::gen_bool(&mut rng, 0.5) { x.map(|v| v * 100.0) } else { x };
                assert_eq!(f.sum_leaves(&x), walk.sum_leaves(&x), "{x:?}");
            }
        }
    }

    #[test]
    fn rejects_malformed_forests_with_the_reason() {
        let cases = [
            (TWO_TREES.replace("slacknet-forest/1", "v0"), "format"),
            (TWO_TREES.replace("\"occupancy\", \"queue_len\"", "\"occupancy\", \"rtt\""), "unknown feature"),
            (TWO_TREES.replace("[1, 3, -1, -1, -1]", "[1, 0, -1, -1, -1]"), "out of range"),
            (TWO_TREES.replace("[0, 1, -2, -2, -2]", "[0, 7, -2, -2, -2]"), "splits on feature 7"),
            (TWO_TREES.replace("[2, 4, -1, -1, -1]", "[2, 4, -1, -1]"), "differ in length"),
            (TWO_TREES.replace("\"trees\"", "\"drop_class\": 2, \"trees\""), "drop_class 2"),
            (TWO_TREES.replace("\"features\"", "\"colour\": 1, \"features\""), "unknown field"),
        ];
        for (text, needle) in cases {
            let e = Forest::from_json_str(&text).unwrap_err();
            assert!(e.0.contains(needle), "{e} lacks {needle:?}");
        }
    }
}
