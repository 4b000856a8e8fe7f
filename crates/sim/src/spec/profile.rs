//! Model profiles: named sets of defaults that sit beneath a scenario's own keys (a table
//! naming another `policy`, or a transport of another `kind`, takes only its own keys).

#[allow(unused_imports)]
use super::*;

/// A named set of defaults for keys a scenario leaves out.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Profile {
    /// slacknet's own defaults (as documented on each key).
    #[default]
    Default,
    /// Match vanilla ns-3.44's semantics (`data/profiles/ns3_compat.toml` lists and explains
    /// every value): handshake, IW 10, 1400 B segments, 54 B headers, 10 ms minimum RTO,
    /// no delayed ACK, ECN marking at NICs, static 350 KB per-port buffers.
    Ns3Compat,
}

impl Profile {
    /// All profile names, for error messages.
    pub const NAMES: &'static [&'static str] = &["default", "ns3_compat"];
}

/// The defaults a profile applies, as a partial scenario tree (JSON object).
pub fn profile_defaults(p: Profile) -> serde_json::Value {
    match p {
        Profile::Default => serde_json::Value::Object(Default::default()),
        Profile::Ns3Compat => {
            let t: toml::Value = toml::from_str(include_str!("../../data/profiles/ns3_compat.toml"))
                .expect("the built-in profile parses");
            serde_json::to_value(t).expect("TOML converts to JSON")
        }
    }
}

/// Put `defaults` beneath `user`: tables merge recursively, anything else the user set wins. A
/// table naming another `policy` than the default's (an admission policy) replaces it whole:
/// one policy's keys mean nothing to another.
fn merge_beneath(user: &mut serde_json::Value, defaults: &serde_json::Value) {
    if let (Some(u), Some(d)) = (user.as_object_mut(), defaults.as_object()) {
        if u.get("policy").is_some_and(|p| Some(p) != d.get("policy")) {
            return;
        }
        for (k, dv) in d {
            match u.get_mut(k) {
                Some(uv) => merge_beneath(uv, dv),
                None => {
                    u.insert(k.clone(), dv.clone());
                }
            }
        }
    }
}

/// If the tree names a non-default profile, merge its defaults in. Errors name the key.
pub(super) fn apply_profile(tree: &mut serde_json::Value) -> Result<bool, SpecError> {
    let Some(p) = tree.get("profile") else { return Ok(false) };
    let profile: Profile = serde_json::from_value(p.clone()).map_err(|_| {
        SpecError::invalid("profile", p, format!("unknown profile; expected one of {}", Profile::NAMES.join(", ")))
    })?;
    if profile == Profile::Default {
        return Ok(false);
    }
    let mut defaults = profile_defaults(profile);
    // A transport of another kind than the profile's takes only the keys its kind has (a
    // UDP scenario under ns3_compat gets the segment size but no TCP timers).
    let user_kind = tree.get("transport").and_then(|t| t.get("kind")).and_then(|k| k.as_str()).map(str::to_owned);
    if let (Some(kind), Some(dt)) = (user_kind, defaults.get_mut("transport").and_then(|t| t.as_object_mut())) {
        if dt.get("kind").and_then(|k| k.as_str()) != Some(kind.as_str()) {
            let keys = TransportSpec::keys_of(&kind).unwrap_or_default();
            dt.retain(|k, _| keys.iter().any(|x| x == k) && k != "kind");
        }
    }
    merge_beneath(tree, &defaults);
    Ok(true)
}
