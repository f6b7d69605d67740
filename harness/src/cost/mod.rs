//! `specula cost`: deterministic cost of the CPU engine as instruction
//! counts (docs/DESIGN.md 10.3). A short sweep (a few steps of each row of
//! a spec) runs under valgrind's callgrind with one kernel thread; the
//! probe's span recorder ([`recorder`]) dumps callgrind's counters at span
//! boundaries through client requests ([`client_request`]); the dumps
//! ([`dumps`]) are summed into `costs.csv` of a run folder ([`table`]),
//! which `specula gate` judges within a small tolerance. The counts do not
//! depend on the machine's load, so they catch a slower target forward and
//! a slower verify alike on a shared runner.

pub mod client_request;
pub mod dumps;
pub mod recorder;
pub mod table;

use crate::run_folder::{Run, TestHooks};
use crate::Fault;
use serde::{Deserialize, Serialize};
use std::path::{Path, PathBuf};
use std::process::Command;

/// The settings file beside costs.csv.
pub const COSTS_JSON: &str = "costs.json";

/// Why costs could not be measured or read.
#[derive(Debug, thiserror::Error)]
pub enum CostError {
    /// valgrind is missing, or the probe failed.
    #[error("{0}")]
    Probe(String),
    /// A costs file is unusable.
    #[error("{0}")]
    Input(String),
    /// A file could not be read or written.
    #[error("{}: {message}", path.display())]
    Io {
        /// The file.
        path: PathBuf,
        /// The error.
        message: String,
    },
}

impl CostError {
    /// An [`CostError::Io`] of `path`.
    pub fn io(path: &Path, e: std::io::Error) -> CostError {
        CostError::Io {
            path: path.to_path_buf(),
            message: e.to_string(),
        }
    }

    /// Whose fault it is.
    pub fn fault(&self) -> Fault {
        match self {
            CostError::Input(_) => Fault::Input,
            CostError::Probe(_) | CostError::Io { .. } => Fault::Failed,
        }
    }
}

/// How the counts were made (costs.json): counts compare only under equal settings.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct CostSettings {
    /// `valgrind --version`.
    pub valgrind: String,
    /// `debug` or `release`: the build profile of the counted binary.
    pub profile: String,
    /// Prompts per row (the spec's prompt sets cut to this sample).
    pub sample: usize,
    /// Tokens per prompt at most.
    pub max_new_tokens: usize,
    /// Regressions planted on purpose (absent normally).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub test_hooks: Option<TestHooks>,
}

impl CostSettings {
    /// Where `self` and `other` differ, in words (empty: comparable).
    pub fn differences(&self, other: &CostSettings) -> Vec<String> {
        let mut d = Vec::new();
        if self.valgrind != other.valgrind {
            d.push(format!("valgrind {} vs {}", self.valgrind, other.valgrind));
        }
        if self.profile != other.profile {
            d.push(format!(
                "build profile {} vs {}",
                self.profile, other.profile
            ));
        }
        if (self.sample, self.max_new_tokens) != (other.sample, other.max_new_tokens) {
            d.push(format!(
                "{} prompts x {} tokens vs {} x {}",
                self.sample, self.max_new_tokens, other.sample, other.max_new_tokens
            ));
        }
        d
    }
}

/// C library functions whose instructions are left out of the counts: the
/// allocator's (its free lists hold whatever earlier, unmeasured work left,
/// so a call's cost moved by up to a few thousand instructions between two
/// runs of one build) and `getenv` (the environment's size). Callgrind
/// stops collecting on entry and resumes on exit. What remains differs by
/// a few instructions in 10^8 between runs (glibc's memset and memcpy take
/// alignment-dependent paths and are reached in a way these toggles miss).
pub const OUTSIDE_THE_COUNT: [&str; 8] = [
    "malloc",
    "free",
    "realloc",
    "calloc",
    "posix_memalign",
    "aligned_alloc",
    "memalign",
    "getenv",
];

/// A cost probe to run.
#[derive(Debug, Clone)]
pub struct Probe {
    /// The sweep spec.
    pub spec: PathBuf,
    /// Prompts per row.
    pub sample: usize,
    /// Tokens per prompt at most.
    pub max_new_tokens: usize,
    /// `--inject-*` flags for the probed sweep, as given.
    pub inject: Vec<String>,
    /// The hooks those flags plant (recorded in costs.json).
    pub hooks: TestHooks,
}

/// A scratch folder for the probe's dumps and run folder, removed when dropped.
struct ScratchDir(PathBuf);

impl ScratchDir {
    fn new() -> Result<ScratchDir, CostError> {
        let nanos = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(0, |d| d.subsec_nanos());
        let dir = std::env::temp_dir().join(format!("specula-cost-{}-{nanos}", std::process::id()));
        std::fs::create_dir_all(&dir).map_err(|e| CostError::io(&dir, e))?;
        Ok(ScratchDir(dir))
    }
}

impl Drop for ScratchDir {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

/// `valgrind --version`, or why valgrind cannot run.
pub fn valgrind_version() -> Result<String, CostError> {
    let out = Command::new("valgrind")
        .arg("--version")
        .output()
        .map_err(|e| {
            CostError::Probe(format!(
                "valgrind: {e}: instruction counts need valgrind (apt-get install valgrind)"
            ))
        })?;
    Ok(String::from_utf8_lossy(&out.stdout).trim().to_string())
}

/// Runs `probe` under callgrind and writes costs.csv and costs.json into `out`.
pub fn measure(probe: &Probe, out: &Path) -> Result<Vec<table::CostRow>, CostError> {
    let valgrind = valgrind_version()?;
    let exe = std::env::current_exe().map_err(|e| CostError::Probe(e.to_string()))?;
    let work = ScratchDir::new()?;
    let cg = work.0.join("cg.out");
    let run = work.0.join("probe");
    let mut cmd = Command::new("valgrind");
    cmd.args([
        "--tool=callgrind",
        "--instr-atstart=no",
        "--collect-atstart=no",
        "--dump-instr=no",
        "--dump-line=no",
    ])
    .args(
        OUTSIDE_THE_COUNT
            .iter()
            .map(|f| format!("--toggle-collect={f}")),
    )
    .arg(format!("--callgrind-out-file={}", cg.display()))
    .arg(&exe)
    .args(["--cpu-threads", "1", "sweep"])
    .arg(&probe.spec)
    .args([
        "--quiet",
        "--cost-probe",
        "--spans",
        "on",
        "--repeats",
        "1",
        "--warmup",
        "0",
    ])
    .args(["--sample", &probe.sample.to_string()])
    .args(["--max-new-tokens", &probe.max_new_tokens.to_string()])
    .arg("--out")
    .arg(&run)
    .args(&probe.inject);
    let o = cmd
        .output()
        .map_err(|e| CostError::Probe(format!("valgrind: {e}")))?;
    if !o.status.success() {
        let err = String::from_utf8_lossy(&o.stderr);
        let tail: Vec<&str> = err.lines().rev().take(8).collect();
        return Err(CostError::Probe(format!(
            "the probe under valgrind failed ({}): {}",
            o.status,
            tail.into_iter().rev().collect::<Vec<_>>().join(" / ")
        )));
    }
    let segments = dumps::read_all(&cg)?;
    let probe_run = Run::read(&run).map_err(|e| CostError::Probe(e.to_string()))?;
    let rows = table::aggregate(&segments, &probe_run)?;
    std::fs::create_dir_all(out).map_err(|e| CostError::io(out, e))?;
    table::write(&out.join(table::COSTS_CSV), &rows)?;
    let settings = CostSettings {
        valgrind,
        profile: if cfg!(debug_assertions) {
            "debug"
        } else {
            "release"
        }
        .into(),
        sample: probe.sample,
        max_new_tokens: probe.max_new_tokens,
        test_hooks: Some(probe.hooks).filter(TestHooks::any),
    };
    let json = serde_json::to_string_pretty(&settings).expect("serialisable") + "\n";
    let p = out.join(COSTS_JSON);
    std::fs::write(&p, json).map_err(|e| CostError::io(&p, e))?;
    Ok(rows)
}

/// The costs of the run folder `dir`, with their settings; `None` when it has no costs.csv.
pub fn read(dir: &Path) -> Result<Option<(Vec<table::CostRow>, CostSettings)>, CostError> {
    let csv = dir.join(table::COSTS_CSV);
    if !csv.exists() {
        return Ok(None);
    }
    let rows = table::read(&csv)?;
    let p = dir.join(COSTS_JSON);
    let text = std::fs::read_to_string(&p).map_err(|e| CostError::io(&p, e))?;
    let settings = serde_json::from_str(&text)
        .map_err(|e| CostError::Input(format!("{}: {e}", p.display())))?;
    Ok(Some((rows, settings)))
}
