//! Reading scenarios: TOML and JSON into a [`Spec`], with the profile merged beneath the keys,
//! and errors that name the exact key (serde loses the path inside tagged tables, so they are
//! re-read variant by variant).

#[allow(unused_imports)]
use super::*;
#[allow(unused_imports)]
use super::profile::apply_profile;

impl Spec {
    /// Parse TOML. Errors name the key path (and the line, when the TOML parser knows it).
    pub fn from_toml_str(text: &str) -> Result<Spec, SpecError> {
        if let Ok(mut tree) = toml::from_str::<toml::Value>(text)
            .map_err(|_| ())
            .and_then(|v| serde_json::to_value(v).map_err(|_| ()))
        {
            check_tagged_keys(&tree)?;
            // A queue preset is expanded on the JSON path, which merges the profile after
            // taking the preset out (see `take_queue_preset`).
            if queues_not_a_list(&tree) {
                return Spec::from_json_str(&tree.to_string());
            }
            if apply_profile(&mut tree)? {
                return Spec::from_json_str(&tree.to_string());
            }
        }
        let de = toml::Deserializer::new(text);
        serde_path_to_error::deserialize(de).map_err(|e| {
            let key = path_string(e.path());
            // The TOML parser's own errors (an integer beyond i64) come before any key is read:
            // name the key from where the text says it is.
            if let (true, Some(span)) = (key == "<root>", e.inner().span()) {
                if let Some(located) = located_parse_error(text, span, e.inner().message()) {
                    return located;
                }
            }
            let refined = toml::from_str::<toml::Value>(text)
                .ok()
                .and_then(|v| serde_json::to_value(v).ok())
                .and_then(|root| refine_tagged_error(&root, &key));
            let line = e.inner().span().map(|span| line_of(text, span.start));
            match (refined, line) {
                // The transport table is tagged: its span is the table's; the key's own line
                // is found in it by name (the table's line if it is not there).
                (Some(SpecError::Parse { key, message }), Some(line)) if key.starts_with("transport") => {
                    let line = key_line(text, line, &key);
                    return SpecError::Parse { key, message: format!("{message} (line {line})") };
                }
                (Some(r), _) => return r,
                _ => {}
            }
            let message = e.inner().message().to_string();
            let message = match e.inner().span() {
                Some(span) if !key.starts_with("topology") && !key.starts_with("workload") => {
                    format!("{message} (line {})", line_of(text, span.start))
                }
                _ => message,
            };
            SpecError::Parse { key, message }
        })
    }

    /// Parse JSON (what the Python front end sends).
    pub fn from_json_str(text: &str) -> Result<Spec, SpecError> {
        if let Ok(mut tree) = serde_json::from_str::<serde_json::Value>(text) {
            check_tagged_keys(&tree)?;
            let preset = take_queue_preset(&mut tree)?;
            if apply_profile(&mut tree)? || preset.is_some() {
                let mut spec = Spec::from_json_plain(&tree.to_string())?;
                if let Some((preset, admission_given)) = preset {
                    preset.expand(&mut spec, admission_given)?;
                }
                return Ok(spec);
            }
        }
        Spec::from_json_plain(text)
    }

    fn from_json_plain(text: &str) -> Result<Spec, SpecError> {
        let de = &mut serde_json::Deserializer::from_str(text);
        let spec = serde_path_to_error::deserialize(&mut *de).map_err(|e| {
            let key = path_string(e.path());
            serde_json::from_str::<serde_json::Value>(text)
                .ok()
                .and_then(|root| refine_tagged_error(&root, &key))
                .unwrap_or_else(|| SpecError::Parse { key, message: e.inner().to_string() })
        })?;
        // Text after the scenario's object is an error (serde_json::from_str checks it too):
        // accepted, it had the scenario read without its profile, which is merged only into
        // text that parses whole.
        de.end().map_err(|e| SpecError::Parse { key: "<root>".into(), message: e.to_string() })?;
        Ok(spec)
    }

    /// Serialize to JSON, with every default filled in.
    pub fn to_json(&self) -> String {
        serde_json::to_string_pretty(self).expect("a Spec always serializes")
    }
}

/// Whether `switch.queues` is given, but not as a list: a preset name, known or not, or a
/// value of the wrong type (both handled by [`take_queue_preset`]).
fn queues_not_a_list(root: &serde_json::Value) -> bool {
    root.get("switch").and_then(|s| s.get("queues")).is_some_and(|q| !q.is_array())
}

/// `switch.queues` given as a preset name: the preset, taken out of the tree so that serde
/// reads the rest (its expansion, [`QueuePreset::expand`], needs the transports and buffer
/// read first), and whether the scenario itself sets `switch.admission`. Call before the
/// profile is merged, so that a profile's admission policy is not taken for the scenario's.
/// An unknown name, or a value that is neither a list nor a string, is named with the presets.
fn take_queue_preset(root: &mut serde_json::Value) -> Result<Option<(QueuePreset, bool)>, SpecError> {
    let Some(switch) = root.get_mut("switch").and_then(|s| s.as_object_mut()) else { return Ok(None) };
    let Some(queues) = switch.get("queues") else { return Ok(None) };
    let names = QueuePreset::NAMES.iter().map(|n| format!("{n:?}")).collect::<Vec<_>>().join(", ");
    let list = "a list of queue tables ([{ ecn_threshold_bytes, cap_bytes, dt_alpha }, ...])";
    let preset = match queues {
        serde_json::Value::Array(_) => return Ok(None),
        serde_json::Value::String(name) => QueuePreset::from_name(name).ok_or_else(|| {
            SpecError::invalid("switch.queues", queues, format!("unknown queue preset; give one of {names}, or {list}"))
        })?,
        other => {
            return Err(SpecError::invalid(
                "switch.queues",
                other,
                format!("must be {list} or a preset name: {names}"),
            ))
        }
    };
    let admission_given = switch.contains_key("admission");
    switch.remove("queues");
    Ok(Some((preset, admission_given)))
}

/// serde ignores every other key of an internally tagged enum's unit variant (`{ policy =
/// "dynamic_thresholds", alpha = 0.5 }` read as DT, and `alpha` silently dropped), so the tables
/// tagged by `policy` (`switch.admission`) and `kind` (its oracles, nested through `inner`) are
/// checked here against the keys their variant has, before serde reads them. Unknown policies
/// and kinds are left to serde, which names them.
fn check_tagged_keys(root: &serde_json::Value) -> Result<(), SpecError> {
    fn check(
        table: &serde_json::Value,
        at: &str,
        tag: &str,
        keys_of: fn(&str) -> Option<Vec<String>>,
    ) -> Result<(), SpecError> {
        let Some(obj) = table.as_object() else { return Ok(()) };
        let Some(name) = obj.get(tag).and_then(|t| t.as_str()) else { return Ok(()) };
        let Some(allowed) = keys_of(name) else { return Ok(()) };
        if let Some(unknown) = obj.keys().find(|k| *k != tag && !allowed.contains(k)) {
            let takes = if allowed.is_empty() {
                format!("{tag} = \"{name}\" takes no other keys")
            } else {
                let list: Vec<String> = allowed.iter().map(|k| format!("`{k}`")).collect();
                format!("{tag} = \"{name}\" takes only {}", list.join(", "))
            };
            let hint = if name == "dynamic_thresholds" && unknown.contains("alpha") {
                " (Dynamic Thresholds' alpha is set per queue: switch.queues[i].dt_alpha)"
            } else {
                ""
            };
            return Err(SpecError::invalid(format!("{at}.{unknown}"), &obj[unknown], format!("unknown key: {takes}{hint}")));
        }
        Ok(())
    }
    // A tagged table given as its tag's value (`admission = "lqd"`): serde says only "expected
    // internally tagged enum AdmissionSpec", naming neither the fix nor the TOML spelling.
    fn table(v: &serde_json::Value, at: &str, tag: &str, default: &str) -> Result<(), SpecError> {
        if v.is_object() {
            return Ok(());
        }
        let name = v.as_str().unwrap_or(default);
        let short = at.rsplit('.').next().unwrap_or(at);
        Err(SpecError::invalid(at, v, format!("must be a table, e.g. {short} = {{ {tag} = {name:?} }}")))
    }
    if let Some(t) = root.get("topology") {
        table(t, "topology", "kind", "leaf_spine")?;
    }
    if let Some(t) = root.get("transport") {
        table(t, "transport", "kind", "dctcp")?;
    }
    for (i, w) in root.get("workload").and_then(|w| w.as_array()).into_iter().flatten().enumerate() {
        if let Some(t) = w.get("transport") {
            table(t, &format!("workload[{i}].transport"), "kind", "dctcp")?;
        }
    }
    let Some(admission) = root.get("switch").and_then(|s| s.get("admission")) else { return Ok(()) };
    table(admission, "switch.admission", "policy", "dynamic_thresholds")?;
    check(admission, "switch.admission", "policy", AdmissionSpec::keys_of)?;
    let mut at = "switch.admission.oracle".to_string();
    let mut oracle = admission.get("oracle");
    while let Some(o) = oracle {
        table(o, &at, "kind", "always_accept")?;
        // serde names only `switch.admission` for what is wrong inside its oracle.
        const KINDS: &str = "\"forest\", \"always_accept\", \"always_drop\" or \"flip\"";
        let Some(kind) = o.get("kind") else {
            return Err(SpecError::invalid(format!("{at}.kind"), "<absent>", format!("an oracle needs a kind: {KINDS}")));
        };
        if kind.as_str().and_then(OracleSpec::keys_of).is_none() {
            return Err(SpecError::invalid(format!("{at}.kind"), kind, format!("unknown oracle kind; expected {KINDS}")));
        }
        check(o, &at, "kind", OracleSpec::keys_of)?;
        if kind == "flip" {
            for (key, what) in [
                ("inner", "the oracle whose answers are flipped, e.g. inner = { kind = \"forest\" }"),
                ("p", "the probability of flipping an answer, in [0, 1], e.g. p = 0.1"),
            ] {
                if o.get(key).is_none() {
                    return Err(SpecError::invalid(format!("{at}.{key}"), "<absent>", format!("kind = \"flip\" needs {key}: {what}")));
                }
            }
        }
        oracle = o.get("inner");
        at.push_str(".inner");
    }
    Ok(())
}

/// serde buffers internally tagged enums, so an error inside `topology` or `workload[i]`
/// loses its key path. Re-deserialize that table into the variant named by its `kind` to
/// name the exact key.
fn refine_tagged_error(root: &serde_json::Value, key: &str) -> Option<SpecError> {
    fn try_de<T: serde::de::DeserializeOwned>(
        v: serde_json::Value,
        prefix: &str,
    ) -> Option<SpecError> {
        serde_path_to_error::deserialize::<_, T>(v).err().map(|e| {
            let inner = e.path().to_string();
            let key = if inner == "." { prefix.to_string() } else { format!("{prefix}.{inner}") };
            SpecError::Parse { key, message: e.inner().to_string() }
        })
    }
    let (section, sub) = if key == "topology" {
        ("topology", root.get("topology")?)
    } else if key == "transport" {
        ("transport", root.get("transport")?)
    } else {
        let i: usize = key.strip_prefix("workload[")?.strip_suffix(']')?.parse().ok()?;
        ("workload", root.get("workload")?.get(i)?)
    };
    let mut table = sub.as_object()?.clone();
    let Some(kind) = table.remove("kind") else {
        return (section == "transport").then(|| {
            SpecError::invalid(
                "transport.kind",
                "<absent>",
                format!("the transport section needs a kind: one of {}", TransportSpec::KINDS.join(", ")),
            )
        });
    };
    let kind = kind.as_str()?.to_string();
    let v = serde_json::Value::Object(table);
    match (section, kind.as_str()) {
        ("topology", "leaf_spine") => try_de::<LeafSpine>(v, key),
        ("topology", "fat_tree") => try_de::<FatTree>(v, key),
        ("transport", "dctcp") => try_de::<DctcpSpec>(v, key),
        ("transport", "newreno") => try_de::<NewRenoSpec>(v, key),
        ("transport", "power_tcp") => try_de::<PowerTcpSpec>(v, key),
        ("transport", "udp") => try_de::<UdpSpec>(v, key),
        ("transport", "pfabric") => try_de::<PfabricSpec>(v, key),
        ("transport", "mlt") => try_de::<MltSpec>(v, key),
        ("transport", "atp") => try_de::<AtpSpec>(v, key),
        ("transport", "expresspass" | "aeolus") => try_de::<ExpressPassSpec>(v, key),
        ("transport", other) => Some(SpecError::invalid(
            format!("{key}.kind"),
            format!("{other:?}"),
            format!("unknown transport kind; expected one of {}", TransportSpec::KINDS.join(", ")),
        )),
        ("workload", "poisson") => try_de::<Poisson>(v, key),
        ("workload", "incast") => try_de::<Incast>(v, key),
        ("workload", "flow_list") => try_de::<FlowList>(v, key),
        ("workload", "flows") => try_de::<Flows>(v, key),
        ("workload", "closed_loop") => try_de::<ClosedLoopSpec>(v, key),
        ("workload", "barrier") => try_de::<BarrierSpec>(v, key),
        ("workload", "relay") => try_de::<RelaySpec>(v, key),
        ("workload", "approx_jobs") => try_de::<ApproxJobsSpec>(v, key),
        ("workload", "training") => try_de::<TrainingSpec>(v, key),
        ("topology", other) => Some(SpecError::invalid(
            format!("{key}.kind"),
            format!("{other:?}"),
            "unknown topology kind; expected \"leaf_spine\" or \"fat_tree\"",
        )),
        (_, other) => Some(SpecError::invalid(
            format!("{key}.kind"),
            format!("{other:?}"),
            "unknown workload kind; expected \"poisson\", \"incast\", \"flow_list\", \"flows\", \"closed_loop\", \"barrier\", \"relay\", \"approx_jobs\" or \"training\"",
        )),
    }
}

fn path_string(p: &serde_path_to_error::Path) -> String {
    let s = p.to_string();
    if s == "." || s.is_empty() {
        "<root>".into()
    } else {
        s
    }
}

/// The 1-based line of byte `at` of `text`. (Counting `text[..at].lines()` gave the line
/// before it when `at` starts a line, as a table's span does: `[transport]` on line 5 was
/// reported as line 4.)
fn line_of(text: &str, at: usize) -> usize {
    text.as_bytes()[..at.min(text.len())].iter().filter(|&&b| b == b'\n').count() + 1
}

/// The line of `key`'s last part written as `name = ...` in the table whose header (or inline
/// table) is on line `table_line`, up to the next table header; `table_line` if it is not there.
fn key_line(text: &str, table_line: usize, key: &str) -> usize {
    let name = key.rsplit('.').next().unwrap_or(key);
    for (i, line) in text.lines().enumerate().skip(table_line) {
        let t = line.trim_start();
        if t.starts_with('[') {
            break;
        }
        if t.strip_prefix(name).is_some_and(|rest| rest.trim_start().starts_with('=')) {
            return i + 1;
        }
    }
    table_line
}

/// A TOML parse error at `span` of `text` with the key it belongs to, read from the text: the
/// table headers above it (`[[workload]]` counted into `workload[i]`) and the `key =` of its
/// line. Best effort (`None` if no key is found): for the errors the parser reports before
/// serde sees a key, such as an integer beyond TOML's range.
fn located_parse_error(text: &str, span: std::ops::Range<usize>, message: &str) -> Option<SpecError> {
    let start = span.start.min(text.len());
    let before = text.get(..start)?;
    let line_no = before.lines().count().max(1);
    // The table the offending line belongs to.
    let mut arrays: Vec<(String, usize)> = Vec::new();
    let mut table = String::new();
    for line in before.lines() {
        let t = line.trim();
        let (name, is_array) = if let Some(rest) = t.strip_prefix("[[") {
            (rest.split("]]").next().unwrap_or("").trim(), true)
        } else if let Some(rest) = t.strip_prefix('[') {
            (rest.split(']').next().unwrap_or("").trim(), false)
        } else {
            continue;
        };
        // A line of a multi-line array (`[0, 3],`) is not a header.
        if name.is_empty() || name.starts_with(|c: char| c.is_ascii_digit() || c == '-') || name.contains(',') {
            continue;
        }
        if is_array {
            match arrays.iter_mut().find(|(n, _)| n == name) {
                Some((_, count)) => *count += 1,
                None => arrays.push((name.to_string(), 1)),
            }
        }
        // `[workload.transport]` after `[[workload]]` is the last entry's.
        let mut path = String::new();
        let mut prefix = String::new();
        for part in name.split('.').map(str::trim) {
            if !prefix.is_empty() {
                prefix.push('.');
                path.push('.');
            }
            prefix.push_str(part);
            path.push_str(part);
            if let Some((_, count)) = arrays.iter().find(|(n, _)| *n == prefix) {
                path.push_str(&format!("[{}]", count - 1));
            }
        }
        table = path;
    }
    // The key of the offending line, and the key right before the value when it sits inside
    // an inline table (`flows = [{ size_bytes = ... }]`).
    let line = before.rsplit('\n').next().unwrap_or(before);
    let bare = |k: &str| k.trim().trim_matches('"').to_string();
    let line_key = line.split_once('=').map(|(k, _)| bare(k)).filter(|k| !k.is_empty() && !k.contains(['{', '[', ',']))?;
    let inner = before.rsplit_once('=').map(|(k, _)| {
        let k = k.trim_end();
        // CORRECTNESS: past the whole character found, which may be more than one byte (a key
        // `"→k"` put `from` inside the arrow and the slice panicked).
        let from = k
            .char_indices()
            .rev()
            .find(|&(_, c)| !(c.is_alphanumeric() || c == '_' || c == '-' || c == '"'))
            .map_or(0, |(i, c)| i + c.len_utf8());
        bare(k.get(from..).unwrap_or(k))
    });
    let key = if table.is_empty() { line_key.clone() } else { format!("{table}.{line_key}") };
    // The span may cover only the value's first character: take the whole token.
    let value = text.get(start..)?.split(|c: char| c.is_whitespace() || ",]}#".contains(c)).next().unwrap_or("");
    let value = if value.is_empty() { text.get(span).unwrap_or("").trim() } else { value };
    let within = match inner.filter(|k| *k != line_key && !k.is_empty()) {
        Some(k) => format!(" (its {k})"),
        None => String::new(),
    };
    let message = message.trim_end();
    let fix = if message.contains("too large") {
        format!("; TOML integers are at most {} (2^63 - 1): give a smaller value", i64::MAX)
    } else {
        String::new()
    };
    Some(SpecError::invalid(key, value, format!("{message}{within}{fix} (line {line_no})")))
}
