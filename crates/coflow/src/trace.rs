//! The coflow-benchmark trace format (FB2010-1Hr-150-0 and traces written like it).
//!
//! This is the first stage of the inter-coflow pipeline: text in, a validated [`Trace`] out,
//! which [`crate::inter`] and [`crate::coflowsim`] then schedule. The format
//! (`/work/shared/data/coflow/README.md`, upstream `coflow/coflow-benchmark` README):
//!
//! ```text
//! line 1: <number of ports> <number of coflows>
//! line i: <coflow id> <arrival ms> <number of mappers> <mapper rack>... <number of reducers> <reducer rack>:<MB>...
//! ```
//!
//! A reducer's MB are split equally across the coflow's mappers: one flow per (mapper, reducer)
//! pair, of `MB * 2^20 / num_mappers` bytes (MB is MiB, as coflowsim reads it).
//!
//! Parsing is strict, and an error names the line, the field, the value and what was expected.
//! INVARIANT (of every `Trace` this module returns): every rack index is below `num_ports`; no
//! coflow lists a rack twice on the same side; every coflow has at least one mapper and one
//! reducer; every reducer's MB is finite and positive; coflow ids are distinct. A count field
//! is checked against the tokens left on its line before anything is allocated for it, so a
//! huge count cannot make the parser allocate.

use std::path::{Path, PathBuf};

/// Bytes in the trace's "MB" (a MiB, as coflowsim reads it).
pub const BYTES_PER_MB: f64 = 1_048_576.0;

/// A parsed coflow trace: a fabric of `num_ports` ports and the coflows that arrive on it.
#[derive(Clone, Debug, PartialEq)]
pub struct Trace {
    /// Ports (racks) of the non-blocking fabric; every rack index is below this.
    pub num_ports: u32,
    /// The coflows in file order (the FB2010 trace is sorted by arrival).
    pub coflows: Vec<CoflowSpec>,
}

/// One coflow (a single-stage shuffle) as the trace describes it.
#[derive(Clone, Debug, PartialEq)]
pub struct CoflowSpec {
    /// The id in the trace's first column.
    pub id: u64,
    /// Arrival time in milliseconds.
    pub arrival_ms: u64,
    /// Racks of the mappers (senders), in trace order, distinct.
    pub mappers: Vec<u32>,
    /// The reducers (receivers), in trace order, on distinct racks.
    pub reducers: Vec<ReducerSpec>,
}

/// One reducer of a coflow: where it is and how much it receives in total.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct ReducerSpec {
    /// Its rack (port).
    pub rack: u32,
    /// Total MB (MiB) it receives, split equally across the coflow's mappers.
    pub mb: f64,
}

/// One flow of a coflow: a (mapper, reducer) pair.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct FlowSpec {
    /// Sending port (the mapper's rack).
    pub src: u32,
    /// Receiving port (the reducer's rack).
    pub dst: u32,
    /// Size in bytes.
    pub bytes: f64,
}

impl CoflowSpec {
    /// Number of flows: mappers times reducers.
    pub fn num_flows(&self) -> usize {
        self.mappers.len() * self.reducers.len()
    }

    /// Total bytes the coflow moves.
    pub fn total_bytes(&self) -> f64 {
        self.reducers.iter().map(|r| r.mb * BYTES_PER_MB).sum()
    }

    /// The flows, reducer by reducer and, within a reducer, in mapper order.
    pub fn flows(&self) -> impl Iterator<Item = FlowSpec> + '_ {
        let m = self.mappers.len() as f64;
        self.reducers.iter().flat_map(move |r| {
            let bytes = r.mb * BYTES_PER_MB / m;
            self.mappers.iter().map(move |&src| FlowSpec { src, dst: r.rack, bytes })
        })
    }
}

/// Why a trace was rejected.
#[derive(Debug, thiserror::Error)]
pub enum TraceError {
    /// The file could not be read.
    #[error("cannot read {path}: {source}")]
    Io {
        /// The path that failed.
        path: PathBuf,
        /// The OS error.
        source: std::io::Error,
    },
    /// A field is present but its value is wrong.
    #[error("line {line}: {field} is {value:?}, expected {expected}")]
    Field {
        /// 1-based line number.
        line: usize,
        /// Which field, e.g. "number of mappers" or "rack of reducer 3".
        field: String,
        /// The text found.
        value: String,
        /// What would have been accepted.
        expected: String,
    },
    /// The path is no regular file (a folder, a FIFO, a device), or too large to be a trace.
    #[error("{path}: {reason}")]
    NotATrace {
        /// The path given.
        path: PathBuf,
        /// Why it was not read.
        reason: String,
    },
    /// The line ended before a field.
    #[error("line {line}: {field} is missing (the line ends early), expected {expected}")]
    Missing {
        /// 1-based line number.
        line: usize,
        /// The field that is absent.
        field: String,
        /// What should have been there.
        expected: String,
    },
    /// A line has tokens after its last reducer.
    #[error("line {line}: unexpected field {value:?} after the last reducer")]
    Trailing {
        /// 1-based line number.
        line: usize,
        /// The first extra token.
        value: String,
    },
    /// The header's coflow count disagrees with the number of coflow lines.
    #[error("the header announces {announced} coflows but the file has {found} coflow lines")]
    CoflowCount {
        /// The count on line 1.
        announced: usize,
        /// Non-empty lines after line 1.
        found: usize,
    },
}

/// The tokens of one line, with the line number for errors.
struct Line<'a> {
    line: usize,
    tokens: Vec<&'a str>,
    next: usize,
}

impl<'a> Line<'a> {
    fn new(line: usize, text: &'a str) -> Self {
        Line { line, tokens: text.split_whitespace().collect(), next: 0 }
    }

    fn remaining(&self) -> usize {
        self.tokens.len() - self.next
    }

    fn take(&mut self, field: &dyn Fn() -> String, expected: &str) -> Result<&'a str, TraceError> {
        match self.tokens.get(self.next) {
            Some(t) => {
                self.next += 1;
                Ok(t)
            }
            None => Err(TraceError::Missing {
                line: self.line,
                field: field(),
                expected: expected.to_string(),
            }),
        }
    }

    fn field_error(&self, field: String, value: &str, expected: String) -> TraceError {
        TraceError::Field { line: self.line, field, value: value.to_string(), expected }
    }

    /// An unsigned integer field no larger than `max`.
    fn uint(&mut self, field: &dyn Fn() -> String, max: u64, expected: &str) -> Result<u64, TraceError> {
        let tok = self.take(field, expected)?;
        match tok.parse::<u64>() {
            Ok(v) if v <= max => Ok(v),
            _ => Err(self.field_error(field(), tok, expected.to_string())),
        }
    }

    /// A count field whose items take `per_item` tokens each, plus `after` tokens that must
    /// still follow; checked before anything is allocated for it.
    fn count(&mut self, field: &str, per_item: usize, after: usize) -> Result<usize, TraceError> {
        let f = || field.to_string();
        let v = self.uint(&f, u64::MAX, "a positive integer")? as usize;
        if v == 0 {
            return Err(self.field_error(field.to_string(), "0", "a positive integer".into()));
        }
        let room = self.remaining().saturating_sub(after) / per_item;
        if v > room {
            return Err(self.field_error(
                field.to_string(),
                &v.to_string(),
                format!("at most {room}, the number of fields left on the line for it"),
            ));
        }
        Ok(v)
    }

    fn rack(&self, field: String, tok: &str, num_ports: u32) -> Result<u32, TraceError> {
        match tok.parse::<u32>() {
            Ok(v) if v < num_ports => Ok(v),
            _ => Err(self.field_error(field, tok, format!("a rack index below {num_ports}"))),
        }
    }
}

/// The most ports a trace may declare. The models keep dense per-port tables (and the parser
/// one flag per port per coflow line), so an absurd port count in a header must be refused, not
/// allocated; rack-level fabrics have hundreds (FB2010: 150).
pub const MAX_PORTS: u32 = 65_536;
/// The most coflows x ports a trace may have: the idealised model keeps each coflow's load on
/// each port's two directions (16 bytes per cell, 512 MiB at this bound; FB2010 has 78,900).
pub const MAX_COFLOW_PORT_CELLS: u64 = 1 << 25;
/// The latest arrival a trace may give, in ms: 1e6 s, the project's bound on any time point
/// (README, "Validation and arithmetic"); later, f64 seconds lose sub-microsecond resolution.
pub const MAX_ARRIVAL_MS: u64 = 1_000_000_000;
/// The fewest MB (MiB) a reducer may receive: about one byte.
pub const MIN_REDUCER_MB: f64 = 1e-6;
/// The most MB (MiB) a reducer may receive: 1 TiB (FB2010's largest: 232,145). coflowsim's Java
/// `long` byte counts then hold any coflow's total (2^16 reducers x 2^40 B < 2^63).
pub const MAX_REDUCER_MB: f64 = 1e6;
/// The largest file read as a trace (FB2010 is 138 KB): a bigger one is not read into memory.
pub const MAX_TRACE_BYTES: u64 = 1 << 30;

impl Trace {
    /// Parses a trace from its text. See the module doc for the format and the checks.
    pub fn parse(text: &str) -> Result<Trace, TraceError> {
        let mut lines = text.lines().enumerate().map(|(i, l)| (i + 1, l));
        let (n, header) = lines.next().unwrap_or((1, ""));
        let mut h = Line::new(n, header);
        let num_ports = h.uint(&|| "number of ports".into(), u64::from(MAX_PORTS), "a positive integer up to 65536")?;
        if num_ports == 0 {
            return Err(h.field_error("number of ports".into(), "0", "a positive integer".into()));
        }
        let num_ports = num_ports as u32;
        let announced = h.uint(&|| "number of coflows".into(), u64::MAX, "an integer")? as usize;
        if let Some(t) = h.tokens.get(h.next) {
            return Err(TraceError::Trailing { line: n, value: t.to_string() });
        }
        let mut coflows = Vec::new();
        let mut ids = std::collections::HashSet::new();
        let mut found = 0usize;
        for (n, text) in lines {
            if text.trim().is_empty() {
                continue;
            }
            found += 1;
            if found > announced {
                // Keep counting, so the error says how many lines there are.
                continue;
            }
            let c = Self::parse_coflow(n, text, num_ports)?;
            if !ids.insert(c.id) {
                return Err(TraceError::Field {
                    line: n,
                    field: "coflow id".into(),
                    value: c.id.to_string(),
                    expected: "an id not used by an earlier coflow".into(),
                });
            }
            coflows.push(c);
        }
        if found != announced {
            return Err(TraceError::CoflowCount { announced, found });
        }
        if (coflows.len() as u64).saturating_mul(u64::from(num_ports)) > MAX_COFLOW_PORT_CELLS {
            return Err(TraceError::Field {
                line: 1,
                field: "number of ports".into(),
                value: num_ports.to_string(),
                expected: format!(
                    "at most {} coflows x ports in all (this trace has {} coflows): split the trace or use fewer ports",
                    MAX_COFLOW_PORT_CELLS,
                    coflows.len()
                ),
            });
        }
        Ok(Trace { num_ports, coflows })
    }

    fn parse_coflow(n: usize, text: &str, num_ports: u32) -> Result<CoflowSpec, TraceError> {
        let mut l = Line::new(n, text);
        let id = l.uint(&|| "coflow id".into(), u64::MAX, "an unsigned integer")?;
        let arrival_ms = l.uint(
            &|| "arrival time (ms)".into(),
            MAX_ARRIVAL_MS,
            "an unsigned integer up to 1000000000 (1e6 s)",
        )?;
        // At least two tokens follow the mappers: the reducer count and one reducer.
        let num_mappers = l.count("number of mappers", 1, 2)?;
        let mut mappers = Vec::with_capacity(num_mappers);
        let mut seen = vec![false; num_ports as usize];
        for i in 0..num_mappers {
            let tok = l.take(&|| format!("rack of mapper {i}"), "a rack index")?;
            let rack = l.rack(format!("rack of mapper {i}"), tok, num_ports)?;
            if std::mem::replace(&mut seen[rack as usize], true) {
                return Err(l.field_error(
                    format!("rack of mapper {i}"),
                    tok,
                    "a rack not listed by an earlier mapper of this coflow".into(),
                ));
            }
            mappers.push(rack);
        }
        let num_reducers = l.count("number of reducers", 1, 0)?;
        let mut reducers = Vec::with_capacity(num_reducers);
        seen.iter_mut().for_each(|s| *s = false);
        for i in 0..num_reducers {
            let expected = "<rack>:<MB>";
            let tok = l.take(&|| format!("reducer {i}"), expected)?;
            let Some((rack_text, mb_text)) = tok.split_once(':') else {
                return Err(l.field_error(format!("reducer {i}"), tok, expected.into()));
            };
            let rack = l.rack(format!("rack of reducer {i}"), rack_text, num_ports)?;
            if std::mem::replace(&mut seen[rack as usize], true) {
                return Err(l.field_error(
                    format!("rack of reducer {i}"),
                    rack_text,
                    "a rack not listed by an earlier reducer of this coflow".into(),
                ));
            }
            let mb = match mb_text.parse::<f64>() {
                Ok(v) if (MIN_REDUCER_MB..=MAX_REDUCER_MB).contains(&v) => v,
                _ => {
                    return Err(l.field_error(
                        format!("MB of reducer {i}"),
                        mb_text,
                        "a finite number from 0.000001 to 1000000 (1 TiB)".into(),
                    ))
                }
            };
            reducers.push(ReducerSpec { rack, mb });
        }
        if let Some(t) = l.tokens.get(l.next) {
            return Err(TraceError::Trailing { line: n, value: t.to_string() });
        }
        Ok(CoflowSpec { id, arrival_ms, mappers, reducers })
    }

    /// Reads and parses a trace file (see [`read_text`]).
    pub fn from_path(path: impl AsRef<Path>) -> Result<Trace, TraceError> {
        Trace::parse(&read_text(path.as_ref())?)
    }

    /// The first `n` coflows (all of them if there are fewer), on the same fabric.
    pub fn prefix(&self, n: usize) -> Trace {
        Trace { num_ports: self.num_ports, coflows: self.coflows[..n.min(self.coflows.len())].to_vec() }
    }

    /// Total number of flows over all coflows.
    pub fn num_flows(&self) -> usize {
        self.coflows.iter().map(CoflowSpec::num_flows).sum()
    }
}

/// Reads a regular file of at most [`MAX_TRACE_BYTES`] as UTF-8 text
/// ([`sim::textfile::read_text_file`]: a folder, a FIFO or a device is refused before it is
/// opened, and a file is read only up to the bound).
pub fn read_text(path: &Path) -> Result<String, TraceError> {
    use sim::textfile::{read_text_file, TextFileError};
    let not = |reason: String| TraceError::NotATrace { path: path.to_path_buf(), reason };
    read_text_file(path, MAX_TRACE_BYTES).map_err(|e| match e {
        TextFileError::Folder => not("is a folder, not a trace file; give the file's path".into()),
        TextFileError::NotRegular => not("not a regular file (a FIFO, device or socket); give a trace file".into()),
        TextFileError::TooLarge => not(format!("larger than {MAX_TRACE_BYTES} bytes, too large for a coflow trace")),
        TextFileError::NotUtf8 { valid_up_to } => {
            not(format!("not UTF-8 text (byte {valid_up_to} is invalid): not a coflow trace"))
        }
        TextFileError::Io(source) => TraceError::Io { path: path.to_path_buf(), source },
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    const SMALL: &str = "4 2\n1 0 1 2 1 3:1.0\n2 10 2 0 1 2 2:4.0 3:2.0\n";

    #[test]
    fn parses_small_trace_and_splits_reducer_bytes_across_mappers() {
        let t = Trace::parse(SMALL).unwrap();
        assert_eq!(t.num_ports, 4);
        assert_eq!(t.coflows.len(), 2);
        let c = &t.coflows[1];
        assert_eq!((c.id, c.arrival_ms, c.mappers.clone()), (2, 10, vec![0, 1]));
        let flows: Vec<_> = c.flows().collect();
        assert_eq!(flows.len(), 4);
        assert_eq!(flows[0], FlowSpec { src: 0, dst: 2, bytes: 2.0 * BYTES_PER_MB });
        assert_eq!(flows[3], FlowSpec { src: 1, dst: 3, bytes: 1.0 * BYTES_PER_MB });
        assert_eq!(c.total_bytes(), 6.0 * BYTES_PER_MB);
        assert_eq!(t.num_flows(), 5);
    }

    fn err(text: &str) -> String {
        Trace::parse(text).unwrap_err().to_string()
    }

    #[test]
    fn errors_name_line_field_value_and_expectation() {
        assert_eq!(
            err("4 1\n1 0 1 9 1 3:1.0\n"),
            "line 2: rack of mapper 0 is \"9\", expected a rack index below 4"
        );
        assert_eq!(
            err("4 1\n1 x 1 2 1 3:1.0\n"),
            "line 2: arrival time (ms) is \"x\", expected an unsigned integer up to 1000000000 (1e6 s)"
        );
        assert_eq!(
            err("4 1\n1 0 1 2 1 3:-1\n"),
            "line 2: MB of reducer 0 is \"-1\", expected a finite number from 0.000001 to 1000000 (1 TiB)"
        );
        assert_eq!(err("4 1\n1 0 1 2 1 3\n"), "line 2: reducer 0 is \"3\", expected <rack>:<MB>");
        assert!(err("4 1\n1 0 2 2 2 1 3:1.0\n").contains("rack of mapper 1 is \"2\""));
        assert!(err("4 1\n1 0 1 2 2 3:1 3:1\n").contains("rack of reducer 1 is \"3\""));
        assert!(err("4 2\n1 0 1 2 1 3:1\n1 5 1 2 1 3:1\n").contains("line 3: coflow id"));
        assert_eq!(
            err("4 3\n1 0 1 2 1 3:1.0\n"),
            "the header announces 3 coflows but the file has 1 coflow lines"
        );
        assert!(err("4 1\n1 0 1 2 1 3:1.0 7\n").contains("unexpected field \"7\""));
        assert!(err("0 1\n").contains("number of ports"));
        assert!(err("").contains("number of ports is missing"));
    }

    #[test]
    fn huge_count_is_rejected_before_allocation() {
        let e = err("4 1\n1 0 18446744073709551615 2 1 3:1.0\n");
        assert_eq!(
            e,
            "line 2: number of mappers is \"18446744073709551615\", expected at most 1, \
             the number of fields left on the line for it"
        );
        assert!(err("4 1\n1 0 1 2 99999999999 3:1.0\n").contains("number of reducers"));
        assert!(err("4 1\n1 0 0 1 3:1.0\n").contains("number of mappers is \"0\""));
    }

    #[test]
    fn blank_trailing_lines_are_allowed() {
        assert_eq!(Trace::parse(&format!("{SMALL}\n\n")).unwrap().coflows.len(), 2);
    }
}
