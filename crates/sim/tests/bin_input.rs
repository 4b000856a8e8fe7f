//! The `slacknet-sim` binary's scenario argument: anything but a scenario file is refused in
//! one line with exit status 2, without blocking on a FIFO or reading a device without end.

use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

/// Run the binary on `arg`; its exit code and stderr, or a failure if it runs past 20 s.
fn run(arg: &str) -> (Option<i32>, String) {
    let mut child = Command::new(env!("CARGO_BIN_EXE_slacknet-sim"))
        .arg(arg)
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .expect("spawn slacknet-sim");
    let t0 = Instant::now();
    loop {
        if let Some(status) = child.try_wait().expect("wait") {
            let out = child.wait_with_output().expect("stderr");
            return (status.code(), String::from_utf8_lossy(&out.stderr).into_owned());
        }
        if t0.elapsed() > Duration::from_secs(20) {
            child.kill().ok();
            panic!("slacknet-sim {arg} still running after 20 s (blocked or reading without end)");
        }
        std::thread::sleep(Duration::from_millis(20));
    }
}

#[test]
fn what_is_no_scenario_file_is_refused_in_one_line() {
    let dir = std::env::temp_dir().join(format!("slacknet-bin-input-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let fifo = dir.join("fifo.toml");
    let made = Command::new("mkfifo").arg(&fifo).status().map(|s| s.success()).unwrap_or(false);
    let big = dir.join("big.toml");
    std::fs::write(&big, vec![b'#'; (16 << 20) + 1]).unwrap();
    let mut cases = vec![
        ("/dev/zero".to_string(), "not a regular file"),
        (dir.display().to_string(), "a folder, not a scenario file"),
        (big.display().to_string(), "too large for a scenario file"),
    ];
    if made {
        // Before: blocked for ever in open(2), waiting for a writer.
        cases.push((fifo.display().to_string(), "not a regular file"));
    }
    for (arg, words) in &cases {
        let (code, err) = run(arg);
        assert_eq!(code, Some(2), "{arg}: {err}");
        assert!(err.starts_with("error: cannot read scenario ") && err.contains(words), "{arg}: {err}");
        assert_eq!(err.lines().count(), 1, "{arg}: {err}");
    }
    std::fs::remove_dir_all(&dir).ok();
}
