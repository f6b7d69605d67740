//! `meta.json`: what a run was: the resolved spec, the run id, the git
//! revision, tool and crate versions, the machine, the shard, the skipped
//! grid points and the run's status. Written when the run starts and again
//! when it stops (atomically, through a temporary file).

use super::RunFolderError;
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;
use std::path::Path;
use std::time::{SystemTime, UNIX_EPOCH};

/// The machine a run ran on.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct Machine {
    /// Host name.
    pub hostname: String,
    /// CPU model name.
    pub cpu: String,
    /// Logical cores available to the process.
    pub cores: usize,
    /// Physical memory, bytes (0 when unknown).
    pub memory_bytes: u64,
    /// Operating system and architecture.
    pub os: String,
}

impl Machine {
    /// Describes this machine (Linux `/proc` files; `unknown` elsewhere).
    pub fn describe() -> Machine {
        let cpuinfo = std::fs::read_to_string("/proc/cpuinfo").unwrap_or_default();
        let cpu = cpuinfo
            .lines()
            .find(|l| l.starts_with("model name") || l.starts_with("Model"))
            .and_then(|l| l.split_once(':'))
            .map(|(_, v)| v.trim().to_string())
            .unwrap_or_else(|| "unknown".into());
        let memory_bytes = std::fs::read_to_string("/proc/meminfo")
            .unwrap_or_default()
            .lines()
            .find(|l| l.starts_with("MemTotal:"))
            .and_then(|l| l.split_whitespace().nth(1))
            .and_then(|kb| kb.parse::<u64>().ok())
            .map_or(0, |kb| kb * 1024);
        Machine {
            hostname: hostname(),
            cpu,
            cores: std::thread::available_parallelism().map_or(1, |n| n.get()),
            memory_bytes,
            os: format!("{} {}", std::env::consts::OS, std::env::consts::ARCH),
        }
    }
}

fn hostname() -> String {
    let mut buf = [0u8; 256];
    // SAFETY: gethostname writes at most buf.len() bytes into a buffer we own.
    let ok = unsafe { libc::gethostname(buf.as_mut_ptr().cast(), buf.len()) } == 0;
    let name = if ok {
        let end = buf.iter().position(|&b| b == 0).unwrap_or(buf.len());
        String::from_utf8_lossy(&buf[..end]).into_owned()
    } else {
        String::new()
    };
    if name.is_empty() {
        "unknown".into()
    } else {
        name
    }
}

/// The git revision this binary was built from (`-dirty` when tracked files
/// had changes), else `git rev-parse HEAD` in the current folder, or
/// `unknown`.
pub fn git_rev() -> String {
    if let Some(rev) = option_env!("SPECULA_BUILD_REV").filter(|r| !r.is_empty()) {
        return rev.to_string();
    }
    std::process::Command::new("git")
        .args(["rev-parse", "HEAD"])
        .stderr(std::process::Stdio::null())
        .output()
        .ok()
        .filter(|o| o.status.success())
        .map(|o| String::from_utf8_lossy(&o.stdout).trim().to_string())
        .filter(|s| !s.is_empty())
        .unwrap_or_else(|| "unknown".into())
}

/// Versions of this tool and the crates that shape its numbers (from the
/// workspace's Cargo.lock, compiled in).
pub fn crate_versions() -> BTreeMap<String, String> {
    const LOCK: &str = include_str!("../../../Cargo.lock");
    const WANTED: [&str; 9] = [
        "specula",
        "specula-engine",
        "specula-kernels",
        "specula-datasets",
        "candle-core",
        "tokenizers",
        "safetensors",
        "minijinja",
        "hdrhistogram",
    ];
    #[derive(Deserialize)]
    struct Lock {
        package: Vec<Package>,
    }
    #[derive(Deserialize)]
    struct Package {
        name: String,
        version: String,
    }
    let mut out = BTreeMap::new();
    if let Ok(lock) = toml::from_str::<Lock>(LOCK) {
        for p in lock.package {
            if WANTED.contains(&p.name.as_str()) {
                out.insert(p.name, p.version);
            }
        }
    }
    out.insert("specula".into(), env!("CARGO_PKG_VERSION").into());
    out
}

/// A UTC instant as RFC 3339 (`2026-05-01T12:34:56Z`).
pub fn rfc3339(t: SystemTime) -> String {
    let secs = t.duration_since(UNIX_EPOCH).map_or(0, |d| d.as_secs());
    let (days, rem) = (secs / 86_400, secs % 86_400);
    // Howard Hinnant's civil-from-days.
    let z = days as i64 + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z.rem_euclid(146_097);
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let d = doy - (153 * mp + 2) / 5 + 1;
    let m = if mp < 10 { mp + 3 } else { mp - 9 };
    let y = yoe + era * 400 + i64::from(m <= 2);
    format!(
        "{y:04}-{m:02}-{d:02}T{:02}:{:02}:{:02}Z",
        rem / 3600,
        rem / 60 % 60,
        rem % 60
    )
}

/// The run id's time part: `20260501T123456Z`.
pub fn compact_utc(t: SystemTime) -> String {
    rfc3339(t).replace(['-', ':'], "")
}

/// The contents of meta.json.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Meta {
    /// `specula`.
    pub tool: String,
    /// This tool's version.
    pub tool_version: String,
    /// Versions of the crates that shape the numbers.
    pub crate_versions: BTreeMap<String, String>,
    /// The run id (the `run_id` column).
    pub run_id: String,
    /// The revision the binary was built from (see [`git_rev`]).
    pub git_rev: String,
    /// When the run started (UTC).
    pub started_at: String,
    /// When it last stopped (UTC), if it has.
    pub finished_at: Option<String>,
    /// `running`, `finished`, `finished_with_failures`, `interrupted`,
    /// `failed`, or for merged runs `partial`.
    pub status: String,
    /// The machine.
    pub machine: Machine,
    /// Worker threads of the CPU engine's kernels (`--cpu-threads`, the
    /// spec's `threads`, or one per core); absent in runs before it was kept.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cpu_threads: Option<usize>,
    /// The profile the binary was built with, `debug` or `release`
    /// ([`super::environment::build_profile`]); absent in runs before it was kept.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub build_profile: Option<String>,
    /// The 1-, 5- and 15-minute load averages when the run started (Linux
    /// only; absent elsewhere and in runs before it was kept).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub load_average_start: Option<[f64; 3]>,
    /// The load averages when it last stopped (they include the run's own load).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub load_average_end: Option<[f64; 3]>,
    /// The `SPECULA_*` switches set as it started
    /// ([`super::environment::engine_switches`]); absent before it was kept.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub engine_switches: Option<BTreeMap<String, String>>,
    /// Where the rows run: `cpu`, `cuda`, `sglang` or `vllm`.
    pub backend: String,
    /// The folder relative paths of the spec are resolved against.
    pub base_dir: String,
    /// `i/n` of `--shard` (`0/1`: the whole grid).
    pub shard: String,
    /// Unit of span samples in histograms/ (`ns`).
    pub histogram_unit: String,
    /// Rows of the whole grid, and of this shard.
    pub grid_rows: usize,
    /// Rows this shard runs.
    pub shard_rows: usize,
    /// Rows in runs.csv when the run last stopped.
    pub rows_written: usize,
    /// Draft configs that do not run, with reasons.
    pub skipped: Vec<SkippedConfig>,
    /// The resolved spec (after CLI overrides), as JSON.
    pub spec: serde_json::Value,
    /// Column lists of the CSV files.
    pub columns: BTreeMap<String, Vec<String>>,
    /// For merged runs: the meta.json of every input, in order.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub merged_from: Vec<serde_json::Value>,
    /// Regressions planted on purpose by `--inject-*` test hooks (absent normally).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub test_hooks: Option<TestHooks>,
    /// Served runs: the engine version the servers reported (SGLang
    /// `/server_info` `version`, vLLM `/version`), distinct values joined by
    /// `; ` (absent when none said, and in runs before this field).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub engine_version: Option<String>,
    /// In-process runs: each target load, in order (one per target, dtype
    /// and device: model entries over the same target share it).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub model_loads: Vec<ModelLoad>,
    /// (model, prompt set) pairs run past the target's trained context
    /// (`allow_past_context`); absent when none did.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub past_trained_context: Vec<PastContextSet>,
}

/// A prompt set run on a model past its `max_position_embeddings`
/// (meta.json `past_trained_context`): positions the model never saw.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct PastContextSet {
    /// The model pair's name.
    pub model: String,
    /// The prompt set's name.
    pub prompt_set: String,
    /// Its longest prompt, tokens as sent.
    pub longest_prompt_tokens: usize,
    /// Positions that prompt needs with `max_new_tokens` new tokens.
    pub positions_needed: usize,
    /// The target's `max_position_embeddings`.
    pub max_position_embeddings: usize,
}

/// One target load of an in-process run (meta.json `model_loads`).
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct ModelLoad {
    /// The target path as the spec writes it.
    pub target: String,
    /// `cpu` or `cuda`.
    pub device: String,
    /// Storage dtype named by the target config.
    pub dtype: String,
    /// Seconds from the first file read to the model ready (tokenizer included).
    pub seconds: f64,
    /// Bytes moved to the GPU (0 on the CPU).
    pub bytes: u64,
    /// `bytes / seconds`, GB/s (0 on the CPU).
    pub gb_s: f64,
    /// The process's peak resident memory once loaded (`ru_maxrss`), bytes.
    pub peak_host_memory_bytes: u64,
    /// The model entries (`name`) that ran on this load.
    pub models: Vec<String>,
}

/// A draft config of the spec that does not run, and why (meta.json `skipped`).
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct SkippedConfig {
    /// The model pair's name.
    pub model: String,
    /// The config as written (`steps=2 topk=1 num_draft_tokens=9 ...`).
    pub config: String,
    /// Why it is skipped.
    pub reason: String,
}

impl std::fmt::Display for SkippedConfig {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "skipped {} {}: {}", self.model, self.config, self.reason)
    }
}

/// Regressions planted on purpose by the hidden `--inject-*` flags of
/// `specula sweep`, to test the gate (meta.json `test_hooks`; absent normally).
#[derive(Debug, Clone, Copy, Default, PartialEq, Serialize, Deserialize)]
pub struct TestHooks {
    /// Speculative rows only: after each `verify` span, busy-wait this
    /// percentage of the span's own duration inside it (a slower tree verify).
    /// Baseline rows are left alone, so the same-run speedup drops.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub verify_delay_pct: Option<f64>,
    /// Speculative rows only: draft at most this many steps, whatever the
    /// row's config says (a draft shallower than configured; tau drops).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub draft_steps: Option<usize>,
    /// Speculative rows only: this percentage of the decode target forwards
    /// (the verify span) runs twice, the repeat discarded: exactly that much
    /// more verify work, same tokens (seen by clocks and instruction counts).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub verify_work_pct: Option<f64>,
    /// This percentage of draft forwards (the draft span) runs twice.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub draft_work_pct: Option<f64>,
    /// Every row, the baseline included: this percentage of target forwards
    /// (decode forwards per call, prefills over the run) runs twice.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub target_work_pct: Option<f64>,
}

impl TestHooks {
    /// Whether any regression is planted.
    pub fn any(&self) -> bool {
        self.verify_delay_pct.is_some()
            || self.draft_steps.is_some()
            || self.verify_work_pct.is_some()
            || self.draft_work_pct.is_some()
            || self.target_work_pct.is_some()
    }
}

impl Meta {
    /// Writes `path` atomically.
    pub fn write(&self, path: &Path) -> Result<(), RunFolderError> {
        let tmp = path.with_extension("json.tmp");
        let text = serde_json::to_string_pretty(self).expect("meta is serialisable");
        std::fs::write(&tmp, text + "\n").map_err(|e| RunFolderError::write(&tmp, e))?;
        std::fs::rename(&tmp, path).map_err(|e| RunFolderError::write(path, e))
    }

    /// Reads `path`.
    pub fn read(path: &Path) -> Result<Meta, RunFolderError> {
        let text = std::fs::read_to_string(path).map_err(|e| RunFolderError::read(path, e))?;
        serde_json::from_str(&text).map_err(|e| RunFolderError::malformed(path, e))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Duration;

    #[test]
    fn utc_dates_are_civil() {
        assert_eq!(rfc3339(UNIX_EPOCH), "1970-01-01T00:00:00Z");
        let t = UNIX_EPOCH + Duration::from_secs(1_709_210_096); // leap day 2024
        assert_eq!(rfc3339(t), "2024-02-29T12:34:56Z");
        assert_eq!(compact_utc(t), "20240229T123456Z");
    }

    /// Regression: runs on the GPU machine recorded the revision of that
    /// machine's older copy of the history, not the code that ran.
    #[test]
    fn git_rev_is_the_revision_the_binary_was_built_from() {
        let built = option_env!("SPECULA_BUILD_REV").unwrap_or_default();
        let head = std::process::Command::new("git")
            .args(["rev-parse", "HEAD"])
            .output()
            .ok()
            .filter(|o| o.status.success())
            .map(|o| String::from_utf8_lossy(&o.stdout).trim().to_string());
        if let Some(head) = head {
            assert!(built.starts_with(&head), "built {built}, HEAD {head}");
            assert_eq!(git_rev(), built);
        }
    }

    #[test]
    fn a_meta_json_from_before_build_profile_threads_and_load_were_kept_still_reads() {
        let mut v: serde_json::Value =
            serde_json::from_str(include_str!("../../../results/baselines/ci/meta.json")).unwrap();
        let obj = v.as_object_mut().unwrap();
        for k in [
            "cpu_threads",
            "build_profile",
            "load_average_start",
            "load_average_end",
        ] {
            obj.remove(k);
        }
        let meta: Meta = serde_json::from_value(v).unwrap();
        assert_eq!(meta.cpu_threads, None);
        assert_eq!(meta.build_profile, None);
        assert_eq!(meta.load_average_start, None);
        let written = serde_json::to_value(&meta).unwrap();
        assert!(
            written.get("build_profile").is_none(),
            "absent stays absent"
        );
    }

    #[test]
    fn versions_come_from_the_lock_file() {
        let v = crate_versions();
        assert!(v.contains_key("specula-engine") && v.contains_key("candle-core"));
    }
}
