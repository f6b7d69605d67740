//! Row keys: the unique, file-name-safe name of a row (the `row_key` column,
//! the key of positions.csv and kernels.csv, the histogram log's name):
//!
//! ```text
//! <model>.<config>.b<batch_size>.<prompt_set>.t<temperature>.r<repeat>[.nospans]
//! tiny-llama.s3k2n7-auxm1_2_4-legacy.b4.mt_bench.t0p7.r1
//! ```
//!
//! `config` is `base` for the baseline, else `s<steps>k<topk>n<num_draft_tokens>`
//! with `-aux<ids>` when the ids are overridden (`m` for a minus sign) and
//! `-<convention>` when it is not the default, `-as_eagle` / `-as_eagle3`
//! when the draft is served as another generation. Names are sanitised to
//! `[A-Za-z0-9_-]`, so the dots separate the parts.

use super::SpanMode;
use specula_engine::capture::{CaptureChoice, IdConvention};
use specula_engine::config::DraftKind;

/// The config part of a baseline row's key.
pub const BASELINE_CONFIG: &str = "base";

/// The key's suffix on rows that ran without span recording.
const NO_SPANS: &str = "nospans";

/// Keeps `[A-Za-z0-9_-]`, maps anything else to `-`.
pub fn sanitize(s: &str) -> String {
    s.chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || c == '_' || c == '-' {
                c
            } else {
                '-'
            }
        })
        .collect()
}

/// The config part of a speculative row's key: `s5k1n6`, `s3k2n7-auxm1_2_4-legacy`.
pub fn config_label(
    steps: usize,
    topk: usize,
    num_draft_tokens: usize,
    capture: &CaptureChoice,
) -> String {
    let mut s = format!("s{steps}k{topk}n{num_draft_tokens}");
    if let Some(ids) = &capture.override_ids {
        let ids: Vec<String> = ids
            .iter()
            .map(|i| i.to_string().replace('-', "m"))
            .collect();
        s.push_str(&format!("-aux{}", ids.join("_")));
    }
    if capture.convention != IdConvention::default() {
        s.push_str(&format!("-{}", capture.convention.name()));
    }
    match capture.served_as {
        Some(DraftKind::Eagle) => s.push_str("-as_eagle"),
        Some(DraftKind::Eagle3) => s.push_str("-as_eagle3"),
        None => {}
    }
    s
}

/// The parts of a row key.
#[derive(Debug, Clone, PartialEq)]
pub struct RowKey<'a> {
    /// The model pair's (sanitised) name.
    pub model: &'a str,
    /// [`BASELINE_CONFIG`] or a [`config_label`].
    pub config: &'a str,
    /// Prompts per `generate` call.
    pub batch_size: usize,
    /// The prompt set's name (sanitised here).
    pub prompt_set: &'a str,
    /// Sampling temperature.
    pub temperature: f64,
    /// Repeat index.
    pub repeat: usize,
    /// Whether spans were recorded.
    pub spans: SpanMode,
}

impl RowKey<'_> {
    /// The key as runs.csv writes it.
    pub fn format(&self) -> String {
        let off = if self.spans == SpanMode::Off {
            format!(".{NO_SPANS}")
        } else {
            String::new()
        };
        format!(
            "{}.{}.b{}.{}.t{}.r{}{off}",
            self.model,
            self.config,
            self.batch_size,
            sanitize(self.prompt_set),
            format!("{}", self.temperature).replace('.', "p"),
            self.repeat
        )
    }
}

/// The config part of `key` (`base`, `s3k1n4`, ...), if it has one.
pub fn config_of(key: &str) -> Option<&str> {
    key.split('.').nth(1)
}

/// The key of the same-run baseline of the row `key`: its config part
/// replaced by [`BASELINE_CONFIG`].
pub fn baseline_of(key: &str) -> Option<String> {
    let mut parts: Vec<&str> = key.split('.').collect();
    if parts.len() < 2 {
        return None;
    }
    parts[1] = BASELINE_CONFIG;
    Some(parts.join("."))
}

/// `key` without its config part: equal for the rows of one baseline group
/// (same model, batch size, prompt set, temperature, repeat and spans).
pub fn without_config(key: &str) -> String {
    let mut parts: Vec<&str> = key.split('.').collect();
    if parts.len() > 1 {
        parts.remove(1);
    }
    parts.join(".")
}

/// `key` without its repeat part `r<repeat>`: a readable name of the row's
/// repeats together.
pub fn without_repeat(key: &str, repeat: &str) -> String {
    let repeat = format!("r{repeat}");
    let keep: Vec<&str> = key
        .split('.')
        .enumerate()
        .filter(|(i, p)| *i < 2 || *p != repeat)
        .map(|(_, p)| p)
        .collect();
    keep.join(".")
}

#[cfg(test)]
mod tests {
    use super::*;

    fn key(config: &str, temperature: f64, spans: SpanMode) -> String {
        RowKey {
            model: "tiny-llama",
            config,
            batch_size: 4,
            prompt_set: "mt bench",
            temperature,
            repeat: 1,
            spans,
        }
        .format()
    }

    #[test]
    fn keys_name_every_part_and_stay_file_name_safe() {
        assert_eq!(
            key("s3k1n4", 0.0, SpanMode::On),
            "tiny-llama.s3k1n4.b4.mt-bench.t0.r1"
        );
        assert_eq!(
            key(BASELINE_CONFIG, 0.7, SpanMode::Off),
            "tiny-llama.base.b4.mt-bench.t0p7.r1.nospans"
        );
        let legacy = CaptureChoice {
            override_ids: Some(vec![-1, 2, 4]),
            convention: IdConvention::Legacy,
            ..CaptureChoice::default()
        };
        assert_eq!(config_label(3, 2, 7, &legacy), "s3k2n7-auxm1_2_4-legacy");
        assert_eq!(config_label(5, 1, 6, &CaptureChoice::default()), "s5k1n6");
    }

    #[test]
    fn a_key_gives_its_baseline_its_group_and_its_repeats() {
        let k = key("s3k1n4", 0.7, SpanMode::On);
        assert_eq!(config_of(&k), Some("s3k1n4"));
        assert_eq!(
            baseline_of(&k).as_deref(),
            Some(key(BASELINE_CONFIG, 0.7, SpanMode::On).as_str())
        );
        assert_eq!(
            without_config(&k),
            without_config(&baseline_of(&k).unwrap())
        );
        assert_eq!(
            without_repeat(&k, "1"),
            "tiny-llama.s3k1n4.b4.mt-bench.t0p7"
        );
        assert_eq!(baseline_of("nodots"), None);
    }
}
