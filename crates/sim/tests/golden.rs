//! Golden scenarios: every scenario in `tests/golden/*.toml` must produce exactly the per-flow
//! records (and the packet-level totals) committed next to it in `<name>.records.csv`.
//!
//! The records were produced by the engine before the application layer replaced the
//! pre-generated flow table (issue 7): this test proves that the open-loop workloads, now
//! applications that start transfers lazily, give identical results for the same seed. Any
//! intended change of behaviour must regenerate the files on purpose, with
//! `SLACKNET_UPDATE_GOLDEN=1 cargo test -p slacknet-sim --test golden`, and say why in the
//! commit.

use std::fmt::Write;
use std::path::{Path, PathBuf};

fn golden_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/golden")
}

/// The run's records and totals as CSV text (stable column order, integers only except the
/// slowdown, which is derived and left out).
fn render(out: &sim::Output) -> String {
    let mut s = String::from(
        "id,src,dst,size_bytes,start_ps,fct_ps,ideal_fct_ps,finished,incast,prio,workload,num_rtos,retx_segments,bytes_delivered\n",
    );
    for r in &out.records {
        let _ = writeln!(
            s,
            "{},{},{},{},{},{},{},{},{},{},{},{},{},{}",
            r.id,
            r.src,
            r.dst,
            r.size_bytes,
            r.start_ps,
            r.fct_ps,
            r.ideal_fct_ps,
            u8::from(r.finished),
            u8::from(r.incast),
            r.prio,
            r.workload,
            r.num_rtos,
            r.retx_segments,
            r.bytes_delivered
        );
    }
    let t = &out.summary;
    let _ = writeln!(
        s,
        "# totals: flows={} finished={} hops={} end_ps={} sent={} delivered={} dropped={} in_flight={} switch_drops={} nic_drops={} ecn_marks={} rtos={}",
        t.num_flows,
        t.finished_flows,
        t.packet_hops,
        t.sim_end_ps,
        t.bytes_sent,
        t.bytes_delivered,
        t.bytes_dropped,
        t.bytes_in_flight,
        t.switch_drops,
        t.nic_drops,
        t.ecn_marks,
        t.num_rtos
    );
    s
}

fn run_one(path: &Path) -> String {
    let text = std::fs::read_to_string(path).expect("read golden scenario");
    let valid = sim::Spec::from_toml_str(&text)
        .and_then(|s| s.validate(path.parent().expect("a folder")))
        .unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    let out = sim::run(&valid).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    render(&out)
}

#[test]
fn golden_scenarios_reproduce_their_committed_records() {
    let update = std::env::var_os("SLACKNET_UPDATE_GOLDEN").is_some();
    let mut scenarios: Vec<PathBuf> = std::fs::read_dir(golden_dir())
        .expect("golden folder")
        .map(|e| e.expect("entry").path())
        .filter(|p| p.extension().is_some_and(|x| x == "toml"))
        .collect();
    scenarios.sort();
    assert!(scenarios.len() >= 10, "the golden scenarios are missing");
    let mut failures = Vec::new();
    for p in &scenarios {
        let got = run_one(p);
        let want_path = p.with_extension("records.csv");
        if update {
            std::fs::write(&want_path, &got).expect("write golden records");
            continue;
        }
        let want = std::fs::read_to_string(&want_path)
            .unwrap_or_else(|e| panic!("{}: {e} (generate with SLACKNET_UPDATE_GOLDEN=1)", want_path.display()));
        if got != want {
            let first = got
                .lines()
                .zip(want.lines())
                .enumerate()
                .find(|(_, (a, b))| a != b)
                .map(|(i, (a, b))| format!("line {}: got {a:?}, want {b:?}", i + 1))
                .unwrap_or_else(|| format!("{} lines against {}", got.lines().count(), want.lines().count()));
            failures.push(format!("{}: {first}", p.display()));
        }
    }
    assert!(failures.is_empty(), "golden records differ:\n{}", failures.join("\n"));
}
