//! What a run's timings depend on besides the code: the build profile, the
//! CPU engine's thread count, the CPU model, how loaded the machine was and
//! the engine's switches (meta.json `build_profile`, `cpu_threads`,
//! `machine.cpu`, `load_average_start`, `load_average_end`,
//! `engine_switches`), and the differences between two runs' that bear on
//! comparing their timings, which `specula compare` and `specula gate` warn
//! about (a debug baseline against a release run once read as "+49%").

use super::Run;
use serde::{Deserialize, Serialize};
use serde_json::{json, Value};
use std::collections::{BTreeMap, BTreeSet};
use std::ffi::OsString;
use std::fmt;

/// The profile this binary was built with: `debug` when debug assertions
/// are on (cargo's dev and test profiles), else `release`.
pub fn build_profile() -> &'static str {
    if cfg!(debug_assertions) {
        "debug"
    } else {
        "release"
    }
}

/// The 1-, 5- and 15-minute load averages now (Linux `/proc/loadavg`; `None` elsewhere).
pub fn load_average() -> Option<[f64; 3]> {
    parse_loadavg(&std::fs::read_to_string("/proc/loadavg").ok()?)
}

/// The three load averages at the start of a `/proc/loadavg` line.
pub fn parse_loadavg(text: &str) -> Option<[f64; 3]> {
    let mut it = text.split_whitespace().map(|w| w.parse::<f64>().ok());
    Some([it.next()??, it.next()??, it.next()??])
}

/// The `SPECULA_*` environment variables set as the run started (meta.json
/// `engine_switches`): the engine's switches (kernel forms, launch modes,
/// `SPECULA_CPU_KERNEL`, `SPECULA_LINEAR_WG`, ...), which change its
/// timings. The build's revision (`SPECULA_BUILD_REV`, read at compile
/// time) is recorded apart, as `git_rev`.
pub fn engine_switches() -> BTreeMap<String, String> {
    switches_in(std::env::vars_os())
}

/// The `SPECULA_*` variables of `vars` but `SPECULA_BUILD_REV` (names that
/// are not Unicode are not ours; values are kept lossily).
fn switches_in(vars: impl IntoIterator<Item = (OsString, OsString)>) -> BTreeMap<String, String> {
    vars.into_iter()
        .filter_map(|(k, v)| Some((k.into_string().ok()?, v.to_string_lossy().into_owned())))
        .filter(|(k, _)| k.starts_with("SPECULA_") && k != "SPECULA_BUILD_REV")
        .collect()
}

/// The line a run prints as it starts when switches are set
/// (`engine switches: SPECULA_A=1, SPECULA_B=x`), or none.
pub fn switches_line(switches: &BTreeMap<String, String>) -> Option<String> {
    let set: Vec<String> = switches.iter().map(|(k, v)| format!("{k}={v}")).collect();
    (!set.is_empty()).then(|| format!("engine switches: {}", set.join(", ")))
}

/// Switches that say where things are kept, not what runs: not compared.
const NOT_COMPARED_SWITCHES: [&str; 1] = ["SPECULA_KERNEL_CACHE"];

/// The switches set differently in `a` and `b` (unset on one side counts;
/// `SPECULA_KERNEL_CACHE` aside), as `NAME=value` / `NAME unset` pairs,
/// sorted by name.
pub fn switch_changes(
    a: &BTreeMap<String, String>,
    b: &BTreeMap<String, String>,
) -> Vec<(String, String)> {
    let side = |m: &BTreeMap<String, String>, k: &str| {
        m.get(k)
            .map_or_else(|| format!("{k} unset"), |v| format!("{k}={v}"))
    };
    let keys: BTreeSet<&String> = a.keys().chain(b.keys()).collect();
    keys.into_iter()
        .filter(|k| !NOT_COMPARED_SWITCHES.contains(&k.as_str()) && a.get(*k) != b.get(*k))
        .map(|k| (side(a, k), side(b, k)))
        .collect()
}

/// The fields of a meta.json compared here, each optional (older runs lack some).
#[derive(Debug, Default, Deserialize)]
struct Recorded {
    #[serde(default)]
    build_profile: Option<String>,
    #[serde(default)]
    cpu_threads: Option<usize>,
    #[serde(default)]
    machine: Option<RecordedMachine>,
    #[serde(default)]
    load_average_start: Option<[f64; 3]>,
    #[serde(default)]
    engine_switches: Option<BTreeMap<String, String>>,
}

#[derive(Debug, Default, Deserialize)]
struct RecordedMachine {
    #[serde(default)]
    cpu: Option<String>,
    #[serde(default)]
    cores: Option<usize>,
}

impl Recorded {
    fn of(meta: Option<&Value>) -> Recorded {
        meta.and_then(|m| serde_json::from_value(m.clone()).ok())
            .unwrap_or_default()
    }

    fn cpu(&self) -> Option<&str> {
        let cpu = self.machine.as_ref()?.cpu.as_deref()?;
        (cpu != "unknown" && !cpu.is_empty()).then_some(cpu)
    }

    /// The 1-minute load at the start, and whether it reached the core count.
    fn busy(&self) -> Option<(f64, bool)> {
        let load = self.load_average_start?[0];
        let cores = self.machine.as_ref()?.cores?;
        Some((load, load >= cores as f64))
    }
}

/// A setting two runs differ in that bears on comparing their timings (all
/// but `engine_switches` make them incomparable).
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Difference {
    /// The meta.json field: `build_profile`, `cpu_threads`, `machine.cpu`,
    /// `load_average_start` or `engine_switches`.
    pub field: &'static str,
    /// The first run's value, as meta.json records it.
    pub a: Value,
    /// The second run's value.
    pub b: Value,
    /// What it means, in words naming the runs as the command does.
    pub message: String,
}

impl fmt::Display for Difference {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.message)
    }
}

/// Where the runs `a` and `b` (called `names[0]` and `names[1]` in the
/// messages) differ in build profile, CPU threads, CPU model, in whether
/// the machine was saturated when they started (1-minute load average at or
/// above the core count in one and not the other), or in the engine
/// switches set (a change under test as much as the code: the gate still
/// judges timings across it). A field missing from either meta.json (older
/// runs) is not compared.
pub fn differences(a: &Run, b: &Run, names: [&str; 2]) -> Vec<Difference> {
    let (ra, rb) = (Recorded::of(a.meta.as_ref()), Recorded::of(b.meta.as_ref()));
    let [na, nb] = names;
    let mut out = Vec::new();
    if let (Some(pa), Some(pb)) = (&ra.build_profile, &rb.build_profile) {
        if pa != pb {
            out.push(Difference {
                field: "build_profile",
                a: json!(pa),
                b: json!(pb),
                message: format!("build profiles differ: {na} is a {pa} build, {nb} a {pb} build; their timings are not comparable"),
            });
        }
    }
    if let (Some(ta), Some(tb)) = (ra.cpu_threads, rb.cpu_threads) {
        if ta != tb {
            out.push(Difference {
                field: "cpu_threads",
                a: json!(ta),
                b: json!(tb),
                message: format!("CPU threads differ: {na} ran {ta}, {nb} ran {tb}; their timings are not comparable"),
            });
        }
    }
    if let (Some(ca), Some(cb)) = (ra.cpu(), rb.cpu()) {
        if ca != cb {
            out.push(Difference {
                field: "machine.cpu",
                a: json!(ca),
                b: json!(cb),
                message: format!("CPU models differ: {na} ran on {ca}, {nb} on {cb}; their timings are not comparable"),
            });
        }
    }
    if let (Some((la, busy_a)), Some((lb, busy_b))) = (ra.busy(), rb.busy()) {
        if busy_a != busy_b {
            let (busy, quiet, lbusy, lquiet) = if busy_a {
                (na, nb, la, lb)
            } else {
                (nb, na, lb, la)
            };
            out.push(Difference {
                field: "load_average_start",
                a: json!(ra.load_average_start),
                b: json!(rb.load_average_start),
                message: format!("{busy} started on a saturated machine (1-minute load average {lbusy:.2}, at least its core count) and {quiet} did not ({lquiet:.2}); their timings are not comparable"),
            });
        }
    }
    if let (Some(sa), Some(sb)) = (&ra.engine_switches, &rb.engine_switches) {
        let changes = switch_changes(sa, sb);
        if !changes.is_empty() {
            let list: Vec<String> = changes
                .iter()
                .map(|(x, y)| format!("{x} in {na}, {y} in {nb}"))
                .collect();
            out.push(Difference {
                field: "engine_switches",
                a: json!(sa),
                b: json!(sb),
                message: format!(
                    "engine switches differ: {}; the timings compare these settings too, not the code alone",
                    list.join("; ")
                ),
            });
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn run(meta: Value) -> Run {
        Run {
            dir: "r".into(),
            runs_path: "r/runs.csv".into(),
            header: Vec::new(),
            rows: Vec::new(),
            positions: Default::default(),
            has_positions: false,
            spans: Default::default(),
            meta: Some(meta),
        }
    }

    #[test]
    fn loadavg_lines_parse() {
        assert_eq!(
            parse_loadavg("2.51 2.07 2.00 3/110 13070\n"),
            Some([2.51, 2.07, 2.0])
        );
        assert_eq!(parse_loadavg("2.51 x"), None);
    }

    /// Regression: a debug baseline against a release run showed "+49%" without a word.
    #[test]
    fn a_debug_run_against_a_release_run_is_a_difference() {
        let a = run(json!({"build_profile": "debug", "cpu_threads": 1}));
        let b = run(json!({"build_profile": "release", "cpu_threads": 2}));
        let d = differences(&a, &b, ["baseline", "current"]);
        let fields: Vec<&str> = d.iter().map(|d| d.field).collect();
        assert_eq!(fields, ["build_profile", "cpu_threads"]);
        assert!(d[0].to_string().contains("baseline is a debug build"));
    }

    #[test]
    fn older_runs_without_the_fields_are_not_compared() {
        let a = run(json!({"machine": {"cpu": "unknown", "cores": 2}}));
        let b = run(json!({"build_profile": "release", "machine": {"cpu": "X", "cores": 2}}));
        assert!(differences(&a, &b, ["A", "B"]).is_empty());
    }

    #[test]
    fn only_specula_variables_are_switches_and_the_build_revision_is_not_one() {
        let vars = [
            ("SPECULA_LINEAR_WG", "0"),
            ("SPECULA_BUILD_REV", "abc"),
            ("PATH", "/bin"),
            ("XSPECULA_Y", "1"),
        ]
        .map(|(k, v)| (OsString::from(k), OsString::from(v)));
        let got = switches_in(vars);
        assert_eq!(got.len(), 1);
        assert_eq!(got["SPECULA_LINEAR_WG"], "0");
    }

    #[test]
    fn set_switches_make_one_line_and_none_make_none() {
        let mut m = BTreeMap::new();
        assert_eq!(switches_line(&m), None);
        m.insert("SPECULA_PDL".to_string(), "0".to_string());
        m.insert("SPECULA_FORK".to_string(), "0".to_string());
        assert_eq!(
            switches_line(&m).unwrap(),
            "engine switches: SPECULA_FORK=0, SPECULA_PDL=0"
        );
    }

    #[test]
    fn runs_with_different_switches_differ_but_not_in_where_the_kernels_are_cached() {
        let a = run(
            json!({"engine_switches": {"SPECULA_LINEAR_WG": "0", "SPECULA_KERNEL_CACHE": "/a"}}),
        );
        let b = run(json!({"engine_switches": {"SPECULA_PDL": "0", "SPECULA_KERNEL_CACHE": "/b"}}));
        let d = differences(&a, &b, ["A", "B"]);
        assert_eq!(d.len(), 1);
        assert_eq!(d[0].field, "engine_switches");
        assert_eq!(
            d[0].message,
            "engine switches differ: SPECULA_LINEAR_WG=0 in A, SPECULA_LINEAR_WG unset in B; \
             SPECULA_PDL unset in A, SPECULA_PDL=0 in B; the timings compare these settings \
             too, not the code alone"
        );
        let c = run(
            json!({"engine_switches": {"SPECULA_LINEAR_WG": "0", "SPECULA_KERNEL_CACHE": "/c"}}),
        );
        assert!(differences(&a, &c, ["A", "C"]).is_empty());
        // A run from before the field: not compared.
        assert!(differences(&a, &run(json!({})), ["A", "O"]).is_empty());
    }

    #[test]
    fn a_saturated_start_against_a_quiet_one_is_a_difference() {
        let m = |load: f64| json!({"machine": {"cpu": "X", "cores": 2}, "load_average_start": [load, 1.0, 1.0]});
        let d = differences(&run(m(2.5)), &run(m(0.3)), ["A", "B"]);
        assert_eq!(d.len(), 1);
        assert!(d[0].message.starts_with("A started on a saturated machine"));
        assert!(differences(&run(m(1.2)), &run(m(0.3)), ["A", "B"]).is_empty());
    }
}
