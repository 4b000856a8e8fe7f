//! The scenario schema: what a user writes (TOML or JSON), validated into a [`ValidSpec`].
//!
//! Pipeline position: `spec -> (topo, workload) -> world -> metrics`. Rust owns this schema;
//! `python/slacknet/config.py` mirrors it with pydantic and a round-trip test keeps the two
//! in sync. Every default lives in a `default_*` function or `Default` impl next to its key.
//!
//! The rooms: the schema by section (`topology`, `switch`, `transport`, `workload`), model
//! `profile`s, reading text (`parse`) and checking values and reading file inputs
//! (`validate`). A scenario is parsed and validated once per run; a [`ValidSpec`] carries
//! every file's contents, so building a simulation does no I/O.
//!
//! INVARIANT: unknown keys are rejected everywhere (`deny_unknown_fields`), and every value a
//! [`ValidSpec`] holds has passed [`Spec::validate`], whose errors name the offending key and
//! value ([`SpecError`]).

use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

/// The most queues an egress port supports (8 priority classes, as in commodity switches).
pub const MAX_QUEUES: usize = 8;

/// A whole scenario. Deserialize with [`Spec::from_toml_str`] or [`Spec::from_json_str`].
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Spec {
    /// Free-form scenario name, used for the results folder.
    #[serde(default = "default_name")]
    pub name: String,
    /// Master seed: every random choice of the run derives from it.
    #[serde(default = "default_seed")]
    pub seed: u64,
    /// Model profile: a named set of defaults applied beneath the keys the scenario sets
    /// (see [`profile_defaults`]).
    #[serde(default)]
    pub profile: Profile,
    /// The network.
    pub topology: TopologySpec,
    /// Path selection.
    #[serde(default)]
    pub routing: RoutingSpec,
    /// Switch buffers, queues, scheduling, ECN and admission.
    #[serde(default)]
    pub switch: SwitchSpec,
    /// Host NIC queue.
    #[serde(default)]
    pub host: HostSpec,
    /// The transport every flow uses.
    #[serde(default)]
    pub transport: TransportSpec,
    /// Traffic sources; their flows are merged and sorted by start time.
    #[serde(default)]
    pub workload: Vec<WorkloadSpec>,
    /// Run control.
    #[serde(default)]
    pub run: RunSpec,
}

pub mod limits;
mod parse;
mod profile;
mod switch;
mod topology;
mod transport;
mod validate;
mod workload;

pub use profile::*;
pub use switch::*;
pub use topology::*;
pub use transport::*;
pub use workload::*;

/// `serde(default = "yes")`: a flag that is on unless a scenario turns it off.
fn yes() -> bool {
    true
}

fn default_name() -> String {
    "scenario".into()
}
fn default_seed() -> u64 {
    1
}

/// A scenario that is wrong, with the key and value at fault.
#[derive(Clone, Debug, PartialEq, thiserror::Error)]
pub enum SpecError {
    /// The text does not parse or has a key of the wrong type or name.
    #[error("{key}: {}", readable_types(.message))]
    Parse {
        /// Dotted path of the offending key (`workload[0].load`), or `<root>`.
        key: String,
        /// What the parser said.
        message: String,
    },
    /// A value is out of range or inconsistent with others.
    #[error("{key} = {value}: {message}")]
    Invalid {
        /// Dotted path of the offending key.
        key: String,
        /// The value as written.
        value: String,
        /// What is wrong and how to fix it.
        message: String,
    },
}

/// A parser's message with Rust's type names said as ranges: "invalid value: integer `-1`,
/// expected u32" becomes "..., expected an integer from 0 to 4294967295" (a user writing a
/// scenario need not know what a u32 is).
fn readable_types(message: &str) -> String {
    let mut out = message.to_string();
    for (rust, said) in [
        ("expected u8", format!("expected an integer from 0 to {}", u8::MAX)),
        ("expected u16", format!("expected an integer from 0 to {}", u16::MAX)),
        ("expected u32", format!("expected an integer from 0 to {}", u32::MAX)),
        ("expected u64", format!("expected an integer from 0 to {}", u64::MAX)),
        ("expected usize", format!("expected an integer from 0 to {}", u64::MAX)),
        ("expected i64", "expected an integer".to_string()),
        ("expected f64", "expected a number".to_string()),
    ] {
        // Whole words only: "expected u8" must not take the start of "expected u8x".
        let mut from = 0;
        while let Some(i) = out[from..].find(rust).map(|i| i + from) {
            let end = i + rust.len();
            if out[end..].chars().next().is_some_and(|c| c.is_ascii_alphanumeric()) {
                from = end;
                continue;
            }
            out.replace_range(i..end, &said);
            from = i + said.len();
        }
    }
    out
}

impl SpecError {
    /// What is wrong, as the error's text says it after the key (a parser's type names said as
    /// ranges).
    pub fn message(&self) -> String {
        match self {
            SpecError::Parse { message, .. } => readable_types(message),
            SpecError::Invalid { message, .. } => message.clone(),
        }
    }

    /// The dotted path of the offending key.
    pub fn key(&self) -> &str {
        match self {
            SpecError::Parse { key, .. } | SpecError::Invalid { key, .. } => key,
        }
    }

    fn invalid(key: impl Into<String>, value: impl ToString, message: impl Into<String>) -> Self {
        SpecError::Invalid { key: key.into(), value: value.to_string(), message: message.into() }
    }
}

/// A scenario that passed [`Spec::validate`]: every value is in range, every file exists.
#[derive(Clone, Debug, PartialEq)]
pub struct ValidSpec {
    spec: Spec,
}

impl ValidSpec {
    /// Wrap a spec that passed validation before (a copy of a valid spec changed in ways
    /// that keep it valid, such as clearing its workload).
    pub(crate) fn from_validated(spec: Spec) -> ValidSpec {
        ValidSpec { spec }
    }

    /// The same scenario with another master seed (a seed is valid whatever its value).
    pub fn with_seed(&self, seed: u64) -> ValidSpec {
        let mut spec = self.spec.clone();
        spec.seed = seed;
        ValidSpec { spec }
    }

    /// The validated scenario.
    pub fn spec(&self) -> &Spec {
        &self.spec
    }
    /// The resolved scenario as JSON (defaults filled, paths absolute).
    pub fn to_json(&self) -> String {
        self.spec.to_json()
    }
}

/// The built-in default scenario (what `slacknet run` uses without an argument): a 2-leaf,
/// 32-host leaf-spine at 10 Gb/s with DCTCP, web-search traffic at 40% load and incast.
pub fn default_scenario_toml() -> &'static str {
    include_str!("../data/default.toml")
}

#[cfg(test)]
mod tests {
    use super::*;

    fn base() -> &'static Path {
        Path::new(".")
    }

    const MINIMAL: &str = r#"
[topology]
kind = "leaf_spine"
leaves = 2
hosts_per_leaf = 4
spines = 2
host_rate_gbps = 10
fabric_rate_gbps = 10
"#;

    #[test]
    fn minimal_spec_gets_defaults() {
        let s = Spec::from_toml_str(MINIMAL).unwrap();
        assert_eq!(s.seed, 1);
        assert_eq!(s.switch.queues.len(), 1);
        assert_eq!(s.transport.kind(), "dctcp");
        s.validate(base()).unwrap();
    }

    #[test]
    fn unknown_key_is_named() {
        let text = format!("{MINIMAL}\n[transport]\nkind = \"dctcp\"\nmss = 1000\n");
        let e = Spec::from_toml_str(&text).unwrap_err();
        assert_eq!(e.key(), "transport.mss", "{e}");
        assert!(e.to_string().contains("unknown field"), "{e}");
        // A key of another kind is named too: UDP has no congestion window, DCTCP no rate.
        for (kind, key) in [("udp", "init_cwnd_pkts"), ("dctcp", "rate_gbps"), ("newreno", "g")] {
            let text = format!("{MINIMAL}\n[transport]\nkind = \"{kind}\"\n{key} = 1\n");
            let e = Spec::from_toml_str(&text).unwrap_err();
            assert_eq!(e.key(), format!("transport.{key}"), "{e}");
        }
        // The kind is required, and named when missing or unknown.
        let e = Spec::from_toml_str(&format!("{MINIMAL}\n[transport]\nmss_bytes = 1000\n")).unwrap_err();
        assert_eq!(e.key(), "transport.kind", "{e}");
        let e = Spec::from_toml_str(&format!("{MINIMAL}\n[transport]\nkind = \"quic\"\n")).unwrap_err();
        assert_eq!(e.key(), "transport.kind", "{e}");
        let text = MINIMAL.replace("spines = 2", "spines = 2\nspine = 3");
        let e = Spec::from_toml_str(&text).unwrap_err();
        assert!(e.to_string().contains("spine"), "{e}");
    }

    #[test]
    fn errors_inside_tagged_tables_name_the_exact_key() {
        let e = Spec::from_toml_str(&MINIMAL.replace("leaves = 2", "leaves = \"x\"")).unwrap_err();
        assert_eq!(e.key(), "topology.leaves", "{e}");
        let e = Spec::from_toml_str(&MINIMAL.replace("leaves = 2", "leaves = 2\nleafs = 3")).unwrap_err();
        assert!(e.key().starts_with("topology"), "{e}");
        assert!(e.to_string().contains("leafs"), "{e}");
        let e = Spec::from_toml_str(&MINIMAL.replace("leaf_spine", "leaf_spin")).unwrap_err();
        assert_eq!(e.key(), "topology.kind", "{e}");
        let text = format!("{MINIMAL}\n[[workload]]\nkind = \"poisson\"\ncdf = \"websearch\"\nload = \"high\"\nduration_ms = 1\n");
        let e = Spec::from_toml_str(&text).unwrap_err();
        assert_eq!(e.key(), "workload[0].load", "{e}");
        let json = serde_json::to_string(&toml::from_str::<toml::Value>(&text).unwrap()).unwrap();
        let e = Spec::from_json_str(&json).unwrap_err();
        assert_eq!(e.key(), "workload[0].load", "{e}");
    }

    #[test]
    fn an_error_in_the_transport_table_gives_the_line_of_its_key() {
        // MINIMAL's last line is 8; [transport] on 9. It said "line 8" (the line before the
        // table) for every key of the table.
        let e = Spec::from_toml_str(&format!("{MINIMAL}[transport]\nkind = \"dctcp\"\n\n\nsack = \"no\"\n")).unwrap_err();
        assert_eq!(e.key(), "transport.sack", "{e}");
        assert!(e.to_string().ends_with("(line 13)"), "{e}");
        let e = Spec::from_toml_str(&format!("{MINIMAL}[transport]\nkind = \"power_tcp\"\nslow_startx = false\n")).unwrap_err();
        assert!(e.to_string().ends_with("(line 11)"), "{e}");
        // A key not written as `key =` in the table: the table's own line.
        let e = Spec::from_toml_str(&format!("transport = {{ kind = \"dctcp\", sack = \"no\" }}\n{MINIMAL}")).unwrap_err();
        assert_eq!(e.key(), "transport.sack", "{e}");
        assert!(e.to_string().ends_with("(line 1)"), "{e}");
    }

    #[test]
    fn integers_beyond_toml_are_named_with_their_key() {
        // The TOML parser refuses them before serde reads a key; the key is read from the text.
        let cases = [
            (format!("seed = 18446744073709551615\n{MINIMAL}"), "seed", "18446744073709551615", 1),
            (format!("seed = 18446744073709551616\n{MINIMAL}"), "seed", "18446744073709551616", 1),
            (MINIMAL.replace("leaves = 2", "leaves = 18446744073709551616"), "topology.leaves", "18446744073709551616", 4),
            (format!("{MINIMAL}[run]\nstop_ms = 99999999999999999999\n"), "run.stop_ms", "99999999999999999999", 10),
            (
                format!("{MINIMAL}[[workload]]\nkind = \"flows\"\nflows = []\n[[workload]]\nkind = \"flows\"\nflows = [{{ src = 0, dst = 1, size_bytes = 18446744073709551616 }}]\n"),
                "workload[1].flows",
                "18446744073709551616",
                14,
            ),
        ];
        for (text, key, value, line) in cases {
            let e = Spec::from_toml_str(&text).unwrap_err();
            assert_eq!(e.key(), key, "{e}");
            let msg = e.to_string();
            assert!(msg.starts_with(&format!("{key} = {value}: number too large")), "{msg}");
            assert!(msg.contains("9223372036854775807 (2^63 - 1)") && msg.ends_with(&format!("(line {line})")), "{msg}");
        }
        let e = Spec::from_toml_str(&format!("seed = 18446744073709551615\n{MINIMAL}")).unwrap_err();
        assert_eq!(
            e.to_string(),
            "seed = 18446744073709551615: number too large to fit in target type; TOML integers are at most \
             9223372036854775807 (2^63 - 1): give a smaller value (line 1)"
        );
        // Inside an inline table the value's own key is named too.
        let e = Spec::from_toml_str(&format!("{MINIMAL}[[workload]]\nkind = \"flows\"\nflows = [{{ src = 0, dst = 1, size_bytes = 18446744073709551616 }}]\n")).unwrap_err();
        assert!(e.to_string().contains("(its size_bytes)"), "{e}");
        // Keys and values with characters of more than one byte around the error: an error,
        // never a panic (a quoted key ending in an arrow once sliced inside it).
        for text in [
            "\"\u{2192}k\" = 99999999999999999999\n",
            "a = { \"\u{2192}\" = 99999999999999999999 }\n",
            "[\"t\u{e9}\u{2192}\"]\n\"\u{1F600}\" = 99999999999999999999\n",
            "\u{2192} = 1\n",
            "x = \"\u{2192}\"\ny = 99999999999999999999 \u{2192}\n",
        ] {
            let e = Spec::from_toml_str(&format!("{text}{MINIMAL}")).unwrap_err();
            assert!(!e.to_string().is_empty());
        }
    }

    #[test]
    fn a_tagged_table_given_as_its_tag_says_how_to_write_it() {
        let with = |switch: &str| format!("{MINIMAL}\n[switch]\n{switch}\n");
        let e = Spec::from_toml_str(&with("admission = \"dynamic_thresholds\"")).unwrap_err();
        assert_eq!(
            e.to_string(),
            "switch.admission = \"dynamic_thresholds\": must be a table, e.g. admission = { policy = \"dynamic_thresholds\" }"
        );
        let json = serde_json::to_string(&toml::from_str::<toml::Value>(&with("admission = \"lqd\"")).unwrap()).unwrap();
        let e = Spec::from_json_str(&json).unwrap_err();
        assert_eq!(e.to_string(), "switch.admission = \"lqd\": must be a table, e.g. admission = { policy = \"lqd\" }");
        let e = Spec::from_toml_str(&with("admission = 3")).unwrap_err();
        assert_eq!(e.key(), "switch.admission", "{e}");
        assert!(e.to_string().contains("{ policy = \"dynamic_thresholds\" }"), "{e}");
        let e = Spec::from_toml_str(&with("admission = { policy = \"credence\", oracle = \"always_drop\" }")).unwrap_err();
        assert_eq!(
            e.to_string(),
            "switch.admission.oracle = \"always_drop\": must be a table, e.g. oracle = { kind = \"always_drop\" }"
        );
        let e = Spec::from_toml_str(&format!("transport = \"dctcp\"\n{MINIMAL}")).unwrap_err();
        assert_eq!(e.to_string(), "transport = \"dctcp\": must be a table, e.g. transport = { kind = \"dctcp\" }");
    }

    #[test]
    fn the_pfabric_admission_error_spells_the_policy_as_toml() {
        let pfabric = format!("{MINIMAL}\n[transport]\nkind = \"pfabric\"\n[switch]\nscheduler = \"pfabric\"\nqueues = [{{}}]\n");
        let e = Spec::from_toml_str(&pfabric).unwrap().validate(base()).unwrap_err();
        assert_eq!(e.key(), "switch.admission");
        assert!(
            e.to_string().starts_with("switch.admission = { policy = \"dynamic_thresholds\" } (the default): "),
            "{e}"
        );
        let lqd = pfabric.replace("queues = [{}]", "queues = [{}]\nadmission = { policy = \"static\", port_bytes = 30000 }");
        let e = Spec::from_toml_str(&lqd).unwrap().validate(base()).unwrap_err();
        assert!(e.to_string().starts_with("switch.admission = { policy = \"static\", port_bytes = 30000 }: "), "{e}");
    }

    #[test]
    fn impossible_values_are_named() {
        let cases = [
            (MINIMAL.replace("host_rate_gbps = 10", "host_rate_gbps = 0"), "topology.host_rate_gbps"),
            (
                format!("{MINIMAL}\n[[workload]]\nkind = \"poisson\"\ncdf = \"websearch\"\nload = 1.5\nduration_ms = 1\n"),
                "workload[0].load",
            ),
            (
                format!("{MINIMAL}\n[[workload]]\nkind = \"poisson\"\ncdf = \"nope.csv\"\nload = 0.5\nduration_ms = 1\n"),
                "workload[0].cdf",
            ),
            (format!("{MINIMAL}\n[switch]\nqueues = [{{}},{{}},{{}},{{}},{{}},{{}},{{}},{{}},{{}}]\n"), "switch.queues"),
        ];
        for (text, key) in cases {
            let e = Spec::from_toml_str(&text).unwrap().validate(base()).unwrap_err();
            assert_eq!(e.key(), key, "{e}");
        }
    }

    #[test]
    fn ns3_compat_profile_fills_defaults_beneath_the_user() {
        let text = format!("profile = \"ns3_compat\"\n{MINIMAL}\n[transport]\nmss_bytes = 1000\n");
        let s = Spec::from_toml_str(&text).unwrap();
        assert_eq!(s.profile, Profile::Ns3Compat);
        assert_eq!(s.transport.mss_bytes(), 1000, "the user's key wins");
        assert!(s.transport.tcp().unwrap().handshake);
        assert!(matches!(&s.transport, TransportSpec::Dctcp(d) if d.ece_only_on_new_acks && d.tcp().sack));
        assert_eq!(s.transport.header_bytes(), 54);
        assert_eq!(s.switch.admission, AdmissionSpec::Static { port_bytes: Some(350_000) });
        assert_eq!(s.host.ecn_threshold_bytes, Some(14_000));
        // The resolved JSON reproduces the same scenario.
        assert_eq!(Spec::from_json_str(&s.to_json()).unwrap(), s);
        // Another admission policy replaces the profile's static one whole.
        let lqd = format!("{text}\n[switch]\nadmission = {{ policy = \"lqd\" }}\n");
        assert_eq!(Spec::from_toml_str(&lqd).unwrap().switch.admission, AdmissionSpec::Lqd);
        let e = Spec::from_toml_str(&format!("profile = \"ns4\"\n{MINIMAL}")).unwrap_err();
        assert_eq!(e.key(), "profile", "{e}");
    }

    /// The queues `netapprox_slack` stands for, written out: queue 0 marks at 65 MTU and holds
    /// the buffer minus 28 MTU; queue k (1..=7) holds 8 - k MTU and never marks.
    fn netapprox_by_hand(mtu: u64, buffer: u64) -> Vec<QueueSpec> {
        let mut q = vec![QueueSpec { ecn_threshold_bytes: Some(65 * mtu), cap_bytes: Some(buffer - 28 * mtu), dt_alpha: 1.0 }];
        q.extend((1..8).map(|k| QueueSpec { cap_bytes: Some((8 - k) * mtu), ..QueueSpec::default() }));
        q
    }

    #[test]
    fn netapprox_slack_preset_expands_to_the_explicit_queues() {
        let with = |extra: &str| format!("{MINIMAL}\n[switch]\nbuffer_bytes = 1500000\nqueues = \"netapprox_slack\"\n{extra}");
        // The default transport's full packet: 1460 + 40 = 1500 B.
        let s = Spec::from_toml_str(&with("")).unwrap();
        let caps: Vec<Option<u64>> = s.switch.queues.iter().map(|q| q.cap_bytes).collect();
        let k: Vec<Option<u64>> = s.switch.queues.iter().map(|q| q.ecn_threshold_bytes).collect();
        assert_eq!(
            caps,
            [1_458_000, 10_500, 9_000, 7_500, 6_000, 4_500, 3_000, 1_500].map(Some).to_vec(),
            "queue 0 gets 1.5 MB - 28 x 1500 B"
        );
        assert_eq!(k, [Some(97_500), None, None, None, None, None, None, None]);
        assert_eq!(s.switch.queues, netapprox_by_hand(1500, 1_500_000));
        assert_eq!(s.switch.admission, AdmissionSpec::CompleteSharing);
        assert_eq!(s.switch.scheduler, SchedulerKind::StrictPriority);
        // The resolved JSON holds the list, reads back to the same scenario, and validates.
        let json = s.to_json();
        assert!(!json.contains("netapprox_slack") && json.contains("\"cap_bytes\": 1458000"), "{json}");
        assert_eq!(Spec::from_json_str(&json).unwrap(), s);
        let v = s.clone().validate(base()).unwrap();
        assert_eq!(v.spec().switch.queues, s.switch.queues);
        // JSON names the preset the same way.
        let tree: serde_json::Value = serde_json::to_value(toml::from_str::<toml::Value>(&with("")).unwrap()).unwrap();
        assert_eq!(Spec::from_json_str(&tree.to_string()).unwrap(), s);
        // Jumbo frames: a 9000 B full packet; queue 0 gets the exact bytes left (1,248,000 B,
        // not a whole number of MTUs).
        let jumbo = Spec::from_toml_str(&with("[transport]\nkind = \"dctcp\"\nmss_bytes = 8960\n")).unwrap();
        assert_eq!(jumbo.switch.queues, netapprox_by_hand(9000, 1_500_000));
        assert_eq!(jumbo.switch.queues[0].cap_bytes, Some(1_248_000));
        assert_eq!(jumbo.switch.queues[7].cap_bytes, Some(9_000));
        // A workload entry's larger transport sets the MTU: every queue holds one of its packets.
        let entry = "[[workload]]\nkind = \"flows\"\nflows = [{ src = 0, dst = 1, size_bytes = 1 }]\n\
                     transport = { kind = \"udp\", mss_bytes = 8960 }\n";
        assert_eq!(Spec::from_toml_str(&with(entry)).unwrap().switch.queues, netapprox_by_hand(9000, 1_500_000));
        // An admission policy the scenario sets is kept.
        let lqd = Spec::from_toml_str(&with("admission = { policy = \"lqd\" }\n")).unwrap();
        assert_eq!(lqd.switch.admission, AdmissionSpec::Lqd);
        assert_eq!(lqd.switch.queues, netapprox_by_hand(1500, 1_500_000));
        // A profile's is not: the preset the scenario names wins over the profile's static
        // partitioning; the profile's packet (1400 + 54 B) is the MTU.
        let ns3 = Spec::from_toml_str(&format!("profile = \"ns3_compat\"\n{}", with(""))).unwrap();
        assert_eq!(ns3.switch.admission, AdmissionSpec::CompleteSharing);
        assert_eq!(ns3.switch.queues, netapprox_by_hand(1454, 1_500_000));
        assert_eq!(Spec::from_json_str(&ns3.to_json()).unwrap(), ns3);
        ns3.validate(base()).unwrap();
        // Every listed name is a preset, under its own name.
        for &n in QueuePreset::NAMES {
            assert_eq!(QueuePreset::from_name(n).map(QueuePreset::name), Some(n));
        }
        assert_eq!(QueuePreset::from_name("NetapproxSlack"), None);
    }

    #[test]
    fn json_round_trip_is_identity() {
        let s = Spec::from_toml_str(default_scenario_toml()).unwrap();
        let j = s.to_json();
        assert_eq!(Spec::from_json_str(&j).unwrap(), s);
    }

    /// A scratch folder, removed when dropped (a failing test's too).
    struct Scratch(PathBuf);

    impl Drop for Scratch {
        fn drop(&mut self) {
            let _ = std::fs::remove_dir_all(&self.0);
        }
    }

    impl std::ops::Deref for Scratch {
        type Target = Path;
        fn deref(&self) -> &Path {
            &self.0
        }
    }

    /// A scratch folder with a valid forest file `f.json` and a broken one `bad.json`.
    fn forest_dir(tag: &str) -> Scratch {
        let dir = std::env::temp_dir().join(format!("slacknet-spec-{tag}-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        std::fs::write(dir.join("f.json"), crate::credence::forest::tests::TWO_TREES).unwrap();
        std::fs::write(dir.join("bad.json"), "{\"format\": \"slacknet-forest/1\"}").unwrap();
        Scratch(dir)
    }

    #[test]
    fn credence_and_baselines_parse_with_defaults_and_round_trip() {
        let with = |admission: &str| format!("{MINIMAL}\n[switch]\nadmission = {admission}\n");
        let s = Spec::from_toml_str(&with(r#"{ policy = "abm" }"#)).unwrap();
        assert_eq!(
            s.switch.admission,
            AdmissionSpec::Abm { alpha_first_rtt: 64.0, base_rtt_us: None, congested_bytes: 28_000, first_rtt_bytes: None }
        );
        for policy in ["harmonic", "follow_lqd"] {
            Spec::from_toml_str(&with(&format!("{{ policy = \"{policy}\" }}"))).unwrap().validate(base()).unwrap();
        }
        let text = with(
            r#"{ policy = "credence", base_rtt_us = 8.0, oracle = { kind = "flip", p = 0.01, inner = { kind = "always_accept" } } }"#,
        );
        let s = Spec::from_toml_str(&text).unwrap();
        assert_eq!(Spec::from_json_str(&s.to_json()).unwrap(), s);
        s.validate(base()).unwrap();
    }

    #[test]
    fn credence_forest_is_resolved_and_loaded_by_validation() {
        let dir = forest_dir("load");
        let text = format!(
            "{MINIMAL}\n[switch]\nadmission = {{ policy = \"credence\", oracle = {{ kind = \"forest\", path = \"f.json\" }} }}\n"
        );
        let v = Spec::from_toml_str(&text).unwrap().validate(&dir).unwrap();
        let AdmissionSpec::Credence { oracle: OracleSpec::Forest { path, model }, .. } = &v.spec().switch.admission
        else {
            panic!("{:?}", v.spec().switch.admission)
        };
        assert!(Path::new(path).is_absolute() && path.ends_with("f.json"), "{path}");
        assert_eq!(model.0.as_ref().map(|f| f.num_trees()), Some(2));
        // The resolved JSON names the file, not its contents, and reads back equal.
        let j = v.spec().to_json();
        assert!(!j.contains("model"), "{j}");
        assert_eq!(&Spec::from_json_str(&j).unwrap(), v.spec());
    }

    #[test]
    fn admission_errors_name_the_key() {
        let dir = forest_dir("errors");
        let with = |admission: &str| format!("{MINIMAL}\n[switch]\nadmission = {admission}\n");
        let cases = [
            (with(r#"{ policy = "abm", congested_bytes = 0 }"#), "switch.admission.congested_bytes"),
            (with(r#"{ policy = "abm", alpha_first_rtt = -1.0 }"#), "switch.admission.alpha_first_rtt"),
            (with(r#"{ policy = "abm", base_rtt_us = 0.0 }"#), "switch.admission.base_rtt_us"),
            (
                with(r#"{ policy = "credence", base_rtt_us = -3.0, oracle = { kind = "always_drop" } }"#),
                "switch.admission.base_rtt_us",
            ),
            (
                with(r#"{ policy = "credence", oracle = { kind = "flip", p = 1.5, inner = { kind = "always_drop" } } }"#),
                "switch.admission.oracle.p",
            ),
            (
                with(
                    r#"{ policy = "credence", oracle = { kind = "flip", p = 0.5, inner = { kind = "flip", p = -0.1, inner = { kind = "always_drop" } } } }"#,
                ),
                "switch.admission.oracle.inner.p",
            ),
            (
                with(r#"{ policy = "credence", oracle = { kind = "forest", path = "missing.json" } }"#),
                "switch.admission.oracle.path",
            ),
            (
                with(
                    r#"{ policy = "credence", oracle = { kind = "flip", p = 0.5, inner = { kind = "forest", path = "bad.json" } } }"#,
                ),
                "switch.admission.oracle.inner.path",
            ),
        ];
        for (text, key) in cases {
            let e = Spec::from_toml_str(&text).unwrap().validate(&dir).unwrap_err();
            assert_eq!(e.key(), key, "{e}");
        }
        let e = Spec::from_toml_str(&with(r#"{ policy = "credence", oracle = { kind = "forest", path = "bad.json" } }"#))
            .unwrap()
            .validate(&dir)
            .unwrap_err();
        assert!(e.to_string().contains("not a forest file"), "{e}");
    }
}
