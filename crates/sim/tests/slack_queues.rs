//! NetApprox's switch configuration and background traffic, end to end: the `netapprox_slack`
//! queue preset caps the approximate classes at their MTUs while class 0 takes the rest of the
//! buffer, and `prio_schedule` moves a workload entry's new transfers between classes at the
//! given times (NetApprox Figure 10) while transfers in flight keep theirs.

use sim::metrics::{FctRecord, Output};
use sim::Spec;

mod common;
use common::{run_toml, star};

/// The full packet of the default transport (1460 + 40 B).
const MTU: u64 = 1500;

/// Three UDP senders into host 3 through one switch with the preset, every flow in `prio`.
fn three_into_one(prio: u8) -> Output {
    run_toml(&star(
        4,
        &format!(
            "[switch]\nbuffer_bytes = 1500000\nqueues = \"netapprox_slack\"\n\
             [transport]\nkind = \"udp\"\n\
             [[workload]]\nkind = \"flows\"\nflows = [\n\
             {{ src = 0, dst = 3, size_bytes = 150000, prio = {prio} }},\n\
             {{ src = 1, dst = 3, size_bytes = 150000, prio = {prio} }},\n\
             {{ src = 2, dst = 3, size_bytes = 150000, prio = {prio} }} ]\n"
        ),
    ))
}

/// The largest backlog queue `class` of the switch's port to host 3 reached (0 if never used).
fn max_backlog(out: &Output, class: u8) -> u64 {
    let to_host3 = out.links.iter().find(|l| l.dst == 3 && l.src != 3).expect("the switch's port to host 3").link;
    out.queues.iter().filter(|q| q.link == to_host3 && q.queue == class).map(|q| q.max_bytes).max().unwrap_or(0)
}

#[test]
fn netapprox_slack_drops_class_3_at_its_5_mtu_cap_and_not_class_0() {
    let approx = three_into_one(3);
    let sw = &approx.switches[0];
    assert!(sw.drops_queue_cap > 0, "class 3 overflows its cap: {sw:?}");
    assert_eq!(sw.drops_admission + sw.drops_pushout, 0, "only the cap drops: {sw:?}");
    assert!(max_backlog(&approx, 3) <= 5 * MTU, "queue 3 holds at most 5 MTU: {}", max_backlog(&approx, 3));
    assert!(max_backlog(&approx, 3) > 4 * MTU, "and fills up to it: {}", max_backlog(&approx, 3));
    assert_eq!(max_backlog(&approx, 0), 0, "nothing of class 3 in queue 0");
    assert!(approx.records.iter().all(|r| r.prio == 3));
    assert!(approx.records.iter().any(|r| r.bytes_delivered < r.size_bytes), "UDP loses what the cap drops");
    // The same flows in class 0: the rest of the 1.5 MB buffer holds their backlog.
    let exact = three_into_one(0);
    let sw = &exact.switches[0];
    assert_eq!(sw.drops_queue_cap + sw.drops_admission + sw.drops_pushout, 0, "{sw:?}");
    assert!(max_backlog(&exact, 0) > 20 * MTU, "class 0 queues far past 5 MTU: {}", max_backlog(&exact, 0));
    assert!(exact.records.iter().all(|r| r.bytes_delivered == r.size_bytes));
}

/// Every record of workload entry `w`, with the class `schedule` says it should have.
fn check_classes(out: &Output, w: u32, base: u8, schedule: &[(u64, u8)]) -> Vec<u8> {
    let expected = |r: &FctRecord| {
        schedule.iter().rev().find(|&&(from_us, _)| r.start_ps >= from_us * 1_000_000).map_or(base, |&(_, p)| p)
    };
    let mut seen: Vec<u8> = Vec::new();
    for r in out.records.iter().filter(|r| r.workload == w) {
        assert_eq!(r.prio, expected(r), "flow {} started at {} ps", r.id, r.start_ps);
        if !seen.contains(&r.prio) {
            seen.push(r.prio);
        }
    }
    seen.sort_unstable();
    seen
}

#[test]
fn prio_schedule_moves_new_transfers_at_the_given_times_and_in_flight_ones_stay() {
    // Flows of 300 KB (240 us at 10 Gb/s, longer shared) so that some are in flight at each
    // change; incast responses move too.
    let dir = std::env::temp_dir().join(format!("slacknet-slack-queues-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    std::fs::write(dir.join("fixed.cdf"), "300000 0\n300000 1\n").unwrap();
    let text = star(
        8,
        "[switch]\nbuffer_bytes = 1500000\nqueues = \"netapprox_slack\"\n\
         [[workload]]\nkind = \"poisson\"\ncdf = \"fixed.cdf\"\nload = 0.3\nduration_ms = 1.5\n\
         prio = 4\nprio_schedule = [[500, 3], [1000.0, 2]]\n\
         [[workload]]\nkind = \"incast\"\nquery_rate_per_host = 4000\nfan_in = 3\nburst_bytes = 30000\n\
         duration_ms = 1.5\nprio_schedule = [[750, 6]]\n",
    );
    let valid = Spec::from_toml_str(&text).unwrap().validate(&dir).unwrap();
    let mut sim = sim::Simulation::new(&valid).unwrap();
    sim.enable_decision_trace().unwrap();
    sim.run_to_end();
    let out = sim.output();
    assert_eq!(check_classes(&out, 0, 4, &[(500, 3), (1000, 2)]), [2, 3, 4], "every class of the schedule is used");
    assert_eq!(check_classes(&out, 1, 0, &[(750, 6)]), [0, 6]);
    // A class-4 flow still running after 500 us keeps sending in class 4: packets (data and
    // ACKs) keep arriving at class-4 queues until the last class-4 flow ends.
    let end_ps = |r: &FctRecord| r.start_ps + r.fct_ps.max(0) as u64;
    let last_class4 = out.records.iter().filter(|r| r.prio == 4).map(end_ps).max().unwrap();
    assert!(last_class4 > 600_000_000, "the scenario should have a class-4 flow in flight past the change");
    let qpp = 8;
    let class4_after: Vec<u64> =
        sim.decision_trace().iter().filter(|t| t.queue % qpp == 4 && t.time_ps > 500_000_000).map(|t| t.time_ps).collect();
    assert!(!class4_after.is_empty(), "flows in flight at the change keep class 4");
    assert!(class4_after.iter().all(|&t| t <= last_class4), "class 4 is used only by flows started before 500 us");
    // No packet of a class arrives before the first flow of that class starts.
    for class in [2u8, 3, 6] {
        let first = out.records.iter().filter(|r| r.prio == class).map(|r| r.start_ps).min().unwrap();
        assert!(
            sim.decision_trace().iter().filter(|t| t.queue % qpp == u32::from(class)).all(|t| t.time_ps >= first),
            "class {class} before its first flow"
        );
    }
    let _ = std::fs::remove_dir_all(&dir);
}
