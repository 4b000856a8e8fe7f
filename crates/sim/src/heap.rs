//! mimalloc's settings, for a process whose global allocator it is (`slacknet-sim`, the Python
//! extension; the `mimalloc` feature). The library itself allocates through whatever
//! allocator its user chose; this only sets options of the mimalloc linked in.
//!
//! Why freed memory stays with the process: mimalloc gives memory that has been free for a
//! while back to the OS (its purge, after `purge_delay` = 1 s by default), and a purged range
//! that is used again comes back in 4 KiB pages, not in the transparent huge pages mimalloc
//! asked for at first. A long run frees and reuses memory all the time (flows end, port FIFOs
//! shrink after bursts), so its heap drifts out of huge pages: 47 of the k = 16 run's 66 MB
//! were in huge pages 45 s into it, against 65 of 70 MB without purging, and that run waits
//! on memory, where every page walk counts (the performance log's sixteenth step).

use libmimalloc_sys::mi_option_t;

/// mimalloc's `mi_option_purge_delay`: its index in `mi_option_e` (`include/mimalloc.h` of
/// mimalloc 3; `libmimalloc-sys` names no constant for it). The tests check that mimalloc
/// reads this option from `MIMALLOC_PURGE_DELAY`.
const PURGE_DELAY: mi_option_t = 15;

/// Never give freed memory back to the OS: it is reused by the process's later allocations,
/// so the process's memory stays at its peak (the peak, what a run costs, is unchanged) and
/// in huge pages. `MIMALLOC_PURGE_DELAY` in the environment (milliseconds, `-1` for never)
/// still decides if set.
///
/// Call it first thing in `main` or in a module's initialisation, before a second thread
/// exists (mimalloc's option setter is not thread-safe).
pub fn keep_freed_memory() {
    // SAFETY: stores one option word of mimalloc's (a valid index: `PURGE_DELAY < _mi_option_last`),
    // unless the environment set it; the callers are single-threaded at this point.
    unsafe { libmimalloc_sys::mi_option_set_default(PURGE_DELAY, -1) }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::process::Command;

    /// mimalloc's current purge delay in milliseconds (`-1`: never).
    fn purge_delay_ms() -> std::ffi::c_long {
        // SAFETY: reads one option word (initialising it from the environment the first time).
        unsafe { libmimalloc_sys::mi_option_get(PURGE_DELAY) }
    }

    /// Set in the child processes of the test below, with what they must see.
    const CHILD: &str = "SLACKNET_HEAP_TEST_EXPECT";
    const NAME: &str = "heap::tests::freed_memory_is_kept_unless_the_environment_says_otherwise";

    /// Runs itself in two children, since mimalloc reads its environment once per process: one
    /// without `MIMALLOC_PURGE_DELAY` (then -1 after `keep_freed_memory`) and one with it set
    /// to 4321 (which `keep_freed_memory` must leave). The second fails if `PURGE_DELAY` is
    /// not the index of the option mimalloc names `purge_delay`.
    #[test]
    fn freed_memory_is_kept_unless_the_environment_says_otherwise() {
        if let Some(expect) = std::env::var_os(CHILD) {
            keep_freed_memory();
            assert_eq!(purge_delay_ms().to_string(), expect.to_string_lossy());
            println!("heap child checked {}", purge_delay_ms());
            return;
        }
        let exe = std::env::current_exe().expect("the test binary's path");
        for (env, expect) in [(None, "-1"), (Some("4321"), "4321")] {
            let mut cmd = Command::new(&exe);
            cmd.args(["--exact", NAME, "--nocapture", "--test-threads=1"]).env(CHILD, expect);
            match env {
                Some(v) => cmd.env("MIMALLOC_PURGE_DELAY", v),
                None => cmd.env_remove("MIMALLOC_PURGE_DELAY"),
            };
            let out = cmd.output().expect("run the test binary again");
            let stdout = String::from_utf8_lossy(&out.stdout);
            assert!(out.status.success(), "child with {env:?} failed:\n{stdout}\n{}", String::from_utf8_lossy(&out.stderr));
            // A filter that matched no test would pass too: the child must say it checked.
            assert!(stdout.contains(&format!("heap child checked {expect}")), "child with {env:?} did not run the check:\n{stdout}");
        }
    }
}
