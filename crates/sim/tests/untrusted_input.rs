//! Regression tests for inputs that once made scenario parsing or validation panic, found with
//! the fuzz targets (`fuzz/`; each input is also in `fuzz/corpus/scenario_toml/crash-*`).
//! Validation must answer every input with a value: a `ValidSpec` or a `SpecError` naming the
//! key.

use std::path::Path;

use sim::Spec;

/// Parse and validate `text`; the key of the error it must be refused with.
fn refused_key(text: &str) -> String {
    let spec = Spec::from_toml_str(text).unwrap_or_else(|e| panic!("does not parse: {e}"));
    match spec.validate(Path::new(".")) {
        Ok(_) => panic!("validated:\n{text}"),
        Err(e) => e.key().to_string(),
    }
}

/// `spines x links_per_spine` overflowed the leaf's uplink rate while the time-series estimate
/// built the topology (`topo.rs`: attempt to multiply with overflow), and a fabric of 10^10 links
/// would have exhausted memory. Fuzz corpus: `scenario_toml/crash-fabric-uplink-overflow`.
#[test]
fn a_leaf_spine_fabric_too_large_to_build_is_refused() {
    let fabric = |leaves: u32, spines: u32, links_per_spine: u32, timeseries: &str| {
        format!(
            "[topology]\nkind = \"leaf_spine\"\nleaves = {leaves}\nhosts_per_leaf = 2\nspines = {spines}\n\
             links_per_spine = {links_per_spine}\nhost_rate_gbps = 10\nfabric_rate_gbps = 10\n{timeseries}"
        )
    };
    let ts = "[run.timeseries]\ninterval_us = 1000000\n";
    assert_eq!(refused_key(&fabric(2, 100_000, 100_000, ts)), "topology.links_per_spine");
    assert_eq!(refused_key(&fabric(2, 65_537, 1, "")), "topology.spines");
    assert_eq!(refused_key(&fabric(65, 1 << 16, 1, "")), "topology.leaves");
    // The largest fabric is accepted.
    let largest = fabric(64, 1 << 16, 1, "");
    Spec::from_toml_str(&largest).unwrap().validate(Path::new(".")).unwrap();
}

/// A delay of more than u64::MAX picoseconds overflowed `Dur::from_ns` while the time-series
/// estimate built the topology. Fuzz corpus: `scenario_toml/crash-delay-overflow`.
#[test]
fn a_link_delay_past_the_clock_is_refused() {
    let ts = "[run.timeseries]\ninterval_us = 1000000\n";
    let leaf_spine = |key: &str, ns: u64| {
        format!(
            "[topology]\nkind = \"leaf_spine\"\nleaves = 2\nhosts_per_leaf = 2\nspines = 1\nhost_rate_gbps = 10\n\
             fabric_rate_gbps = 10\n{key} = {ns}\n{ts}"
        )
    };
    let fat_tree = |ns: u64| format!("[topology]\nkind = \"fat_tree\"\nk = 4\nrate_gbps = 10\ndelay_ns = {ns}\n{ts}");
    for key in ["host_delay_ns", "fabric_delay_ns"] {
        assert_eq!(refused_key(&leaf_spine(key, i64::MAX as u64)), format!("topology.{key}"));
        assert_eq!(refused_key(&leaf_spine(key, 1_000_000_001)), format!("topology.{key}"));
        Spec::from_toml_str(&leaf_spine(key, 1_000_000_000)).unwrap().validate(Path::new(".")).unwrap();
    }
    assert_eq!(refused_key(&fat_tree(i64::MAX as u64)), "topology.delay_ns");
    Spec::from_toml_str(&fat_tree(1_000_000_000)).unwrap().validate(Path::new(".")).unwrap();
}

/// A valid scenario's resolved JSON (what `slacknet validate` prints, what the results folder
/// keeps and what the Python front end sends back) read back an ulp away for floats with large
/// exponents: serde_json's default float parser is not exact. Fuzz corpus:
/// `scenario_toml/crash-json-float-roundtrip`.
#[test]
fn a_valid_scenarios_json_reads_back_bit_for_bit() {
    let default = sim::spec::default_scenario_toml();
    for x in ["6.162599865641032e196", "1.947700395895162e-169", "1.0498824276453545e74", "5e-324", "1.7976931348623157e308"] {
        let text = default.replace("dt_alpha = 1.0", &format!("dt_alpha = {x}"));
        assert_ne!(text, default);
        let valid = Spec::from_toml_str(&text).unwrap().validate(Path::new(".")).unwrap();
        let again = Spec::from_json_str(&valid.to_json()).unwrap();
        assert_eq!(&again, valid.spec(), "dt_alpha = {x}");
        assert_eq!(again.switch.queues[0].dt_alpha, x.parse::<f64>().unwrap());
    }
}

/// JSON with text after the scenario's object was accepted (serde_json's streaming deserializer
/// stops at the object's end), and read without its profile, which is only merged into text
/// that parses whole: its resolved JSON then read back as another scenario. Fuzz corpus:
/// `scenario_json/crash-trailing-characters`.
#[test]
fn json_with_text_after_the_scenario_is_refused() {
    let scenario = r#"{"profile": "ns3_compat", "topology": {"kind": "fat_tree", "k": 4, "rate_gbps": 10}}"#;
    let spec = Spec::from_json_str(scenario).unwrap();
    assert_eq!(spec.host.nic_buffer_bytes, Some(350_000), "the profile applies");
    assert_eq!(Spec::from_json_str(&format!(" {scenario} \n\t")).unwrap(), spec, "whitespace is fine");
    for tail in [" }", "}}", ",", " {}", "x", " \"profile\": \"default\" }"] {
        let e = Spec::from_json_str(&format!("{scenario}{tail}")).unwrap_err();
        assert_eq!(e.key(), "<root>", "{tail:?}: {e}");
        assert!(e.to_string().contains("trailing characters"), "{tail:?}: {e}");
    }
}

/// A flow list, a CDF file or a Credence forest larger than its bound is refused by its size,
/// before a byte is read (they were read whole, whatever their size): sparse files of one byte
/// past each bound, which take no disk.
#[test]
fn input_files_past_their_bounds_are_refused_unread() {
    use sim::textfile::{MAX_CDF_BYTES, MAX_FLOW_LIST_BYTES, MAX_FOREST_BYTES};
    let dir = std::env::temp_dir().join(format!("slacknet-bounds-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let sparse = |name: &str, bytes: u64| {
        let f = std::fs::File::create(dir.join(name)).unwrap();
        f.set_len(bytes + 1).unwrap();
    };
    sparse("flows.txt", MAX_FLOW_LIST_BYTES);
    sparse("sizes.cdf", MAX_CDF_BYTES);
    sparse("forest.json", MAX_FOREST_BYTES);
    let net = "[topology]\nkind = \"leaf_spine\"\nleaves = 2\nhosts_per_leaf = 2\nspines = 1\n\
               host_rate_gbps = 10\nfabric_rate_gbps = 10\n";
    for (extra, key, words) in [
        ("[[workload]]\nkind = \"flow_list\"\npath = \"flows.txt\"\n", "workload[0].path", "larger than 1024 MiB"),
        ("[[workload]]\nkind = \"poisson\"\ncdf = \"sizes.cdf\"\nload = 0.5\nduration_ms = 1\n", "workload[0].cdf", "larger than 16 MiB"),
        ("[switch]\nbuffer_bytes = 100000\nadmission = { policy = \"credence\", oracle = { kind = \"forest\", path = \"forest.json\" } }\n",
         "switch.admission.oracle.path", "larger than 256 MiB"),
    ] {
        let err = Spec::from_toml_str(&format!("{net}{extra}")).unwrap().validate(&dir).unwrap_err();
        assert_eq!(err.key(), key, "{err}");
        assert!(err.to_string().contains(words), "{err}");
    }
    std::fs::remove_dir_all(&dir).ok();
}
