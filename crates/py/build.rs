//! Digests the sources the simulator's behaviour is built from (every crate of the workspace
//! but the fuzz harness: its `Cargo.toml`, `build.rs`, `src/` and `data/`; the workspace's
//! `Cargo.toml` and `Cargo.lock`) into `SLACKNET_ENGINE_SHA256`, which `_native.engine_sha256()`
//! returns. A results folder records it, and a sweep reuses a finished run only if it was made
//! by an engine built from the same sources: a change to a default or a model that leaves the
//! scenario's text as it was cannot be mixed with runs from before it.
//!
//! The digest is SHA-256 over, for each file in the order of its path relative to the
//! workspace root (`/`-separated, byte order): the path, a NUL, the length in decimal, a NUL
//! and the bytes. Hidden files (editors' swap files) are left out. `tests/test_engine_digest.py`
//! computes the same digest from a checkout and compares.

use sha2::{Digest, Sha256};
use std::fs;
use std::path::{Path, PathBuf};

/// What of a crate's folder is hashed (tests, examples and benchmarks are not).
const PARTS: [&str; 4] = ["Cargo.toml", "build.rs", "src", "data"];
/// Crates that are not part of the engine.
const SKIP: [&str; 1] = ["fuzz-targets"];

fn main() {
    let manifest_dir = PathBuf::from(std::env::var_os("CARGO_MANIFEST_DIR").expect("cargo sets CARGO_MANIFEST_DIR"));
    let root = manifest_dir.join("../..");
    let mut files: Vec<(String, PathBuf)> = Vec::new();
    for top in ["Cargo.toml", "Cargo.lock"] {
        add(&root, Path::new(top), &mut files);
    }
    let crates = root.join("crates");
    println!("cargo:rerun-if-changed={}", crates.display());
    // Without the workspace's layout (a source tree cut down to this crate) only what exists counts.
    let mut names: Vec<String> = fs::read_dir(&crates)
        .into_iter()
        .flatten()
        .filter_map(|e| e.ok())
        .filter(|e| e.path().is_dir())
        .filter_map(|e| e.file_name().into_string().ok())
        .filter(|n| !n.starts_with('.') && !SKIP.contains(&n.as_str()))
        .collect();
    names.sort();
    for name in names {
        for part in PARTS {
            add(&root, &Path::new("crates").join(&name).join(part), &mut files);
        }
    }
    files.sort();
    let mut h = Sha256::new();
    for (rel, path) in &files {
        let bytes = fs::read(path).unwrap_or_else(|e| panic!("cannot read {}: {e}", path.display()));
        h.update(rel.as_bytes());
        h.update([0]);
        h.update(bytes.len().to_string().as_bytes());
        h.update([0]);
        h.update(&bytes);
    }
    let hex: String = h.finalize().iter().map(|b| format!("{b:02x}")).collect();
    println!("cargo:rustc-env=SLACKNET_ENGINE_SHA256={hex}");
}

/// `rel` (a file or a folder, walked) into `files` as (its `/`-separated path, its path), if it
/// exists; each is watched for changes.
fn add(root: &Path, rel: &Path, files: &mut Vec<(String, PathBuf)>) {
    let path = root.join(rel);
    let Ok(meta) = fs::metadata(&path) else { return };
    println!("cargo:rerun-if-changed={}", path.display());
    if meta.is_dir() {
        let mut entries: Vec<_> = fs::read_dir(&path)
            .unwrap_or_else(|e| panic!("cannot list {}: {e}", path.display()))
            .filter_map(|e| e.ok())
            .filter(|e| !e.file_name().to_string_lossy().starts_with('.'))
            .collect();
        entries.sort_by_key(|e| e.file_name());
        for e in entries {
            add(root, &rel.join(e.file_name()), files);
        }
    } else if meta.is_file() {
        let parts: Vec<String> = rel.components().map(|c| c.as_os_str().to_string_lossy().into_owned()).collect();
        files.push((parts.join("/"), path));
    }
}
