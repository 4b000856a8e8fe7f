//! Every fuzz target on stable, as an ordinary test: the committed corpus
//! (`fuzz/corpus/<target>/`, seeds and every input that once crashed) replayed as is, then a
//! fixed number of seeded mutations of it (byte flips, inserts, deletes, truncations, splices,
//! interesting values), so `cargo test` exercises each target without nightly or cargo-fuzz.
//! Deterministic: a failure reproduces, and prints the input to add to the corpus.

use std::path::{Path, PathBuf};

use fuzz_targets::TARGETS;

/// Mutated inputs per target per run (a few seconds for all targets in the test profile).
const MUTATIONS: usize = 3000;

fn corpus_dir(target: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../../fuzz/corpus").join(target)
}

fn corpus(target: &str) -> Vec<(PathBuf, Vec<u8>)> {
    let dir = corpus_dir(target);
    let mut files: Vec<PathBuf> = std::fs::read_dir(&dir)
        .unwrap_or_else(|e| panic!("{}: {e}", dir.display()))
        .map(|e| e.expect("a readable corpus entry").path())
        .filter(|p| p.is_file())
        .collect();
    files.sort();
    files.into_iter().map(|p| (p.clone(), std::fs::read(&p).expect("a readable corpus file"))).collect()
}

/// Run `body` on `input`; on a panic, name the target and where the input came from.
fn run(target: &str, body: fn(&[u8]), input: &[u8], origin: &dyn Fn() -> String) {
    if std::panic::catch_unwind(|| body(input)).is_err() {
        panic!(
            "fuzz target {target} panicked on {} ({} bytes): b\"{}\"",
            origin(),
            input.len(),
            input.escape_ascii()
        );
    }
}

/// Every body has a corpus, a harness and a `[[bin]]` in `fuzz/Cargo.toml`, and every harness
/// a body: the two drivers run the same targets.
#[test]
fn every_target_has_a_corpus_and_a_harness() {
    let fuzz = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../fuzz");
    let manifest = std::fs::read_to_string(fuzz.join("Cargo.toml")).expect("fuzz/Cargo.toml");
    for (name, _) in TARGETS {
        assert!(!corpus(name).is_empty(), "fuzz/corpus/{name} is empty");
        let harness = std::fs::read_to_string(fuzz.join(format!("fuzz_targets/{name}.rs")))
            .unwrap_or_else(|e| panic!("fuzz/fuzz_targets/{name}.rs: {e}"));
        assert!(harness.contains(&format!("fuzz_targets::{name}(")), "fuzz/fuzz_targets/{name}.rs calls another body");
        assert!(manifest.contains(&format!("name = \"{name}\"")), "fuzz/Cargo.toml has no [[bin]] {name}");
    }
    for entry in std::fs::read_dir(fuzz.join("fuzz_targets")).expect("fuzz/fuzz_targets") {
        let path = entry.expect("an entry").path();
        let stem = path.file_stem().and_then(|s| s.to_str()).unwrap_or_default().to_string();
        assert!(TARGETS.iter().any(|(n, _)| *n == stem), "{} has no body in TARGETS", path.display());
    }
}

#[test]
fn corpus_replays_without_panics() {
    for (name, body) in TARGETS {
        for (path, input) in corpus(name) {
            run(name, *body, &input, &|| path.display().to_string());
        }
    }
}

#[test]
fn seeded_mutations_of_the_corpus_do_not_panic() {
    for (name, body) in TARGETS {
        let seeds = corpus(name);
        let mut rng = SplitMix(0x5eed ^ name.len() as u64);
        for i in 0..MUTATIONS {
            let (path, a) = &seeds[rng.below(seeds.len())];
            let b = &seeds[rng.below(seeds.len())].1;
            let input = mutate(a, b, &mut rng);
            run(name, *body, &input, &|| format!("mutation {i} of {}", path.display()));
        }
    }
}

/// SplitMix64: a small, well-mixed, seeded generator (no dependency needed).
struct SplitMix(u64);

impl SplitMix {
    fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9e37_79b9_7f4a_7c15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        z ^ (z >> 31)
    }
    fn below(&mut self, n: usize) -> usize {
        (self.next() % n.max(1) as u64) as usize
    }
}

/// One to four libFuzzer-like mutations of `a` (`b` is another corpus entry, for splices).
fn mutate(a: &[u8], b: &[u8], rng: &mut SplitMix) -> Vec<u8> {
    const INTERESTING: &[&[u8]] = &[
        b"0", b"-1", b"1e308", b"nan", b"inf", b"-0.0", b"4294967295", b"18446744073709551615", b"\"\"",
        b"[]", b"{}", b"\n[", b"=", b"\xff", b"\x00",
    ];
    let mut v = a.to_vec();
    for _ in 0..1 + rng.below(4) {
        let at = rng.below(v.len() + 1);
        match rng.below(7) {
            0 if !v.is_empty() => {
                let i = rng.below(v.len());
                v[i] ^= 1 << rng.below(8);
            }
            1 if !v.is_empty() => {
                let i = rng.below(v.len());
                v[i] = rng.next() as u8;
            }
            2 => v.insert(at, rng.next() as u8),
            3 if at < v.len() => {
                let end = (at + 1 + rng.below(16)).min(v.len());
                v.drain(at..end);
            }
            4 => v.truncate(at),
            5 if !b.is_empty() => {
                let from = rng.below(b.len());
                let end = (from + 1 + rng.below(64)).min(b.len());
                v.splice(at..at, b[from..end].iter().copied());
            }
            _ => {
                let x = INTERESTING[rng.below(INTERESTING.len())];
                let end = (at + rng.below(4)).min(v.len());
                v.splice(at..end, x.iter().copied());
            }
        }
    }
    v
}
